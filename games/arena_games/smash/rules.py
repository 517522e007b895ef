"""Smash the Code's rules (../shared/games/smash_the_code.md) as pure functions, width-generic.

Spec note: the spec's §11 settles its open questions against CodinGame's own referee
(`SpiritusSancti5/codinGame`, Referees/SmashTheCode/Referee.java, commit 2aec55d); where the spec's
earlier sections and that referee disagree, the referee wins and this module follows it. The
disagreements: skulls that do not fit are discarded and the game goes on (§6 and §9 Q4 said the
well's owner loses); the pairs come from `java.util.Random(seed)` (§2 and §9 Q6 left the generator
open); a player who lost reports a score of 0 and the others at least 1 (§8 ranked raw scores);
the chain power stops at 999 (§4 did not cap it; the score's clamp gives the same points). One
departure, forced by the game contract: a player left with no legal placement loses one turn
before the referee would have it lose, with the referee's outcome (below). The referee's text
commands ("x r", "x" alone meaning rotation 3) do not arise: a move is a placement index, and one
that is off the board or into a full column is not legal (the runner forfeits it, as the referee
makes such a player lose).
tests/games/data/smash_referee_games.json holds games played by that referee (its README says how).

Wells. Each player has a well of `width` columns (6 by default) and HEIGHT = 12 rows. A well is a
tuple of columns, column x a tuple of its cells from the bottom up (so gravity is built in: a
column never has a hole). A cell is SKULL (0) or a colour 1..5; the empty cells above a column's
top are simply absent. In JSON and text, rows run top (row 0) to bottom (row 11), as in the
contest's protocol: '.' empty, '0' skull, '1'..'5' colours.

Pairs. Both players play the same sequence of colour pairs (A, B), the referee's: `java.util.Random`
seeded with the game's seed draws A then B of each pair, each `nextInt(5) + 1` (`pair_sequence`).
`init` draws the whole sequence (turn_limit + QUEUE - 1 pairs), so the state holds it; the players
see QUEUE = 8 pairs (this turn's and 7 more). A search that steps states reads the real later
pairs: it plays with the future known (both seats alike), which the contest did not show.

Actions: one head "place" of 4 * width - 2 placements (22 at width 6), packed rotation-major:
rotation 0 (B right of A) at columns 0..width-2, then rotation 1 (B on top of A) at 0..width-1,
rotation 2 (B left of A) at 1..width-1, rotation 3 (B below A) at 0..width-1 (`placement` decodes
an index into (column, rotation)). A placement is legal when its columns have room: two free cells
for a vertical pair, one in each column for a horizontal one. Each block falls on its own.

A turn (one `step`, both players at once; the referee's round):
  1. each player's pair lands in its own well, then its chain resolves (`resolve`): every group of
     4+ orthogonally connected blocks of one colour clears at once, with every skull next to a
     cleared block; the rest falls; repeat. A step scores 10 * B * clamp(CP + CB + GB, 1, 999):
     B coloured blocks cleared, CP the chain power (0, 8, 16, 32, ... for steps 1, 2, 3, 4, ...,
     at most 999), CB the colour bonus (0, 2, 4, 8, 16 for 1..5 colours), GB the group bonus
     (size - 4 per group, 8 for 11+ blocks);
  2. nuisance: each player's new points are added to its `unsent` points (scored, not yet sent
     as skulls); every 420 of them (6 nuisance points of 70) send one line of skulls to the
     opponent; the remainder stays (the garbage meter: unsent / 70 nuisance points). With
     NUISANCE_OFFSET, the two players' unsent points first cancel each other (Puyo Puyo's
     offsetting; off by default, as in the referee);
  3. the lines drop on the opponent's well at once: one skull per column and line; skulls that do
     not fit are discarded (the referee drops them at the start of its next round, before the
     players' next input: the same position);
  4. the turn counter moves on (and with it the pair queue).
A player left with no legal placement for the next pair loses at once (BLOCKED), a turn before
the referee would: there it plays that round, its placement fails and it loses then, while the
other player's placement of that round still counts. The game contract forbids a player to move
with no legal action, so the position is terminal one turn early; the outcome is the referee's
(the other player wins: a player who lost scores 0 and one who did not at least 1; both blocked
at once is a draw), only the survivor's points of that last round are not played.
The game ends there, or after TURN_LIMIT turns (200, the referee's round count). The winner has
the higher `reported_scores` (the referee's: 0 for a player who lost, at least 1 for the others);
equal is a draw.

The chain loop and its scoring were also checked against brokenmass/smash-the-code's contest-era
simulator (GameMap.js): tests/games/data/smash_reference.json was generated from it.

Layout: this module is the game's entry point (the functions of `arena_games.smash.make_game`,
and every name others import): the constants, the config and the state, the pairs, the turn,
the end and the JSON form. A well's placements and its chain resolution are `smash.well`.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, replace
from types import MappingProxyType
from typing import Any

import numpy as np

from arena_games.api import BadConfig, BadStateDict, Config, IllegalAction, merge_config, one_index
from arena_games.smash.well import (
    B_OFFSET,
    COLOUR_BONUS,
    FIRST_COLUMN,
    GROUP,
    HEIGHT,
    MAX_CHAIN_POWER,
    SKULL,
    Clearing,
    Column,
    Well,
    chain,
    chain_power,
    clearing,
    drop_skulls,
    group_bonus,
    groups,
    heights,
    landing,
    legal_placements,
    place,
    placement,
    placement_index,
    placements,
    resolve,
)

__all__ = [  # the game's rules: what this module holds, and the well's public names
    "BLOCKED",
    "B_OFFSET",
    "CELL_CHARS",
    "COLOURS",
    "COLOUR_BONUS",
    "DEFAULT_WIDTH",
    "FIRST_COLUMN",
    "GAME_NAME",
    "GROUP",
    "HEIGHT",
    "JAVA_INCREMENT",
    "JAVA_MASK",
    "JAVA_MULTIPLIER",
    "LOSSES",
    "MAX_CHAIN_POWER",
    "MAX_TURN_LIMIT",
    "NUISANCE_PER_LINE",
    "POINTS_PER_LINE",
    "POINTS_PER_NUISANCE",
    "QUEUE",
    "SKULL",
    "Clearing",
    "Column",
    "SmashConfig",
    "SmashState",
    "Well",
    "chain",
    "chain_power",
    "checked_actions",
    "clearing",
    "default_config",
    "drop_skulls",
    "end_reason",
    "ending",
    "from_dict",
    "group_bonus",
    "groups",
    "heights",
    "init",
    "landing",
    "legal_masks",
    "legal_placements",
    "make_config",
    "pair_sequence",
    "place",
    "placement",
    "placement_index",
    "placements",
    "reported_scores",
    "resolve",
    "returns",
    "step",
    "to_dict",
    "to_move",
    "well_from_rows",
    "well_rows",
]

GAME_NAME = "smash"
COLOURS = 5  # colours 1..COLOURS
QUEUE = 8  # pairs the players see: this turn's and the next 7
POINTS_PER_NUISANCE = 70
NUISANCE_PER_LINE = 6
POINTS_PER_LINE = POINTS_PER_NUISANCE * NUISANCE_PER_LINE  # 420
MAX_TURN_LIMIT = 200
DEFAULT_WIDTH = 6
# Loss reasons per player ("" while it has not lost).
BLOCKED = "blocked"
LOSSES = ("", BLOCKED)
CELL_CHARS = ".012345"  # JSON/text: '.' empty, then SKULL and the colours by value + 1


def default_config(width: int) -> Mapping[str, Any]:
    """The config keys and defaults of the game `width` columns wide (WIDTH is fixed per game)."""
    return MappingProxyType({"WIDTH": width, "TURN_LIMIT": MAX_TURN_LIMIT, "NUISANCE_OFFSET": False})


@dataclass(frozen=True, slots=True)
class SmashConfig:
    width: int
    turn_limit: int
    nuisance_offset: bool

    def to_dict(self) -> dict[str, Any]:
        return {"WIDTH": self.width, "TURN_LIMIT": self.turn_limit, "NUISANCE_OFFSET": self.nuisance_offset}


@dataclass(frozen=True, slots=True)
class SmashState:
    """A position: the start of turn `turn` (or the end).

    `pairs` is the whole sequence of the game ((A, B) colours); pair `turn` is played now.
    `unsent` are the score points each player has not yet sent as skulls (< 420 between turns
    unless offsetting is on). `losses` says per player why it lost ("" if it did not).
    `chains` is each player's chain length on the last turn (steps that cleared), for viewers.
    """

    config: SmashConfig
    pairs: tuple[tuple[int, int], ...]
    turn: int
    wells: tuple[Well, Well]
    scores: tuple[int, int]
    unsent: tuple[int, int]
    losses: tuple[str, str] = ("", "")
    chains: tuple[int, int] = (0, 0)

    @property
    def is_over(self) -> bool:
        return any(self.losses) or self.turn >= self.config.turn_limit


# --- config and start -----------------------------------------------------------------------------


def make_config(overrides: Config | None, width: int = DEFAULT_WIDTH) -> SmashConfig:
    """The defaults of the `width` game updated by `overrides`; BadConfig on a bad key or value."""
    merged = merge_config(default_config(width), overrides, GAME_NAME)
    if merged["WIDTH"] != width:
        raise BadConfig(
            f"{GAME_NAME}: this game's wells are {width} wide (its inputs and actions are sized for it); "
            f"got WIDTH {merged['WIDTH']}"
        )
    if not 1 <= merged["TURN_LIMIT"] <= MAX_TURN_LIMIT:
        raise BadConfig(
            f"{GAME_NAME}: config 'TURN_LIMIT' must be in 1..{MAX_TURN_LIMIT}, got {merged['TURN_LIMIT']}"
        )
    return SmashConfig(
        width=width, turn_limit=merged["TURN_LIMIT"], nuisance_offset=merged["NUISANCE_OFFSET"]
    )


def init(seed: int, config: Config | None = None, *, width: int = DEFAULT_WIDTH) -> SmashState:
    """Turn 0: empty wells, and the pair sequence of `seed` (`pair_sequence`)."""
    settings = make_config(config, width)
    if isinstance(seed, bool) or not isinstance(seed, int | np.integer):
        raise BadConfig(f"{GAME_NAME}: the seed must be an integer, got {seed!r}")
    empty: Well = ((),) * width
    return SmashState(
        config=settings,
        pairs=pair_sequence(int(seed), settings.turn_limit + QUEUE - 1),
        turn=0,
        wells=(empty, empty),
        scores=(0, 0),
        unsent=(0, 0),
    )


# Java's java.util.Random: a 48-bit linear congruential generator (its documented algorithm).
JAVA_MULTIPLIER, JAVA_INCREMENT, JAVA_MASK = 0x5DEECE66D, 0xB, (1 << 48) - 1


def pair_sequence(seed: int, count: int) -> tuple[tuple[int, int], ...]:
    """The first `count` pairs the referee deals for `seed` (a Java long: any int, taken modulo
    2^64): `new java.util.Random(seed)`, then per pair A = nextInt(5) + 1 and B = nextInt(5) + 1."""
    state = (seed ^ JAVA_MULTIPLIER) & JAVA_MASK
    colours = []
    while len(colours) < 2 * count:
        state = (state * JAVA_MULTIPLIER + JAVA_INCREMENT) & JAVA_MASK
        bits = state >> 17  # next(31): the top 31 of the 48 bits
        # nextInt(bound) rejects the last incomplete run of `bound` values below 2^31
        if bits - bits % COLOURS + COLOURS - 1 < 1 << 31:
            colours.append(bits % COLOURS + 1)
    return tuple(zip(colours[::2], colours[1::2], strict=True))


# --- the turn ---------------------------------------------------------------------------------------


def to_move(state: SmashState) -> tuple[int, ...]:
    """Both players every turn; () once the game is over."""
    return () if state.is_over else (0, 1)


def legal_masks(state: SmashState, player: int) -> tuple[np.ndarray]:
    """One bool mask (4 * width - 2,): `player`'s placements that fit (all False once over)."""
    if state.is_over:
        return (np.zeros(len(placements(state.config.width)), dtype=bool),)
    return (legal_placements(state.wells[player]),)


def step(state: SmashState, joint: Sequence[Sequence[int]]) -> SmashState:
    """One turn: one legal placement (a 1-tuple) per player, in seat order (the module's doc)."""
    actions = _actions(state, joint)
    pair = state.pairs[state.turn]
    wells, scores, unsent, chains = [], list(state.scores), list(state.unsent), []
    for player, action in enumerate(actions):
        well, points, steps = resolve(
            place(state.wells[player], pair, *placement(state.config.width, action))
        )
        wells.append(well)
        chains.append(steps)
        scores[player] += points
        unsent[player] += points
    if state.config.nuisance_offset:
        cancelled = min(unsent)
        unsent = [owed - cancelled for owed in unsent]
    lines = [owed // POINTS_PER_LINE for owed in unsent]
    unsent = [owed % POINTS_PER_LINE for owed in unsent]
    wells = [drop_skulls(wells[player], lines[1 - player]) for player in (0, 1)]
    turn = state.turn + 1
    losses = [
        BLOCKED if turn < state.config.turn_limit and not legal_placements(well).any() else ""
        for well in wells
    ]
    return replace(
        state,
        turn=turn,
        wells=(wells[0], wells[1]),
        scores=(scores[0], scores[1]),
        unsent=(unsent[0], unsent[1]),
        losses=(losses[0], losses[1]),
        chains=(chains[0], chains[1]),
    )


def _actions(state: SmashState, joint: Sequence[Sequence[int]]) -> tuple[int, int]:
    """The two placement indices of `joint`; IllegalAction if malformed or not legal."""
    return checked_actions(joint, state.is_over, state.turn, lambda player: legal_masks(state, player)[0])


def checked_actions(
    joint: Sequence[Sequence[int]], over: bool, turn: int, mask_of: Callable[[int], np.ndarray]
) -> tuple[int, int]:
    """The two placement indices of `joint` in a game `over` or not, on turn `turn`, `mask_of(player)`
    giving a player's legal placements (bool (4 * width - 2,)); IllegalAction if malformed or not
    legal. Shared by every engine of the game (the kernel game's too), so they refuse alike."""
    try:
        indices = [one_index(action) for action in joint]
    except (TypeError, ValueError):
        indices = None
    if over or indices is None or len(indices) != 2:
        raise IllegalAction(
            f"{GAME_NAME}: a joint action is one (placement,) per player in {() if over else (0, 1)}, "
            f"like [(3,), (12,)]; got {joint!r}"
        )
    for player, index in enumerate(indices):
        mask = mask_of(player)
        if not 0 <= index < mask.size or not mask[index]:
            raise IllegalAction(
                f"{GAME_NAME}: placement {index} is not legal for player {player} on turn {turn}; "
                f"legal placements: {np.flatnonzero(mask).tolist()}"
            )
    return indices[0], indices[1]


# --- the end ------------------------------------------------------------------------------------------


def reported_scores(state: SmashState) -> tuple[int, int]:
    """The scores the referee reports: the points scored while the game runs; once it is over,
    0 for a player who lost and at least 1 for one who did not. The higher one wins."""
    if not state.is_over:
        return state.scores
    first, second = (
        0 if lost else max(1, points) for points, lost in zip(state.scores, state.losses, strict=True)
    )
    return (first, second)


def returns(state: SmashState) -> tuple[float, float]:
    """+1 / -1 for the winner / loser once over (the higher reported score); 0 for a draw or a
    running game."""
    first, second = reported_scores(state)
    if not state.is_over or first == second:
        return (0.0, 0.0)
    return (1.0, -1.0) if first > second else (-1.0, 1.0)


def end_reason(state: SmashState) -> str:
    if not state.is_over:
        return ""
    return ending(state.turn, state.config.turn_limit, state.losses, reported_scores(state))


def ending(turn: int, turn_limit: int, losses: tuple[str, str], reported: tuple[int, int]) -> str:
    """`end_reason` of a finished game on turn `turn` with these losses and reported scores."""
    first, second = reported
    outcome = "a draw" if first == second else f"player {1 if first > second else 2} wins"
    score = f"score {first} to {second}"
    if any(losses):
        blocked = " and ".join(f"player {p + 1}" for p, why in enumerate(losses) if why)
        has = "have" if all(losses) else "has"
        return f"turn {turn}: {blocked} {has} no room for the next pair, {outcome} ({score})"
    return f"turn limit {turn_limit} reached: {score}, {outcome}"


# --- JSON ---------------------------------------------------------------------------------------------


def well_rows(well: Well) -> list[str]:
    """The well as HEIGHT strings, top row first ('.' empty, '0' skull, '1'..'5' colours)."""
    columns = ["".join(CELL_CHARS[cell + 1] for cell in column).ljust(HEIGHT, ".") for column in well]
    return ["".join(row) for row in zip(*columns, strict=True)][::-1]


def well_from_rows(rows: Sequence[str], width: int) -> Well:
    """The well of `well_rows`; ValueError if malformed or if a block floats over an empty cell."""
    if len(rows) != HEIGHT or any(not isinstance(r, str) or len(r) != width for r in rows):
        raise ValueError(f"a well is {HEIGHT} strings of {width} characters")
    columns = []
    for x in range(width):
        text = "".join(row[x] for row in reversed(rows)).rstrip(".")  # bottom up
        if any(char not in CELL_CHARS[1:] for char in text):
            raise ValueError(f"column {x} has a floating block or a bad character: {text!r}")
        columns.append(tuple(CELL_CHARS.index(char) - 1 for char in text))
    return tuple(columns)


def to_dict(state: SmashState) -> dict[str, Any]:
    return {
        "config": state.config.to_dict(),
        "pairs": [list(pair) for pair in state.pairs],
        "turn": state.turn,
        "wells": [well_rows(well) for well in state.wells],
        "scores": list(state.scores),
        "unsent": list(state.unsent),
        "losses": list(state.losses),
        "chains": list(state.chains),
    }


_KEYS = {"config", "pairs", "turn", "wells", "scores", "unsent", "losses", "chains"}


def from_dict(data: Mapping[str, Any], *, width: int = DEFAULT_WIDTH) -> SmashState:
    """The state of `to_dict`; every field is checked (BadStateDict otherwise)."""
    if not isinstance(data, Mapping) or set(data) != _KEYS or not isinstance(data["config"], Mapping):
        raise BadStateDict(f"{GAME_NAME}: a state dict has exactly the keys {sorted(_KEYS)}")
    try:
        config = make_config(data["config"], width)
    except BadConfig as error:
        raise BadStateDict(str(error)) from error
    pairs = data["pairs"]
    if (
        not isinstance(pairs, list)
        or len(pairs) != config.turn_limit + QUEUE - 1
        or not all(_is_pair(pair) for pair in pairs)
    ):
        raise BadStateDict(
            f"{GAME_NAME}: 'pairs' must be {config.turn_limit + QUEUE - 1} pairs of colours 1..5"
        )
    turn = data["turn"]
    if type(turn) is not int or not 0 <= turn <= config.turn_limit:
        raise BadStateDict(f"{GAME_NAME}: 'turn' must be an integer in 0..{config.turn_limit}")
    losses = data["losses"]
    if not isinstance(losses, list) or len(losses) != 2 or not all(loss in LOSSES for loss in losses):
        raise BadStateDict(f"{GAME_NAME}: 'losses' must be 2 of {LOSSES}")
    state = SmashState(
        config=config,
        pairs=tuple((a, b) for a, b in pairs),
        turn=turn,
        wells=(_well(data["wells"], 0, width), _well(data["wells"], 1, width)),
        scores=_ints(data, "scores", 1 << 40),
        unsent=_ints(data, "unsent", 1 << 40),
        losses=(losses[0], losses[1]),
        chains=_ints(data, "chains", HEIGHT * width),
    )
    for player in to_move(state):
        if not legal_placements(state.wells[player]).any():
            raise BadStateDict(
                f"{GAME_NAME}: well {player} has no room for a pair, so its player has lost: "
                f"'losses' must say {BLOCKED!r} for it"
            )
    return state


def _is_pair(pair: Any) -> bool:
    return (
        isinstance(pair, list) and len(pair) == 2 and all(type(c) is int and 1 <= c <= COLOURS for c in pair)
    )


def _well(wells: Any, player: int, width: int) -> Well:
    if not isinstance(wells, list) or len(wells) != 2:
        raise BadStateDict(f"{GAME_NAME}: 'wells' must be 2 wells")
    try:
        well = well_from_rows(wells[player], width)
    except (TypeError, ValueError) as error:
        raise BadStateDict(f"{GAME_NAME}: well {player}: {error}") from error
    if any(len(group) >= GROUP for group in groups(well)):
        raise BadStateDict(f"{GAME_NAME}: well {player} has a group of {GROUP}+ left standing")
    return well


def _ints(data: Mapping[str, Any], key: str, high: int) -> tuple[int, int]:
    values = data[key]
    if (
        not isinstance(values, list)
        or len(values) != 2
        or not all(type(v) is int and 0 <= v <= high for v in values)
    ):
        raise BadStateDict(f"{GAME_NAME}: {key!r} must be 2 integers in 0..{high}")
    return (values[0], values[1])
