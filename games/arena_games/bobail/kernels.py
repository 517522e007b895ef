"""Bobail's compiled kernels (Numba): the rules of `rules` and the input of `encoding` on arrays.

`rules` and `encoding` stay the readable reference; these kernels must agree with them bit for bit
(tests/games/test_bobail_kernels.py checks masks, steps, returns, end reasons and encodings on
10,000+ positions, and the random playouts against `Game.random_playouts` draw for draw).

A game is two arrays, changed in place by the kernels:
  history  int64 (HISTORY,): the packed board (`rules.pack_board`) after every half-move, oldest
           first, as `BobailState.history`; entries past info[HALF_MOVES] are unused.
  info     int64 (FIELDS,): the scalars below, indexed by the field constants.
A batch is the struct of arrays histories (n, HISTORY) and infos (n, FIELDS); the `*_batch`
kernels loop over its rows. Actions given to `step` are not checked: they come from a legal mask
(the reference's `rules.step` says why an action is illegal).

Random playouts draw from a PCG64 state (`arena_games.pcg64`) as the generic `Game.random_playouts`
draws from the game's generator: per half-move one `integers(count)` (what `rng.choice` over the
`count` legal actions draws), the nth legal action in index order.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
from numba import njit

from arena_games import kernel_batches, pcg64
from arena_games.bobail.encoding import HISTORY_BOARDS, INPUT_SHAPE, PLANES_PER_BOARD, TURN_PLANE
from arena_games.bobail.rules import (
    BOBAIL_SHIFT,
    MAX_HALF_MOVES,
    NUM_ACTIONS,
    RAYS,
    SIZE,
    SQUARE_BITS,
    SQUARES,
    BobailConfig,
    BobailState,
    _settled,
)
from arena_games.mask_choice import nth_true

HISTORY = MAX_HALF_MOVES + 1  # boards in the longest game, its start included
DIRECTIONS = 8
# Fields of `info`. END: an end code below; WINNER: 0, 1, or -1 (running or drawn).
HALF_MOVES, REPETITIONS, MAX_TURNS, END, WINNER = range(5)
FIELDS = 5
# End codes, in the order `rules._settled` tests the endings.
RUNNING, HOME_ROW_0, HOME_ROW_1, NO_PAWN_MOVE, BOXED_IN, REPETITION, TURN_CAP = range(7)
_ENDINGS = {
    HOME_ROW_0: "bobail reached player 1's home row",
    HOME_ROW_1: "bobail reached player 2's home row",
    NO_PAWN_MOVE: "no pawn move",
    BOXED_IN: "bobail boxed in",
    TURN_CAP: "turn cap",
}
# NEIGHBOUR[square, direction]: the first square of rules.RAYS[square][direction], -1 off the board.
NEIGHBOUR = np.array([[ray[0] if ray else -1 for ray in rays] for rays in RAYS], dtype=np.int8)
_SQUARE_MASK = np.int64(SQUARE_BITS)


def from_state(state: BobailState) -> tuple[np.ndarray, np.ndarray]:
    """The arrays (history, info) of a reference state."""
    history = np.zeros(HISTORY, dtype=np.int64)
    history[: len(state.history)] = state.history
    info = np.zeros(FIELDS, dtype=np.int64)
    info[HALF_MOVES] = state.half_moves
    info[REPETITIONS] = state.config.repetitions
    info[MAX_TURNS] = state.config.max_turns
    info[END] = _end_code(state.ending)
    info[WINNER] = -1 if state.winner is None else state.winner
    return history, info


def _end_code(ending: str) -> int:
    if not ending:
        return RUNNING
    if ending.endswith("repetition"):
        return REPETITION
    return next(code for code, text in _ENDINGS.items() if text == ending)


def end_reason(info: np.ndarray) -> str:
    """`rules.end_reason` of the game: why it ended, "" while it runs."""
    code, times = int(info[END]), int(info[REPETITIONS])
    if code == REPETITION:
        return "threefold repetition" if times == 3 else f"{times}-fold repetition"
    return _ENDINGS.get(code, "")


def to_state(history: np.ndarray, info: np.ndarray) -> BobailState:
    """The reference state of the arrays (history, info), settled by the reference rules."""
    config = BobailConfig(repetitions=int(info[REPETITIONS]), max_turns=int(info[MAX_TURNS]))
    return _settled(config, tuple(int(board) for board in history[: info[HALF_MOVES] + 1]))


def pack(states: Sequence[BobailState]) -> tuple[np.ndarray, ...]:
    """The states as a batch: histories int64 (n, HISTORY), infos int64 (n, FIELDS)."""
    return kernel_batches.pack_rows(states, from_state, (HISTORY, np.int64), (FIELDS, np.int64))


@njit(cache=True)
def to_move(info: np.ndarray) -> int:
    """The player to move, -1 once the game is over (rules.to_move)."""
    return -1 if info[END] != RUNNING else _player(info[HALF_MOVES])


@njit(cache=True, inline="always")
def _player(half_moves: int) -> int:
    """The owner of half-move `half_moves` (rules.TURN_OF: 0, 1, 1, 0 by half_moves % 4)."""
    phase = half_moves % 4
    return 1 if phase == 1 or phase == 2 else 0


@njit(cache=True, inline="always")
def _action(player: int, square: int, direction: int) -> int:
    """rules.ACTIONS[player][square][direction]: the index as the mover sees the board."""
    if player == 0:
        return (DIRECTIONS - 1 - direction) * SQUARES + (SQUARES - 1 - square)
    return direction * SQUARES + square


@njit(cache=True)
def legal_mask(history: np.ndarray, info: np.ndarray, out: np.ndarray) -> int:
    """Writes the mover's legal actions into `out` (bool (NUM_ACTIONS,); all False once the game is
    over) and returns how many there are."""
    for action in range(NUM_ACTIONS):
        out[action] = False
    if info[END] != RUNNING:
        return 0
    return _legal_actions(history[info[HALF_MOVES]], info[HALF_MOVES], out)


@njit(cache=True)
def _legal_actions(board: int, half_moves: int, out: np.ndarray) -> int:
    """How many legal half-moves the owner of `half_moves` has on the packed `board`; marks them
    in `out` (bool (NUM_ACTIONS,), already False) unless `out` is empty."""
    player = _player(half_moves)
    bobail = board >> BOBAIL_SHIFT
    occupied = (board & _SQUARE_MASK) | (board >> SQUARES & _SQUARE_MASK) | (1 << bobail)
    pieces = (board >> (SQUARES * player)) & _SQUARE_MASK if half_moves % 2 == 0 else 1 << bobail
    count = 0
    for square in range(SQUARES):
        if pieces >> square & 1:
            for direction in range(DIRECTIONS):
                target = NEIGHBOUR[square, direction]
                if target >= 0 and not occupied >> target & 1:
                    count += 1
                    if out.size:
                        out[_action(player, square, direction)] = True
    return count


@njit(cache=True)
def _board_after(board: int, half_moves: int, action: int) -> int:
    """The packed board after the owner of `half_moves` plays the legal `action` (rules._board_after)."""
    player = _player(half_moves)
    if player == 0:
        direction, square = DIRECTIONS - 1 - action // SQUARES, SQUARES - 1 - action % SQUARES
    else:
        direction, square = action // SQUARES, action % SQUARES
    target = NEIGHBOUR[square, direction]
    if half_moves % 2 == 1:  # a bobail half: one square
        return (board & ((1 << BOBAIL_SHIFT) - 1)) | (target << BOBAIL_SHIFT)
    occupied = (board & _SQUARE_MASK) | (board >> SQUARES & _SQUARE_MASK) | (1 << (board >> BOBAIL_SHIFT))
    while True:  # a pawn slides as far as it can
        beyond = NEIGHBOUR[target, direction]
        if beyond < 0 or occupied >> beyond & 1:
            break
        target = beyond
    return board ^ (((1 << square) | (1 << target)) << (SQUARES * player))


@njit(cache=True)
def _settle(history: np.ndarray, info: np.ndarray) -> int:
    """Sets END and WINNER of the game after its last half-move (rules._settled); the END code."""
    half_moves = info[HALF_MOVES]
    board = history[half_moves]
    player = _player(half_moves)
    bobail_row = (board >> BOBAIL_SHIFT) // SIZE
    if bobail_row == 0 or bobail_row == SIZE - 1:
        info[WINNER] = 0 if bobail_row == 0 else 1
        info[END] = HOME_ROW_0 if bobail_row == 0 else HOME_ROW_1
        return info[END]
    if _legal_actions(board, half_moves, np.empty(0, dtype=np.bool_)) == 0:
        info[WINNER] = 1 - player
        info[END] = NO_PAWN_MOVE if half_moves % 2 == 0 else BOXED_IN
        return info[END]
    if info[REPETITIONS]:
        seen = 0
        for earlier in range(half_moves % 4, half_moves + 1, 4):
            seen += history[earlier] == board
        if seen >= info[REPETITIONS]:
            info[END] = REPETITION
            return info[END]
    if (half_moves + 1) // 2 >= info[MAX_TURNS]:
        info[END] = TURN_CAP
    return info[END]


@njit(cache=True)
def step(history: np.ndarray, info: np.ndarray, action: int) -> int:
    """Plays the legal `action` for the side to move (rules.step, unchecked); the new END code."""
    half_moves = info[HALF_MOVES]
    history[half_moves + 1] = _board_after(history[half_moves], half_moves, action)
    info[HALF_MOVES] = half_moves + 1
    return _settle(history, info)


@njit(cache=True)
def returns_of(info: np.ndarray) -> tuple[float, float]:
    """(0, 0) while running or after a draw; +1 for the winner, -1 for the loser (rules.returns)."""
    if info[WINNER] < 0:
        return 0.0, 0.0
    return (1.0, -1.0) if info[WINNER] == 0 else (-1.0, 1.0)


@njit(cache=True)
def encode(history: np.ndarray, info: np.ndarray, player: int, out: np.ndarray) -> None:
    """Writes `encoding.encode(state, player)["board"]` into `out` (float32 (43, 5, 5))."""
    half_moves = info[HALF_MOVES]
    for plane in range(INPUT_SHAPE[0]):
        for row in range(SIZE):
            for col in range(SIZE):
                out[plane, row, col] = 0.0
    for age in range(min(HISTORY_BOARDS, half_moves + 1)):
        board = history[half_moves - age]
        masks = (
            board >> (SQUARES * player) & _SQUARE_MASK,
            board >> (SQUARES * (1 - player)) & _SQUARE_MASK,
            1 << (board >> BOBAIL_SHIFT),
        )
        for kind in range(PLANES_PER_BOARD):
            for square in range(SQUARES):
                if masks[kind] >> square & 1:
                    seen = SQUARES - 1 - square if player == 0 else square  # player 0 sees it rotated
                    out[PLANES_PER_BOARD * age + kind, seen // SIZE, seen % SIZE] = 1.0
    mover = np.float32(_player(half_moves))
    for row in range(SIZE):
        for col in range(SIZE):
            out[TURN_PLANE, row, col] = mover


@njit(cache=True)
def step_batch(histories: np.ndarray, infos: np.ndarray, actions: np.ndarray) -> None:
    """`step` in every row: row i plays actions[i] (int (n,))."""
    for row in range(actions.size):
        step(histories[row], infos[row], actions[row])


@njit(cache=True)
def legal_mask_batch(histories: np.ndarray, infos: np.ndarray) -> np.ndarray:
    """bool (n, NUM_ACTIONS): `legal_mask` of every row."""
    masks = np.empty((infos.shape[0], NUM_ACTIONS), dtype=np.bool_)
    for row in range(infos.shape[0]):
        legal_mask(histories[row], infos[row], masks[row])
    return masks


@njit(cache=True)
def encode_batch(histories: np.ndarray, infos: np.ndarray, players: np.ndarray) -> np.ndarray:
    """float32 (n, 43, 5, 5): row i `encode`d for players[i]."""
    planes = np.empty((infos.shape[0], *INPUT_SHAPE), dtype=np.float32)
    for row in range(infos.shape[0]):
        encode(histories[row], infos[row], players[row], planes[row])
    return planes


def encode_many(states: Sequence[BobailState], players: Sequence[int]) -> dict[str, np.ndarray]:
    """`encoding.encode` of every state for its player in one batch: {"board": float32 (n, 43, 5, 5)}
    (a `Game.encode_many` on the kernels: `arena_bots.core.on_core`)."""
    histories, infos = pack(states)
    return {"board": encode_batch(histories, infos, np.asarray(players, dtype=np.int64))}


@njit(cache=True)
def random_playout(history: np.ndarray, info: np.ndarray, rng: np.ndarray, legal: np.ndarray) -> int:
    """Finishes the game with uniformly random legal actions drawn from the PCG64 state `rng` as
    `Game.random_playouts` draws them; returns the END code. `legal`: bool (NUM_ACTIONS,) scratch."""
    while info[END] == RUNNING:
        step(history, info, nth_true(legal, pcg64.bounded(rng, legal_mask(history, info, legal))))
    return info[END]


@njit(cache=True)
def playout_returns(
    histories: np.ndarray, infos: np.ndarray, rngs: np.ndarray, rng_of_row: np.ndarray
) -> np.ndarray:
    """float64 (n, 2): the returns after `random_playout` of every row (in place), in row order, row
    i drawing from the PCG64 state rngs[rng_of_row[i]] (uint64 (k, pcg64.STATE_WORDS), advanced in
    place; rows may share one)."""
    legal = np.empty(NUM_ACTIONS, dtype=np.bool_)
    results = np.zeros((infos.shape[0], 2))
    for row in range(infos.shape[0]):
        random_playout(histories[row], infos[row], rngs[rng_of_row[row]], legal)
        results[row, 0], results[row, 1] = returns_of(infos[row])
    return results


def playouts(states: Sequence[BobailState], rngs: Sequence[np.random.Generator]) -> np.ndarray:
    """`Game.random_playouts` on the compiled kernels: the same returns and the same generator
    states after, given PCG64 generators (a generator shared by several states is drawn from in
    state order, as the reference does)."""
    return kernel_batches.compiled_playouts(states, rngs, pack, playout_returns, shared_generators=True)
