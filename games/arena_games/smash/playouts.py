"""Batched Smash the Code in NumPy: many games advance one turn per step together.

The same rules as `rules.step`, on arrays: a `Batch` holds every game as a row with its two wells,
`step_many` plays one turn (both players' placements) in some rows, `random_actions` draws a
uniformly random legal placement per player, and `playouts` repeats both until every game is over.
The chain loop clears every well of the batch at once: connected groups by label propagation
(each block takes the smallest cell id of its same-coloured neighbours, with pointer jumping),
group sizes by one bincount, then gravity by a stable sort of each column.

Randomness is per game: row i draws only from rngs[i], one call for all its remaining turns
(`Draws`), so a game's moves depend on its state and its generator alone.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from arena_games.smash.rules import (
    B_OFFSET,
    BLOCKED,
    COLOUR_BONUS,
    GROUP,
    HEIGHT,
    LOSSES,
    MAX_CHAIN_POWER,
    POINTS_PER_LINE,
    SKULL,
    SmashState,
    Well,
    legal_masks,
    placements,
    returns,
    step,
)

EMPTY = -1  # a cell of a batch's wells: EMPTY, SKULL (0) or a colour 1..5
LOOPED_BELOW = 8  # `playouts` of fewer games steps `rules` in a loop: 1 game batched runs ~0.5x the loop


@dataclass
class Batch:
    """Smash games as rows of arrays (mutable: `step_many` advances it in place)."""

    cells: np.ndarray  # int8 (n, 2, HEIGHT, width): per game and player, row 0 the BOTTOM of the well
    pairs: np.ndarray  # int8 (n, L, 2): each game's pair sequence (padded to the longest)
    turns: np.ndarray  # int64 (n,)
    turn_limits: np.ndarray  # int64 (n,)
    offsetting: np.ndarray  # bool (n,): NUISANCE_OFFSET
    scores: np.ndarray  # int64 (n, 2)
    unsent: np.ndarray  # int64 (n, 2)
    losses: np.ndarray  # int8 (n, 2): index in rules.LOSSES (0: has not lost)

    @property
    def running(self) -> np.ndarray:
        """bool (n,): the games not over."""
        return ~self.losses.any(axis=1) & (self.turns < self.turn_limits)


def well_array(well: Well, width: int) -> np.ndarray:
    """int8 (HEIGHT, width): `well` bottom row first, EMPTY above each column's top."""
    cells = np.full((HEIGHT, width), EMPTY, dtype=np.int8)
    for x, column in enumerate(well):
        cells[: len(column), x] = column
    return cells


def pack(states: Sequence[SmashState]) -> Batch:
    """The states (all of one width) as a Batch, row i holding states[i]."""
    width = states[0].config.width
    if any(s.config.width != width for s in states):
        raise ValueError("a batch holds games of one width")
    longest = max(len(s.pairs) for s in states)
    pairs = np.ones((len(states), longest, 2), dtype=np.int8)
    for row, s in enumerate(states):
        pairs[row, : len(s.pairs)] = s.pairs
    return Batch(
        cells=np.array([[well_array(w, width) for w in s.wells] for s in states], dtype=np.int8),
        pairs=pairs,
        turns=np.array([s.turn for s in states], dtype=np.int64),
        turn_limits=np.array([s.config.turn_limit for s in states], dtype=np.int64),
        offsetting=np.array([s.config.nuisance_offset for s in states], dtype=bool),
        scores=np.array([s.scores for s in states], dtype=np.int64),
        unsent=np.array([s.unsent for s in states], dtype=np.int64),
        losses=np.array([[LOSSES.index(loss) for loss in s.losses] for s in states], dtype=np.int8),
    )


def _tables(width: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Per placement index: the column of A, B's column offset, and the rotation. intp (A,) each."""
    table = np.array(placements(width), dtype=np.intp)
    return table[:, 0], np.array(B_OFFSET, dtype=np.intp)[table[:, 1]], table[:, 1]


def heights(cells: np.ndarray) -> np.ndarray:
    """intp (..., width): blocks per column of wells (..., HEIGHT, width)."""
    return np.count_nonzero(cells != EMPTY, axis=-2)


def legal(cells: np.ndarray) -> np.ndarray:
    """bool (..., A): the placements that fit in wells (..., HEIGHT, width) (rules.legal_placements)."""
    columns, offsets, _ = _tables(cells.shape[-1])
    height = heights(cells)
    a = height[..., columns]
    b = height[..., columns + offsets]
    return np.where(offsets == 0, a <= HEIGHT - 2, (a < HEIGHT) & (b < HEIGHT))


def place_many(wells: np.ndarray, pairs: np.ndarray, actions: np.ndarray) -> np.ndarray:
    """Drop pairs (k, 2) into wells (k, HEIGHT, width) in place by placement indices (k,); bool
    (k, HEIGHT, width): the two cells where the blocks landed."""
    columns, offsets, rotations = _tables(wells.shape[-1])
    k = np.arange(wells.shape[0])
    height = heights(wells)
    a_column, b_column, rotation = columns[actions], columns[actions] + offsets[actions], rotations[actions]
    a_row, b_row = height[k, a_column], height[k, b_column]
    a_row = a_row + (rotation == 3)  # B lands first, A above it
    b_row = b_row + (rotation == 1)  # A lands first, B above it
    wells[k, a_row, a_column] = pairs[:, 0]
    wells[k, b_row, b_column] = pairs[:, 1]
    landed = np.zeros(wells.shape, dtype=bool)
    landed[k, a_row, a_column] = landed[k, b_row, b_column] = True
    return landed


def might_clear(wells: np.ndarray, new: np.ndarray) -> np.ndarray:
    """bool (k,): the wells (k, HEIGHT, width) that may hold a group of 4+, given that every such
    group contains a cell of `new` (bool, same shape): the blocks just added to a settled well.

    A connected group of 4+ cells holds 4 cells within 3 steps of any of its cells, so a group
    through a new block shows as 4+ same-coloured cells reached in 3 steps from the new blocks
    (a few bool shifts, much cheaper than labelling). False positives only (the new blocks'
    groups are counted together), never false negatives.
    """
    coloured = wells > SKULL
    same_up = coloured[:, :-1] & (wells[:, :-1] == wells[:, 1:])
    same_right = coloured[:, :, :-1] & (wells[:, :, :-1] == wells[:, :, 1:])
    reached = new & coloured
    for _ in range(GROUP - 1):
        grown = reached.copy()
        grown[:, 1:] |= reached[:, :-1] & same_up
        grown[:, :-1] |= reached[:, 1:] & same_up
        grown[:, :, 1:] |= reached[:, :, :-1] & same_right
        grown[:, :, :-1] |= reached[:, :, 1:] & same_right
        reached = grown
    return np.count_nonzero(reached, axis=(1, 2)) >= GROUP


def _labels(wells: np.ndarray) -> np.ndarray:
    """int64 (k, HEIGHT, width): per coloured cell the smallest flat cell id of its group; -1 elsewhere."""
    coloured = wells > SKULL
    ids = np.arange(wells.size, dtype=np.int64).reshape(wells.shape)
    big = wells.size
    label = np.where(coloured, ids, big)
    same_up = coloured[:, :-1] & (wells[:, :-1] == wells[:, 1:])  # cell and the one above it
    same_right = coloured[:, :, :-1] & (wells[:, :, :-1] == wells[:, :, 1:])
    flat_ids = np.append(np.arange(big, dtype=np.int64), big)
    while True:
        new = label.copy()
        np.minimum(new[:, :-1], np.where(same_up, label[:, 1:], big), out=new[:, :-1])
        np.minimum(new[:, 1:], np.where(same_up, label[:, :-1], big), out=new[:, 1:])
        np.minimum(new[:, :, :-1], np.where(same_right, label[:, :, 1:], big), out=new[:, :, :-1])
        np.minimum(new[:, :, 1:], np.where(same_right, label[:, :, :-1], big), out=new[:, :, 1:])
        flat_ids[:big] = new.reshape(-1)
        new = flat_ids[new]  # pointer jumping: a label's own label is in the same group, and smaller
        if np.array_equal(new, label):
            return np.where(coloured, label, -1)
        label = new


def _neighbours(mask: np.ndarray) -> np.ndarray:
    """bool, same shape: the cells orthogonally next to a True cell of wells (k, HEIGHT, width)."""
    near = np.zeros_like(mask)
    near[:, 1:] |= mask[:, :-1]
    near[:, :-1] |= mask[:, 1:]
    near[:, :, 1:] |= mask[:, :, :-1]
    near[:, :, :-1] |= mask[:, :, 1:]
    return near


def _fall(wells: np.ndarray) -> np.ndarray:
    """The wells with every column's blocks fallen to the bottom, in order."""
    order = np.argsort(wells == EMPTY, axis=1, kind="stable")
    return np.take_along_axis(wells, order, axis=1)


def _clear_step(wells: np.ndarray, steps: np.ndarray) -> np.ndarray:
    """One step of the chain loop in every well (k, HEIGHT, width), in place; int64 (k,) points.

    `steps` (k,) is each well's chain step (0 for the first, for the chain power)."""
    label = _labels(wells)
    size = np.bincount(label[label >= 0], minlength=wells.size)
    cleared = (label >= 0) & (size[np.maximum(label, 0)] >= GROUP)
    blocks = cleared.sum(axis=(1, 2))
    if not blocks.any():
        return np.zeros(wells.shape[0], dtype=np.int64)
    colours = (cleared[..., None] & (wells[..., None] == np.arange(1, 6))).any(axis=(1, 2)).sum(axis=1)
    ids = np.arange(wells.size).reshape(wells.shape)
    roots = cleared & (label == ids)  # one cell per cleared group
    root_size = np.where(roots, size[np.maximum(label, 0)], 0)
    group_bonus = np.where(root_size >= 11, 8, np.maximum(root_size - GROUP, 0)).sum(axis=(1, 2))
    power = np.where(steps > 0, np.minimum(4 << steps, MAX_CHAIN_POWER), 0)
    bonus = np.clip(power + np.asarray(COLOUR_BONUS)[colours] + group_bonus, 1, 999)
    removed = cleared | (_neighbours(cleared) & (wells == SKULL))
    wells[removed] = EMPTY
    wells[...] = _fall(wells)
    return np.where(blocks > 0, 10 * blocks * bonus, 0)


def resolve_many(wells: np.ndarray, new: np.ndarray | None = None) -> tuple[np.ndarray, np.ndarray]:
    """The chain loop in every well (k, HEIGHT, width), in place: int64 (k,) points and chain steps.

    `new` (bool, the wells' shape), when given, marks the blocks just added to settled wells: only
    wells where `might_clear` are then labelled."""
    k = wells.shape[0]
    points, steps = np.zeros(k, dtype=np.int64), np.zeros(k, dtype=np.int64)
    active = np.arange(k) if new is None else np.flatnonzero(might_clear(wells, new))
    while active.size:
        part = wells[active]
        gained = _clear_step(part, steps[active])
        wells[active] = part
        points[active] += gained
        steps[active] += gained > 0
        active = active[gained > 0]
    return points, steps


def step_many(batch: Batch, rows: np.ndarray, actions: np.ndarray) -> None:
    """Play one turn in each of `rows` (distinct running games), in place: actions int (m, 2) legal
    placement indices of players 0 and 1 (not checked: `legal` or `random_actions` made them)."""
    m = rows.size
    wells = batch.cells[rows].reshape(2 * m, HEIGHT, -1)
    pairs = np.repeat(batch.pairs[rows, batch.turns[rows]], 2, axis=0)
    points, _ = resolve_many(wells, place_many(wells, pairs, actions.reshape(-1)))
    points = points.reshape(m, 2)
    batch.scores[rows] += points
    unsent = batch.unsent[rows] + points
    unsent -= np.where(batch.offsetting[rows], unsent.min(axis=1), 0)[:, None]
    lines = unsent // POINTS_PER_LINE
    batch.unsent[rows] = unsent % POINTS_PER_LINE
    wells = wells.reshape(m, 2, HEIGHT, -1)
    incoming = lines[:, ::-1]  # each player receives the other's lines
    height = heights(wells)  # (m, 2, width)
    tops = height + incoming[..., None]  # each column's height with its skulls; those above HEIGHT go
    row_index = np.arange(HEIGHT)[None, None, :, None]
    wells[(row_index >= height[:, :, None, :]) & (row_index < tops[:, :, None, :])] = SKULL
    turns = batch.turns[rows] + 1
    blocked = ~legal(wells).any(axis=2) & (turns < batch.turn_limits[rows])[:, None]
    batch.cells[rows] = wells
    batch.turns[rows] = turns
    batch.losses[rows] = np.where(blocked, LOSSES.index(BLOCKED), 0)


class Draws:
    """Each game's uniform numbers for its remaining turns, two per turn, drawn in one call from its
    own generator when the batch is made (float64 (n, longest game, 2))."""

    def __init__(self, batch: Batch, rngs: Sequence[np.random.Generator]) -> None:
        remaining = batch.turn_limits - batch.turns
        self.start = batch.turns.copy()
        self.uniforms = np.zeros((remaining.size, int(remaining.max(initial=0)), 2))
        for row, (rng, count) in enumerate(zip(rngs, remaining.tolist(), strict=True)):
            self.uniforms[row, :count] = rng.random((count, 2))

    def take(self, batch: Batch, rows: np.ndarray) -> np.ndarray:
        """float64 (m, 2): the uniforms of each row's current turn."""
        return self.uniforms[rows, batch.turns[rows] - self.start[rows]]


def random_actions(batch: Batch, rows: np.ndarray, uniforms: np.ndarray) -> np.ndarray:
    """intp (m, 2): a uniformly random legal placement per player of `rows`, the nth legal one for
    n = floor(uniform * legal count)."""
    mask = legal(batch.cells[rows])  # (m, 2, A)
    nth = np.floor(uniforms * mask.sum(axis=2)).astype(np.intp)
    return np.argmax(np.cumsum(mask, axis=2) > nth[..., None], axis=2)


def batch_returns(batch: Batch) -> np.ndarray:
    """float64 (n, 2): +1 / -1 for the winner / loser of a finished game (the higher reported score,
    rules.reported_scores), 0 for a draw or a running one."""
    reported = np.where(batch.losses > 0, 0, np.maximum(batch.scores, 1))
    first = np.where(batch.running, 0.0, np.sign(reported[:, 0] - reported[:, 1]).astype(np.float64))
    return np.stack([first, -first], axis=1) + 0.0  # + 0.0: no -0.0


def finish(batch: Batch, rngs: Sequence[np.random.Generator]) -> None:
    """Play uniformly random legal turns in every running game until all are over; game i draws
    only from rngs[i]."""
    if len(rngs) != batch.turns.size:
        raise ValueError(f"finish needs one generator per game: {len(rngs)} for {batch.turns.size} games")
    draws = Draws(batch, rngs)
    rows = np.flatnonzero(batch.running)
    while rows.size:
        step_many(batch, rows, random_actions(batch, rows, draws.take(batch, rows)))
        rows = rows[batch.running[rows]]


def finish_looped(state: SmashState, rng: np.random.Generator) -> SmashState:
    """The same random game as `finish` plays from `state` with `rng` (the same draws, one call for
    all remaining turns, the same nth legal placement), by `rules.step` in a Python loop."""
    uniforms = rng.random((state.config.turn_limit - state.turn, 2)).tolist()
    for turn_uniforms in uniforms:
        if state.is_over:
            break
        joint = []
        for player, uniform in enumerate(turn_uniforms):
            legal = np.flatnonzero(legal_masks(state, player)[0])
            joint.append((int(legal[int(uniform * legal.size)]),))
        state = step(state, joint)
    return state


def playouts(states: Sequence[SmashState], rngs: Sequence[np.random.Generator]) -> np.ndarray:
    """Finish every state with uniformly random legal placements, states[i] drawing only from
    rngs[i]; float64 (len(states), 2) of returns. Fewer than LOOPED_BELOW states are played by
    `finish_looped` (faster for a few games, bench/smash.py), the same games as `finish` plays."""
    if len(states) < LOOPED_BELOW:
        return np.array(
            [returns(finish_looped(s, rng)) for s, rng in zip(states, rngs, strict=True)]
        ).reshape(-1, 2)
    batch = pack(states)
    finish(batch, rngs)
    return batch_returns(batch)
