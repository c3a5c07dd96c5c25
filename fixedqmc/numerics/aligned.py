"""Arrays aligned to cache lines, for the large arrays that compiled kernels stream at
every call (MO coefficients, inverse Slater matrices, per-chunk scratch).

NumPy aligns array data to 16 bytes only, and a large array often starts 16 bytes past a
page boundary (the allocator's header).  The rows of such an array straddle 64-byte cache
lines, so a vector load of a row (with AVX-512: every load) touches two lines.  Which offset
a run gets is a lottery of its allocations.  Measured on a Zen 4 core (AVX-512), one thread,
64 H2, 256 walkers, float64 sweeps of single-electron moves with the MO coefficients and
inverses placed at a chosen offset from a line: 0.128-0.132 s at 0 bytes, 0.131 s at 32,
0.136 s at 48 and 0.137-0.150 s at 16; a lone loop of the MO sums (64 orbitals x 90 AOs)
0.64 us per point with its coefficients on a line and 1.13 us 16 bytes past one.

:data:`ALIGN` is 64 bytes: a cache line, and the width of an AVX-512 register.
"""

from __future__ import annotations

import math
from numbers import Integral

import numpy as np

#: Byte alignment of the arrays made here.
ALIGN = 64


def empty(shape, dtype=np.float64) -> np.ndarray:
    """An uninitialised C-contiguous array whose data starts on an :data:`ALIGN` boundary."""
    dtype = np.dtype(dtype)
    shape = (shape,) if isinstance(shape, Integral) else tuple(shape)
    nbytes = math.prod(shape) * dtype.itemsize
    raw = np.empty(nbytes + ALIGN, np.uint8)
    start = -raw.ctypes.data % ALIGN
    return raw[start:start + nbytes].view(dtype).reshape(shape)


def is_aligned(a: np.ndarray) -> bool:
    """Whether ``a`` is C-contiguous, writable and starts on an :data:`ALIGN` boundary (an
    array without elements has no data to align)."""
    return (a.flags.c_contiguous and a.flags.writeable
            and (a.size == 0 or a.__array_interface__["data"][0] % ALIGN == 0))


def copy(a) -> np.ndarray:
    """A new aligned array with the values (and type) of ``a``."""
    a = np.asarray(a)
    out = empty(a.shape, a.dtype)
    out[...] = a
    return out


def take(a: np.ndarray, index) -> np.ndarray:
    """``a[index]`` along the first axis (a boolean mask or integer indices) as an aligned
    array."""
    index = np.asarray(index)
    if index.dtype == np.bool_:
        index = np.flatnonzero(index)
    out = empty((index.size,) + a.shape[1:], a.dtype)
    np.take(a, index, axis=0, out=out)
    return out


class Scratch:
    """Kernels' scratch arrays, made once per key and reused by every call."""

    def __init__(self):
        self._arrays: dict = {}

    def get(self, key, make):
        """The arrays of ``key`` (a kernel's name, word types and sizes), made by ``make()``
        at the first call: kernels write every scratch element before they read it."""
        if key not in self._arrays:
            self._arrays[key] = make()
        return self._arrays[key]
