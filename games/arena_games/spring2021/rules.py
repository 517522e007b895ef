"""Spring Challenge 2021's rules (../shared/games/spring2021.md, final league) as pure functions.

Where that spec and the official referee (CodinGame/SpringChallenge2021, Java) could differ, this
follows the referee's code; the notes below say where it matters.

Days and steps. A day is: GATHERING (every tree wakes, every tree not in a spooky shadow gives its
owner sun equal to its size), then ACTIONS frames until both players have waited, then SUN_MOVE
(day + 1; the sun turns to direction day % 6 and shadows are recomputed from the trees as they
stand). One `step` is one ACTIONS frame: `to_move(state)` is the players who have not waited yet
today (one or both), and the joint action holds one action for each of them, in seat order. A
player who has waited is not asked again that day. When a frame leaves both players waiting, the
same `step` moves the sun and plays the next GATHERING, so every state a player sees is an ACTIONS
frame (or the end). The game ends when the day reaches MAX_ROUNDS (24: days 0..23).

Actions: one head "move" of 38 (`action_command` decodes one). Index 37 is WAIT. Index c < 37
names cell c: on the player's own tree, GROW it (size 0..2) or COMPLETE it (size 3); on a cell
with no tree, SEED it from the player's own awake tree that can reach it (size >= distance) with
the smallest size, then the lowest cell index (the seed bot chose its source deterministically;
a small source keeps the big trees free to grow or complete). The mask marks exactly the indices
whose command the referee would accept now, so `step` never sees a rule-breaking command from the
head: an index outside the mask is IllegalAction (in Arena that forfeits, in the runner). Nothing
one player does in a frame can make the other's masked action rule-breaking: the referee validates
each command against the trees and the sun of the frame's start, and only own trees count (the
one interaction, two seeds on one cell, is the seed conflict below, not a rejection).

The referee's own command language is `step_commands` (texts like "SEED 3 12"): as in the
referee, a well-formed command that breaks a rule (unknown cell, not your tree, dormant, too far,
too expensive, ...) turns into WAIT: the player waits for the rest of the day, pays nothing and
changes nothing. A malformed line deactivates its author, as below.

Deactivation (CommandManager.deactivatePlayer, Game.onEnd; spec §13.3-13.5). A malformed line (no
command pattern matches it, or a number overflows Java's int) sets its author's score to -1
(DEACTIVATED_SCORE; no other score is negative, so it is the state's mark) and the author does
nothing that frame, as if it waited. The frame still resolves the other player's command, then the
game ends at once: the day does not end, whoever still had a move never plays it. At the end only
active players add floor(sun / 3) and, when the active players' scores are one distinct value (always
so for a single active player, tied or not), one point per own tree. So a deactivated player loses
to the other (-1 against at least 0, whatever it had scored), and two deactivated in one frame are
-1 against -1, a draw. Spec note: §6 and §8 of ../shared/games/spring2021.md read "score -1, loss"
and call the tree points a tie-break; the referee gives them to a lone active player without a tie
and makes a double deactivation a draw. The referee wins. Only `step_commands` reads text, so only
it can deactivate: the action head has no malformed action, and games played through `step` never
end this way.

Frame resolution (Game.performActionUpdate): players in seat order; WAIT sets waiting; GROW pays
now and the tree grows and turns dormant; COMPLETE pays 4 and marks the tree dying (dormant, still
standing); SEED pays the seed cost, the source turns dormant and the seed is sent. Then, if two
sent seeds share a target (a seed conflict), no seed is planted and no player's sun changes this
frame: the costs are refunded (the referee skips the sun update; the issue's "both pay" is not what
the code does), and the sources stay dormant. Otherwise seeds are planted dormant and the costs
stand. Dying trees are then removed, each scoring nutrients (as before this frame) + the richness
bonus, and nutrients drop by one per completed tree (not below 0).

Costs (own trees only): GROW to size s costs BASE_COST[s] + the player's trees of size s
(1, 3, 7 base); SEED costs the player's seeds (size-0 trees); COMPLETE costs 4.

A search's frames (`step_favouring`, seed 001's sequential search): the searching player's
command wins the frame's two interactions, as if it had gone first: in a seed conflict its seed is
planted and the other's is refunded, and when both complete a tree its tree scores the nutrients
before the frame and the other's one less. Real games never use it.

End (Game.onEnd): each player adds floor(sun / 3) to the score; if the scores are then equal, each
player adds one point per tree it owns (seeds included). The higher score wins; equal is a draw.
(After a deactivation, only the active players: see above.)
"""

from __future__ import annotations

import functools
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from types import MappingProxyType
from typing import Any

import numpy as np

from arena_games.api import BadConfig, BadStateDict, Config, IllegalAction, merge_config, one_index
from arena_games.spring2021.board import (
    NUM_CELLS,
    RICHNESS_BONUS,
    RING_COUNT,
    SHADE_LINES,
    WITHIN,
    distance,
    generate_map,
)

GAME_NAME = "spring2021"
WAIT_ACTION = NUM_CELLS  # 37
NUM_ACTIONS = NUM_CELLS + 1  # 38
BASE_COST = (0, 1, 3, 7)  # TREE_BASE_COST by target size (0 = a seed)
COMPLETE_COST = 4  # LIFECYCLE_END_COST
LARGE = 3  # the largest tree size
NO_TREE = -1
DEACTIVATED_SCORE = -1  # CommandManager.deactivatePlayer's score for a malformed line's author

DEFAULT_CONFIG: Mapping[str, int] = MappingProxyType(
    {
        "STARTING_SUN": 0,
        "STARTING_NUTRIENTS_LUSH": 20,  # the referee's name for the starting nutrients
        "MAX_ROUNDS": 24,  # days 0..MAX_ROUNDS - 1
        "MAX_EMPTY_CELLS": 10,  # holes drawn: MAX_EMPTY_CELLS at most (see board.generate_map)
        "MAP_RING_COUNT": RING_COUNT,  # only 3: the inputs and the action head are sized for 37 cells
    }
)
LIMITS = {  # inclusive bounds; the encoding has 24 day and 21 nutrient slots
    "STARTING_SUN": (0, 1000),
    "STARTING_NUTRIENTS_LUSH": (0, 20),
    "MAX_ROUNDS": (1, 24),
    "MAX_EMPTY_CELLS": (0, 10),
    "MAP_RING_COUNT": (RING_COUNT, RING_COUNT),
}
MAX_ROUNDS_LIMIT = LIMITS["MAX_ROUNDS"][1]
# Each frame a player does not wait makes one of its trees that was awake at the day's start dormant
# (seeds planted today are dormant), and there are at most 37 trees: <= 38 frames a day.
MAX_FRAMES_PER_DAY = NUM_CELLS + 1
MAX_STEPS = MAX_ROUNDS_LIMIT * MAX_FRAMES_PER_DAY  # 912

# A tree on a cell is one int: owner * 8 + dormant * 4 + size; NO_TREE (-1) for none.
OWNER_SHIFT, DORMANT_BIT, SIZE_BITS = 3, 4, 3


def tree_code(owner: int, size: int, dormant: bool) -> int:
    return owner << OWNER_SHIFT | (DORMANT_BIT if dormant else 0) | size


@dataclass(frozen=True, slots=True)
class SpringConfig:
    starting_sun: int
    starting_nutrients: int
    max_rounds: int
    max_empty_cells: int

    def to_dict(self) -> dict[str, int]:
        return {
            "STARTING_SUN": self.starting_sun,
            "STARTING_NUTRIENTS_LUSH": self.starting_nutrients,
            "MAX_ROUNDS": self.max_rounds,
            "MAX_EMPTY_CELLS": self.max_empty_cells,
            "MAP_RING_COUNT": RING_COUNT,
        }


@dataclass(frozen=True, slots=True)
class SpringState:
    """A position: always an ACTIONS frame of day `day`, or the end (day == max_rounds).

    `trees` has one code per cell (see tree_code; NO_TREE for none). `shadows` is the shadow size
    (0 none, 1..3) on each cell for today, as computed at the sun move from the trees then standing;
    the rules read it only at the gathering, it stays for the viewer. `gathered` is each player's sun
    gathered so far (not counting STARTING_SUN). `score` is DEACTIVATED_SCORE for a player deactivated
    for a malformed line (the game is then over). `log` is the frames played on day `log_day` (the
    latest day anyone acted): per frame, per player, the command as resolved ("" if it did not act).
    """

    config: SpringConfig
    richness: tuple[int, ...]
    trees: tuple[int, ...]
    day: int
    nutrients: int
    sun: tuple[int, int]
    score: tuple[int, int]
    gathered: tuple[int, int]
    waiting: tuple[bool, bool]
    shadows: tuple[int, ...]
    log_day: int = 0
    log: tuple[tuple[str, str], ...] = ()

    @property
    def deactivated(self) -> tuple[bool, bool]:
        """Per player: deactivated for a malformed line (see the module's doc)."""
        return (self.score[0] == DEACTIVATED_SCORE, self.score[1] == DEACTIVATED_SCORE)

    @property
    def is_over(self) -> bool:
        return self.day >= self.config.max_rounds or DEACTIVATED_SCORE in self.score


# --- config and start ---------------------------------------------------------------------------


def make_config(overrides: Config | None) -> SpringConfig:
    """The defaults updated by `overrides`; unknown keys, wrong types, values out of LIMITS: BadConfig."""
    merged = merge_config(DEFAULT_CONFIG, overrides, GAME_NAME)
    for key, (low, high) in LIMITS.items():
        if not low <= merged[key] <= high:
            raise BadConfig(f"{GAME_NAME}: config {key!r} must be in {low}..{high}, got {merged[key]}")
    return SpringConfig(
        starting_sun=merged["STARTING_SUN"],
        starting_nutrients=merged["STARTING_NUTRIENTS_LUSH"],
        max_rounds=merged["MAX_ROUNDS"],
        max_empty_cells=merged["MAX_EMPTY_CELLS"],
    )


def init(seed: int, config: Config | None = None) -> SpringState:
    """Day 0's first ACTIONS frame on the official map of `seed` (after day 0's gathering)."""
    settings = make_config(config)
    if isinstance(seed, bool) or not isinstance(seed, int | np.integer):
        raise BadConfig(f"{GAME_NAME}: the seed must be an integer, got {seed!r}")
    richness, first, second = generate_map(int(seed), settings.max_empty_cells)
    trees = [NO_TREE] * NUM_CELLS
    for owner, cells in enumerate((first, second)):
        for cell in cells:
            trees[cell] = tree_code(owner, 1, False)
    start = SpringState(
        config=settings,
        richness=richness,
        trees=tuple(trees),
        day=0,
        nutrients=settings.starting_nutrients,
        sun=(settings.starting_sun, settings.starting_sun),
        score=(0, 0),
        gathered=(0, 0),
        waiting=(False, False),
        shadows=compute_shadows(tuple(trees), 0),
    )
    return _gather(start)


def compute_shadows(trees: Sequence[int], direction: int) -> tuple[int, ...]:
    """Shadow size per cell with the sun in `direction`: a tree of size s shades the s cells after it."""
    shadows = [0] * NUM_CELLS
    lines = SHADE_LINES[direction]
    for cell, code in enumerate(trees):
        if code != NO_TREE and (size := code & SIZE_BITS):
            for shaded in lines[cell][:size]:
                if shadows[shaded] < size:
                    shadows[shaded] = size
    return tuple(shadows)


def _gather(state: SpringState) -> SpringState:
    """GATHERING: both players wake, trees wake, each tree not spooked (shadow >= size) gives its size."""
    trees = tuple(code & ~DORMANT_BIT if code != NO_TREE else NO_TREE for code in state.trees)
    income = [0, 0]
    for cell, code in enumerate(trees):
        if code != NO_TREE and state.shadows[cell] < (size := code & SIZE_BITS):
            income[code >> OWNER_SHIFT] += size
    return replace(
        state,
        trees=trees,
        sun=(state.sun[0] + income[0], state.sun[1] + income[1]),
        gathered=(state.gathered[0] + income[0], state.gathered[1] + income[1]),
        waiting=(False, False),
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
    return _gather(replace(state, day=day, shadows=compute_shadows(state.trees, day % 6)))


# --- the action head ------------------------------------------------------------------------------


@functools.lru_cache(
    maxsize=1 << 14
)  # a search asks for a position's actions at expansion and again at its step
def action_commands(state: SpringState, player: int) -> Mapping[int, Command]:
    """Every legal action index of `player` -> its command ({} if the player is not to move).
    Read-only: one mapping is shared by every caller of the same state."""
    if state.is_over or state.waiting[player]:
        return MappingProxyType({})
    trees, sun = state.trees, state.sun[player]
    counts = size_counts(trees, player)
    costs = [BASE_COST[size + 1] + counts[size + 1] for size in range(LARGE)] + [COMPLETE_COST]
    legal: dict[int, Command] = {}
    sources = []  # (size, cell) of the player's awake trees that can throw seeds
    for cell, code in enumerate(trees):
        if code == NO_TREE or code >> OWNER_SHIFT != player or code & DORMANT_BIT:
            continue
        size = code & SIZE_BITS
        if sun >= costs[size]:
            legal[cell] = ("COMPLETE", cell) if size == LARGE else ("GROW", cell)
        if size:
            sources.append((size, cell))
    if sources and sun >= counts[0]:
        sources.sort()
        richness = state.richness
        for size, source in reversed(sources):  # the smallest source is written last and wins
            for target in WITHIN[source][size]:
                if trees[target] == NO_TREE and richness[target]:
                    legal[target] = ("SEED", source, target)
    legal[WAIT_ACTION] = WAIT
    return MappingProxyType(dict(sorted(legal.items())))


def action_command(state: SpringState, player: int, action: int) -> Command:
    """The command the legal `action` of `player` stands for; IllegalAction if it is not legal."""
    commands = action_commands(state, player)
    if action not in commands:
        raise IllegalAction(
            f"{GAME_NAME}: action {action} is not legal for player {player} on day {state.day}; "
            f"legal actions: {sorted(commands)}"
        )
    return commands[action]


def to_move(state: SpringState) -> tuple[int, ...]:
    """The players who have not waited today (both at a day's start); () once the game is over."""
    if state.is_over:
        return ()
    return tuple(player for player in (0, 1) if not state.waiting[player])


def legal_masks(state: SpringState, player: int) -> tuple[np.ndarray]:
    """One bool mask of shape (38,): `player`'s legal actions (all False if it is not to move)."""
    mask = np.zeros(NUM_ACTIONS, dtype=bool)
    mask[list(action_commands(state, player))] = True
    return (mask,)


def step(state: SpringState, joint: Sequence[Sequence[int]]) -> SpringState:
    """One ACTIONS frame: one legal action (a 1-tuple) for each player in to_move(state), in order."""
    return resolve_frame(state, _commands(state, joint))


def step_favouring(state: SpringState, joint: Sequence[Sequence[int]], player: int) -> SpringState:
    """`step` as a search of `player` simulates it: `player` wins the frame's interactions."""
    return resolve_frame(state, _commands(state, joint), favoured=player)


def _commands(state: SpringState, joint: Sequence[Sequence[int]]) -> dict[int, Command]:
    """The commands of a joint action of legal indices, by player; IllegalAction otherwise."""
    players = to_move(state)
    try:
        indices = [one_index(action) for action in joint]
    except (TypeError, ValueError):
        indices = None
    if indices is None or len(indices) != len(players):
        raise IllegalAction(
            f"{GAME_NAME}: a joint action is one (index,) per player in {players}, "
            f"like [(37,), (5,)]; got {joint!r}"
        )
    return {
        player: action_command(state, player, index) for player, index in zip(players, indices, strict=True)
    }


# --- the end ----------------------------------------------------------------------------------------


def final_scores(state: SpringState) -> tuple[int, int]:
    """Scores after Game.onEnd: each active player adds floor(sun / 3), then, if the active players'
    scores are one value, 1 per tree it owns; a deactivated player keeps DEACTIVATED_SCORE."""
    active = [player for player in (0, 1) if not state.deactivated[player]]
    scores = list(state.score)
    for player in active:
        scores[player] += state.sun[player] // 3
    if len({scores[player] for player in active}) == 1:
        for code in state.trees:
            if code != NO_TREE and code >> OWNER_SHIFT in active:
                scores[code >> OWNER_SHIFT] += 1
    return (scores[0], scores[1])


def returns(state: SpringState) -> tuple[float, float]:
    if not state.is_over:
        return (0.0, 0.0)
    first, second = final_scores(state)
    return (0.0, 0.0) if first == second else (1.0, -1.0) if first > second else (-1.0, 1.0)


def end_reason(state: SpringState) -> str:
    if not state.is_over:
        return ""
    first, second = final_scores(state)
    outcome = "a draw" if first == second else f"player {1 if first > second else 2} wins"
    if any(state.deactivated):
        who = (
            "both players were"
            if all(state.deactivated)
            else f"player {state.deactivated.index(True) + 1} was"
        )
        return f"{who} deactivated for a malformed command on day {state.day}: {first} to {second}, {outcome}"
    tie_break = (
        " after the tie-break on trees"
        if state.score[0] + state.sun[0] // 3 == state.score[1] + state.sun[1] // 3
        else ""
    )
    return f"day {state.config.max_rounds - 1} is over: {first} to {second}{tie_break}, {outcome}"


# --- JSON ---------------------------------------------------------------------------------------------


def to_dict(state: SpringState) -> dict[str, Any]:
    """The state as JSON-safe data; trees as {"cell", "size", "owner", "dormant"} in cell order."""
    return {
        "config": state.config.to_dict(),
        "richness": list(state.richness),
        "trees": [
            {
                "cell": cell,
                "size": code & SIZE_BITS,
                "owner": code >> OWNER_SHIFT,
                "dormant": bool(code & DORMANT_BIT),
            }
            for cell, code in enumerate(state.trees)
            if code != NO_TREE
        ],
        "day": state.day,
        "nutrients": state.nutrients,
        "sun": list(state.sun),
        "score": list(state.score),
        "gathered": list(state.gathered),
        "waiting": list(state.waiting),
        "shadows": list(state.shadows),
        "log_day": state.log_day,
        "log": [list(entry) for entry in state.log],
    }


_KEYS = {
    "config",
    "richness",
    "trees",
    "day",
    "nutrients",
    "sun",
    "score",
    "gathered",
    "waiting",
    "shadows",
    "log_day",
    "log",
}


def _int(data: Mapping[str, Any], key: str, low: int, high: int) -> int:
    value = data[key]
    if type(value) is not int or not low <= value <= high:
        raise BadStateDict(f"{GAME_NAME}: {key!r} must be an integer in {low}..{high}, got {value!r}")
    return value


def _ints(data: Mapping[str, Any], key: str, length: int, low: int, high: int) -> tuple[int, ...]:
    values = data[key]
    if (
        not isinstance(values, list)
        or len(values) != length
        or not all(type(value) is int and low <= value <= high for value in values)
    ):
        raise BadStateDict(f"{GAME_NAME}: {key!r} must be a list of {length} integers in {low}..{high}")
    return tuple(values)


def from_dict(data: Mapping[str, Any]) -> SpringState:
    """The state of `to_dict`; every field is checked for type and range (BadStateDict otherwise)."""
    if not isinstance(data, Mapping) or set(data) != _KEYS:
        raise BadStateDict(f"{GAME_NAME}: a state dict has exactly the keys {sorted(_KEYS)}")
    if not isinstance(data["config"], Mapping):
        raise BadStateDict(f"{GAME_NAME}: 'config' must be a dict")
    try:
        config = make_config(data["config"])
    except BadConfig as error:
        raise BadStateDict(str(error)) from error
    day = _int(data, "day", 0, config.max_rounds)
    log_day = _int(data, "log_day", 0, day)
    nutrients = _int(data, "nutrients", 0, config.starting_nutrients)
    waiting = data["waiting"]
    if not isinstance(waiting, list) or len(waiting) != 2 or not all(type(w) is bool for w in waiting):
        raise BadStateDict(f"{GAME_NAME}: 'waiting' must be a list of 2 booleans")
    score = _ints(data, "score", 2, DEACTIVATED_SCORE, 1 << 31)
    if all(waiting) and day < config.max_rounds and DEACTIVATED_SCORE not in score:
        raise BadStateDict(f"{GAME_NAME}: both players cannot be waiting on a running day")
    richness = _ints(data, "richness", NUM_CELLS, 0, 3)
    return SpringState(
        config=config,
        richness=richness,
        trees=_trees(data["trees"], richness),
        day=day,
        nutrients=nutrients,
        sun=_ints(data, "sun", 2, 0, 1 << 31),
        score=score,
        gathered=_ints(data, "gathered", 2, 0, 1 << 31),
        waiting=(waiting[0], waiting[1]),
        shadows=_ints(data, "shadows", NUM_CELLS, 0, LARGE),
        log_day=log_day,
        log=_log(data["log"]),
    )


def _trees(items: Any, richness: tuple[int, ...]) -> tuple[int, ...]:
    trees = [NO_TREE] * NUM_CELLS
    if not isinstance(items, list):
        raise BadStateDict(f"{GAME_NAME}: 'trees' must be a list")
    for item in items:
        if (
            not isinstance(item, Mapping)
            or set(item) != {"cell", "size", "owner", "dormant"}
            or type(item["cell"]) is not int
            or not 0 <= item["cell"] < NUM_CELLS
            or type(item["size"]) is not int
            or not 0 <= item["size"] <= LARGE
            or item["owner"] not in (0, 1)
            or type(item["owner"]) is not int
            or type(item["dormant"]) is not bool
        ):
            raise BadStateDict(
                f"{GAME_NAME}: a tree is {{'cell': 0..36, 'size': 0..3, 'owner': 0 or 1, "
                f"'dormant': bool}}, got {item!r}"
            )
        if trees[item["cell"]] != NO_TREE or not richness[item["cell"]]:
            raise BadStateDict(f"{GAME_NAME}: cell {item['cell']} holds two trees or is a hole")
        trees[item["cell"]] = tree_code(item["owner"], item["size"], item["dormant"])
    return tuple(trees)


def _log(entries: Any) -> tuple[tuple[str, str], ...]:
    if not isinstance(entries, list) or not all(
        isinstance(entry, list) and len(entry) == 2 and all(isinstance(text, str) for text in entry)
        for entry in entries
    ):
        raise BadStateDict(f"{GAME_NAME}: 'log' must be a list of [command, command] string pairs")
    return tuple((entry[0], entry[1]) for entry in entries)
