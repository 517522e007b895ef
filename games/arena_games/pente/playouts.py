"""Batched uniform-random Pente playouts in NumPy: many games advance one move per step together.

The same rules as `rules.step`, on arrays: a `Batch` holds every game as a row, `step_many` plays
one move in each of some rows, `random_moves` draws a uniformly random legal move for each of them,
and `playouts` repeats both until every game is over. Every step costs a fixed number of NumPy calls
(about 30 us) whatever the number of games, so the cost per move falls as the batch grows: give it
thousands of games (below about 16, `rules.step` in a Python loop is faster).

Randomness is per game: row i draws only from its own generator (`Draws`), one call to it per
BLOCK plies (about 2 us), so a game's moves depend on its state and its generator alone, never on
the other games of the batch (a search replays the same whatever was searched beside it).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from arena_games.pente.rules import (
    BOARD_FULL,
    END_REASONS,
    FIVE_CAPTURES,
    FIVE_IN_A_ROW,
    PAIRS_TO_WIN,
    PLY_CAP,
    PenteState,
)
from arena_games.pente.tables import (
    CENTRE_ONLY,
    EMPTY,
    FIVE_BY_AXIS_BYTE,
    NO_BAN,
    NUM_POINTS,
    OFF_BOARD_CELL,
    OPENING_BANS,
    RAYS,
    TOURNAMENT_BAN,
)

STRIDE = NUM_POINTS + 1  # cells per board row: the 361 points, then the off-board sentinel cell
RUNNING = 0  # end code of a running game; a finished game has 1 + the index of its reason in END_REASONS
FIVE_CAPTURES_CODE, FIVE_IN_A_ROW_CODE, BOARD_FULL_CODE, PLY_CAP_CODE = (
    1 + END_REASONS.index(reason) for reason in (FIVE_CAPTURES, FIVE_IN_A_ROW, BOARD_FULL, PLY_CAP)
)
CANDIDATES = 4  # random points tried per game and step before the exact (slower) draw
BLOCK = 128  # plies of draws fetched from a game's generator at a time (one generator call per block)
OFF_BOARD_POINT = NUM_POINTS  # a board row's sentinel cell: stands for a rejected candidate draw

# The candidate point of a uniform 16-bit word w, by Lemire's multiply-shift with rejection: w * 361 >> 16
# when the low 16 bits of w * 361 are >= 2**16 % 361 = 195, so every point has exactly 181 words; the
# other 195 words are rejected and read as the off-board cell, never empty. int16 (2**16,).
_PRODUCTS = np.arange(1 << 16, dtype=np.int64) * NUM_POINTS
POINT_OF_WORD = np.where(
    (_PRODUCTS & 0xFFFF) >= (1 << 16) % NUM_POINTS, _PRODUCTS >> 16, OFF_BOARD_POINT
).astype(np.int16)

# RAYS as (361, 32): per point the 8 directions x distances 1..4, so one gather serves both checks.
_RAY_CELLS = RAYS.reshape(NUM_POINTS, -1)
# A capturing direction read as a little-endian uint32 of its 4 cells, the 4th masked off: by mover,
# distance 1 and 2 hold opponent stones, distance 3 its own (player 0: bytes 2, 2, 1 -> 0x010202).
_CAPTURE_MASK = np.uint32(0x00FFFFFF)
_CAPTURE_PATTERN = np.array([0x00010202, 0x00020101], dtype=np.uint32)


@dataclass
class Batch:
    """Pente games as rows of arrays (mutable: `step_many` advances it in place)."""

    boards: np.ndarray  # int8 (n, STRIDE): cell values by point (rules.PenteState.board), then sentinel
    captures: np.ndarray  # int64 (n, 2): pairs captured by player 0 and player 1
    plies: np.ndarray  # int64 (n,): moves made; player plies % 2 moves next
    stones: np.ndarray  # int64 (n,): stones on the board
    ply_caps: np.ndarray  # int64 (n,): the config's ply_cap
    first_move_center: np.ndarray  # bool (n,): the config's first_move_center
    tournament_rule: np.ndarray  # bool (n,): the config's tournament_rule
    ends: np.ndarray  # int8 (n,): RUNNING, or 1 + index of the end reason in rules.END_REASONS


def pack(states: Sequence[PenteState]) -> Batch:
    """The states as a Batch, row i holding states[i]."""
    n = len(states)
    boards = np.full((n, STRIDE), OFF_BOARD_CELL, dtype=np.int8)
    boards[:, :NUM_POINTS] = np.frombuffer(b"".join(s.board for s in states), np.int8).reshape(n, NUM_POINTS)
    return Batch(
        boards=boards,
        captures=np.array([s.captures for s in states], dtype=np.int64).reshape(n, 2),
        plies=np.array([s.ply for s in states], dtype=np.int64),
        stones=np.count_nonzero(boards[:, :NUM_POINTS], axis=1).astype(np.int64),
        ply_caps=np.array([s.config.ply_cap for s in states], dtype=np.int64),
        first_move_center=np.array([s.config.first_move_center for s in states], dtype=bool),
        tournament_rule=np.array([s.config.tournament_rule for s in states], dtype=bool),
        ends=np.array([END_REASONS.index(s.end) + 1 if s.end else RUNNING for s in states], dtype=np.int8),
    )


def step_many(batch: Batch, rows: np.ndarray, moves: np.ndarray) -> np.ndarray:
    """Play moves[i] (a legal point) in game rows[i], in place; the rows' new end codes, int8 (m,).

    `rows` are distinct running games (intp); the moves are not checked: `random_moves` or a
    legal mask must have produced them.
    """
    flat = batch.boards.reshape(-1)
    offsets = rows * STRIDE
    plies = batch.plies[rows]
    movers = plies & 1
    own = (movers + 1).astype(np.int8)
    flat[offsets + moves] = own
    # The 4 cells in each direction from the new stone, before captures. int8 (m, 32).
    cells = flat[offsets[:, None] + _RAY_CELLS[moves]]
    words = cells.view("<u4")  # (m, 8): one direction per word, distance 1 in the low byte
    captured = (words & _CAPTURE_MASK) == _CAPTURE_PATTERN[movers][:, None]  # bool (m, 8)
    # Captures take only opponent stones, so the mover's lines read before them stay valid.
    own_bits = np.packbits(cells == own[:, None], axis=1)  # uint8 (m, 4): one byte per axis
    five = FIVE_BY_AXIS_BYTE[own_bits].any(axis=1)

    plies += 1
    batch.plies[rows] = plies
    stones = batch.stones[rows] + 1
    five_captures = np.zeros_like(five)
    capturing = np.flatnonzero(captured.any(axis=1))
    if capturing.size:
        game, direction = np.nonzero(captured[capturing])
        removed = RAYS[moves[capturing[game]], direction, :2]  # (k, 2): the two stones of each pair
        flat[offsets[capturing[game], None] + removed] = EMPTY
        pairs = np.count_nonzero(captured[capturing], axis=1)
        stones[capturing] -= 2 * pairs
        totals = batch.captures[rows[capturing], movers[capturing]] + pairs
        batch.captures[rows[capturing], movers[capturing]] = totals
        five_captures[capturing] = totals >= PAIRS_TO_WIN
    batch.stones[rows] = stones

    ends = np.where(plies >= batch.ply_caps[rows], PLY_CAP_CODE, RUNNING).astype(np.int8)
    ends[stones == NUM_POINTS] = BOARD_FULL_CODE
    ends[five] = FIVE_IN_A_ROW_CODE
    ends[five_captures] = FIVE_CAPTURES_CODE
    batch.ends[rows] = ends
    return ends


def _ban_kinds(batch: Batch, rows: np.ndarray, plies: np.ndarray) -> np.ndarray:
    """The row of tables.OPENING_BANS restricting each game's next move (rules.opening_ban_kind)."""
    kinds = np.full(rows.size, NO_BAN)
    kinds[(plies == 0) & batch.first_move_center[rows]] = CENTRE_ONLY
    kinds[(plies == 2) & batch.tournament_rule[rows]] = TOURNAMENT_BAN
    return kinds


class Draws:
    """Each game's own random draws for `random_moves`, fetched from its own generator by blocks.

    Row i of the batch draws only from rngs[i]: per ply two raw 64-bit words of its bit generator,
    fetched BLOCK plies at a time when the row first needs them (rows that share one generator
    fetch from it in the order they are advanced). A ply's candidate word gives its CANDIDATES
    points (16 bits each, little-endian, through POINT_OF_WORD), the low 32 bits of its exact word
    the exact draw. Every ply a game plays uses up one ply of its draws, needed or not, so a game's
    moves depend on its state and its generator only. Memory: 2 KiB per game (BLOCK x 16 bytes).
    A 32-bit bit generator (MT19937) leaves the high half of each word zero: two candidates per ply
    are then always rejected, which costs speed, not uniformity.
    """

    def __init__(self, rngs: Sequence[np.random.Generator]) -> None:
        self.rngs = list(rngs)
        # Per row, a block of BLOCK candidate words then BLOCK exact words, as the generator gave them.
        self.words = np.empty((len(self.rngs), 2, BLOCK), dtype="<u8")
        self.cursor = np.full(len(self.rngs), BLOCK, dtype=np.intp)  # next ply in the block; BLOCK: none left

    def advance(self, rows: np.ndarray) -> np.ndarray:
        """Use up one ply of draws of each (distinct) row; intp (m,): their flat ply indices."""
        cursor = self.cursor[rows]
        spent = np.flatnonzero(cursor == BLOCK)
        if spent.size:
            fetched = [self.rngs[row].bit_generator.random_raw(2 * BLOCK) for row in rows[spent].tolist()]
            self.words[rows[spent]] = np.concatenate(fetched).reshape(spent.size, 2, BLOCK)
            cursor[spent] = 0
        self.cursor[rows] = cursor + 1
        return rows * (2 * BLOCK) + cursor

    def candidates(self, plies: np.ndarray) -> np.ndarray:
        """int16 (m, CANDIDATES): the candidate points of flat plies `plies` (OFF_BOARD_POINT: rejected)."""
        words = self.words.reshape(-1).take(plies).view("<u2")
        return POINT_OF_WORD.take(words).reshape(plies.size, CANDIDATES)

    def exact_words(self, plies: np.ndarray) -> np.ndarray:
        """uint64 (m,): the 32-bit words (low half) for the exact draws of flat plies `plies`."""
        return self.words.reshape(-1).take(plies + BLOCK) & 0xFFFFFFFF


def _below(words: np.ndarray, bounds: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Lemire's multiply-shift: uniform 32-bit `words` (uint64) to intp values uniform in [0, bounds), and
    which draws are accepted (bool). Accepted values are exactly uniform; a draw is rejected with
    probability below bounds / 2**32 and must be replaced by another."""
    bounds = bounds.astype(np.uint64)
    product = words * bounds
    accepted = (product & 0xFFFFFFFF) >= (2**32 % bounds)
    return (product >> 32).astype(np.intp), accepted


def _exact_random_moves(batch: Batch, rows: np.ndarray, draws: Draws, plies: np.ndarray) -> np.ndarray:
    """A uniformly random legal point per running game, from its full legal mask. O(361) per game.

    Uses the exact word of each row's ply `plies` (indices from `draws.advance`); in the rare
    rejected case, one draw straight from the row's generator.
    """
    legal = batch.boards[rows, :NUM_POINTS] == EMPTY
    legal &= ~OPENING_BANS[_ban_kinds(batch, rows, batch.plies[rows])]
    counts = np.count_nonzero(legal, axis=1)
    nth, accepted = _below(draws.exact_words(plies), counts)
    if not accepted.all():
        for index in np.flatnonzero(~accepted).tolist():
            nth[index] = draws.rngs[rows[index]].integers(counts[index])
    return np.argmax(np.cumsum(legal, axis=1) > nth[:, None], axis=1)


def random_moves(batch: Batch, rows: np.ndarray, draws: Draws) -> np.ndarray:
    """A uniformly random legal point for each running game in `rows` (distinct); intp (m,).

    Tries the ply's CANDIDATES random points of each game and keeps the first empty one: the first
    accepted of independent uniform draws is uniform over the legal points. Games with no empty
    candidate, or under an opening rule, draw from their exact legal mask instead. Each game uses
    up one ply of its own `draws`.
    """
    m = rows.size
    plies_drawn = draws.advance(rows)
    candidates = draws.candidates(plies_drawn)
    free = batch.boards.reshape(-1)[(rows * STRIDE)[:, None] + candidates] == EMPTY
    first = np.argmax(free, axis=1)
    picked = candidates[np.arange(m), first].astype(np.intp)
    exact = ~free[np.arange(m), first]
    plies = batch.plies[rows]
    if plies.min() <= 2:
        exact |= _ban_kinds(batch, rows, plies) != NO_BAN
    if exact.any():
        picked[exact] = _exact_random_moves(batch, rows[exact], draws, plies_drawn[exact])
    return picked


def batch_returns(batch: Batch) -> np.ndarray:
    """float64 (n, 2): +1 / -1 for a won game's winner / loser, 0 for a draw or a running game."""
    won = (batch.ends == FIVE_CAPTURES_CODE) | (batch.ends == FIVE_IN_A_ROW_CODE)
    winner = (batch.plies - 1) % 2
    returns = np.zeros((batch.plies.size, 2))
    returns[won, 0] = np.where(winner[won] == 0, 1.0, -1.0)
    returns[won, 1] = -returns[won, 0]
    return returns


def finish(batch: Batch, rngs: Sequence[np.random.Generator]) -> None:
    """Play uniformly random legal moves in every running game of `batch` until all are over; game
    i draws only from rngs[i] (one generator per row)."""
    if len(rngs) != batch.plies.size:
        raise ValueError(f"finish needs one generator per game: {len(rngs)} for {batch.plies.size} games")
    draws = Draws(rngs)
    rows = np.flatnonzero(batch.ends == RUNNING)
    while rows.size:
        ends = step_many(batch, rows, random_moves(batch, rows, draws))
        rows = rows[ends == RUNNING]


def playouts(states: Sequence[PenteState], rngs: Sequence[np.random.Generator]) -> np.ndarray:
    """Finish every state with uniformly random legal moves, states[i] drawing only from rngs[i];
    float64 (len(states), 2) of returns."""
    batch = pack(states)
    finish(batch, rngs)
    return batch_returns(batch)
