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

Layout: this module is the game's entry point (the functions of `arena_games.spring2021.GAME`, and
every name others import). It keeps the action head, the end and the JSON form; the state, the
constants and the start are `spring2021.state`, the commands and the frame and day resolution
`spring2021.frames`.
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Collection, Mapping, Sequence
from types import MappingProxyType
from typing import Any

import numpy as np

from arena_games.api import BadConfig, BadStateDict, IllegalAction, one_index
from arena_games.spring2021.board import (
    NUM_CELLS,
    WITHIN,
)
from arena_games.spring2021.frames import (
    WAIT,
    Command,
    command_text,
    grow_cost,
    parse_command,
    resolve_frame,
    seed_cost,
    size_counts,
    step_commands,
)
from arena_games.spring2021.state import (
    BASE_COST,
    COMPLETE_COST,
    DEACTIVATED_SCORE,
    DEFAULT_CONFIG,
    DORMANT_BIT,
    GAME_NAME,
    LARGE,
    LIMITS,
    MAX_FRAMES_PER_DAY,
    MAX_ROUNDS_LIMIT,
    MAX_STEPS,
    NO_TREE,
    NUM_ACTIONS,
    OWNER_SHIFT,
    SIZE_BITS,
    WAIT_ACTION,
    SpringConfig,
    SpringState,
    compute_shadows,
    init,
    make_config,
    to_move,
    tree_code,
)

__all__ = [  # the game's rules: what this module keeps, and the state's and the frames' public names
    "BASE_COST",
    "COMPLETE_COST",
    "DEACTIVATED_SCORE",
    "DEFAULT_CONFIG",
    "DORMANT_BIT",
    "GAME_NAME",
    "LARGE",
    "LIMITS",
    "MAX_FRAMES_PER_DAY",
    "MAX_ROUNDS_LIMIT",
    "MAX_STEPS",
    "NO_TREE",
    "NUM_ACTIONS",
    "OWNER_SHIFT",
    "SIZE_BITS",
    "WAIT",
    "WAIT_ACTION",
    "Command",
    "SpringConfig",
    "SpringState",
    "action_command",
    "action_commands",
    "checked_actions",
    "command_text",
    "compute_shadows",
    "end_reason",
    "final_scores",
    "from_dict",
    "grow_cost",
    "init",
    "legal_masks",
    "make_config",
    "parse_command",
    "resolve_frame",
    "returns",
    "seed_cost",
    "size_counts",
    "step",
    "step_commands",
    "step_favouring",
    "to_dict",
    "to_move",
    "tree_code",
]


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
    indices = checked_actions(joint, players, state.day, lambda player: action_commands(state, player))
    return {
        player: action_commands(state, player)[index] for player, index in zip(players, indices, strict=True)
    }


def checked_actions(
    joint: Sequence[Sequence[int]],
    players: tuple[int, ...],
    day: int,
    legal_of: Callable[[int], Collection[int]],
) -> list[int]:
    """The action indices of `joint`, one per player of `players` (to move on `day`), each in
    `legal_of(player)` (its legal action indices); IllegalAction if malformed or not legal. Shared
    by every engine of the game (the kernel game's too), so they refuse alike."""
    try:
        indices = [one_index(action) for action in joint]
    except (TypeError, ValueError):
        indices = None
    if indices is None or len(indices) != len(players):
        raise IllegalAction(
            f"{GAME_NAME}: a joint action is one (index,) per player in {players}, "
            f"like [(37,), (5,)]; got {joint!r}"
        )
    for player, index in zip(players, indices, strict=True):
        legal = legal_of(player)
        if index not in legal:
            raise IllegalAction(
                f"{GAME_NAME}: action {index} is not legal for player {player} on day {day}; "
                f"legal actions: {sorted(legal)}"
            )
    return indices


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
