"""The vectorising compile: its own optimiser settings and its own on-disk cache entries."""

import llvmlite.binding as ll
import pytest

from fixedqmc.numerics.vectorise import _codegen, _no_gather_target_machine, vectorising_compile


def test_vectorising_compile_has_its_own_cache_key_and_restores_numba():
    cg = _codegen()
    if _no_gather_target_machine(cg) is None or not hasattr(cg, "_tm_features"):
        pytest.skip("vectorising_compile swaps no target machine here (it does so only on "
                    f"x86 with numba's code-generator attributes): {ll.get_process_triple()}")
    before = (cg.magic_tuple(), cg._opt_level, cg._loopvect, cg._tm)
    with vectorising_compile():
        inside = cg.magic_tuple()
        assert (cg._opt_level, cg._loopvect) == (3, True)
    assert inside != before[0]  # cached apart from ordinary compiles of the same kernel
    assert "+prefer-no-gather" in inside[2]
    assert (cg.magic_tuple(), cg._opt_level, cg._loopvect, cg._tm) == before
