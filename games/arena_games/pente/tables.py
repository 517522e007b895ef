"""Geometry of the 19x19 Pente board, computed once and shared by `rules` and `playouts`.

Points are flat indices `y * SIZE + x` (0 <= x, y < 19). `OFF_BOARD` (= 361) stands for any point
beyond the edge: the batched engine keeps one extra cell per board at that index holding the value
`OFF_BOARD_CELL`, so gathers through these tables never need a bounds check.
"""

from __future__ import annotations

import numpy as np

SIZE = 19
NUM_POINTS = SIZE * SIZE  # 361
CENTRE = (SIZE // 2) * SIZE + SIZE // 2  # (9, 9) -> 180
OFF_BOARD = NUM_POINTS  # sentinel point index for "beyond the edge"

EMPTY = 0  # cell values: EMPTY, then the stone of player p is p + 1
OFF_BOARD_CELL = 3  # the sentinel cell's value: neither empty nor a stone

RAY_LENGTH = 4  # points looked at in each direction: 3 for a capture, 4 for a five through the move
TOURNAMENT_RADIUS = 2  # under the tournament rule P1's second stone keeps Chebyshev distance > 2

# The 8 directions as (dx, dy), in opposite pairs: directions 2a and 2a + 1 make axis a
# (horizontal, vertical, diagonal, anti-diagonal).
DIRECTIONS = ((1, 0), (-1, 0), (0, 1), (0, -1), (1, 1), (-1, -1), (1, -1), (-1, 1))


def _ray(point: int, dx: int, dy: int) -> list[int]:
    """The RAY_LENGTH points after `point` in direction (dx, dy), OFF_BOARD past the edge."""
    x, y = point % SIZE, point // SIZE
    ray = []
    for distance in range(1, RAY_LENGTH + 1):
        rx, ry = x + distance * dx, y + distance * dy
        ray.append(ry * SIZE + rx if 0 <= rx < SIZE and 0 <= ry < SIZE else OFF_BOARD)
    return ray


# RAYS[p, d, k]: the point at distance k + 1 from p in direction d, or OFF_BOARD. int64 (361, 8, 4).
RAYS = np.array([[_ray(p, dx, dy) for dx, dy in DIRECTIONS] for p in range(NUM_POINTS)], dtype=np.intp)


_POINTS = np.arange(NUM_POINTS)
# DISTANCE_FROM_CENTRE[p]: Chebyshev distance max(|x - 9|, |y - 9|). int (361,).
DISTANCE_FROM_CENTRE = np.maximum(abs(_POINTS % SIZE - SIZE // 2), abs(_POINTS // SIZE - SIZE // 2))
# NEAR_CENTRE[p]: p lies in the 5x5 square that the tournament rule forbids at ply index 2. bool (361,).
NEAR_CENTRE = DISTANCE_FROM_CENTRE <= TOURNAMENT_RADIUS


def _makes_five(byte: int) -> bool:
    """Whether one axis byte of own-stone bits completes a line of 5 with the placed stone.

    The byte holds 8 bits, most significant first: one direction's distances 1..4, then the
    opposite direction's distances 1..4 (the order `np.packbits` gives for RAYS' layout).
    """
    bits = [(byte >> (7 - k)) & 1 for k in range(8)]
    forward = next((k for k in range(4) if not bits[k]), 4)
    backward = next((k for k in range(4) if not bits[4 + k]), 4)
    return forward + backward >= 4


# FIVE_BY_AXIS_BYTE[b]: `_makes_five(b)` for every byte. bool (256,).
FIVE_BY_AXIS_BYTE = np.array([_makes_five(byte) for byte in range(256)])

# Opening rules as bans on the next move's point, indexed by kind. bool (3, 361).
NO_BAN, CENTRE_ONLY, TOURNAMENT_BAN = 0, 1, 2
OPENING_BANS = np.array([np.zeros(NUM_POINTS, bool), _POINTS != CENTRE, NEAR_CENTRE])
for _table in (RAYS, DISTANCE_FROM_CENTRE, NEAR_CENTRE, FIVE_BY_AXIS_BYTE, OPENING_BANS):
    _table.flags.writeable = False
