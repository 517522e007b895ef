"""Spring Challenge 2021's commands and the resolution of a frame and of a day (the spec is the
docstring of `arena_games.spring2021.rules`: frame resolution, costs, deactivation, a search's
frames).

`parse_command` / `command_text` are the referee's command language; `step_commands` plays one
frame of command texts as the referee does (a rule-breaking command turns into WAIT, a malformed
line deactivates its author); `resolve_frame` plays one frame of commands already known legal (the
action head's, `rules.step`), optionally favouring a searching player; when both players have
waited, the same call ends the day (the sun moves) and plays the next day's gathering.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import replace

from arena_games.api import IllegalAction
from arena_games.spring2021.board import (
    NUM_CELLS,
    RICHNESS_BONUS,
    distance,
)
from arena_games.spring2021.state import (
    BASE_COST,
    COMPLETE_COST,
    DEACTIVATED_SCORE,
    DORMANT_BIT,
    GAME_NAME,
    LARGE,
    NO_TREE,
    OWNER_SHIFT,
    SIZE_BITS,
    SpringState,
    compute_shadows,
    gather,
    to_move,
    tree_code,
)

# --- commands -------------------------------------------------------------------------------------

# A command: ("WAIT",), ("GROW", cell), ("COMPLETE", cell) or ("SEED", source, target).
Command = tuple
WAIT: Command = ("WAIT",)
_SPACE = "[ \t\n\x0b\f\r]"  # Java's \s (Python's also matches other Unicode spaces)
_MESSAGE = f"(?:{_SPACE}+.*)?"
_PATTERNS = (  # CommandManager's patterns, in its order; Java's \d is ASCII only
    ("WAIT", re.compile(f"WAIT{_MESSAGE}")),
    ("GROW", re.compile(f"GROW ([0-9]+){_MESSAGE}")),
    ("COMPLETE", re.compile(f"COMPLETE ([0-9]+){_MESSAGE}")),
    ("SEED", re.compile(f"SEED ([0-9]+) ([0-9]+){_MESSAGE}")),
)
_JAVA_INT_MAX = (1 << 31) - 1


def parse_command(text: str) -> Command:
    """The command of one output line, as the referee parses it; IllegalAction if it is malformed."""
    if isinstance(text, str) and (command := _well_formed(text)):
        return command
    raise IllegalAction(
        f"{GAME_NAME}: malformed command {text!r}; "
        "expected SEED <from> <to> | GROW <idx> | COMPLETE <idx> | WAIT"
    )


def _well_formed(text: str) -> Command | None:
    """The command of the line `text`, or None if the referee finds it malformed."""
    for verb, pattern in _PATTERNS:
        if match := pattern.fullmatch(text):
            numbers = tuple(int(group) for group in match.groups())
            # Past Java's int, Integer.parseInt fails and the referee deactivates as for no match.
            return (verb, *numbers) if all(number <= _JAVA_INT_MAX for number in numbers) else None
    return None


def command_text(command: Command) -> str:
    return " ".join(str(part) for part in command)


def size_counts(trees: Sequence[int], player: int) -> list[int]:
    """How many trees of each size 0..3 `player` owns (dormant or not)."""
    counts = [0, 0, 0, 0]
    for code in trees:
        if code != NO_TREE and code >> OWNER_SHIFT == player:
            counts[code & SIZE_BITS] += 1
    return counts


def grow_cost(trees: Sequence[int], player: int, size: int) -> int:
    """What growing one of `player`'s trees of `size` costs (COMPLETE_COST for a large tree)."""
    if size >= LARGE:
        return COMPLETE_COST
    return BASE_COST[size + 1] + size_counts(trees, player)[size + 1]


def seed_cost(trees: Sequence[int], player: int) -> int:
    """What a SEED costs `player`: one per seed (size-0 tree) it owns."""
    return size_counts(trees, player)[0]


def _rejection(state: SpringState, trees: Sequence[int], sun: int, player: int, command: Command) -> str:
    """Why the referee would turn `command` into WAIT ("" if it is valid), checked in the referee's order."""
    verb, cells = command[0], command[1:]
    if verb == "WAIT":
        return ""
    if any(cell >= NUM_CELLS for cell in cells):
        return f"cell {max(cells)} not found"
    if verb == "SEED":
        source, target = cells
        if trees[target] != NO_TREE:
            return f"cell {target} is not empty"
        cell = source
    else:
        (cell,) = cells
    code = trees[cell]
    if code == NO_TREE:
        return f"no tree on cell {cell}"
    size, dormant, owner = code & SIZE_BITS, code & DORMANT_BIT, code >> OWNER_SHIFT
    if verb == "SEED" and size == 0:
        return f"the tree on cell {cell} is a seed"
    if owner != player:
        return f"the tree on cell {cell} is not yours"
    if verb == "COMPLETE" and size < LARGE:
        return f"the tree on cell {cell} is not large"
    if dormant:
        return f"the tree on cell {cell} is dormant"
    if verb == "GROW" and size >= LARGE:
        return f"the tree on cell {cell} is already large"
    if verb == "SEED":
        if distance(source, target) > size:
            return f"cell {target} is too far from cell {source}"
        if not state.richness[target]:
            return f"cell {target} is not usable"
        cost = seed_cost(trees, player)
    else:
        cost = grow_cost(trees, player, size)
    if sun < cost:
        return f"not enough sun ({cost} needed, {sun} available)"
    return ""


def step_commands(state: SpringState, texts: Sequence[str]) -> SpringState:
    """One ACTIONS frame in the referee's language: one command line per player in to_move(state).

    Well-formed commands that break a rule turn into WAIT (logged with the reason); a malformed line
    deactivates its author and ends the game after the frame (the module's doc). Anything but one
    string per player to move is IllegalAction.
    """
    players = to_move(state)
    if (
        isinstance(texts, str)
        or len(texts) != len(players)
        or not all(isinstance(text, str) for text in texts)
    ):
        raise IllegalAction(
            f"{GAME_NAME}: give one command line for each of the players {players}, got {texts!r}"
        )
    lines = dict(zip(players, texts, strict=True))
    commands = {player: _well_formed(text) for player, text in lines.items()}
    malformed = {player: lines[player] for player, command in commands.items() if command is None}
    if not malformed:
        return resolve_frame(state, commands)
    played = _play_frame(state, {player: command or WAIT for player, command in commands.items()})
    return _deactivate(played, malformed)


def _deactivate(state: SpringState, malformed: Mapping[int, str]) -> SpringState:
    """`state` after the frame in which the players of `malformed` (player -> its line) were deactivated."""
    score = list(state.score)
    said = list(state.log[-1])
    for player, text in malformed.items():
        score[player] = DEACTIVATED_SCORE
        said[player] = f"DEACTIVATED (malformed command {text!r})"
    return replace(state, score=(score[0], score[1]), log=(*state.log[:-1], (said[0], said[1])))


def resolve_frame(
    state: SpringState, commands: Mapping[int, Command], favoured: int | None = None
) -> SpringState:
    """Play one ACTIONS frame (Game.performActionUpdate), then the day's end if both wait.

    `commands` has one command per player in to_move(state); `step`, `step_commands` and
    `playouts` all play frames through here. `favoured` (a search's frames only) wins the frame's
    interactions, as the module's doc says.
    """
    after = _play_frame(state, commands, favoured)
    return _next_day(after) if all(after.waiting) else after


def _play_frame(
    state: SpringState, commands: Mapping[int, Command], favoured: int | None = None
) -> SpringState:
    """The frame of `resolve_frame` without the day's end."""
    trees = list(state.trees)
    available = list(state.sun)
    waiting = list(state.waiting)
    sent: list[tuple[int, int, int]] = []  # (owner, target, cost)
    dying: list[int] = []
    said = ["", ""]
    for player, command in sorted(commands.items()):
        said[player] = command_text(command)
        if reason := _rejection(state, trees, available[player], player, command):
            said[player] = f"WAIT ({said[player]}: {reason})"
            waiting[player] = True
            continue
        verb = command[0]
        if verb == "WAIT":
            waiting[player] = True
        elif verb == "SEED":
            source, target = command[1:]
            cost = seed_cost(trees, player)
            available[player] -= cost
            trees[source] |= DORMANT_BIT
            sent.append((player, target, cost))
        else:
            cell = command[1]
            size = trees[cell] & SIZE_BITS
            available[player] -= grow_cost(trees, player, size)
            if verb == "GROW":
                trees[cell] = tree_code(player, size + 1, True)
            else:
                trees[cell] |= DORMANT_BIT
                dying.append(cell)
    sun = state.sun
    conflict = len({target for _, target, _ in sent}) < len(sent)
    if conflict and favoured is None:  # nothing planted, all refunded
        said = [f"{text} (conflict)" if text.startswith("SEED") else text for text in said]
    else:
        for owner, target, cost in sent:
            if conflict and owner != favoured:  # the favoured seed took the cell first
                said[owner] = f"{said[owner]} (conflict)"
                available[owner] += cost
            else:
                trees[target] = tree_code(owner, 0, True)
        sun = (available[0], available[1])
    score = list(state.score)
    nutrients = state.nutrients
    for cell in sorted(dying, key=lambda cell: trees[cell] >> OWNER_SHIFT != favoured):
        score[trees[cell] >> OWNER_SHIFT] += nutrients + RICHNESS_BONUS[state.richness[cell]]
        trees[cell] = NO_TREE
        if favoured is not None:  # the favoured tree went first: the other finds one nutrient less
            nutrients = max(0, nutrients - 1)
    entry = (said[0], said[1])
    log = (*state.log, entry) if state.log_day == state.day else (entry,)
    return replace(
        state,
        trees=tuple(trees),
        sun=sun,
        score=(score[0], score[1]),
        nutrients=max(0, state.nutrients - len(dying)),
        waiting=(waiting[0], waiting[1]),
        log_day=state.day,
        log=log,
    )


def _next_day(state: SpringState) -> SpringState:
    """SUN_MOVE (day + 1, the sun turns, shadows recomputed) and, unless the game is over, GATHERING."""
    day = state.day + 1
    if day >= state.config.max_rounds:
        return replace(state, day=day)
    return gather(replace(state, day=day, shadows=compute_shadows(state.trees, day % 6)))
