"""The plain-Python wrappers every game's compiled kernels share (ARCHITECTURE "Compiled core"):
packing reference states into a batch of arrays, and the `playouts(states, rngs)` that runs a
kernel's compiled `playout_returns` on the PCG64 states of NumPy generators and writes them back.

Nothing here is compiled: the kernels' hot loops stay in each game's own module, and these only
prepare their arrays and generator states around one compiled call.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from arena_games import pcg64

# (width, dtype) of one array of a batch: the batch holds it as (n, width).
Layout = tuple[int, type]


def pack_rows(
    states: Sequence[Any], from_state: Callable[[Any], tuple[np.ndarray, ...]], *layouts: Layout
) -> tuple[np.ndarray, ...]:
    """The states as a batch: per layout an array (n, width) of its dtype, row i holding the
    matching array of from_state(states[i])."""
    batch = tuple(np.empty((len(states), width), dtype=dtype) for width, dtype in layouts)
    for row, state in enumerate(states):
        for array, part in zip(batch, from_state(state), strict=True):
            array[row] = part
    return batch


def playouts_on_distinct_generators(
    states: Sequence[Any],
    rngs: Sequence[np.random.Generator],
    pack: Callable[[Sequence[Any]], tuple[np.ndarray, ...]],
    playout_returns: Callable[..., np.ndarray],
) -> np.ndarray:
    """float64 (n, 2): `playout_returns(*pack(states), words)` with words[i] the PCG64 state of
    rngs[i], the generators then set to the states it left. For kernels that draw in blocks per
    row: rows sharing a generator would interleave its blocks otherwise (ValueError)."""
    if len(rngs) != len(states):
        raise ValueError("compiled playouts need one distinct generator per state")
    words = pcg64.states_of_distinct(rngs)
    results = playout_returns(*pack(states), words)
    pcg64.restore_all(rngs, words)
    return results


def playouts_in_state_order(
    states: Sequence[Any],
    rngs: Sequence[np.random.Generator],
    pack: Callable[[Sequence[Any]], tuple[np.ndarray, ...]],
    playout_returns: Callable[..., np.ndarray],
) -> np.ndarray:
    """float64 (n, 2): `playout_returns(*pack(states), words, rng_of_row)`, row i drawing from
    words[rng_of_row[i]], the PCG64 state of rngs[i] (a generator shared by several states is one
    row of words, drawn from in state order, as the reference does), the generators then set to
    the states it left."""
    if len(rngs) != len(states):
        raise ValueError(f"playouts need one generator per state: {len(rngs)} for {len(states)}")
    generators = list({id(rng): rng for rng in rngs}.values())  # each once, in order of first use
    slot = {id(rng): index for index, rng in enumerate(generators)}
    rng_of_row = np.array([slot[id(rng)] for rng in rngs], dtype=np.int64)
    words = np.zeros((len(generators), pcg64.STATE_WORDS), dtype=np.uint64)
    for index, rng in enumerate(generators):
        words[index] = pcg64.state_of(rng)
    results = playout_returns(*pack(states), words, rng_of_row)
    pcg64.restore_all(generators, words)
    return results
