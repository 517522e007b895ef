"""NumPy's PCG64 bit generator in compiled code, so that compiled kernels draw the very numbers a
`np.random.Generator` would (ARCHITECTURE "Compiled core": the same seeds give the same games on
both cores).

A generator's state travels as `uint64[STATE_WORDS]` (`state_of` reads it from a Generator,
`restore` writes it back). The draws reproduce NumPy 2's C code for PCG64 (XSL-RR 128/64):
`next_uint64` is `bit_generator.random_raw()`, `next_double` one value of `Generator.random()`,
`bounded` one `Generator.integers(bound)` for 0 < bound < 2**32 - 1 (Lemire's method on 32-bit
draws, which share the generator's buffered half-word). tests/games/test_pente_kernels.py checks
each against NumPy.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
from numba import njit

# Fields of a state array: the 128-bit LCG state and increment as (high, low) 64-bit halves, then
# NumPy's buffered 32-bit half of a 64-bit draw (has_uint32, uinteger).
STATE_HI, STATE_LO, INC_HI, INC_LO, HAS_UINT32, UINTEGER = range(6)
STATE_WORDS = 6

_MULTIPLIER_HI = np.uint64(2549297995355413924)  # PCG's default 128-bit multiplier, high half
_MULTIPLIER_LO = np.uint64(4865540595714422341)
_LOW32 = np.uint64(0xFFFFFFFF)
_U0, _U1, _U11, _U32, _U58, _U63, _U64 = (np.uint64(k) for k in (0, 1, 11, 32, 58, 63, 64))
_DOUBLE_UNIT = 1.0 / 9007199254740992.0  # 2**-53
_U64_MASK = (1 << 64) - 1


def state_of(rng: np.random.Generator) -> np.ndarray:
    """uint64 (STATE_WORDS,): a copy of a PCG64 generator's state; ValueError for other bit generators."""
    state = rng.bit_generator.state
    if state["bit_generator"] != "PCG64":
        raise ValueError(f"compiled draws replicate PCG64 only, not {state['bit_generator']}")
    lcg, increment = state["state"]["state"], state["state"]["inc"]
    words = (lcg >> 64, lcg & _U64_MASK, increment >> 64, increment & _U64_MASK)
    return np.array([*words, state["has_uint32"], state["uinteger"]], dtype=np.uint64)


def restore(rng: np.random.Generator, words: np.ndarray) -> None:
    """Sets `rng` (PCG64) to the state `words`, as the compiled draws left it."""
    hi, lo, inc_hi, inc_lo, has_uint32, uinteger = (int(word) for word in words)
    rng.bit_generator.state = {
        "bit_generator": "PCG64",
        "state": {"state": (hi << 64) | lo, "inc": (inc_hi << 64) | inc_lo},
        "has_uint32": has_uint32,
        "uinteger": uinteger,
    }


def states_of_distinct(rngs: Sequence[np.random.Generator]) -> np.ndarray:
    """uint64 (n, STATE_WORDS): the states of n distinct PCG64 generators, one per row of a batch
    whose rows draw in turns of their own (rows sharing a generator would interleave its draws
    otherwise: ValueError)."""
    if len({id(rng) for rng in rngs}) != len(rngs):
        raise ValueError("compiled playouts need one distinct generator per state")
    return np.stack([state_of(rng) for rng in rngs]) if rngs else np.zeros((0, STATE_WORDS), np.uint64)


def restore_all(rngs: Sequence[np.random.Generator], states: np.ndarray) -> None:
    """`restore` of every generator from its row of `states`."""
    for rng, words in zip(rngs, states, strict=True):
        restore(rng, words)


def is_pcg64(rng: np.random.Generator) -> bool:
    return type(rng.bit_generator) is np.random.PCG64


@njit(cache=True, inline="always")
def _multiply_high(a: np.uint64, b: np.uint64) -> np.uint64:
    """The high 64 bits of the 128-bit product a * b."""
    a_lo, a_hi, b_lo, b_hi = a & _LOW32, a >> _U32, b & _LOW32, b >> _U32
    lo_lo, hi_lo, lo_hi = a_lo * b_lo, a_hi * b_lo, a_lo * b_hi
    cross = (lo_lo >> _U32) + (hi_lo & _LOW32) + lo_hi
    return a_hi * b_hi + (hi_lo >> _U32) + (cross >> _U32)


@njit(cache=True)
def next_uint64(state: np.ndarray) -> np.uint64:
    """One raw 64-bit draw: the LCG steps (state * multiplier + increment mod 2**128), then XSL-RR."""
    hi, lo = state[STATE_HI], state[STATE_LO]
    product_lo = lo * _MULTIPLIER_LO
    product_hi = _multiply_high(lo, _MULTIPLIER_LO) + lo * _MULTIPLIER_HI + hi * _MULTIPLIER_LO
    new_lo = product_lo + state[INC_LO]
    carry = _U1 if new_lo < product_lo else _U0
    new_hi = product_hi + state[INC_HI] + carry
    state[STATE_HI], state[STATE_LO] = new_hi, new_lo
    folded, rotation = new_hi ^ new_lo, new_hi >> _U58
    return (folded >> rotation) | (folded << ((_U64 - rotation) & _U63))


@njit(cache=True)
def next_double(state: np.ndarray) -> float:
    """One value of Generator.random(): 53 random bits in [0, 1)."""
    return float(next_uint64(state) >> _U11) * _DOUBLE_UNIT


@njit(cache=True)
def _next_uint32(state: np.ndarray) -> np.uint64:
    """NumPy's 32-bit draw: the buffered high half of the last 64-bit draw, else a new draw's low half."""
    if state[HAS_UINT32]:
        state[HAS_UINT32] = _U0
        return state[UINTEGER]
    word = next_uint64(state)
    state[HAS_UINT32], state[UINTEGER] = _U1, word >> _U32
    return word & _LOW32


@njit(cache=True)
def bounded(state: np.ndarray, bound: int) -> int:
    """One value of Generator.integers(bound), 0 < bound < 2**32 - 1: uniform in [0, bound) (no
    draw for bound 1, as NumPy)."""
    if bound == 1:
        return 0
    excluded = np.uint64(bound)
    product = _next_uint32(state) * excluded
    leftover = product & _LOW32
    if leftover < excluded:
        threshold = (_LOW32 - (excluded - _U1)) % excluded
        while leftover < threshold:
            product = _next_uint32(state) * excluded
            leftover = product & _LOW32
    return int(product >> _U32)
