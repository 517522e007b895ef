"""What every *kernel game* shares: a `Game` whose states are a game's compiled kernels' arrays, the
engine the match loop plays on the compiled core (`<game>/kernel_game.py`; ARCHITECTURE "Compiled
core"). Its rules run on the kernels; what is shown or stored goes through the reference state.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Sequence
from types import ModuleType
from typing import Any

import numpy as np

from arena_games import kernel_batches, pcg64
from arena_games.api import Game


@dataclasses.dataclass(frozen=True, eq=False)
class Position:
    """A position of a game whose kernels hold it in two arrays, `board` and `info` (int64; Spring
    2021's, Pente's, Bobail's: each kernel game says their layout); never changed once made."""

    board: np.ndarray
    info: np.ndarray


@dataclasses.dataclass(frozen=True)
class Positions:
    """How a game whose kernels hold it in two arrays turns states into `Position`s and back:
    `from_state` and `to_state` are its kernels' conversions of a reference state, `board` the
    board's (size, dtype), `fields` the info's size."""

    from_state: Callable[[Any], tuple[np.ndarray, np.ndarray]]
    to_state: Callable[[np.ndarray, np.ndarray], Any]
    board: tuple[int, type]
    fields: int

    def from_reference(self, state: Any) -> Position:
        """The position of a reference state."""
        return Position(*self.from_state(state))

    def to_reference(self, position: Position) -> Any:
        """The reference state of a position."""
        return self.to_state(position.board, position.info)

    def arrays(self, state: Any) -> tuple[np.ndarray, np.ndarray]:
        """(board, info) of a position or of a reference state, as new arrays: what a compiled
        search takes (and may use as scratch)."""
        if isinstance(state, Position):
            return state.board.copy(), state.info.copy()
        return self.from_state(state)

    def stack(self, positions: Sequence[Position]) -> tuple[np.ndarray, np.ndarray]:
        """The positions as a batch of new arrays: boards (n, board size) of the board's dtype,
        infos int64 (n, fields)."""
        if not positions:
            return np.empty((0, self.board[0]), self.board[1]), np.empty((0, self.fields), np.int64)
        return np.stack([position.board for position in positions]), np.stack([p.info for p in positions])


# The functions a kernel game's module defines on its states (with `to_reference` and
# `from_reference`), and `step_favouring` where the reference game has one.
RULES = ("to_move", "legal_masks", "step", "returns", "end_reason", "encode", "encode_many", "playouts")


def kernel_game(reference: Game, module: ModuleType) -> Game:
    """The game of `reference` over the kernel states of `module` (a `<game>/kernel_game.py`): its
    RULES are the module's; its start positions are the reference's turned into kernel states
    (`module.from_reference`), as are the states of `from_dict`; render, view and to_dict are the
    reference's of the reference state (`module.to_reference`), once per call: they are not per
    move."""
    to_reference, from_reference = module.to_reference, module.from_reference
    rules = {name: getattr(module, name) for name in RULES}
    if reference.step_favouring is not None:
        rules["step_favouring"] = module.step_favouring
    return Game(
        spec=reference.spec,
        init=lambda seed, config=None: from_reference(reference.init(seed, config)),
        render=lambda state: reference.render(to_reference(state)),
        view=lambda state: reference.view(to_reference(state)),
        to_dict=lambda state: reference.to_dict(to_reference(state)),
        from_dict=lambda data: from_reference(reference.from_dict(data)),
        opening=reference.opening,
        **rules,
    )


def shared_playouts(
    reference: Game,
    to_reference: Callable[[Any], Any],
    stack: Callable[[Sequence[Any]], tuple[np.ndarray, ...]],
    playout_returns: Callable[..., np.ndarray],
) -> Callable[[Sequence[Any], Sequence[np.random.Generator]], np.ndarray]:
    """A kernel game's `playouts` for kernels whose `playout_returns(*stack(states), words,
    rng_of_row)` reproduce the reference's given PCG64 generators, shared by several states or
    not; other generators play the reference states."""

    def playouts(states: Sequence[Any], rngs: Sequence[np.random.Generator]) -> np.ndarray:
        if all(pcg64.is_pcg64(rng) for rng in rngs):
            compiled = kernel_batches.compiled_playouts
            return compiled(states, rngs, stack, playout_returns, shared_generators=True)
        return reference.random_playouts([to_reference(state) for state in states], rngs)

    return playouts


def distinct_playouts(
    reference: Game,
    to_reference: Callable[[Any], Any],
    stack: Callable[[Sequence[Any]], tuple[np.ndarray, ...]],
    playout_returns: Callable[..., np.ndarray],
) -> Callable[[Sequence[Any], Sequence[np.random.Generator]], np.ndarray]:
    """A kernel game's `playouts` for kernels whose `playout_returns(*stack(states), words)`
    reproduce the reference's given distinct PCG64 generators (they draw in blocks per row); other
    generators, or one shared by several states, play the reference states."""

    def playouts(states: Sequence[Any], rngs: Sequence[np.random.Generator]) -> np.ndarray:
        if kernel_batches.distinct_pcg64(rngs):
            compiled = kernel_batches.compiled_playouts
            return compiled(states, rngs, stack, playout_returns, shared_generators=False)
        return reference.random_playouts([to_reference(state) for state in states], rngs)

    return playouts
