"""Operation counts of a profiling run (``KernelPrecision.counts``) equal hand counts: the
quadratic chain, a two-region table lookup per region, and a kernel's sums."""

import numpy as np
import pytest
from numba import njit

from fixedqmc.numerics.kernel import (KernelSpec, Variable, acc_add, acc_value, acc_zero, at,
                                      chunk, chunk_bounds, load, mul, n_chunks, store)
from fixedqmc.numerics.polynomial import QUADRATIC, quadratic_kernel
from fixedqmc.tables.builtin import get_builtin
from fixedqmc.tables.evaluate import TableEvaluator
from fixedqmc.tables.lookup import coefficient_rows


def profiled(spec):
    prof = spec.resolve("float64").profiling()
    return prof, prof.context(0)


def as_words(prof, name, x):
    return prof.encode(name, np.asarray(x, np.float64))


def test_the_quadratic_chain_counts_two_products_and_two_sums_per_element():
    n = 1000
    rng = np.random.default_rng(1)
    prof, ctx = profiled(QUADRATIC)
    ins = [as_words(prof, v, rng.uniform(-1, 1, n)) for v in "abc"]
    ins.append(as_words(prof, "u", rng.uniform(0, 1, n)))
    quadratic_kernel(ctx, *ins, np.zeros(n, np.int64))
    assert prof.counts(ctx) == [
        {"variable": "uc", "op": "mul", "count": n, "a": "u", "b": "c"},
        {"variable": "buc", "op": "add", "count": n, "a": "b", "b": "uc"},
        {"variable": "ubuc", "op": "mul", "count": n, "a": "u", "b": "buc"},
        {"variable": "y", "op": "add", "count": n, "a": "a", "b": "ubuc"}]
    assert set(prof.profile(ctx)) == {"uc", "buc", "ubuc", "y"}  # ranges as before


def test_a_table_lookup_counts_its_region_test_bin_and_quadratic():
    table = get_builtin("sapt2").build()
    ev = TableEvaluator(table, "float64")
    prof = ev.precision.profiling()
    coeffs = [as_words(prof, name, c) for name, c in zip("abc", ev.coefficients)]
    ev.precision = prof
    ev.source = (as_words(prof, "s", ev.s_lo), as_words(prof, "inv", ev.inv),
                 coefficient_rows(*coeffs), *ev.layout)
    s = np.random.default_rng(2).uniform(table.s_min, table.s_max, 5000)
    region = np.zeros(s.size, np.int8)
    ctx = ev.run(ev.encode(s), np.zeros(s.size, np.int64), region)
    n, n2 = s.size, int((s >= table.sigma).sum())
    assert 0 < n2 < n and int((region == 2).sum()) == n2
    got = {(c["variable"], c["op"]): (c["count"], c["a"], c["b"]) for c in prof.counts(ctx)}
    assert got == {
        ("s", "less"): (n, "s", "s"),          # the region test, s < sigma
        ("ds", "sub"): (n, "s", "s"),          # s - s_lo
        ("t", "mul"): (n, "ds", "inv"),        # (s - s_lo) / width
        ("u", "uniform_bin"): (n - n2, "t", ""),
        ("u", "log2_bin"): (n2, "t", ""),
        ("uc", "mul"): (n, "u", "c"),
        ("buc", "add"): (n, "b", "uc"),
        ("ubuc", "mul"): (n, "u", "buc"),
        ("y", "add"): (n, "a", "ubuc")}


SUMS = KernelSpec("sums", (Variable("x", -1, 1), Variable("p", -1, 1), Variable("s", -9, 9)))


@njit
def sum_of_squares(ctx, xs, rows, out):
    """out[r] = sum of xs[r, j]**2 over the first rows[r] columns."""
    for k in range(n_chunks(ctx, xs.shape[0])):
        cc = chunk(ctx, k)
        lo, hi = chunk_bounds(ctx, xs.shape[0], k)
        for r in range(lo, hi):
            e = at(cc, r)
            acc = acc_zero(e, 2)
            for j in range(rows[r]):
                x = load(e, xs[r, j], 0)
                acc = acc_add(e, acc, mul(e, x, x, 1), 2)
            out[r] = store(e, acc_value(e, acc, 2))


@pytest.mark.parametrize("lengths", [[3, 0, 5], [7] * 40])
def test_sums_count_one_term_each(lengths):
    rows = np.array(lengths, np.int64)
    xs = np.random.default_rng(3).uniform(-1, 1, (rows.size, 7))
    prof, ctx = profiled(SUMS)
    sum_of_squares(ctx, as_words(prof, "x", xs), rows, np.zeros(rows.size, np.int64))
    terms = int(rows.sum())
    assert prof.counts(ctx) == [
        {"variable": "p", "op": "mul", "count": terms, "a": "x", "b": "x"},
        {"variable": "s", "op": "acc_add", "count": terms, "a": "p", "b": ""}]


def test_a_run_with_formats_counts_nothing_and_is_unchanged():
    """Counting lives in the profiling context only: a run-time fixed run of the same
    kernel gives the same words with and without a profiling run before it."""
    n = 200
    rng = np.random.default_rng(4)
    vals = [rng.uniform(-1, 1, n) for _ in "abc"] + [rng.uniform(0, 1, n)]
    kp = QUADRATIC.resolve("fixed:24").at_runtime()
    outs = []
    for _ in range(2):
        ctx = kp.context(5)
        out = np.zeros(n, np.int64)
        quadratic_kernel(ctx, *[kp.encode(v, x, 5) for v, x in zip("abcu", vals)], out)
        outs.append(out)
        prof, pctx = profiled(QUADRATIC)
        quadratic_kernel(pctx, *[as_words(prof, v, x) for v, x in zip("abcu", vals)],
                         np.zeros(n, np.int64))
    assert np.array_equal(*outs)
