"""Pente positions the rules rarely reach by random play from the start, for the compiled core's
differential tests: boards one or a few stones short of full."""

from __future__ import annotations

import numpy as np

from arena_games.pente import rules
from arena_games.pente.tables import NUM_POINTS


def stripes() -> np.ndarray:
    """uint8 (NUM_POINTS,): a full board of stripes of 4 along x + 2y, no five anywhere; P1 has 181
    stones, P2 180 (as in tests/games/test_pente.py)."""
    return np.array([1 + (x + 2 * y) // 4 % 2 for y in range(19) for x in range(19)], dtype=np.uint8)


def near_full_state(seed: int, empties: int) -> rules.PenteState:
    """A running game with `empties` empty points and no captures: the stripes, stones lifted at
    random so that P1 has as many stones as P2 or one more (filling them may well make a five)."""
    rng = np.random.default_rng(seed)
    cells = stripes()
    ply = NUM_POINTS - empties
    for stone, kept in ((1, (ply + 1) // 2), (2, ply // 2)):
        points = np.flatnonzero(cells == stone)
        cells[rng.choice(points, size=points.size - kept, replace=False)] = 0
    last_move = int(np.flatnonzero(cells == 2 - ply % 2)[0])
    return rules.PenteState(bytes(cells), (0, 0), ply, rules.make_config(), last_move=last_move)


def last_empty_point_state() -> rules.PenteState:
    """P1 to fill the board's last empty point, (0, 0), with no five: a board-full draw."""
    cells = stripes()
    cells[0] = 0
    return rules.PenteState(bytes(cells), (0, 0), NUM_POINTS - 1, rules.make_config(), last_move=4)
