"""Smash the Code's wells (the rules are `arena_games.smash.rules`, whose docstring is the spec):
a well's layout, the placements of a pair (the action head's indices, their legality, where a pair
lands), and the resolution of a chain (groups, clearings and their scores, skulls dropped). Pure
functions of a well, width-generic; nothing here knows the players, the turn or the pair sequence.
"""

from __future__ import annotations

import functools
from collections.abc import Iterable, Iterator
from dataclasses import dataclass

import numpy as np

HEIGHT = 12  # rows of a well
SKULL = 0
GROUP = 4  # blocks of one colour that clear
COLOUR_BONUS = (0, 0, 2, 4, 8, 16)  # by the number of distinct colours cleared in a step
MAX_CHAIN_POWER = 999
Column = tuple[int, ...]  # cells from the bottom up
Well = tuple[Column, ...]


# --- placements ------------------------------------------------------------------------------------

# Per rotation: the column offset of B from A, and the first column A may use.
B_OFFSET = (1, 0, -1, 0)
FIRST_COLUMN = (0, 0, 1, 0)


@functools.cache
def placements(width: int) -> tuple[tuple[int, int], ...]:
    """Every placement index of a `width` well -> (column of A, rotation), rotation-major."""
    return tuple(
        (column, rotation)
        for rotation in range(4)
        for column in range(FIRST_COLUMN[rotation], width - (rotation == 0))
    )


def placement(width: int, action: int) -> tuple[int, int]:
    """(column, rotation) of placement index `action`."""
    return placements(width)[action]


def placement_index(width: int, column: int, rotation: int) -> int:
    """The placement index of (column, rotation); ValueError if it is off the board."""
    return placements(width).index((column, rotation))


def heights(well: Well) -> tuple[int, ...]:
    return tuple(len(column) for column in well)


def legal_placements(well: Well) -> np.ndarray:
    """bool (4 * width - 2,): the placements that fit in `well` (their columns have room)."""
    height = heights(well)
    return np.array(
        [
            height[x] <= HEIGHT - 2
            if B_OFFSET[r] == 0
            else height[x] < HEIGHT and height[x + B_OFFSET[r]] < HEIGHT
            for x, r in placements(len(well))
        ],
        dtype=bool,
    )


def place(well: Well, pair: tuple[int, int], column: int, rotation: int) -> Well:
    """`well` with the pair dropped by (column, rotation), before any clearing; room not checked."""
    a, b = pair
    cells = [list(c) for c in well]
    if rotation == 3:  # B below A
        cells[column] += [b, a]
    else:
        cells[column].append(a)
        cells[column + B_OFFSET[rotation]].append(b)
    return tuple(tuple(c) for c in cells)


def landing(well: Well, column: int, rotation: int) -> tuple[tuple[int, int], tuple[int, int]]:
    """Where blocks A and B of a pair placed by (column, rotation) come to rest in `well`, as (x, y)
    cells (y from the bottom), before any clearing; room not checked."""
    height = heights(well)
    if rotation == 3:  # B below A
        return (column, height[column] + 1), (column, height[column])
    if rotation == 1:  # B on top of A
        return (column, height[column]), (column, height[column] + 1)
    other = column + B_OFFSET[rotation]
    return (column, height[column]), (other, height[other])


# --- clearing and chains ---------------------------------------------------------------------------


def groups(well: Well, starts: Iterable[tuple[int, int]] | None = None) -> list[list[tuple[int, int]]]:
    """Every orthogonally connected group of one colour (skulls never group): lists of (x, y).
    Given `starts` (cells of the well), only the groups holding one of them."""
    if starts is None:
        starts = ((x, y) for x, column in enumerate(well) for y in range(len(column)))
    seen: set[tuple[int, int]] = set()
    found = []
    for x, y in starts:
        colour = well[x][y]
        if colour == SKULL or (x, y) in seen:
            continue
        seen.add((x, y))
        group, todo = [], [(x, y)]
        while todo:
            cx, cy = todo.pop()
            group.append((cx, cy))
            for nx, ny in ((cx + 1, cy), (cx - 1, cy), (cx, cy + 1), (cx, cy - 1)):
                if (
                    0 <= nx < len(well)
                    and 0 <= ny < len(well[nx])
                    and well[nx][ny] == colour
                    and (nx, ny) not in seen
                ):
                    seen.add((nx, ny))
                    todo.append((nx, ny))
        found.append(group)
    return found


def group_bonus(size: int) -> int:
    return 8 if size >= 11 else size - GROUP


def chain_power(step: int) -> int:
    """CP of chain step `step`: 0 for the first, then 8, 16, 32, ... up to MAX_CHAIN_POWER."""
    return 0 if step == 0 else min(4 << step, MAX_CHAIN_POWER)


@dataclass(frozen=True, slots=True)
class Clearing:
    """One step of the chain loop: the groups of 4+ that cleared at once, the skulls next to them
    that went too, what it scored and the well once the rest fell. Cells are (x, y), y from the bottom.

    points = 10 * blocks * clamp(chain_power + colour_bonus + group_bonus, 1, 999)."""

    groups: tuple[tuple[tuple[int, int], ...], ...]  # the cleared groups, each its cells
    skulls: frozenset[tuple[int, int]]
    colours: tuple[int, ...]  # the distinct colours cleared, ascending
    chain_power: int
    colour_bonus: int
    group_bonus: int
    points: int
    after: Well

    @property
    def blocks(self) -> int:
        """Coloured blocks cleared (skulls not counted)."""
        return sum(len(group) for group in self.groups)


def clearing(well: Well, step: int) -> Clearing | None:
    """Step `step` of the chain loop on `well` (0 the first); None when no group of 4+ stands."""
    cleared = [group for group in groups(well) if len(group) >= GROUP]
    if not cleared:
        return None
    coloured = {cell for group in cleared for cell in group}
    skulls = {
        (nx, ny)
        for x, y in coloured
        for nx, ny in ((x + 1, y), (x - 1, y), (x, y + 1), (x, y - 1))
        if 0 <= nx < len(well) and 0 <= ny < len(well[nx]) and well[nx][ny] == SKULL
    }
    colours = sorted({well[x][y] for x, y in coloured})
    power, colour_bonus = chain_power(step), COLOUR_BONUS[len(colours)]
    bonus = sum(group_bonus(len(group)) for group in cleared)
    removed = coloured | skulls
    after = tuple(
        tuple(cell for y, cell in enumerate(column) if (x, y) not in removed) for x, column in enumerate(well)
    )
    return Clearing(
        groups=tuple(tuple(group) for group in cleared),
        skulls=frozenset(skulls),
        colours=tuple(colours),
        chain_power=power,
        colour_bonus=colour_bonus,
        group_bonus=bonus,
        points=10 * len(coloured) * min(max(power + colour_bonus + bonus, 1), 999),
        after=after,
    )


def chain(well: Well) -> Iterator[Clearing]:
    """The chain loop on `well`: each step that clears, in order (none if nothing stands in 4s)."""
    step = 0
    while (cleared := clearing(well, step)) is not None:
        yield cleared
        well = cleared.after
        step += 1


def resolve(well: Well) -> tuple[Well, int, int]:
    """The chain loop: (the settled well, the points scored, the chain steps that cleared)."""
    total, steps = 0, 0
    for cleared in chain(well):
        well, total, steps = cleared.after, total + cleared.points, steps + 1
    return well, total, steps


def drop_skulls(well: Well, lines: int) -> Well:
    """`well` with `lines` lines of skulls dropped on it: one skull per column and line, those that
    do not fit discarded (the referee's rule; nobody loses by it)."""
    return tuple(column + (SKULL,) * min(lines, HEIGHT - len(column)) for column in well)
