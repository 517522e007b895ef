"""Smash the Code's compiled kernels (Numba): the rules of `rules` and the inputs of `encoding` on
arrays, for search, playouts and training.

`rules` and `encoding` stay the readable reference; these kernels must agree with them bit for bit
(tests/games/test_smash_kernels.py checks masks, steps, returns, end reasons and encodings on
10,000+ positions, and the random playouts against `playouts.playouts` draw for draw).

A game is three arrays; the kernels change `wells` and `info` in place and only read `pairs`:
  wells  int8 (2 * width * HEIGHT,): cell (player, x, y) at (player * width + x) * HEIGHT + y, y from
         the bottom (a column's cells are contiguous, so gravity is a copy down the column):
         SKULL (0) or a colour 1..5, EMPTY (-1) above the column's top. The width is
         wells.size // (2 * HEIGHT).
  pairs  int8 (2 * MAX_PAIRS,): the pair sequence, pair t's colours A and B at 2t and 2t + 1; the
         first info[TURN_LIMIT] + QUEUE - 1 pairs are the game's.
  info   int64 (FIELDS,): the scalars below, indexed by the field constants.
A batch is the struct of arrays wells (n, 2 * width * HEIGHT), pairs (n, 2 * MAX_PAIRS) and infos
(n, FIELDS); the `*_batch` kernels loop over its rows. Placements given to `step` are not checked:
they come from a legal mask (the reference's `rules.step` says why one is illegal).

Random playouts draw from a PCG64 state (`arena_games.pcg64`) as `playouts.playouts` draws from
the game's generator: two `random()` doubles per remaining turn up to the turn limit (all of them,
even for turns the game does not reach), the nth legal placement for n = floor(double * count).
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
from numba import njit

from arena_games import kernel_batches, pcg64
from arena_games.mask_choice import nth_true
from arena_games.smash import rules
from arena_games.smash.encoding import MY_METER, PIECE_PLANES, THEIR_METER, WELL_PLANES
from arena_games.smash.rules import (
    COLOUR_BONUS,
    COLOURS,
    GROUP,
    HEIGHT,
    LOSSES,
    MAX_CHAIN_POWER,
    MAX_TURN_LIMIT,
    POINTS_PER_LINE,
    QUEUE,
    SKULL,
    SmashConfig,
    SmashState,
)

EMPTY = -1
MAX_PAIRS = MAX_TURN_LIMIT + QUEUE - 1  # the pairs of the longest game
# Fields of `info`: the turn, the config, then per player (the field + player) its score, unsent
# points, loss (the index in rules.LOSSES: 0 while it has not lost) and last turn's chain steps.
TURN, TURN_LIMIT, NUISANCE_OFFSET, SCORE, UNSENT, LOST, CHAINS = 0, 1, 2, 3, 5, 7, 9
FIELDS = 11
# End codes (`end_code`): running, the turn limit reached, a player (or both) left without room.
RUNNING, TURN_LIMIT_REACHED, BLOCKED = range(3)
# Marks of the chain loop's scratch, per cell of a well.
_UNSEEN, _SEEN, _CLEARED, _SKULL_HIT = range(4)


# --- conversions ------------------------------------------------------------------------------------


def from_state(state: SmashState) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The arrays (wells, pairs, info) of a reference state."""
    width = state.config.width
    wells = np.full(2 * width * HEIGHT, EMPTY, dtype=np.int8)
    for player, well in enumerate(state.wells):
        for x, column in enumerate(well):
            start = (player * width + x) * HEIGHT
            wells[start : start + len(column)] = column
    pairs = np.ones(2 * MAX_PAIRS, dtype=np.int8)
    pairs[: 2 * len(state.pairs)] = np.array(state.pairs, dtype=np.int8).reshape(-1)
    info = np.zeros(FIELDS, dtype=np.int64)
    info[TURN], info[TURN_LIMIT] = state.turn, state.config.turn_limit
    info[NUISANCE_OFFSET] = state.config.nuisance_offset
    for player in (0, 1):
        info[SCORE + player], info[UNSENT + player] = state.scores[player], state.unsent[player]
        info[LOST + player] = LOSSES.index(state.losses[player])
        info[CHAINS + player] = state.chains[player]
    return wells, pairs, info


def to_state(wells: np.ndarray, pairs: np.ndarray, info: np.ndarray) -> SmashState:
    """The reference state of the arrays (wells, pairs, info)."""
    width = wells.size // (2 * HEIGHT)
    columns = wells.reshape(2, width, HEIGHT).tolist()
    turn_limit = int(info[TURN_LIMIT])
    sequence = pairs[: 2 * (turn_limit + QUEUE - 1)].reshape(-1, 2).tolist()

    def well(player: int) -> rules.Well:
        return tuple(tuple(cell for cell in column if cell != EMPTY) for column in columns[player])

    def both(field: int) -> tuple[int, int]:
        return int(info[field]), int(info[field + 1])

    return SmashState(
        config=SmashConfig(width, turn_limit, bool(info[NUISANCE_OFFSET])),
        pairs=tuple((a, b) for a, b in sequence),
        turn=int(info[TURN]),
        wells=(well(0), well(1)),
        scores=both(SCORE),
        unsent=both(UNSENT),
        losses=(LOSSES[info[LOST]], LOSSES[info[LOST + 1]]),
        chains=both(CHAINS),
    )


def pack(states: Sequence[SmashState]) -> tuple[np.ndarray, ...]:
    """The states (all of one width) as a batch: wells int8 (n, 2 * width * HEIGHT), pairs int8
    (n, 2 * MAX_PAIRS), infos int64 (n, FIELDS)."""
    width = states[0].config.width if states else rules.DEFAULT_WIDTH
    if any(state.config.width != width for state in states):
        raise ValueError("a batch holds games of one width")
    layouts = (2 * width * HEIGHT, np.int8), (2 * MAX_PAIRS, np.int8), (FIELDS, np.int64)
    return kernel_batches.pack_rows(states, from_state, *layouts)


def end_reason(info: np.ndarray) -> str:
    """`rules.end_reason` of the game: why it ended and how, "" while it runs."""
    if end_code(info) == RUNNING:
        return ""
    losses = (LOSSES[info[LOST]], LOSSES[info[LOST + 1]])
    return rules.ending(int(info[TURN]), int(info[TURN_LIMIT]), losses, reported_scores(info))


# --- the turn ---------------------------------------------------------------------------------------


@njit(cache=True)
def end_code(info: np.ndarray) -> int:
    """RUNNING, TURN_LIMIT_REACHED or BLOCKED (a player lost: `rules.SmashState.is_over`)."""
    if info[LOST] or info[LOST + 1]:
        return BLOCKED
    return TURN_LIMIT_REACHED if info[TURN] >= info[TURN_LIMIT] else RUNNING


@njit(cache=True)
def to_move(info: np.ndarray) -> int:
    """How many players move (rules.to_move): both every turn (2, players 0 and 1), 0 once over."""
    return 2 if end_code(info) == RUNNING else 0


@njit(cache=True)
def placement_columns(width: int, action: int) -> tuple[int, int]:
    """(column of A, column of B) of placement index `action` (rules.placements: rotation-major);
    the columns are equal for a vertical pair."""
    if action < width - 1:  # rotation 0: B right of A
        return action, action + 1
    action -= width - 1
    if action < width:  # rotation 1: B on top of A
        return action, action
    action -= width
    if action < width - 1:  # rotation 2: B left of A, A at 1..width-1
        return action + 1, action
    return action - (width - 1), action - (width - 1)  # rotation 3: B below A


@njit(cache=True)
def column_height(wells: np.ndarray, column: int) -> int:
    """Blocks in the column starting at wells[column] (column = (player * width + x) * HEIGHT)."""
    height = 0
    while height < HEIGHT and wells[column + height] != EMPTY:
        height += 1
    return height


@njit(cache=True)
def legal_count(wells: np.ndarray, player: int, out: np.ndarray) -> int:
    """How many placements fit in `player`'s well (rules.legal_placements); marks each in `out`
    (bool (4 * width - 2,)) unless `out` is empty."""
    width = wells.size // (2 * HEIGHT)
    count = 0
    for action in range(4 * width - 2):
        a, b = placement_columns(width, action)
        a_height = column_height(wells, (player * width + a) * HEIGHT)
        if a == b:
            fits = a_height <= HEIGHT - 2
        else:
            fits = a_height < HEIGHT and column_height(wells, (player * width + b) * HEIGHT) < HEIGHT
        count += fits
        if out.size:
            out[action] = fits
    return count


@njit(cache=True)
def legal_mask(wells: np.ndarray, info: np.ndarray, player: int, out: np.ndarray) -> int:
    """Writes `player`'s legal placements into `out` (bool (4 * width - 2,); all False once the game
    is over) and returns how many there are."""
    if end_code(info) != RUNNING:
        for action in range(out.size):
            out[action] = False
        return 0
    return legal_count(wells, player, out)


@njit(cache=True)
def place(wells: np.ndarray, player: int, a: int, b: int, action: int) -> None:
    """Drops the pair of colours (a, b) into `player`'s well by the legal placement `action`."""
    width = wells.size // (2 * HEIGHT)
    a_column, b_column = placement_columns(width, action)
    a_start, b_start = (player * width + a_column) * HEIGHT, (player * width + b_column) * HEIGHT
    if a_column == b_column:
        height = column_height(wells, a_start)
        below, above = (b, a) if action >= 3 * width - 2 else (a, b)  # rotation 3: B below A
        wells[a_start + height], wells[a_start + height + 1] = below, above
    else:
        wells[a_start + column_height(wells, a_start)] = a
        wells[b_start + column_height(wells, b_start)] = b


@njit(cache=True)
def _neighbour(cell: int, side: int, width: int) -> int:
    """The cell next to `cell` (x * HEIGHT + y in one well) on `side` (0 left, 1 right, 2 below,
    3 above), -1 off the well."""
    x, y = cell // HEIGHT, cell % HEIGHT
    if side == 0:
        return cell - HEIGHT if x > 0 else -1
    if side == 1:
        return cell + HEIGHT if x < width - 1 else -1
    if side == 2:
        return cell - 1 if y > 0 else -1
    return cell + 1 if y < HEIGHT - 1 else -1


@njit(cache=True)
def clear_step(wells: np.ndarray, player: int, step: int, mark: np.ndarray, queue: np.ndarray) -> int:
    """Step `step` (0 the first) of the chain loop in `player`'s well (rules.clearing), in place:
    the groups of GROUP+ clear with the skulls next to them, the rest falls; the points it scored
    (0 when no group cleared). `mark` int8 and `queue` int64 (width * HEIGHT,): scratch."""
    width = wells.size // (2 * HEIGHT)
    cells, base = width * HEIGHT, player * width * HEIGHT
    for cell in range(cells):
        mark[cell] = _UNSEEN
    blocks, colours, group_bonus = 0, 0, 0
    for start in range(cells):
        colour = wells[base + start]
        if colour <= SKULL or mark[start] != _UNSEEN:
            continue
        mark[start], queue[0], head, tail = _SEEN, start, 0, 1  # a breadth-first fill of its group
        while head < tail:
            cell = queue[head]
            head += 1
            for side in range(4):
                near = _neighbour(cell, side, width)
                if near >= 0 and mark[near] == _UNSEEN and wells[base + near] == colour:
                    mark[near], queue[tail] = _SEEN, near
                    tail += 1
        if tail >= GROUP:
            for index in range(tail):
                mark[queue[index]] = _CLEARED
            blocks += tail
            colours |= 1 << colour
            group_bonus += 8 if tail >= 11 else tail - GROUP
    if blocks == 0:
        return 0
    for cell in range(cells):
        if mark[cell] == _CLEARED:
            for side in range(4):
                near = _neighbour(cell, side, width)
                if near >= 0 and wells[base + near] == SKULL:
                    mark[near] = _SKULL_HIT
    for x in range(width):  # the rest falls: each column's kept cells copied down, in order
        start, kept = base + x * HEIGHT, 0
        for y in range(HEIGHT):
            value = wells[start + y]
            if value == EMPTY:
                break
            if mark[x * HEIGHT + y] < _CLEARED:
                wells[start + kept] = value
                kept += 1
        for y in range(kept, HEIGHT):
            wells[start + y] = EMPTY
    distinct = 0
    for colour in range(1, COLOURS + 1):
        distinct += colours >> colour & 1
    power = 0 if step == 0 else min(4 << step, MAX_CHAIN_POWER)
    return 10 * blocks * min(max(power + COLOUR_BONUS[distinct] + group_bonus, 1), 999)


@njit(cache=True)
def _drop_skulls(wells: np.ndarray, player: int, lines: int) -> None:
    """`lines` lines of skulls onto `player`'s well, those that do not fit discarded (rules.drop_skulls)."""
    width = wells.size // (2 * HEIGHT)
    for x in range(width):
        start = (player * width + x) * HEIGHT
        height = column_height(wells, start)
        for y in range(height, min(height + lines, HEIGHT)):
            wells[start + y] = SKULL


@njit(cache=True)
def step(wells: np.ndarray, pairs: np.ndarray, info: np.ndarray, first: int, second: int) -> int:
    """Plays one turn (rules.step, unchecked): player 0 places this turn's pair by the legal
    placement `first`, player 1 by `second`; the new end code."""
    cells = wells.size // 2
    mark, queue = np.empty(cells, dtype=np.int8), np.empty(cells, dtype=np.int64)
    turn = info[TURN]
    for player in range(2):
        place(wells, player, pairs[2 * turn], pairs[2 * turn + 1], first if player == 0 else second)
        points, steps, gained = 0, 0, 1
        while gained:  # the chain loop (rules.resolve); a step that clears scores 40 or more
            gained = clear_step(wells, player, steps, mark, queue)
            points += gained
            steps += gained > 0
        info[SCORE + player] += points
        info[UNSENT + player] += points
        info[CHAINS + player] = steps
    if info[NUISANCE_OFFSET]:
        cancelled = min(info[UNSENT], info[UNSENT + 1])
        info[UNSENT] -= cancelled
        info[UNSENT + 1] -= cancelled
    lines_0, lines_1 = info[UNSENT] // POINTS_PER_LINE, info[UNSENT + 1] // POINTS_PER_LINE
    info[UNSENT] %= POINTS_PER_LINE
    info[UNSENT + 1] %= POINTS_PER_LINE
    _drop_skulls(wells, 0, lines_1)
    _drop_skulls(wells, 1, lines_0)
    info[TURN] = turn + 1
    no_mask = np.empty(0, dtype=np.bool_)
    for player in range(2):
        blocked = turn + 1 < info[TURN_LIMIT] and legal_count(wells, player, no_mask) == 0
        info[LOST + player] = 1 if blocked else 0
    return end_code(info)


# --- the end --------------------------------------------------------------------------------------------


@njit(cache=True)
def reported_scores(info: np.ndarray) -> tuple[int, int]:
    """rules.reported_scores: the scores while running; once over 0 for a player who lost, at least
    1 for the others."""
    if end_code(info) == RUNNING:
        return info[SCORE], info[SCORE + 1]
    first = 0 if info[LOST] else max(1, info[SCORE])
    second = 0 if info[LOST + 1] else max(1, info[SCORE + 1])
    return first, second


@njit(cache=True)
def returns_of(info: np.ndarray) -> tuple[float, float]:
    """(0, 0) while running or after a draw; +1 for the winner, -1 for the loser (rules.returns)."""
    first, second = reported_scores(info)
    if end_code(info) == RUNNING or first == second:
        return 0.0, 0.0
    return (1.0, -1.0) if first > second else (-1.0, 1.0)


# --- the network inputs ---------------------------------------------------------------------------------


@njit(cache=True)
def encode(
    wells: np.ndarray,
    pairs: np.ndarray,
    info: np.ndarray,
    player: int,
    own: np.ndarray,
    opponent: np.ndarray,
    pieces: np.ndarray,
) -> None:
    """Writes encoding.encode(state, player)'s "own", "opponent" and "pieces" into the float32 arrays
    (6, HEIGHT, width), (6, HEIGHT, width) and (22, HEIGHT, width)."""
    width = wells.size // (2 * HEIGHT)
    for side, planes in ((player, own), (1 - player, opponent)):  # encoding.well_planes
        for plane in range(WELL_PLANES):
            for row in range(HEIGHT):
                for x in range(width):
                    planes[plane, row, x] = 0.0
        for x in range(width):
            start = (side * width + x) * HEIGHT
            for y in range(column_height(wells, start)):
                planes[wells[start + y], HEIGHT - 1 - y, x] = 1.0
    turn = min(info[TURN], info[TURN_LIMIT] - 1)  # the last pairs stay shown once over
    for plane in range(PIECE_PLANES):
        value = np.float32(0.0)
        if plane < 4 * COLOURS:
            value = np.float32(pairs[2 * turn + plane // COLOURS] == plane % COLOURS + 1)
        elif plane == MY_METER:
            value = np.float32(info[UNSENT + player] / POINTS_PER_LINE)
        elif plane == THEIR_METER:
            value = np.float32(info[UNSENT + 1 - player] / POINTS_PER_LINE)
        for row in range(HEIGHT):
            for x in range(width):
                pieces[plane, row, x] = value


# --- batches ---------------------------------------------------------------------------------------------


@njit(cache=True)
def step_batch(wells: np.ndarray, pairs: np.ndarray, infos: np.ndarray, actions: np.ndarray) -> None:
    """`step` in every row: row i plays actions[i] (int (n, 2): the placements of players 0 and 1)."""
    for row in range(infos.shape[0]):
        step(wells[row], pairs[row], infos[row], actions[row, 0], actions[row, 1])


@njit(cache=True)
def legal_mask_batch(wells: np.ndarray, infos: np.ndarray, player: int) -> np.ndarray:
    """bool (n, 4 * width - 2): `legal_mask` of `player` in every row."""
    masks = np.empty((infos.shape[0], 4 * (wells.shape[1] // (2 * HEIGHT)) - 2), dtype=np.bool_)
    for row in range(infos.shape[0]):
        legal_mask(wells[row], infos[row], player, masks[row])
    return masks


@njit(cache=True)
def encode_batch(
    wells: np.ndarray, pairs: np.ndarray, infos: np.ndarray, players: np.ndarray
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """float32 "own", "opponent" (n, 6, HEIGHT, width) and "pieces" (n, 22, HEIGHT, width): row i
    `encode`d for players[i]."""
    n, width = infos.shape[0], wells.shape[1] // (2 * HEIGHT)
    own = np.empty((n, WELL_PLANES, HEIGHT, width), dtype=np.float32)
    opponent = np.empty((n, WELL_PLANES, HEIGHT, width), dtype=np.float32)
    pieces = np.empty((n, PIECE_PLANES, HEIGHT, width), dtype=np.float32)
    for row in range(n):
        encode(wells[row], pairs[row], infos[row], players[row], own[row], opponent[row], pieces[row])
    return own, opponent, pieces


# --- random playouts ---------------------------------------------------------------------------------------


@njit(cache=True)
def _nth_legal(wells: np.ndarray, player: int, uniform: float, legal: np.ndarray) -> int:
    """The nth legal placement of `player` for n = floor(uniform * count) (playouts.random_actions)."""
    return nth_true(legal, int(uniform * legal_count(wells, player, legal)))


@njit(cache=True)
def random_playout(wells: np.ndarray, pairs: np.ndarray, info: np.ndarray, rng: np.ndarray) -> int:
    """Finishes the game with uniformly random legal placements drawn from the PCG64 state `rng` as
    `playouts.playouts` draws them (two doubles per turn left to the turn limit, all drawn); the
    end code."""
    legal = np.empty(4 * (wells.size // (2 * HEIGHT)) - 2, dtype=np.bool_)
    for _ in range(info[TURN_LIMIT] - info[TURN]):
        first, second = pcg64.next_double(rng), pcg64.next_double(rng)
        if end_code(info) == RUNNING:
            step(wells, pairs, info, _nth_legal(wells, 0, first, legal), _nth_legal(wells, 1, second, legal))
    return end_code(info)


@njit(cache=True)
def playout_returns(
    wells: np.ndarray, pairs: np.ndarray, infos: np.ndarray, rngs: np.ndarray, rng_of_row: np.ndarray
) -> np.ndarray:
    """float64 (n, 2): the returns after `random_playout` of every row (in place), in row order, row
    i drawing from the PCG64 state rngs[rng_of_row[i]] (uint64 (k, pcg64.STATE_WORDS), advanced in
    place; rows may share one)."""
    results = np.zeros((infos.shape[0], 2))
    for row in range(infos.shape[0]):
        random_playout(wells[row], pairs[row], infos[row], rngs[rng_of_row[row]])
        results[row, 0], results[row, 1] = returns_of(infos[row])
    return results


def playouts(states: Sequence[SmashState], rngs: Sequence[np.random.Generator]) -> np.ndarray:
    """`playouts.playouts` on the compiled kernels: the same returns and the same generator states
    after, given PCG64 generators (a generator shared by several states is drawn from in state
    order, as the reference does)."""
    return kernel_batches.compiled_playouts(states, rngs, pack, playout_returns, shared_generators=True)
