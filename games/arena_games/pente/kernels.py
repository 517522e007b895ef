"""Pente's compiled kernels (Numba): the rules of `rules` and the input of `encoding` on arrays, for
search and playouts.

`rules` and `encoding` stay the readable reference; these kernels must agree with them bit for bit
(tests/games/test_pente_kernels.py checks masks, steps, returns, end reasons and encodings on
10,000+ positions, and the playouts against `playouts.playouts` draw for draw).

A game is two arrays, changed in place by the kernels:
  board  int8 (STRIDE,): cell values by point (EMPTY, or p + 1 for a stone of player p), then the
         off-board sentinel cell (tables.OFF_BOARD_CELL), the layout of `playouts.Batch` rows.
  info   int64 (FIELDS,): the scalars below, indexed by the field constants.
A batch is the struct of arrays boards (n, STRIDE) and infos (n, FIELDS); `step_batch` and
`legal_mask_batch` loop over its rows. Moves given to `step` are not checked: they come from a
legal mask (the reference's `rules.step` says why a move is illegal).

Random playouts draw from a PCG64 state (`arena_games.pcg64`) exactly as `playouts.Draws` draws
from the game's generator, so `random_playout` finishes a game as `playouts.playouts` does given
the same generator: one block of BLOCK candidate words and BLOCK exact words per BLOCK plies,
fetched when needed, the unused rest of the last block discarded.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
from numba import njit

from arena_games import kernel_batches, pcg64
from arena_games.pente.encoding import BOARD_PLANES, INPUTS
from arena_games.pente.playouts import (
    BLOCK,
    BOARD_FULL_CODE,
    CANDIDATES,
    FIVE_CAPTURES_CODE,
    FIVE_IN_A_ROW_CODE,
    PLY_CAP_CODE,
    RUNNING,
    STRIDE,
)
from arena_games.pente.rules import END_REASONS, PAIRS_TO_WIN, PenteConfig, PenteState
from arena_games.pente.tables import (
    CENTRE_ONLY,
    EMPTY,
    NO_BAN,
    NUM_POINTS,
    OFF_BOARD,
    OFF_BOARD_CELL,
    OPENING_BANS,
    RAY_LENGTH,
    RAYS,
    SIZE,
    TOURNAMENT_BAN,
)

# Fields of `info`. END: RUNNING or 1 + the index of the end reason in rules.END_REASONS (the
# codes of `playouts`); LAST_MOVE: the latest move's point, -1 before the first.
CAPTURES_0, CAPTURES_1, PLY, STONES, PLY_CAP, FIRST_MOVE_CENTER, TOURNAMENT_RULE, END, LAST_MOVE = range(9)
FIELDS = 9

_WORD_BITS = 16  # bits of a candidate word per candidate point
_WORD_MASK = np.uint64((1 << _WORD_BITS) - 1)
_WORD_REJECTED = np.uint64((1 << _WORD_BITS) % NUM_POINTS)  # playouts.POINT_OF_WORD's rejection bound
# RAYS in 16 bits: constant tables are compiled into each kernel, and smaller ones compile faster.
_RAYS = RAYS.astype(np.int16)
_LOW32 = np.uint64(0xFFFFFFFF)
_TWO_POW_32 = np.uint64(1 << 32)
(_CAPTURE_INPUTS,) = INPUTS["captures"]  # the "captures" input's length: the player's, then the opponent's


def from_state(state: PenteState) -> tuple[np.ndarray, np.ndarray]:
    """The arrays (board, info) of a reference state."""
    board = np.full(STRIDE, OFF_BOARD_CELL, dtype=np.int8)
    board[:NUM_POINTS] = np.frombuffer(state.board, dtype=np.int8)
    info = np.zeros(FIELDS, dtype=np.int64)
    info[[CAPTURES_0, CAPTURES_1]] = state.captures
    info[PLY] = state.ply
    info[STONES] = np.count_nonzero(board[:NUM_POINTS])
    info[PLY_CAP] = state.config.ply_cap
    info[FIRST_MOVE_CENTER] = state.config.first_move_center
    info[TOURNAMENT_RULE] = state.config.tournament_rule
    info[END] = END_REASONS.index(state.end) + 1 if state.end else RUNNING
    info[LAST_MOVE] = -1 if state.last_move is None else state.last_move
    return board, info


def to_state(board: np.ndarray, info: np.ndarray) -> PenteState:
    """The reference state of the arrays (board, info)."""
    ply, end = int(info[PLY]), int(info[END])
    won = end in (FIVE_CAPTURES_CODE, FIVE_IN_A_ROW_CODE)
    config = PenteConfig(
        first_move_center=bool(info[FIRST_MOVE_CENTER]),
        tournament_rule=bool(info[TOURNAMENT_RULE]),
        ply_cap=int(info[PLY_CAP]),
    )
    return PenteState(
        board=board[:NUM_POINTS].tobytes(),
        captures=(int(info[CAPTURES_0]), int(info[CAPTURES_1])),
        ply=ply,
        config=config,
        last_move=None if info[LAST_MOVE] < 0 else int(info[LAST_MOVE]),
        winner=(ply - 1) % 2 if won else None,
        end=END_REASONS[end - 1] if end else "",
    )


def pack(states: Sequence[PenteState]) -> tuple[np.ndarray, ...]:
    """The states as a batch: boards int8 (n, STRIDE), infos int64 (n, FIELDS)."""
    return kernel_batches.pack_rows(states, from_state, (STRIDE, np.int8), (FIELDS, np.int64))


@njit(cache=True)
def copy_game(board: np.ndarray, info: np.ndarray, to_board: np.ndarray, to_info: np.ndarray) -> None:
    """Copies the game (board, info) into (to_board, to_info). (Loops: Numba compiles a slice
    assignment about ten times slower.)"""
    for cell in range(STRIDE):
        to_board[cell] = board[cell]
    for field in range(FIELDS):
        to_info[field] = info[field]


@njit(cache=True)
def ban_kind(info: np.ndarray) -> int:
    """The row of tables.OPENING_BANS restricting the next move (rules.opening_ban_kind)."""
    if info[PLY] == 0 and info[FIRST_MOVE_CENTER]:
        return CENTRE_ONLY
    if info[PLY] == 2 and info[TOURNAMENT_RULE]:
        return TOURNAMENT_BAN
    return NO_BAN


@njit(cache=True)
def legal_mask(board: np.ndarray, info: np.ndarray, out: np.ndarray) -> int:
    """Writes the mover's legal points into `out` (bool (NUM_POINTS,); all False once the game is
    over) and returns how many there are."""
    if info[END] != RUNNING:
        for point in range(NUM_POINTS):
            out[point] = False
        return 0
    banned = OPENING_BANS[ban_kind(info)]
    count = 0
    for point in range(NUM_POINTS):
        out[point] = board[point] == EMPTY and not banned[point]
        count += out[point]
    return count


@njit(cache=True)
def makes_five(board: np.ndarray, point: int) -> bool:
    """Whether the stone on `point` lies in a line of 5 or more of its own colour (rules.makes_five)."""
    stone = board[point]
    for axis in range(4):
        run = 1
        for direction in (2 * axis, 2 * axis + 1):
            for distance in range(RAY_LENGTH):
                if board[_RAYS[point, direction, distance]] != stone:  # the sentinel is no stone
                    break
                run += 1
        if run >= 5:
            return True
    return False


@njit(cache=True)
def step(board: np.ndarray, info: np.ndarray, point: int) -> int:
    """Plays the legal `point` for the player to move (rules.step, unchecked); the new END code."""
    player = info[PLY] % 2
    own, opponent = player + 1, 2 - player
    board[point] = own
    pairs = 0
    for direction in range(8):
        pair_a, pair_b, flank = (
            _RAYS[point, direction, 0],
            _RAYS[point, direction, 1],
            _RAYS[point, direction, 2],
        )
        if board[pair_a] == opponent and board[pair_b] == opponent and board[flank] == own:
            board[pair_a] = EMPTY
            board[pair_b] = EMPTY
            pairs += 1
    info[CAPTURES_0 + player] += pairs
    info[STONES] += 1 - 2 * pairs
    info[PLY] += 1
    info[LAST_MOVE] = point
    if info[CAPTURES_0 + player] >= PAIRS_TO_WIN:
        info[END] = FIVE_CAPTURES_CODE
    elif makes_five(board, point):
        info[END] = FIVE_IN_A_ROW_CODE
    elif info[STONES] == NUM_POINTS:
        info[END] = BOARD_FULL_CODE
    elif info[PLY] >= info[PLY_CAP]:
        info[END] = PLY_CAP_CODE
    return info[END]


@njit(cache=True)
def returns_of(info: np.ndarray) -> tuple[float, float]:
    """(0, 0) while running or after a draw; +1 for the winner, -1 for the loser (rules.returns)."""
    if info[END] != FIVE_CAPTURES_CODE and info[END] != FIVE_IN_A_ROW_CODE:
        return 0.0, 0.0
    return (1.0, -1.0) if (info[PLY] - 1) % 2 == 0 else (-1.0, 1.0)


@njit(cache=True)
def encode(
    board: np.ndarray, info: np.ndarray, player: int, planes: np.ndarray, captures: np.ndarray
) -> None:
    """Writes `encoding.encode(state, player)` for `player` (0 or 1, to move or not): its "board"
    into `planes` (float32 (6, 19, 19)) and its "captures" into `captures` (float32 (2,))."""
    running = info[END] == RUNNING
    to_move = np.float32(1.0 if running and info[PLY] % 2 == player else 0.0)
    first = np.float32(1.0 if player == 0 else 0.0)
    banned = OPENING_BANS[ban_kind(info) if running else NO_BAN]
    own, other = player + 1, 2 - player
    for point in range(NUM_POINTS):
        y, x = point // SIZE, point % SIZE
        cell = board[point]
        planes[0, y, x] = 1.0 if cell == own else 0.0
        planes[1, y, x] = 1.0 if cell == other else 0.0
        planes[2, y, x] = to_move
        planes[3, y, x] = first
        planes[4, y, x] = 1.0
        planes[5, y, x] = 1.0 if banned[point] and cell == EMPTY else 0.0
    pairs_to_win = np.float32(PAIRS_TO_WIN)
    captures[0] = np.float32(info[CAPTURES_0 + player]) / pairs_to_win
    captures[1] = np.float32(info[CAPTURES_0 + 1 - player]) / pairs_to_win


@njit(cache=True)
def encode_batch(boards: np.ndarray, infos: np.ndarray, players: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Row i `encode`d for players[i]: "board" float32 (n, 6, 19, 19) and "captures" float32 (n, 2)."""
    planes = np.empty((infos.shape[0], BOARD_PLANES, SIZE, SIZE), dtype=np.float32)
    captures = np.empty((infos.shape[0], _CAPTURE_INPUTS), dtype=np.float32)
    for row in range(infos.shape[0]):
        encode(boards[row], infos[row], players[row], planes[row], captures[row])
    return planes, captures


def encode_many(states: Sequence[PenteState], players: Sequence[int]) -> dict[str, np.ndarray]:
    """`encoding.encode` of every state for its player in one batch: {"board": float32 (n, 6, 19,
    19), "captures": float32 (n, 2)} (a `Game.encode_many` on the kernels: `arena_bots.core.on_core`)."""
    boards, infos = pack(states)
    planes, captures = encode_batch(boards, infos, np.asarray(players, dtype=np.int64))
    return {"board": planes, "captures": captures}


@njit(cache=True)
def step_batch(boards: np.ndarray, infos: np.ndarray, points: np.ndarray) -> None:
    """`step` in every row: row i plays points[i] (int (n,))."""
    for row in range(points.size):
        step(boards[row], infos[row], points[row])


@njit(cache=True)
def legal_mask_batch(boards: np.ndarray, infos: np.ndarray) -> np.ndarray:
    """bool (n, NUM_POINTS): `legal_mask` of every row."""
    masks = np.empty((infos.shape[0], NUM_POINTS), dtype=np.bool_)
    for row in range(infos.shape[0]):
        legal_mask(boards[row], infos[row], masks[row])
    return masks


@njit(cache=True)
def _exact_random_point(board: np.ndarray, info: np.ndarray, rng: np.ndarray, word: np.uint64) -> int:
    """A uniformly random legal point from the full mask (playouts._exact_random_moves): the nth legal
    point by Lemire's multiply-shift of the 32-bit `word`, or by Generator.integers when rejected."""
    banned = OPENING_BANS[ban_kind(info)]
    count = 0
    for point in range(NUM_POINTS):
        count += board[point] == EMPTY and not banned[point]
    bound = np.uint64(count)
    product = word * bound
    if (product & _LOW32) >= _TWO_POW_32 % bound:
        nth = int(product >> np.uint64(32))
    else:
        nth = pcg64.bounded(rng, count)
    for point in range(NUM_POINTS):
        if board[point] == EMPTY and not banned[point]:
            if nth == 0:
                return point
            nth -= 1
    return -1  # unreachable: nth < count


@njit(cache=True)
def _point_of_word(word: np.uint64) -> int:
    """playouts.POINT_OF_WORD[word], computed: Lemire's multiply-shift of a 16-bit word to a point,
    or OFF_BOARD (the sentinel cell) for the rejected words."""
    product = word * np.uint64(NUM_POINTS)
    if (product & _WORD_MASK) < _WORD_REJECTED:
        return np.int64(OFF_BOARD)
    return np.int64(product >> np.uint64(_WORD_BITS))


@njit(cache=True)
def random_playout(board: np.ndarray, info: np.ndarray, rng: np.ndarray, words: np.ndarray) -> int:
    """Finishes the game with uniformly random legal moves drawn from the PCG64 state `rng` as
    `playouts.random_moves` draws them; returns the END code. `words`: uint64 (2 * BLOCK,) scratch
    for one block of draws (candidate words, then exact words)."""
    cursor = BLOCK  # the next ply's index in the block; BLOCK: no draws left
    while info[END] == RUNNING:
        if cursor == BLOCK:
            for index in range(2 * BLOCK):
                words[index] = pcg64.next_uint64(rng)
            cursor = 0
        point = -1
        if ban_kind(info) == NO_BAN:
            word = words[cursor]
            for candidate in range(CANDIDATES):
                shift = np.uint64(_WORD_BITS * candidate)
                drawn = _point_of_word((word >> shift) & _WORD_MASK)
                if board[drawn] == EMPTY:  # a rejected draw is the sentinel cell: never empty
                    point = drawn
                    break
        if point < 0:
            point = _exact_random_point(board, info, rng, words[BLOCK + cursor] & _LOW32)
        cursor += 1
        step(board, info, point)
    return info[END]


@njit(cache=True)
def playout_returns(boards: np.ndarray, infos: np.ndarray, rngs: np.ndarray) -> np.ndarray:
    """float64 (n, 2): the returns after `random_playout` of every row (in place), row i drawing
    from the PCG64 state rngs[i] (uint64 (n, pcg64.STATE_WORDS), advanced in place)."""
    words = np.empty(2 * BLOCK, dtype=np.uint64)
    results = np.zeros((infos.shape[0], 2))
    for row in range(infos.shape[0]):
        random_playout(boards[row], infos[row], rngs[row], words)
        results[row, 0], results[row, 1] = returns_of(infos[row])
    return results


def playouts(states: Sequence[PenteState], rngs: Sequence[np.random.Generator]) -> np.ndarray:
    """`playouts.playouts` on the compiled kernels: the same returns and the same generator states
    after, given distinct PCG64 generators (rows sharing one generator would interleave its blocks
    differently: ValueError)."""
    return kernel_batches.compiled_playouts(states, rngs, pack, playout_returns, shared_generators=False)
