"""Pente as a `Game` whose states are the kernels' arrays (a `kernel_games.Position`: board int8
(STRIDE,), info int64 (FIELDS,), as `kernels` lays them out): the engine the match loop plays on
the compiled core (ARCHITECTURE "Compiled core"), so a move is checked, masked and stepped on the
arrays the searches take, with no conversion per decision.

Every function is the reference's (`rules`, `encoding`) on `kernels`, bit for bit
(tests/games/test_pente_kernel_game.py): the same masks, steps, returns, end reasons, network inputs
and playouts, and the same IllegalAction for a bad joint action (`rules.checked_point`); what is
shown or stored goes through the reference state (`kernel_games.kernel_game`). The compiled searches
read a position's arrays (`arrays`) without converting it; so does the threats house bot
(`threats_action`).
"""

from __future__ import annotations

import functools
import sys
from collections.abc import Sequence

import numpy as np

from arena_games.api import Game, GameError
from arena_games.kernel_games import (
    Position,
    Positions,
    distinct_playouts,
    kernel_game,
)
from arena_games.pente import GAME as REFERENCE
from arena_games.pente import kernels, rules
from arena_games.pente.kernels import CAPTURES_0, CAPTURES_1, END, FIELDS, PLY
from arena_games.pente.playouts import RUNNING, STRIDE
from arena_games.pente.rules import END_REASONS
from arena_games.pente.tables import EMPTY, NUM_POINTS
from arena_games.pente.threats import threats_move

# The reference state's position and back; a state's arrays for the compiled searches; batches.
POSITIONS = Positions(kernels.from_state, kernels.to_state, (STRIDE, np.int8), FIELDS)
from_reference, to_reference = POSITIONS.from_reference, POSITIONS.to_reference
arrays, stack = POSITIONS.arrays, POSITIONS.stack


def end_reason(position: Position) -> str:
    return END_REASONS[position.info[END] - 1] if position.info[END] != RUNNING else ""


def to_move(position: Position) -> tuple[int, ...]:
    return () if position.info[END] != RUNNING else (int(position.info[PLY]) % 2,)


def legal_masks(position: Position, player: int) -> tuple[np.ndarray]:
    """`rules.legal_masks`: the empty points the opening rules allow; all False if `player` is not
    to move."""
    mask = np.zeros(NUM_POINTS, dtype=bool)
    if to_move(position) == (player,):
        kernels.legal_mask(position.board, position.info, mask)
    return (mask,)


def step(position: Position, joint: Sequence[Sequence[int]]) -> Position:
    """`rules.step` on a copy of the position's arrays."""
    info, occupied = position.info, functools.partial(_occupied, position)
    point = rules.checked_point(joint, end_reason(position), int(info[PLY]), occupied, kernels.ban_kind(info))
    board, info = position.board.copy(), info.copy()
    kernels.step(board, info, point)
    return Position(board, info)


def _occupied(position: Position, point: int) -> bool:
    return position.board[point] != EMPTY


def returns(position: Position) -> tuple[float, float]:
    return kernels.returns_of(position.info)


def encode_many(positions: Sequence[Position], players: Sequence[int]) -> dict[str, np.ndarray]:
    """`encoding.encode` of each position for its player: "board" float32 (n, 6, 19, 19) and
    "captures" float32 (n, 2)."""
    if len(players) != len(positions) or any(player not in (0, 1) for player in players):
        raise GameError(f"pente: one player (0 or 1) per state, got {list(players)!r}")
    planes, captures = kernels.encode_batch(*stack(positions), np.array(players, dtype=np.int64))
    return {"board": planes, "captures": captures}


def encode(position: Position, player: int) -> dict[str, np.ndarray]:
    return {name: planes[0] for name, planes in encode_many([position], [player]).items()}


def threats_action(position: Position, player: int, rng: np.random.Generator) -> int:
    """`threats.threats_action` of the position: the strategy on its board and captured pairs."""
    (legal,) = legal_masks(position, player)
    captures = (int(position.info[CAPTURES_0]), int(position.info[CAPTURES_1]))
    return threats_move(position.board[:NUM_POINTS].view(np.uint8), captures, player, legal, rng)


# `playouts.playouts`: on the kernels given distinct PCG64 generators (as `kernels.playouts`), else on
# the reference states.
playouts = distinct_playouts(REFERENCE, to_reference, stack, kernels.playout_returns)

# The game of this module's functions (kernel_games.RULES) and the reference's views of its states.
GAME: Game[Position] = kernel_game(REFERENCE, sys.modules[__name__])
