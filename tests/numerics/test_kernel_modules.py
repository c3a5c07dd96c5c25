"""The kernel modules behind ``fixedqmc.numerics.kernel``: names that numba's on-disk cache
pickled under ``kernel`` still resolve there."""

import pickle

from fixedqmc.numerics import kernel_types


def test_a_cache_index_written_before_the_split_unpickles():
    # numba pickles the argument types of cached kernels into its index files; an index
    # written when the format table type lived in kernel.py names it there, and must load
    # (then be found stale by its source stamp) instead of raising AttributeError
    old_reference = b"cfixedqmc.numerics.kernel\nFormatTableType\n."
    assert pickle.loads(old_reference) is kernel_types.FormatTableType
