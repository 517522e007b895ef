"""NumPy's own float64 ufunc loops, called from compiled code, where a reference rule's result depends
on NumPy's implementation of a function rather than the C library's (ARCHITECTURE "Compiled core").

On a CPU with AVX-512, NumPy computes `np.arctan2` with its own vector code (SVML), which differs
from the C library's `atan2` (what Numba's `math.atan2` calls) by one unit in the last place for
about 8% of arguments, scalars included. So a kernel that must equal a rule written with
`np.arctan2` calls NumPy's loop itself: `binary_loop(np.arctan2)` reads the ufunc's float64 loop
(a C function pointer) once per process, `new_frame` makes the scratch one call needs, and `call`
evaluates it on one pair of numbers (about 70 ns). The loop is passed to the kernels as an argument,
so that Numba's cache holds no address of this process. On arrays: `unary_loop(np.exp)` and
`apply` (NumPy's own `np.exp` of a contiguous array, vector code included), and `add_reduce` with
`binary_loop(np.add)` (the sum `np.sum` makes of a contiguous row: NumPy's pairwise order).
"""

from __future__ import annotations

import ctypes

import numpy as np
from numba import njit

# A ufunc's inner loop: void loop(char **args, npy_intp const *dimensions, npy_intp const *steps, void *data).
LOOP = ctypes.CFUNCTYPE(None, ctypes.c_void_p, ctypes.c_void_p, ctypes.c_void_p, ctypes.c_void_p)
_FLOAT64_UNARY, _FLOAT64_BINARY = "d->d", "dd->d"
# A frame: float64 (FRAME,) = [y, x, out] and then, as raw words, the call's arguments: the pointers
# to y, x and out, the dimension (1) and the steps (8 bytes each).
_ARGS, _DIMENSIONS, _STEPS, FRAME = 3, 6, 7, 10
# The words of an array call (`apply`, `add_reduce`): int64 (WORDS,) = the pointers of the (up to
# three) operands, the dimension, then their steps in bytes.
_ARRAY_DIMENSION, _ARRAY_STEPS, WORDS = 3, 4, 7


class _UFuncObject(ctypes.Structure):
    """The head of NumPy's PyUFuncObject (numpy/ufuncobject.h), up to the loops and their data."""

    _fields_ = [
        ("ob_refcnt", ctypes.c_ssize_t),
        ("ob_type", ctypes.c_void_p),
        ("nin", ctypes.c_int),
        ("nout", ctypes.c_int),
        ("nargs", ctypes.c_int),
        ("identity", ctypes.c_int),
        ("functions", ctypes.POINTER(ctypes.c_void_p)),
        ("data", ctypes.POINTER(ctypes.c_void_p)),
        ("ntypes", ctypes.c_int),
        ("reserved1", ctypes.c_int),
        ("name", ctypes.c_char_p),
    ]


def binary_loop(ufunc: np.ufunc) -> tuple[ctypes._CFuncPtr, int]:
    """(loop, data) of `ufunc`'s float64 loop of two inputs, as this process's NumPy dispatched it;
    ValueError if it has none; RuntimeError if the object's layout is not the one read here (another
    NumPy), checked by its counts and name before any pointer is used."""
    return _float64_loop(ufunc, 2, _FLOAT64_BINARY)


def unary_loop(ufunc: np.ufunc) -> tuple[ctypes._CFuncPtr, int]:
    """(loop, data) of `ufunc`'s float64 loop of one input; errors as `binary_loop`."""
    return _float64_loop(ufunc, 1, _FLOAT64_UNARY)


def _float64_loop(ufunc: np.ufunc, inputs: int, types: str) -> tuple[ctypes._CFuncPtr, int]:
    if ufunc.nin != inputs or types not in ufunc.types:
        raise ValueError(f"{ufunc.__name__} has no {types} loop")
    head = _UFuncObject.from_address(id(ufunc))
    layout = (head.nin, head.nout, head.ntypes, head.name)
    if layout != (ufunc.nin, ufunc.nout, ufunc.ntypes, ufunc.__name__.encode()):
        raise RuntimeError(f"NumPy {np.__version__}'s ufunc object has another layout: {layout}")
    index = ufunc.types.index(types)
    return LOOP(head.functions[index]), head.data[index] or 0


@njit(cache=True)
def new_frame() -> np.ndarray:
    """A frame for `call` (float64 (FRAME,)); it must stay where it is while it is used."""
    frame = np.zeros(FRAME)
    words = frame.view(np.int64)
    for argument in range(3):
        words[_ARGS + argument] = frame.ctypes.data + 8 * argument
        words[_STEPS + argument] = 8
    words[_DIMENSIONS] = 1
    return frame


@njit(cache=True)
def call(loop, data: int, frame: np.ndarray, first: float, second: float) -> float:
    """The ufunc of (loop, data) on (first, second), e.g. np.arctan2(y, x) for first = y, second = x."""
    frame[0], frame[1] = first, second
    base = frame.ctypes.data
    loop(base + 8 * _ARGS, base + 8 * _DIMENSIONS, base + 8 * _STEPS, data)
    return frame[2]


@njit(cache=True)
def apply(loop, data: int, words: np.ndarray, values: np.ndarray, out: np.ndarray) -> None:
    """out[:] = the unary ufunc of (loop, data) on `values`, both float64 contiguous of one size
    (`out` may be `values`); `words`: int64 (WORDS,) scratch."""
    words[0], words[1] = values.ctypes.data, out.ctypes.data
    words[_ARRAY_DIMENSION] = values.size
    words[_ARRAY_STEPS], words[_ARRAY_STEPS + 1] = 8, 8
    base = words.ctypes.data
    loop(base, base + 8 * _ARRAY_DIMENSION, base + 8 * _ARRAY_STEPS, data)


@njit(cache=True)
def add_reduce(loop, data: int, words: np.ndarray, values: np.ndarray, total: np.ndarray) -> float:
    """The sum of `values` (float64 contiguous) by np.add's loop (loop, data) as a reduction, as
    `np.sum` adds a row: 0 plus NumPy's pairwise sum. `total`: float64 (1,) scratch; `words` as in
    `apply`."""
    total[0] = 0.0
    words[0], words[1], words[2] = total.ctypes.data, values.ctypes.data, total.ctypes.data
    words[_ARRAY_DIMENSION] = values.size
    words[_ARRAY_STEPS], words[_ARRAY_STEPS + 1], words[_ARRAY_STEPS + 2] = 0, 8, 0
    base = words.ctypes.data
    loop(base, base + 8 * _ARRAY_DIMENSION, base + 8 * _ARRAY_STEPS, data)
    return total[0]
