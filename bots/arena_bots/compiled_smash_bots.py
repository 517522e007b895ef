"""The Smash the Code house bots' placement values, compiled (Numba): `ChainPlayer.values_many` and
`LookaheadPlayer.values_many` on the compiled core (ARCHITECTURE "Compiled core").

The players' NumPy methods stay the reference; these must equal them bit for bit: the same float64
values in the same operations and order, -inf where a placement is illegal or not looked through,
so the same argmax and the same ties (tests/bots/test_compiled_smash_bots.py, on thousands of wells
of random and house-bot play). They run the game's own kernels (`arena_games.smash.kernels`: the
placement, the chain loop, the legal placements) one well at a time, in the kernels' column-major
layout: a well is copied into player 0's half of a scratch game (player 1's stays empty).

The reference resolves a well only where `playouts.might_clear` says that its new blocks may be in
a group of GROUP or more; `_might_clear` is the same test (a breadth-first walk of GROUP - 1 steps
through same-coloured neighbours from the new blocks), so even a well that is not settled gets the
reference's value. Every well given must hold its blocks from the bottom of each column, no gaps
(as `playouts.well_array` and the batched engine make them).
"""

from __future__ import annotations

import numpy as np
from numba import njit

from arena_games.smash.kernels import EMPTY, clear_step, column_height, legal_count, place, placement_columns
from arena_games.smash.rules import COLOURS, GROUP, HEIGHT, SKULL

# Marks of `_might_clear`'s walk, per cell of one well.
_FREE, _REACHED = 0, 1


@njit(cache=True)
def _load(well: np.ndarray, game: np.ndarray) -> None:
    """Copies `well` (int8 (HEIGHT, width), row 0 the bottom) into player 0's half of `game`
    (int8 (2 * width * HEIGHT,), the kernels' layout); player 1's half is left as it is."""
    for x in range(well.shape[1]):
        for y in range(HEIGHT):
            game[x * HEIGHT + y] = well[y, x]


@njit(cache=True)
def _copy_well(source: np.ndarray, target: np.ndarray) -> None:
    """Player 0's half of `source` into `target` (same size)."""
    for cell in range(source.size // 2):
        target[cell] = source[cell]


@njit(cache=True)
def _might_clear(game: np.ndarray, first: int, second: int, mark: np.ndarray, queue: np.ndarray) -> bool:
    """`playouts.might_clear` of player 0's well given its new blocks at cells `first` and `second`
    (x * HEIGHT + y; -1 for none): GROUP or more coloured cells within GROUP - 1 same-coloured steps
    of them, counted together. `mark` int8 and `queue` int64 (width * HEIGHT,): scratch, `mark`
    all _FREE before and after."""
    width = game.size // (2 * HEIGHT)
    tail = 0
    for cell in (first, second):
        if cell >= 0 and game[cell] > SKULL and mark[cell] == _FREE:
            mark[cell], queue[tail] = _REACHED, cell
            tail += 1
    head = 0
    for _ in range(GROUP - 1):
        layer_end = tail
        while head < layer_end:
            cell = queue[head]
            head += 1
            x, y = cell // HEIGHT, cell % HEIGHT
            for near in (
                cell - HEIGHT if x > 0 else -1,
                cell + HEIGHT if x < width - 1 else -1,
                cell - 1 if y > 0 else -1,
                cell + 1 if y < HEIGHT - 1 else -1,
            ):
                if near >= 0 and mark[near] == _FREE and game[near] == game[cell]:
                    mark[near], queue[tail] = _REACHED, near
                    tail += 1
    for index in range(tail):
        mark[queue[index]] = _FREE
    return tail >= GROUP


@njit(cache=True)
def _resolve(game: np.ndarray, first: int, second: int, mark: np.ndarray, queue: np.ndarray) -> int:
    """`playouts.resolve_many` of player 0's well given its new blocks (as `_might_clear`), in
    place: the points of its chain loop, 0 where `_might_clear` is False."""
    if not _might_clear(game, first, second, mark, queue):
        return 0
    points, steps, gained = 0, 0, 1
    while gained:
        gained = clear_step(game, 0, steps, mark, queue)
        points += gained
        steps += gained > 0
    for cell in range(mark.size):  # clear_step leaves its own marks
        mark[cell] = _FREE
    return points


@njit(cache=True)
def _place_new(game: np.ndarray, a: int, b: int, action: int) -> tuple[int, int]:
    """Drops the pair of colours (a, b) into player 0's well by the legal placement `action`
    (`kernels.place`); the two cells (x * HEIGHT + y) where its blocks landed."""
    a_column, b_column = placement_columns(game.size // (2 * HEIGHT), action)
    a_cell = a_column * HEIGHT + column_height(game, a_column * HEIGHT)
    if a_column == b_column:
        b_cell = a_cell + 1
    else:
        b_cell = b_column * HEIGHT + column_height(game, b_column * HEIGHT)
    place(game, 0, a, b, action)
    return a_cell, b_cell


@njit(cache=True)
def _scratch(width: int) -> tuple[np.ndarray, ...]:
    """A call's scratch: four games (the well, the well placed, a probe, the well after the first
    pair of a lookahead; int8 (2 * width * HEIGHT,), player 1's half EMPTY), `_might_clear`'s mark
    (int8, _FREE) and queue (int64) of one well's cells, and a legal mask (bool (4 * width - 2,))."""
    games = np.full((4, 2 * width * HEIGHT), EMPTY, dtype=np.int8)
    mark = np.zeros(width * HEIGHT, dtype=np.int8)
    queue = np.empty(width * HEIGHT, dtype=np.int64)
    return games, mark, queue, np.empty(4 * width - 2, dtype=np.bool_)


@njit(cache=True)
def _chain_values(
    game: np.ndarray,
    a: int,
    b: int,
    weights: np.ndarray,
    safe_height: int,
    values: np.ndarray,
    games: np.ndarray,
    mark: np.ndarray,
    queue: np.ndarray,
    legal: np.ndarray,
) -> None:
    """Writes into `values` (float64 (4 * width - 2,)) `ChainPlayer`'s value of each placement of the
    pair (a, b) in player 0's well of `game`, -inf where it does not fit: its points, plus
    weights[0] (the potential weight) times the most that one more block of any colour in any
    column with room then scores, less weights[1] (the height penalty) per row of the tallest
    column above `safe_height`. Uses games[1] and games[2] as scratch (`_scratch`)."""
    width = game.size // (2 * HEIGHT)
    placed, probe = games[1], games[2]
    legal_count(game, 0, legal)
    for action in range(values.size):
        if not legal[action]:
            values[action] = -np.inf
            continue
        _copy_well(game, placed)
        first, second = _place_new(placed, a, b, action)
        points = _resolve(placed, first, second, mark, queue)
        potential, tallest = 0, 0
        for x in range(width):
            height = column_height(placed, x * HEIGHT)
            tallest = max(tallest, height)
            if height == HEIGHT:
                continue
            cell = x * HEIGHT + height
            for colour in range(1, COLOURS + 1):
                placed[cell] = colour
                if _might_clear(placed, cell, -1, mark, queue):
                    _copy_well(placed, probe)
                    potential = max(potential, _resolve(probe, cell, -1, mark, queue))
            placed[cell] = EMPTY
        danger = max(tallest - safe_height, 0)
        values[action] = points + weights[0] * potential - weights[1] * danger


@njit(cache=True)
def chain_values(wells: np.ndarray, pairs: np.ndarray, weights: np.ndarray, safe_height: int) -> np.ndarray:
    """float64 (m, 4 * width - 2): `ChainPlayer.values_many` of wells int8 (m, HEIGHT, width) (row 0
    the bottom) and their pairs int64 (m, 2); weights float64 (2,): the potential weight and the
    height penalty."""
    width = wells.shape[2]
    games, mark, queue, legal = _scratch(width)
    values = np.empty((wells.shape[0], 4 * width - 2))
    for row in range(wells.shape[0]):
        _load(wells[row], games[0])
        _chain_values(
            games[0],
            pairs[row, 0],
            pairs[row, 1],
            weights,
            safe_height,
            values[row],
            games,
            mark,
            queue,
            legal,
        )
    return values


@njit(cache=True)
def lookahead_values(
    wells: np.ndarray,
    pairs: np.ndarray,
    next_pairs: np.ndarray,
    weights: np.ndarray,
    safe_height: int,
    next_weight: float,
    keep: int,
) -> np.ndarray:
    """float64 (m, 4 * width - 2): `LookaheadPlayer.values_many` of wells int8 (m, HEIGHT, width),
    pairs and next_pairs int64 (m, 2), its chain bot's weights (as `chain_values`) and safe
    height: the `keep` placements of highest chain value (the lowest index first on a tie) worth
    their points plus `next_weight` times the best chain value of the next pair in the well they
    leave (at least -1e9); -inf elsewhere."""
    width = wells.shape[2]
    games, mark, queue, legal = _scratch(width)
    placements = 4 * width - 2
    values = np.full((wells.shape[0], placements), -np.inf)
    first, after = np.empty(placements), np.empty(placements)
    looked = np.empty(placements, dtype=np.bool_)
    for row in range(wells.shape[0]):
        _load(wells[row], games[0])
        _chain_values(
            games[0], pairs[row, 0], pairs[row, 1], weights, safe_height, first, games, mark, queue, legal
        )
        looked[:] = False
        for _ in range(min(keep, placements)):
            best = -1
            for action in range(placements):
                if not looked[action] and (best < 0 or first[action] > first[best]):
                    best = action
            if first[best] == -np.inf:  # the rest do not fit
                break
            looked[best] = True
            _copy_well(games[0], games[3])
            landed_a, landed_b = _place_new(games[3], pairs[row, 0], pairs[row, 1], best)
            points = _resolve(games[3], landed_a, landed_b, mark, queue)
            _chain_values(
                games[3],
                next_pairs[row, 0],
                next_pairs[row, 1],
                weights,
                safe_height,
                after,
                games,
                mark,
                queue,
                legal,
            )
            values[row, best] = points + next_weight * max(after.max(), -1e9)
    return values
