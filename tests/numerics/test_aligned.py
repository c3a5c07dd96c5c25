"""Cache-line aligned arrays (:mod:`fixedqmc.numerics.aligned`)."""

import numpy as np
import pytest

from fixedqmc.numerics import aligned


def misaligned(a: np.ndarray) -> np.ndarray:
    """A copy of ``a`` whose data starts 8 bytes past a cache line."""
    raw = aligned.empty(a.nbytes + 8, np.uint8)
    out = raw[8:].view(a.dtype).reshape(a.shape)
    out[...] = a
    return out


@pytest.mark.parametrize("shape", [0, 7, (3, 5), (2, 0, 4), (32, 8, 8)])
@pytest.mark.parametrize("dtype", [np.float64, np.float32, np.int64, np.uint64, np.int8])
def test_empty_starts_on_a_cache_line(shape, dtype):
    for a in (aligned.empty(shape, dtype), aligned.copy(np.ones(shape, dtype))):
        assert a.shape == ((shape,) if isinstance(shape, int) else shape)
        assert a.dtype == dtype and a.flags.c_contiguous and a.flags.writeable
        assert aligned.is_aligned(a)
        assert a.size == 0 or a.ctypes.data % aligned.ALIGN == 0  # no data, no address


def test_copy_and_take_keep_the_values_and_align():
    a = np.random.default_rng(0).normal(size=(9, 5, 5))
    bad = misaligned(a)
    assert not aligned.is_aligned(bad) and aligned.is_aligned(aligned.copy(bad))
    c = aligned.copy(bad)
    assert np.array_equal(c, a) and not np.shares_memory(c, bad)
    assert c.dtype == a.dtype
    mask = np.arange(9) % 3 != 1
    for index in (mask, np.array([4, 4, 0, -1]), np.array([], np.int64), [2, 7]):
        t = aligned.take(bad, index)
        assert aligned.is_aligned(t) and np.array_equal(t, a[index])
    assert not aligned.is_aligned(a[:, :, :2])  # not contiguous
