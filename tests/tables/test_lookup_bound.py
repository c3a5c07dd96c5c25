"""A table lookup in the bound context: where the trial may take the bin next to float64's
(t near a bin edge), the lookup evaluates both pieces and bounds the trial's value by their
gap at the exact t, instead of leaving the element unbounded; checked against the exact
lookup on Python fractions."""

from fractions import Fraction

import numpy as np
import pytest
from numba import njit

from fixedqmc.numerics.kernel import at, chunk, chunk_bounds, load, n_chunks, store
from fixedqmc.tables.evaluate import S, TableEvaluator
from fixedqmc.tables.lookup import coefficient_rows, make_lookup, prepare_table
from fixedqmc.tables.two_region import build_table

_, _, _lookup = make_lookup(S, unscale=False)
TABLE = build_table(lambda r: np.exp(-0.3 * r) / r, 1.0, 64.0, 9.0, n1=16, n_seg=6,
                    n_bin=8)


@njit
def lookup_kernel(ctx, s, src, out):
    """out[i] = the table's rescaled value g at s[i] (the lookup of tables.lookup)."""
    n = s.size
    for k in range(n_chunks(ctx, n)):
        cc = chunk(ctx, k)
        lo, hi = chunk_bounds(ctx, n, k)
        tab = prepare_table(src)
        for i in range(lo, hi):
            e = at(cc, i)
            out[i] = store(e, _lookup(e, tab, load(e, s[i], S)))


def float64_source(table):
    w = (table.sigma - table.s_min, table.s_max - table.sigma)
    coef = [np.concatenate([getattr(table, f"{c}1"), getattr(table, f"{c}2")]) for c in "abc"]
    return (np.array([table.s_min, table.sigma]), np.array([1 / w[0], 1 / w[1]]),
            coefficient_rows(*coef), np.int64(4), np.int64(table.n_seg), np.int64(3)), coef


def exact_value(table, coef, s: float) -> Fraction:
    """The lookup in exact arithmetic on the float64 constants (the bin of the exact t)."""
    two = not s < table.sigma
    s_lo = table.sigma if two else table.s_min
    inv = 1 / (table.s_max - table.sigma) if two else 1 / (table.sigma - table.s_min)
    t = min(max((Fraction(s) - Fraction(s_lo)) * Fraction(inv), Fraction(0)),
            Fraction(np.nextafter(1.0, 0.0)))
    if not two:
        k = int(t * table.n1)
        u = t * table.n1 - k
    else:
        nb, last = table.n_bin, table.n_seg - 1
        j = next((j for j in range(last) if t >= Fraction(1, 2 ** (j + 1))), last)
        w = t * 2 ** last if j == last else t * 2 ** (j + 1) - 1
        m = int(w * nb)
        k, u = table.n1 + j * nb + m, w * nb - m
    a, b, c = (Fraction(float(x[k])) for x in coef)
    return a + u * (b + u * c)


def edge_inputs(table, rng, n=400):
    """s placed a few ulps from bin edges of both regions (away from sigma and the ends),
    and s drawn over the table."""
    w1, w2 = table.sigma - table.s_min, table.s_max - table.sigma
    edges = [table.s_min + w1 * k / table.n1 for k in range(2, table.n1 - 1)]
    for j in range(table.n_seg - 1):
        for m in range(table.n_bin):
            t = 2.0 ** -(j + 1) * (1 + m / table.n_bin)
            if 0.05 < t < 0.95:
                edges.append(table.sigma + w2 * t)
    near = np.array(edges)[rng.integers(0, len(edges), n)]
    near = near * (1 + rng.uniform(-1e-9, 1e-9, n))
    return near, rng.uniform(table.s_min, table.s_max, n)


@pytest.mark.parametrize("spec", ["fixed:20", "fixed:24:floor", "fixed:30:stochastic",
                                  pytest.param("float:e6m9", marks=pytest.mark.heavy),
                                  pytest.param("bfloat16", marks=pytest.mark.heavy)])
def test_a_lookup_that_may_cross_a_bin_edge_stays_bounded(spec):
    """Near every bin edge the bound is finite (the crossing is followed, not declared
    ambiguous) and holds against the exact lookup; so it does everywhere else."""
    near, spread = edge_inputs(TABLE, np.random.default_rng(3))
    s = np.concatenate([near, spread])
    ev = TableEvaluator(TABLE, spec, runtime=True)
    kp = ev.precision
    trial_out = np.empty(s.size, kp.dtype)
    lookup_kernel(kp.context(0), kp.encode("s", s), ev.source, trial_out)
    trial = kp.decode("y", trial_out)
    kb = kp.bounding()
    src, coef = float64_source(TABLE)
    out = np.empty(s.size, kb.dtype)
    ctx = kb.context(0)
    lookup_kernel(ctx, s, src, out)
    value, bound = kb.decode("y", out), kb.bounds("y", out)
    assert (np.abs(trial - value) <= bound).all()
    for i in range(0, s.size, 3):
        if np.isfinite(bound[i]):
            assert abs(Fraction(trial[i]) - exact_value(TABLE, coef, s[i])) <= Fraction(bound[i])
    assert np.isfinite(bound[:near.size]).mean() > 0.95, kb.ambiguous(ctx)
