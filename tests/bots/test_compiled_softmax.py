"""The compiled masked softmax (`compiled_softmax`) against `evaluators.masked_softmax`, bit for bit,
on thousands of random rows: widths around NumPy's pairwise-sum blocks (8, 128), logits from tiny to
huge, NaN, infinite and all-illegal rows; and the NumPy loops it calls (`ufunc_loops.apply`,
`add_reduce`) against np.exp and np.sum on arrays."""

from __future__ import annotations

import numpy as np

from arena_bots import compiled_softmax
from arena_bots.evaluators import masked_softmax
from arena_games import ufunc_loops

WIDTHS = [1, 2, 7, 8, 9, 16, 17, 22, 38, 127, 128, 129, 200, 256, 257, 361, 500]


def random_batch(rng: np.random.Generator, trial: int) -> tuple[np.ndarray, np.ndarray]:
    """Logits float32 or float64 (n, A) and a legal mask, some rows broken (NaN, +inf, all -inf)."""
    rows, width = int(rng.integers(1, 24)), int(rng.choice(WIDTHS))
    scale = float(rng.choice([0.01, 1.0, 10.0, 1000.0]))
    logits = rng.normal(0, scale, (rows, width)).astype(np.float32 if trial % 2 else np.float64)
    legal = rng.random((rows, width)) < rng.uniform(0.05, 1.0)
    special = [np.nan, np.inf, -np.inf][trial % 3]
    logits[rng.integers(rows), rng.integers(width)] = special
    if trial % 5 == 0:
        logits[0] = -np.inf
    return logits, legal


def test_the_compiled_masked_softmax_is_numpys_bit_for_bit():
    rng = np.random.default_rng(24)
    broken_rows = 0
    for trial in range(1500):
        logits, legal = random_batch(rng, trial)
        reference, reference_broken = masked_softmax(logits, legal)
        compiled, broken = compiled_softmax.masked_softmax(logits, legal)
        np.testing.assert_array_equal(broken, reference_broken)
        assert (compiled.view(np.int64) == reference.view(np.int64))[~broken].all(), trial
        broken_rows += int(broken.sum())
    assert broken_rows > 300  # NaN, +inf and rows of only -inf or no legal action


def test_numpys_exp_and_sum_loops_on_arrays():
    rng = np.random.default_rng(5)
    values = rng.normal(0, 30, 1001)
    words, total = np.empty(ufunc_loops.WORDS, dtype=np.int64), np.empty(1)
    out = np.empty_like(values)
    ufunc_loops.apply(*ufunc_loops.unary_loop(np.exp), words, values, out)
    np.testing.assert_array_equal(out, np.exp(values))
    add = ufunc_loops.binary_loop(np.add)
    for size in (0, 5, 100, 1001):
        assert ufunc_loops.add_reduce(*add, words, values[:size], total) == values[:size].sum()
