"""A freshly compiled kernel is the same code as the cached one (``fixedqmc._numba_rounds``).

Two processes evaluate the same slab reciprocal sum (float64, whose F loop vectorises only
after a second round of optimisation) with a fresh on-disk cache: the first compiles the
kernel, the second loads it.  Without the second round for the functions compiled in the
first process, the first ran the walker function's scalar loop and its sums differed from
the second's in the last bits.
"""

import os
import subprocess
import sys

import pytest

import fixedqmc._numba_rounds as rounds
from numba.core import codegen

SCRIPT = """
import fixedqmc._numba_cache as nc
nc.PackageCacheLocator.from_function = classmethod(lambda cls, f, p: None)  # NUMBA_CACHE_DIR
import numpy as np
from fixedqmc.systems.periodic import heg_cell
from fixedqmc.systems.periodic import slab_kernels as SK
from fixedqmc.systems.periodic.slab_evaluator import SlabEwaldEvaluator
n = 12
cell = heg_cell(n, 2.0, 2)
rng = np.random.default_rng(3)
x = np.concatenate([rng.random((4, n, 2)) @ cell.lattice, rng.uniform(-1, 1, (4, n, 1))], -1)
q = np.where(np.arange(n) % 2 == 0, 1.0, -1.0)
ev = SlabEwaldEvaluator(cell, q, (-1.0, 1.0), precision="float64", accuracy=1e-10)
pairs, height = ev.recip(x)
print(sum(SK.slab_recip_kernel.stats.cache_hits.values()))
print(" ".join(float(v).hex() for v in np.concatenate([pairs, height])))
"""


def test_the_second_round_is_installed():
    assert codegen.CPUCodeLibrary._optimize_final_module._fixedqmc_second_round
    rounds.install()  # idempotent: wraps once
    assert codegen.CPUCodeLibrary._optimize_final_module._fixedqmc_second_round


@pytest.mark.heavy
def test_a_fresh_compile_gives_the_cached_kernels_bits(tmp_path):
    env = dict(os.environ, NUMBA_CACHE_DIR=str(tmp_path), NUMBA_NUM_THREADS="1")

    def run():
        out = subprocess.run([sys.executable, "-c", SCRIPT], env=env, capture_output=True,
                             text=True, check=True).stdout.split("\n")
        return int(out[0]), out[1]

    hits_fresh, fresh = run()
    hits_cached, cached = run()
    assert (hits_fresh, hits_cached) == (0, 1)  # compiled, then loaded
    assert fresh == cached
