"""`evaluators.masked_softmax` in compiled code, bit for bit: the priors of the compiled PUCT's leaves
(ARCHITECTURE §9).

The reference computes, per row, the top legal logit (float64), exp(logit - top) over the row (-inf
where illegal, so 0) and each weight over the row's sum. Subtraction and division are exact IEEE
operations either way; the exponential and the sum are not: on a CPU with AVX-512, NumPy's `np.exp`
is its own vector code, which differs from the C library's `exp` (what Numba's `np.exp` calls) in the
last bit for about 5% of arguments, and `np.sum` adds a row in NumPy's pairwise order. So the kernel
calls NumPy's own loops (`arena_games.ufunc_loops`): `np.exp`'s on the whole block of rows at once,
`np.add`'s reduction on each row (tests/bots/test_compiled_softmax.py: the same bits on thousands of
random rows, NaN and infinite logits included). About 3x faster than the NumPy original at a worker's
batch (a few µs a call, against 11-17 µs for 8-23 rows).
"""

from __future__ import annotations

import numpy as np
from numba import njit

from arena_games import ufunc_loops

_EXP = ufunc_loops.unary_loop(np.exp)
_ADD = ufunc_loops.binary_loop(np.add)


def masked_softmax(logits: np.ndarray, legal: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """`evaluators.masked_softmax(logits, legal)` (temperature 1), the same bits: logits (n, A) of
    any float dtype, legal bool (n, A); the (n, A) float64 probabilities (NaN in a row with none) and
    the (n,) bool mask of the rows with none."""
    probabilities = np.empty(logits.shape)
    broken = np.empty(logits.shape[0], dtype=np.bool_)
    _masked_softmax(
        *_EXP,
        *_ADD,
        np.ascontiguousarray(logits, dtype=np.float64),
        np.ascontiguousarray(legal, dtype=np.bool_),
        probabilities,
        broken,
        np.empty(ufunc_loops.WORDS, dtype=np.int64),
        np.empty(1),
    )
    return probabilities, broken


@njit(cache=True)
def _masked_softmax(
    exp,
    exp_data: int,
    add,
    add_data: int,
    logits: np.ndarray,
    legal: np.ndarray,
    out: np.ndarray,
    broken: np.ndarray,
    words: np.ndarray,
    total: np.ndarray,
) -> None:
    """Writes the probabilities into `out` (float64 (n, A), C order) and the rows without any into
    `broken`; (exp, exp_data) and (add, add_data): NumPy's float64 loops of np.exp and np.add;
    `words` and `total`: the ufunc calls' scratch."""
    rows, actions = logits.shape
    for row in range(rows):
        top = -np.inf  # the legal maximum, NaN if any legal logit is (np.max's)
        for action in range(actions):
            if legal[row, action] and not logits[row, action] <= top:
                top = logits[row, action]
                if np.isnan(top):
                    break
        broken[row] = not np.isfinite(top)
        for action in range(actions):
            logit = logits[row, action] if legal[row, action] else -np.inf
            out[row, action] = logit - top
    flat = out.reshape(-1)
    ufunc_loops.apply(exp, exp_data, words, flat, flat)
    for row in range(rows):
        weights = flat[row * actions : (row + 1) * actions]
        weight_sum = ufunc_loops.add_reduce(add, add_data, words, weights, total)
        for action in range(actions):
            weights[action] /= weight_sum
