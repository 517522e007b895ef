"""The compiled choice every game's kernels share when a draw picks a legal action: the nth legal
one in index order, as `Game.random_action` (np.flatnonzero(mask)[nth]) picks it."""

from __future__ import annotations

import numpy as np
from numba import njit


@njit(cache=True)
def nth_true(mask: np.ndarray, nth: int) -> int:
    """The index of the nth True of the bool `mask` (nth from 0); -1 when it has nth or fewer."""
    for index in range(mask.size):
        if mask[index]:
            if nth == 0:
                return index
            nth -= 1
    return -1
