"""Bobail as a `Game` whose states are the kernels' arrays (a `kernel_games.Position`: board the
history int64 (HISTORY,), info int64 (FIELDS,), as `kernels` lays them out): the engine the match
loop plays on the compiled core (ARCHITECTURE "Compiled core"), so a half-move is checked, masked and stepped
on the arrays the searches take, with no conversion per decision.

Every function is the reference's (`rules`, `encoding`) on `kernels`, bit for bit
(tests/games/test_bobail_kernel_game.py): the same masks, steps, returns, end reasons, network inputs
and playouts, and the same IllegalAction for a bad joint action (`rules.checked_action`); what is
shown or stored goes through the reference state (`kernel_games.kernel_game`). The compiled searches
read a position's arrays (`arrays`) without converting it.
"""

from __future__ import annotations

import sys
from collections.abc import Sequence

import numpy as np

from arena_games.api import Game, GameError
from arena_games.bobail import GAME as REFERENCE
from arena_games.bobail import kernels, rules
from arena_games.bobail.kernels import FIELDS, HALF_MOVES, HISTORY
from arena_games.bobail.rules import NUM_ACTIONS
from arena_games.kernel_games import (
    Position,
    Positions,
    kernel_game,
    shared_playouts,
)

# The reference state's position and back; a state's arrays for the compiled searches; batches.
POSITIONS = Positions(kernels.from_state, kernels.to_state, (HISTORY, np.int64), FIELDS)
from_reference, to_reference = POSITIONS.from_reference, POSITIONS.to_reference
arrays, stack = POSITIONS.arrays, POSITIONS.stack


def to_move(position: Position) -> tuple[int, ...]:
    mover = kernels.to_move(position.info)
    return () if mover < 0 else (mover,)


def _legal(position: Position) -> np.ndarray:
    """bool (NUM_ACTIONS,): the mover's legal actions (all False once over)."""
    mask = np.empty(NUM_ACTIONS, dtype=bool)
    kernels.legal_mask(position.board, position.info, mask)
    return mask


def legal_masks(position: Position, player: int) -> tuple[np.ndarray]:
    """`rules.legal_masks`: `player`'s legal actions (all False if it is not to move)."""
    return (_legal(position) if to_move(position) == (player,) else np.zeros(NUM_ACTIONS, dtype=bool),)


def step(position: Position, joint: Sequence[Sequence[int]]) -> Position:
    """`rules.step` on a copy of the position's arrays."""
    half_moves, legal = int(position.info[HALF_MOVES]), np.flatnonzero(_legal(position)).tolist()
    action = rules.checked_action(joint, end_reason(position), half_moves, legal)
    history, info = position.board.copy(), position.info.copy()
    kernels.step(history, info, action)
    return Position(history, info)


def returns(position: Position) -> tuple[float, float]:
    return kernels.returns_of(position.info)


def end_reason(position: Position) -> str:
    return kernels.end_reason(position.info)


def encode_many(positions: Sequence[Position], players: Sequence[int]) -> dict[str, np.ndarray]:
    """`encoding.encode` of each position for its player: {"board": float32 (n, 43, 5, 5)}."""
    if len(players) != len(positions) or any(player not in (0, 1) for player in players):
        raise GameError(f"bobail: one player (0 or 1) per state, got {list(players)!r}")
    return {"board": kernels.encode_batch(*stack(positions), np.array(players, dtype=np.int64))}


def encode(position: Position, player: int) -> dict[str, np.ndarray]:
    return {"board": encode_many([position], [player])["board"][0]}


# `Game.random_playouts`: on the kernels given PCG64 generators (shared or not), else on the
# reference states.
playouts = shared_playouts(REFERENCE, to_reference, stack, kernels.playout_returns)

# The game of this module's functions (kernel_games.RULES) and the reference's views of its states.
GAME: Game[Position] = kernel_game(REFERENCE, sys.modules[__name__])
