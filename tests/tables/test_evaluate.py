"""The compiled two-region table kernel: float64 agrees with the numpy evaluation, the fixed
path equals an independent Fixed-array reference bit for bit (events included), results do
not depend on the thread count, wide formats stay within the table's error bound and narrow
ones degrade visibly (HAQMC seed 002, Sec. 3).

Every fixed spec below is a new compiled specialisation (~20 s each when numba's cache is
cold), so the file uses three: FIXED16, FIXED48 and COEF_SPEC.
"""

import numba
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import fixedqmc as fq
from fixedqmc.numerics import fixed as F
from fixedqmc.numerics.fixed import Fixed
from fixedqmc.numerics.qformat import QFormat
from fixedqmc.systems.helium import sapt2
from fixedqmc.tables.builtin import get_builtin
from fixedqmc.tables.error_bounds import bin_errors
from fixedqmc.tables.evaluate import (TABLE_VARIABLES, TableEvaluator, evaluate_table,
                                      table_spec)
from fixedqmc.tables.two_region import TableError

# One xdist worker runs this module's tests (make test: --dist loadgroup):
# the table kernels at fixed formats compile once for both modules.
pytestmark = pytest.mark.xdist_group("table_kernels")

FIXED16 = "fixed:16"
FIXED48 = "fixed:48"
# 40-bit words with floor rounding and wrap-around, coefficients in the table's own format
COEF_SPEC = ("table=fixed:40:floor:wrap,table.a=fixed:Q1.30,table.b=fixed:Q1.30,"
             "table.c=fixed:Q1.30")
NAMES = [v for v, _ in TABLE_VARIABLES]


@pytest.fixture(scope="module")
def table():
    """SAPT2 (K) in the HAQMC layout, 256 + 21 x 64 bins, exp transform in region II,
    coefficients quantized to Q1.30."""
    return get_builtin("sapt2").build(coef_format="Q1.30")


def random_s(table, n, seed):
    """n values of s: mostly inside the table, some at the region ends, a few outside."""
    rng = np.random.default_rng(seed)
    lo, hi = table.s_min, table.s_max
    s = np.concatenate([rng.uniform(lo, table.sigma, n // 3), rng.uniform(table.sigma, hi, n // 3),
                        rng.uniform(0.8 * lo, 1.05 * hi, n - 2 * (n // 3)),
                        [lo, table.sigma, hi, np.nextafter(table.sigma, 0.0)]])
    return s


# --------------------------------------------------------- independent reference ---
def _shift(x, sh):
    """x >> sh for sh >= 0, x << -sh for sh < 0 (uint64 arrays, |sh| < 64)."""
    right = np.right_shift(x, np.clip(sh, 0, 63).astype(np.uint64))
    left = np.left_shift(x, np.clip(-sh, 0, 63).astype(np.uint64))
    return np.where(sh >= 0, right, left)


def _low_bits(x, sh):
    """The low sh bits of x (0 for sh <= 0)."""
    mask = np.left_shift(np.uint64(1), np.clip(sh, 0, 63).astype(np.uint64)) - np.uint64(1)
    return np.where(sh > 0, x & mask, np.uint64(0))


def reference(table, s, spec):
    """g and events by Fixed-array operations and numpy bit slicing (module docstring of
    fixedqmc.tables.evaluate); only the variable formats are taken from the kernel spec."""
    kp = table_spec(table).resolve(spec)
    fmt = {v: kp.format_of(v) for v in NAMES}
    mode = {v: (kp.roundings[i], kp.overflows[i]) for i, v in enumerate(NAMES)}
    log = fq.OverflowLog()

    def op(fn, x, y, v):
        return fn(x, y, fmt[v], *mode[v], name=v, log=log)

    sq = Fixed.from_float(s, fmt["s"], *mode["s"], name="s", log=log)
    lo = Fixed.from_float([table.s_min, table.sigma], fmt["s"], *mode["s"], log=fq.OverflowLog())
    w = (table.sigma - table.s_min, table.s_max - table.sigma)
    inv = Fixed.from_float([1 / w[0], 1 / w[1]], fmt["inv"], *mode["inv"], log=fq.OverflowLog())
    first = fq.compare(sq, lo[1:2]) < 0
    ds = op(F.sub, sq, Fixed.from_raw(np.where(first, lo.raw[0], lo.raw[1]), fmt["s"]), "ds")
    t = op(F.mul, ds, Fixed.from_raw(np.where(first, inv.raw[0], inv.raw[1]), fmt["inv"]), "t")
    assert not fmt["t"].signed and fmt["t"].int_bits == 0  # t is UQ0.Ft for these specs
    ft = fmt["t"].frac_bits
    T = t.raw.astype(np.uint64)

    # region I: the top log2(n1) bits are the bin
    sh1 = np.full(T.shape, ft - (table.n1.bit_length() - 1))
    k1, u1 = _shift(T, sh1), _low_bits(T, sh1)
    # region II: segment = leading zeros of the ft-bit word (capped), then the bin bits
    bitlen = sum((T >> np.uint64(b) != 0).astype(np.int64) for b in range(64))
    last = table.n_seg - 1
    seg = np.where((T == 0) | (ft - bitlen >= last), last, ft - bitlen)
    p = np.where(seg == last, ft - last, ft - seg - 1)
    lead = np.left_shift(np.uint64(1), np.clip(p, 0, 63).astype(np.uint64))
    wbits = np.where(seg == last, T, T - lead)
    sh2 = p - (table.n_bin.bit_length() - 1)
    m, u2 = _shift(wbits, sh2), _low_bits(wbits, sh2)
    idx = np.where(first, k1.astype(np.int64),
                   table.n1 + seg * table.n_bin + m.astype(np.int64))
    ur, fsrc = np.where(first, u1, u2), np.where(first, np.maximum(sh1, 0), np.maximum(sh2, 0))
    u_raw = np.zeros(T.shape, np.int64)
    for f in np.unique(fsrc):
        sel = fsrc == f
        if f > 0:
            src = Fixed.from_raw(ur[sel], QFormat(False, 0, int(f)))
            u_raw[sel] = F.cast(src, fmt["u"], *mode["u"], name="u", log=log).raw
    u = Fixed.from_raw(u_raw, fmt["u"])

    coef = {}
    for name in "abc":
        q = table.quantized
        words = Fixed.from_raw(np.concatenate([q[name + "1"].raw, q[name + "2"].raw]),
                               table.coef_format)
        coef[name] = Fixed.from_raw(F.cast(words, fmt[name], *mode[name]).raw[idx], fmt[name])
    x = op(F.mul, u, coef["c"], "uc")
    x = op(F.add, coef["b"], x, "buc")
    x = op(F.mul, u, x, "ubuc")
    y = op(F.add, coef["a"], x, "y")
    events = {v: log.events.get(v, 0) for v in NAMES}
    return y, np.where(first, 1, 2), events


# ----------------------------------------------------------------------- float paths --
def test_float64_path_agrees_with_numpy_evaluation(table):
    """Not bit-identical: the kernel multiplies by the rounded inverse region width where
    TwoRegionTable.evaluate divides by the width, so t differs by a few ulp, u by
    (bins per unit t) times that, and g by |dg/du| du <~ 1e-14.  In f units the exp region
    amplifies it by scale / F; both stay far inside 1e-12 of the region's f range."""
    s = random_s(table, 200_000, seed=1)
    ev = TableEvaluator(table, "float64")
    g = np.empty(s.size)
    region = np.empty(s.size, np.int8)
    ev.run(ev.encode(s), g, region)
    ref_region, ref_g = table.interpolate(s)
    assert np.array_equal(region, ref_region)
    assert np.abs(g - ref_g).max() < 1e-13
    f = evaluate_table(table, s).values
    f_ref = table.evaluate(s)
    for r in (1, 2):
        sel = region == r
        f_range = abs(float(np.diff(table.unscale(np.array([r, r]), np.array([0.0, 1.0])))[0]))
        assert np.abs(f[sel] - f_ref[sel]).max() <= 1e-12 * f_range


def test_float32_path_close_to_float64(table):
    s = random_s(table, 20_000, seed=2)
    ev = TableEvaluator(table, "float32")
    g = np.empty(s.size, np.float32)
    region = np.empty(s.size, np.int8)
    ev.run(ev.encode(s), g, region)
    _, ref_g = table.interpolate(s.astype(np.float32).astype(np.float64))
    assert 0 < np.abs(g - ref_g).max() < 1e-5


# ------------------------------------------------------------------------ fixed paths --
@pytest.mark.parametrize("spec", [FIXED16, pytest.param(FIXED48, marks=pytest.mark.slow),
                                  COEF_SPEC])
@settings(max_examples=4)
@given(seed=st.integers(0, 2**32 - 1),
       extra=st.lists(st.floats(0.0, 300.0), max_size=20))
def test_fixed_path_equals_fixed_array_reference(table, spec, seed, extra):
    s = np.concatenate([random_s(table, 3000, seed), extra])
    log = fq.OverflowLog()
    # FIXED48 through the specialised kernel, the others with run-time formats (both are
    # checked against the same reference, so they agree bit for bit)
    res = evaluate_table(table, s, spec, log=log, runtime=spec != FIXED48)
    y, region, events = reference(table, s, spec)
    assert res.fixed.fmt == y.fmt
    assert np.array_equal(res.fixed.raw, y.raw)
    assert res.events == events
    assert log.events["table.t"] == events["t"]
    # f = unscale(g) on the host (compiled; its log may differ from numpy's in the last bit)
    np.testing.assert_allclose(res.values, table.unscale(region, y.to_float()), rtol=1e-15)


def test_coefficient_words_are_the_tables_own(table):
    ev = TableEvaluator(table, COEF_SPEC)
    for k, name in enumerate("abc"):
        q = table.quantized
        assert np.array_equal(ev.coefficients[k],
                              np.concatenate([q[name + "1"].raw, q[name + "2"].raw]))
    assert str(ev.precision.format_of("a")) == table.coef_format == "Q1.30"


def test_results_do_not_depend_on_thread_count(table):
    s = random_s(table, 100_000, seed=3)
    before = numba.get_num_threads()
    try:
        numba.set_num_threads(1)
        one = evaluate_table(table, s, FIXED16, log=fq.OverflowLog(), runtime=True)
        numba.set_num_threads(min(2, numba.config.NUMBA_NUM_THREADS))
        two = evaluate_table(table, s, FIXED16, log=fq.OverflowLog(), runtime=True)
    finally:
        numba.set_num_threads(before)
    assert np.array_equal(one.fixed.raw, two.fixed.raw)
    assert one.events == two.events and one.events["t"] > 0


@pytest.mark.parametrize("spec", [pytest.param(FIXED16, marks=pytest.mark.heavy), "float32"])
def test_results_do_not_depend_on_order_or_blocks(table, spec):
    """The kernel works through blocks of 1024 elements of each of its 64 chunks region by
    region: with several blocks per chunk, a permutation of s permutes the results
    (deterministic rounding) whatever the mix of regions in a block, chunks of 1023, 1024
    and 1025 elements give the words of one long run, and the words and events equal the
    Fixed-array reference."""
    rng = np.random.default_rng(6)
    s = random_s(table, 150_000, seed=6)  # ~2300 elements per chunk
    ev = TableEvaluator(table, spec)

    def words(res):
        return res.fixed.raw if res.fixed is not None else res.values

    res = ev(s, log=fq.OverflowLog())
    g = words(res)
    if spec != "float32":
        y, _, events = reference(table, s, spec)
        assert np.array_equal(g, y.raw) and res.events == events
    for order in (rng.permutation(s.size), np.argsort(s, kind="stable")):
        again = ev(s[order], log=fq.OverflowLog())
        assert np.array_equal(words(again), g[order]) and again.events == res.events
    for n in (64 * 1023, 64 * 1024, 64 * 1025):
        assert np.array_equal(words(ev(s[:n], log=fq.OverflowLog())), g[:n])


@pytest.mark.heavy
def test_wide_format_within_table_bound_and_narrow_format_degrades(table):
    """fixed:48 stays inside the table's own per-bin error bound (against float64), fixed:16
    misses it by orders of magnitude: the arithmetic, not the table, then dominates."""
    s = random_s(table, 50_000, seed=4)
    s = s[(s >= table.s_min) & (s < table.s_max)]
    f64 = evaluate_table(table, s).values
    bins = bin_errors(table, sapt2)
    region, index, _ = table.locate(s)
    bound_1, bound_2 = (bins[bins.region == r]["bound_f"].to_numpy() for r in ("I", "II"))
    bound = np.where(region == 1, bound_1[np.minimum(index, table.n1 - 1)], bound_2[index])
    err48 = np.abs(evaluate_table(table, s, FIXED48, log=fq.OverflowLog()).values - f64)
    err16 = np.abs(evaluate_table(table, s, FIXED16, log=fq.OverflowLog(), runtime=True).values - f64)
    assert (err48 <= bound).all()
    assert err48.max() < 1e-3 * bound.max()
    assert err16.max() > 1e3 * err48.max() and err16.max() > 10 * bound.max()


def test_out_of_range_s_is_clamped_and_counted(table):
    below, above = np.full(5, 0.5 * table.s_min), np.full(7, 2.0 * table.s_max)
    s = np.concatenate([below, above, [table.s_min, table.s_max]])
    res = evaluate_table(table, s, FIXED48, log=fq.OverflowLog())
    assert res.events["ds"] == 5  # s < s_min: ds < 0 saturates to 0 (unsigned)
    assert res.events["s"] == 7  # 2 s_max does not fit s's format (sized for [s_min, s_max])
    # t >= 1 saturates to 1 - lsb: the 7 above, and s = s_max itself if the rounded inverse
    # width rounds t up to 1
    assert res.events["t"] in (7, 8)
    assert (res.fixed.raw[:5] == res.fixed.raw[-2]).all()  # = the value at s_min
    assert (res.fixed.raw[5:12] == res.fixed.raw[5]).all()
    assert abs(res.values[5] - res.values[-1]) < 1e-9  # ~ the value at s_max
    f64 = evaluate_table(table, s).values
    assert np.array_equal(f64[:5], np.full(5, f64[-2]))
    assert np.array_equal(f64[5:12], np.full(7, f64[-1]))


# ----------------------------------------------------------------------- bad input ----
def test_bad_input_gives_clear_errors(table):
    with pytest.raises(TableError, match=r"table\.s: .*do not fit UQ2\.30"):
        TableEvaluator(table, "table=fixed:32,table.s=fixed:UQ2.30")
    with pytest.raises(TableError, match="finite"):
        evaluate_table(table, [1.0, np.nan])
    with pytest.raises(fq.PrecisionSpecError):
        evaluate_table(table, [5.0], "fixed:99")
    with pytest.raises(fq.PrecisionSpecError, match=r"table\.w; kernel 'table' has: s, ds"):
        TableEvaluator(table, "table=fixed:32,table.w=fixed:Q1.30")
