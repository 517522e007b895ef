"""Smash the Code (6 wide) as a `Game` whose states are the kernels' arrays (`Wells`): the engine the
match loop plays on the compiled core (ARCHITECTURE "Compiled core"), so a turn costs a few
microseconds of compiled code instead of the reference's tuples of columns and chain loop (about
120 µs).

Every function is the reference's (`rules`, `encoding`) on `kernels`, bit for bit
(tests/games/test_smash_kernel_game.py): the same masks, steps, returns, end reasons, network inputs
and playouts, and the same IllegalAction for a bad joint action (`rules.checked_actions`); what is
shown or stored goes through the reference state (`kernel_games.kernel_game`). The house bots and
the compiled searches read a position's arrays (`arrays`, `movers_wells_and_pairs`) without
converting it.
"""

from __future__ import annotations

import dataclasses
import sys
from collections.abc import Sequence

import numpy as np

from arena_games.api import Game, GameError
from arena_games.kernel_games import kernel_game, shared_playouts
from arena_games.smash import GAME as REFERENCE
from arena_games.smash import kernels, rules
from arena_games.smash.kernels import FIELDS, MAX_PAIRS, RUNNING, TURN
from arena_games.smash.rules import DEFAULT_WIDTH, HEIGHT

PLACEMENTS = REFERENCE.spec.heads["place"]


@dataclasses.dataclass(frozen=True, eq=False)
class Wells:
    """A game between turns as the kernels hold it; its arrays are never changed once made.
    wells int8 (2 * DEFAULT_WIDTH * HEIGHT,), pairs int8 (2 * MAX_PAIRS,) (shared by every position
    of one game), info int64 (FIELDS,): the layout of `kernels`' module doc."""

    wells: np.ndarray
    pairs: np.ndarray
    info: np.ndarray


def from_reference(state: rules.SmashState) -> Wells:
    """The position of a reference state (6 wide)."""
    return Wells(*kernels.from_state(state))


def to_reference(position: Wells) -> rules.SmashState:
    """The reference state of a position."""
    return kernels.to_state(position.wells, position.pairs, position.info)


def arrays(state: rules.SmashState | Wells) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(wells, pairs, info) of a reference state or of a position (its own arrays: read them only)."""
    if isinstance(state, Wells):
        return state.wells, state.pairs, state.info
    return kernels.from_state(state)


def stack(positions: Sequence[Wells]) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The positions as a batch of new arrays: wells (n, 2 * DEFAULT_WIDTH * HEIGHT), pairs
    (n, 2 * MAX_PAIRS), infos (n, FIELDS)."""
    if not positions:
        return (
            np.empty((0, 2 * DEFAULT_WIDTH * HEIGHT), np.int8),
            np.empty((0, 2 * MAX_PAIRS), np.int8),
            np.empty((0, FIELDS), np.int64),
        )
    return (
        np.stack([position.wells for position in positions]),
        np.stack([position.pairs for position in positions]),
        np.stack([position.info for position in positions]),
    )


def movers_wells_and_pairs(
    positions: Sequence[Wells], players: Sequence[int]
) -> tuple[np.ndarray, np.ndarray]:
    """The house bots' view of each position for its player: the player's well int8 (n, HEIGHT,
    DEFAULT_WIDTH) (`playouts.well_array`'s layout: bottom row first, EMPTY above each column's top)
    and this turn's and the next pair int8 (n, 2, 2)."""
    wells = np.stack([position.wells for position in positions]).reshape(-1, 2, DEFAULT_WIDTH, HEIGHT)
    own = wells[np.arange(len(positions)), np.asarray(players, dtype=np.int64)].transpose(0, 2, 1)
    pairs = np.stack([position.pairs.reshape(-1, 2)[position.info[TURN] :][:2] for position in positions])
    return own, pairs


def _running(position: Wells) -> bool:
    return kernels.end_code(position.info) == RUNNING


def to_move(position: Wells) -> tuple[int, ...]:
    return (0, 1) if _running(position) else ()


def _mask(position: Wells, player: int) -> np.ndarray:
    mask = np.empty(PLACEMENTS, dtype=bool)
    kernels.legal_mask(position.wells, position.info, player, mask)
    return mask


def legal_masks(position: Wells, player: int) -> tuple[np.ndarray]:
    """`rules.legal_masks`: `player`'s placements that fit (all False once over)."""
    if player not in (0, 1):
        raise GameError(f"smash: a player is 0 or 1, got {player!r}")
    return (_mask(position, player),)


def step(position: Wells, joint: Sequence[Sequence[int]]) -> Wells:
    """`rules.step` on a copy of the position's arrays."""
    first, second = rules.checked_actions(
        joint, not _running(position), int(position.info[TURN]), lambda player: _mask(position, player)
    )
    wells, info = position.wells.copy(), position.info.copy()
    kernels.step(wells, position.pairs, info, first, second)
    return Wells(wells, position.pairs, info)


def returns(position: Wells) -> tuple[float, float]:
    return kernels.returns_of(position.info)


def end_reason(position: Wells) -> str:
    return kernels.end_reason(position.info)


def encode_many(positions: Sequence[Wells], players: Sequence[int]) -> dict[str, np.ndarray]:
    """`encoding.encode` of each position for its player: "own", "opponent", "pieces" float32
    (n, planes, HEIGHT, DEFAULT_WIDTH)."""
    if len(players) != len(positions) or any(player not in (0, 1) for player in players):
        raise GameError(f"smash: one player (0 or 1) per state, got {list(players)!r}")
    own, opponent, pieces = kernels.encode_batch(*stack(positions), np.array(players, dtype=np.int64))
    return {"own": own, "opponent": opponent, "pieces": pieces}


def encode(position: Wells, player: int) -> dict[str, np.ndarray]:
    return {name: planes[0] for name, planes in encode_many([position], [player]).items()}


# `playouts.playouts`: on the kernels given PCG64 generators (shared or not), else on the reference states.
playouts = shared_playouts(REFERENCE, to_reference, stack, kernels.playout_returns)

# The game of this module's functions (kernel_games.RULES) and the reference's views of its states.
GAME: Game[Wells] = kernel_game(REFERENCE, sys.modules[__name__])
