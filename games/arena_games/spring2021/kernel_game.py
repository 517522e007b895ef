"""Spring 2021 as a `Game` whose states are the kernels' arrays (a `kernel_games.Position`: board int8
(BOARD,), info int64 (FIELDS,), as `kernels` lays them out): the engine the match loop plays on the
compiled core (ARCHITECTURE "Compiled core"), so a frame steps and masks in compiled
code instead of the reference's frozen dataclasses and command mappings.

Every function is the reference's (`rules`, `encoding`) on `kernels`, bit for bit
(tests/games/test_spring2021_kernel_game.py): the same masks, frames (favoured ones included),
returns, end reasons, network inputs and playouts, and the same IllegalAction for a bad joint
action (`rules.checked_actions`); what is shown or stored goes through the reference state
(`kernel_games.kernel_game`). The gardener and the compiled searches read a position's arrays
(`arrays`, `gardener_action`) without converting it.
"""

from __future__ import annotations

import sys
from collections.abc import Sequence

import numpy as np

from arena_games.api import Game, GameError
from arena_games.kernel_games import (
    Position,
    Positions,
    kernel_game,
    shared_playouts,
)
from arena_games.spring2021 import GAME as REFERENCE
from arena_games.spring2021 import kernels, rules
from arena_games.spring2021.gardener import gardener_choice
from arena_games.spring2021.kernels import BOARD, DAY_FIELD, FIELDS, MAX_ROUNDS, RICHNESS, SHADOWS, TREES
from arena_games.spring2021.rules import LARGE, NO_TREE, NUM_ACTIONS, SIZE_BITS, WAIT_ACTION

_NOT_TO_MOVE = -1  # the kernels' action of a player who is not to move in a frame


# The reference state's position (a log the arrays cannot hold: ValueError) and back; a state's
# arrays for the compiled searches; batches.
POSITIONS = Positions(kernels.from_state, kernels.to_state, (BOARD, np.int8), FIELDS)
from_reference, to_reference = POSITIONS.from_reference, POSITIONS.to_reference
arrays, stack = POSITIONS.arrays, POSITIONS.stack


def to_move(position: Position) -> tuple[int, ...]:
    movers = kernels.to_move(position.info)
    return tuple(player for player in (0, 1) if movers >> player & 1)


def _mask(position: Position, player: int) -> np.ndarray:
    mask = np.empty(NUM_ACTIONS, dtype=bool)
    kernels.legal_mask(position.board, position.info, player, mask)
    return mask


def _legal(position: Position, player: int) -> list[int]:
    return np.flatnonzero(_mask(position, player)).tolist()


def legal_masks(position: Position, player: int) -> tuple[np.ndarray]:
    """`rules.legal_masks`: `player`'s legal actions (all False if it is not to move)."""
    if player not in (0, 1):
        raise GameError(f"spring2021: a player is 0 or 1, got {player!r}")
    return (_mask(position, player),)


def _frame(position: Position, joint: Sequence[Sequence[int]], favoured: int) -> Position:
    """The frame of `joint` (checked as `rules.step` checks it) on a copy of the position's arrays,
    `favoured` winning its interactions (-1: none)."""
    players = to_move(position)
    day = int(position.info[DAY_FIELD])
    indices = rules.checked_actions(joint, players, day, lambda player: _legal(position, player))
    actions = [_NOT_TO_MOVE, _NOT_TO_MOVE]
    for player, index in zip(players, indices, strict=True):
        actions[player] = index
    board, info = position.board.copy(), position.info.copy()
    kernels.step_favouring(board, info, actions[0], actions[1], favoured)
    return Position(board, info)


def step(position: Position, joint: Sequence[Sequence[int]]) -> Position:
    """`rules.step`."""
    return _frame(position, joint, -1)


def step_favouring(position: Position, joint: Sequence[Sequence[int]], player: int) -> Position:
    """`rules.step_favouring`: `player` wins the frame's interactions."""
    return _frame(position, joint, player)


def returns(position: Position) -> tuple[float, float]:
    return kernels.returns_of(position.board, position.info)


def end_reason(position: Position) -> str:
    return kernels.end_reason(position.board, position.info)


def encode_many(positions: Sequence[Position], players: Sequence[int]) -> dict[str, np.ndarray]:
    """`encoding.encode` of each position for its player: {"obs": float32 (n, INPUT_SIZE)}."""
    if len(players) != len(positions) or any(player not in (0, 1) for player in players):
        raise GameError(f"spring2021: one player (0 or 1) per state, got {list(players)!r}")
    return {"obs": kernels.encode_batch(*stack(positions), np.array(players, dtype=np.int64))}


def encode(position: Position, player: int) -> dict[str, np.ndarray]:
    return {"obs": encode_many([position], [player])["obs"][0]}


# `playouts.playouts`: on the kernels given PCG64 generators (shared or not), else on the reference states.
playouts = shared_playouts(REFERENCE, to_reference, stack, kernels.playout_returns)


def gardener_action(position: Position, player: int) -> int:
    """`gardener.gardener_action` of the position: its legal actions' verbs from the tree codes (an
    own tree's cell grows it, or completes it when large; an empty cell is a seed's target)."""
    richness = position.board[RICHNESS:TREES].tolist()
    trees = position.board[TREES:SHADOWS].tolist()
    verbs = {action: _verb(action, trees) for action in _legal(position, player)}
    day, max_rounds = int(position.info[DAY_FIELD]), int(position.info[MAX_ROUNDS])
    return gardener_choice(verbs, richness, trees, day, max_rounds, player)


def _verb(action: int, trees: Sequence[int]) -> str:
    """The verb of a legal action given the cells' tree codes (`rules.action_commands`)."""
    if action == WAIT_ACTION:
        return "WAIT"
    if trees[action] == NO_TREE:
        return "SEED"
    return "COMPLETE" if trees[action] & SIZE_BITS == LARGE else "GROW"


# The game of this module's functions (kernel_games.RULES) and the reference's views of its states.
GAME: Game[Position] = kernel_game(REFERENCE, sys.modules[__name__])
