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


def distinct_pcg64(rngs: Sequence[np.random.Generator]) -> bool:
    """Whether `rngs` are PCG64 generators, none of them twice: the generators whose draws every
    game's compiled playouts reproduce (a generator of another kind, or one shared by several
    states, stays on the reference)."""
    return len({id(rng) for rng in rngs}) == len(rngs) and all(pcg64.is_pcg64(rng) for rng in rngs)


def compiled_playouts(
    states: Sequence[Any],
    rngs: Sequence[np.random.Generator],
    pack: Callable[[Sequence[Any]], tuple[np.ndarray, ...]],
    playout_returns: Callable[..., np.ndarray],
    *,
    shared_generators: bool,
) -> np.ndarray:
    """float64 (n, 2): a kernel's `playout_returns(*pack(states), words[, rng_of_row])` on the PCG64
    states of `rngs`, the generators then set to the states it left.

    shared_generators False: words[i] is rngs[i]'s state, for kernels that draw in blocks per row
    (rows sharing a generator would interleave its blocks otherwise: ValueError). True: each
    generator is one row of words, once, and row i draws from words[rng_of_row[i]], in row order
    (a generator shared by several states is drawn from in state order, as the reference does)."""
    if len(rngs) != len(states):
        raise ValueError(f"playouts need one generator per state: {len(rngs)} for {len(states)}")
    generators, by_row = _distinct(rngs) if shared_generators else (rngs, ())
    words = pcg64.states_of_distinct(generators)
    results = playout_returns(*pack(states), words, *by_row)
    pcg64.restore_all(generators, words)
    return results


def _distinct(
    rngs: Sequence[np.random.Generator],
) -> tuple[list[np.random.Generator], tuple[np.ndarray]]:
    """(each generator once, in order of first use; (rng_of_row,)): rngs[i] is the generator
    rng_of_row[i] (int64 (n,))."""
    generators = list({id(rng): rng for rng in rngs}.values())
    slot = {id(rng): index for index, rng in enumerate(generators)}
    return generators, (np.array([slot[id(rng)] for rng in rngs], dtype=np.int64),)
