"""Tests of the lookup-table exponential (seed 001, Appendix B).

Errors are measured against the exact exponential of each input (Decimal ``exp`` to 40
digits); the fixed-point path is checked bit for bit against an independent reference on
Python integers and fractions (tests/reference.py for the rounding and overflow steps,
Decimal for the table entries and constants).
"""

from __future__ import annotations

import importlib.util
import math
import re
from dataclasses import replace
from decimal import Decimal, localcontext
from fractions import Fraction
from pathlib import Path

import numba
import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from fixedqmc.errors import FixedOverflowError, FixedQMCError
from fixedqmc.numerics import fixed as F
from fixedqmc.numerics.fixed import Fixed
from fixedqmc.numerics.modes import ROUNDING_MODES
from fixedqmc.numerics.overflow import OverflowLog
from fixedqmc.numerics.qformat import QFormat
from fixedqmc.tables import lut_exp_fixed as LF
from fixedqmc.numerics.exp2_tables import const_raw
from fixedqmc.tables.lut_exp import LN2, LOG2E, FixedExpSpec, LutExp, lut_exp_error

_spec = importlib.util.spec_from_file_location("_fixedqmc_reference",
                                               Path(__file__).resolve().parents[1] / "reference.py")
R = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(R)

HYP = settings(deadline=None, max_examples=150, suppress_health_check=[HealthCheck.too_slow])


# ---------------------------------------------------------------------- references --
def exact_rel_errors(x_exact, y_exact):
    """|y / exp(x) - 1| for exact Fraction/float inputs and outputs."""
    out = []
    with localcontext() as ctx:
        ctx.prec = 40
        for x, y in zip(x_exact, y_exact):
            xd, yd = (Decimal(v.numerator) / Decimal(v.denominator) if isinstance(v, Fraction)
                      else Decimal(float(v)) for v in (x, y))
            ref = xd.exp()
            out.append(float(abs(yd - ref) / ref))
    return np.array(out)


def fixed_values(a: Fixed):
    return [Fraction(v, 1 << a.fmt.frac_bits) for v in a.to_ints()]


def dec_nearest(value: Decimal, frac_bits: int) -> int:
    """Nearest integer to value * 2**frac_bits (value irrational or exactly representable)."""
    with localcontext() as ctx:
        ctx.prec = 80
        return int((value * (Decimal(2) ** frac_bits)).to_integral_value())


def ref_entry(j: int, cum_bits: int, frac_bits: int) -> int:
    with localcontext() as ctx:
        ctx.prec = 80
        v = (Decimal(j) / (Decimal(2) ** cum_bits) * Decimal(2).ln()).exp()
    return dec_nearest(v, frac_bits)


def ref_const(name: str, frac_bits: int) -> Fraction:
    with localcontext() as ctx:
        ctx.prec = 80
        c = 1 / Decimal(2).ln() if name == "log2e" else Decimal(2).ln()
    return Fraction(dec_nearest(c, frac_bits), 1 << frac_bits)


def ref_lut_exp_fixed(xs, lut: LutExp, x_fmt, t_fmt, p_fmt, r_fmt, rounding, overflow):
    """The fixed data path written out on exact rationals, element by element."""
    xf, tf, pf, rf = (QFormat.parse(f) for f in (x_fmt, t_fmt, p_fmt, r_fmt))
    yf = QFormat.from_word(64, xf.int_bits + 1, xf.signed)
    L = ref_const("log2e", 63)
    ln2 = ref_const("ln2", 64)
    uq064 = QFormat(False, 0, 64)
    cum = np.cumsum(lut.chunk_bits)
    B, Fy = int(cum[-1]), yf.frac_bits

    def q(v, fmt):
        return R.value(R.quantize(v, fmt, rounding, overflow)[0], fmt)

    out = []
    for x in xs:
        xv = q(Fraction(float(x)), xf)
        y = q(xv * L, yf)
        y_raw = int(y * (1 << Fy))
        yi, frac = y_raw >> Fy, y_raw & ((1 << Fy) - 1)
        p = None
        for c, b in zip(cum, lut.chunk_bits):
            j = (frac >> (Fy - int(c))) & ((1 << b) - 1)
            e = Fraction(min(ref_entry(j, int(c), tf.frac_bits), tf.max_raw), 1 << tf.frac_bits)
            p = e if p is None else q(p * e, pf)
        if lut.residual == "linear":
            r = Fraction(frac & ((1 << (Fy - B)) - 1), 1 << Fy)
            corr = q(1 + q(r * ln2, uq064), tf)
            p = q(p * corr, pf)
        if yi < -min(rf.frac_bits + 1, 64):
            out.append(0)
        else:
            out.append(R.quantize(p * Fraction(2) ** yi, rf, rounding, overflow)[0])
    return out


def fixed_array_reference(lut: LutExp, x, spec, log):
    """The fixed data path of FixedExpSpec written with Fixed-array operations, one per
    stage (the implementation before the compiled kernel, kept as its reference)."""
    r = lut._precision(spec)
    kw = dict(rounding=r.rounding, overflow=r.overflow, log=log)
    if isinstance(x, Fixed):
        xq = F.cast(x, r.x, name="lut_exp.x", seed=r.seed, **kw)
    else:
        xq = Fixed.from_float(x, r.x, name="lut_exp.x", seed=r.seed, **kw)
    shape = xq.shape
    xq = xq.reshape(-1)
    L = Fixed.from_raw(np.array([const_raw("log2e", r.log2e.frac_bits)], np.uint64), r.log2e)
    y = F.mul(xq, L, r.y, name="lut_exp.y", seed=r.seed + 1, **kw)
    fy = r.y.frac_bits
    if r.y.signed:
        yi = y.raw >> np.int64(fy)
    else:
        yi = (y.raw.view(np.uint64) >> np.uint64(fy)).astype(np.int64)
    yf = (y.raw.view(np.uint64) & np.uint64((1 << fy) - 1)).astype(np.int64)
    tables = lut.fixed_tables(r.table)
    p = None
    for k, (c, b) in enumerate(zip(lut.cumulative_bits, lut.chunk_bits)):
        j = (yf >> np.int64(fy - c)) & np.int64((1 << b) - 1)
        entry = tables[k][j]
        p = entry if p is None else F.mul(p, entry, r.product, name="lut_exp.product",
                                          seed=r.seed + 1 + k, **kw)
    if lut.residual == "linear":
        res_fmt = QFormat(False, 0, fy)
        rr = Fixed.from_raw(yf & np.int64((1 << (fy - lut.total_bits)) - 1), res_fmt)
        ln2 = Fixed.from_raw(np.array([const_raw("ln2", 64)], np.uint64), "UQ0.64")
        t = F.mul(rr, ln2, "UQ0.64", name="lut_exp.residual", seed=r.seed + 20, **kw)
        one = Fixed.from_raw(np.array([1 << r.table.frac_bits], np.uint64), r.table)
        corr = F.add(one, t, r.table, name="lut_exp.correction", seed=r.seed + 21, **kw)
        p = F.mul(p, corr, r.product, name="lut_exp.product", seed=r.seed + 22, **kw)
    y_min = -min(r.result.frac_bits + 1, 64)
    out = np.zeros(yi.shape, np.int64)
    for n in np.unique(yi):  # one shift per group of equal y_i
        n = int(n)
        if n < y_min:
            continue  # flushed to exactly 0
        sel = yi == n
        a = p[sel]
        while n > 64:  # p * 2**64 is an integer: exact, only the overflow mode acts
            a = F.shift(a, 64, r.result, name="lut_exp.result", seed=r.seed + 30, **kw)
            n -= 64
        a = F.shift(a, n, r.result, name="lut_exp.result", seed=r.seed + 30, **kw)
        out[sel] = a.raw
    return Fixed.from_raw(out.reshape(shape), r.result)


def numpy_float_reference(lut: LutExp, x, dtype):
    """The float path with numpy array operations (the implementation before the compiled
    kernel, kept as its reference)."""
    dtype = np.dtype(dtype)
    ft = dtype.type
    xs = np.atleast_1d(x).astype(dtype).ravel()
    finite = np.isfinite(xs)
    y = np.where(finite, xs, ft(0)) * ft(LOG2E)
    y = np.clip(y, ft(-4096), ft(4096))
    yi = np.floor(y)
    yf = y - yi
    carry = yf >= ft(1)
    yi = np.where(carry, yi + ft(1), yi)
    yf = np.where(carry, ft(0), yf)
    s = yf
    p = None
    for b, table in zip(lut.chunk_bits, lut.float_tables(dtype)):
        s = s * ft(2.0 ** b)
        j = np.floor(s)
        s = s - j
        entry = table[j.astype(np.intp)]
        p = entry if p is None else p * entry
    if lut.residual == "linear":
        p = p * (ft(1) + s * ft(LN2 * 2.0 ** -lut.total_bits))
    yi_int = yi.astype(np.int32)
    with np.errstate(over="ignore"):
        out = np.ldexp(p, yi_int).astype(dtype)
    out[yi_int < (-1022 if dtype == np.float64 else -126)] = 0
    if not finite.all():
        out[np.isposinf(xs)] = np.inf
        out[np.isneginf(xs)] = 0
        out[np.isnan(xs)] = np.nan
    return out.reshape(np.shape(x))


def same_log(a: OverflowLog, b: OverflowLog) -> bool:
    return (dict(a.events) == dict(b.events) and dict(a.values) == dict(b.values)
            and a.formats == b.formats and a.modes == b.modes)


# --------------------------------------------------------------- configuration/API --
def test_seed_configuration_tables():
    lut = LutExp()
    assert lut.chunk_bits == (12, 11, 11) and lut.residual == "linear"
    assert lut.words == 8192 and lut.n_lookups == 3 and lut.total_bits == 34
    assert [len(t) for t in lut.tables] == [4096, 2048, 2048]
    for t, c in zip(lut.tables, lut.cumulative_bits):
        assert t.dtype == np.float64 and t[0] == 1.0 and np.all(np.diff(t) > 0)
        assert t[1] == 2.0 ** (2.0 ** -c)
    assert lut.tables[0][-1] < 2.0
    fx = LutExp(table_format="UQ1.39").tables
    assert all(isinstance(t, Fixed) and str(t.fmt) == "UQ1.39" for t in fx)


@pytest.mark.parametrize("chunk_bits, frac", [((6,), 63), ((12, 3, 5), 52), ((10, 10, 10, 4), 40),
                                              ((12, 11), 23), ((16,), 30)])
def test_table_entries_correctly_rounded(chunk_bits, frac):
    lut = LutExp(chunk_bits=chunk_bits)
    fmt = QFormat(False, 1, frac)
    for table, cum in zip(lut.fixed_tables(fmt), lut.cumulative_bits):
        got = table.to_ints()
        step = max(1, len(got) // 16)
        for j in list(range(0, len(got), step)) + [len(got) - 1]:
            assert got[j] == ref_entry(j, cum, frac), (cum, j)
    if frac in (52, 23):  # float tables are the same rounding with 52 / 23 fraction bits
        dtype = np.float64 if frac == 52 else np.float32
        for t, ft in zip(lut.fixed_tables(fmt), lut.float_tables(dtype)):
            assert np.array_equal(t.to_float().astype(dtype), ft)


@pytest.mark.parametrize(
    "kwargs, bad",
    [
        (dict(chunk_bits=()), "()"),
        (dict(chunk_bits=[]), "[]"),
        (dict(chunk_bits=(12, 0, 11)), "0"),
        (dict(chunk_bits=(12, -3)), "-3"),
        (dict(chunk_bits=(21,)), "21"),
        (dict(chunk_bits=(4, 2.5)), "2.5"),
        (dict(chunk_bits=12), "12"),
        (dict(residual="quadratic"), "quadratic"),
        (dict(table_format="UQ0.40"), "UQ0.40"),
        (dict(table_format="Q1.x"), "Q1.x"),
    ],
)
def test_bad_configuration_raises_naming_value(kwargs, bad):
    with pytest.raises(ValueError, match=re.escape(bad)):
        LutExp(**kwargs)


def test_bad_precision_raises():
    lut = LutExp()
    with pytest.raises(ValueError, match="float16"):
        lut.evaluate([1.0], "float16")
    with pytest.raises(ValueError, match="table format"):
        lut.evaluate([1.0], FixedExpSpec())  # no table format anywhere
    with pytest.raises(ValueError, match="nearest_odd"):
        FixedExpSpec(table_format="UQ1.39", rounding="nearest_odd")
    with pytest.raises(ValueError, match="B = 34"):
        lut.evaluate([1.0], FixedExpSpec(table_format="UQ1.39", y_format="Q7.30"))


def test_shapes_and_special_values():
    lut = LutExp()
    x = np.linspace(-3, 3, 12).reshape(3, 4)
    assert lut.evaluate(x).shape == (3, 4)
    assert lut.evaluate(x, "float32").dtype == np.float32
    fx = lut.evaluate(x, ("Q6.36", "UQ1.39", "UQ8.48"))
    assert isinstance(fx, Fixed) and fx.shape == (3, 4) and str(fx.fmt) == "UQ8.48"
    assert np.asarray(lut.evaluate(0.0)) == 1.0
    out = lut.evaluate([np.inf, -np.inf, np.nan, 710.0])
    assert out[0] == np.inf and out[1] == 0.0 and np.isnan(out[2]) and out[3] == np.inf


# --------------------------------------------------------------- seed configuration --
def test_seed_configuration_reaches_1e12_with_residual():
    rep = lut_exp_error(LutExp(), (-20.0, 5.0), n=6000)
    print(f"\nseed (12,11,11) float64 tables, linear residual: max rel error "
          f"{rep['max_rel_error']:.3e} (bound {rep['bound']:.3e})")
    assert rep["max_rel_error"] <= 1e-12
    assert rep["max_rel_error"] < 1e-14  # measured ~1.8e-15
    assert rep["within_bound"] and rep["n_underflow"] == 0 and rep["n_overflow"] == 0


def test_seed_configuration_needs_residual_correction():
    # 34 bits of y_f: dropping the rest costs up to ln2 * 2**-34 = 4.03e-11 > 1e-12
    rep = lut_exp_error(LutExp(residual="none"), (-20.0, 5.0), n=6000)
    print(f"\nseed (12,11,11) float64 tables, no residual: max rel error "
          f"{rep['max_rel_error']:.3e} (bound {rep['bound']:.3e})")
    assert rep["max_rel_error"] > 1e-12
    assert 0.8 * LN2 * 2.0 ** -34 < rep["max_rel_error"] <= rep["bound"]
    assert rep["within_bound"]


@pytest.mark.parametrize("table_format, limit", [("UQ1.39", 1e-11), ("UQ1.63", 1e-16)])
def test_seed_configuration_fixed_table_words(table_format, limit):
    spec = FixedExpSpec(x_format="Q6.57", table_format=table_format, result_format="UQ8.56")
    rep = lut_exp_error(LutExp(), (-2.0, 5.0), n=4000, precision=spec)
    print(f"\nseed (12,11,11) {spec}: max rel error {rep['max_rel_error']:.3e} "
          f"(bound {rep['bound']:.3e})")
    assert rep["within_bound"] and rep["max_rel_error"] < limit


# --------------------------------------------------------------- property tests --
configs = st.builds(
    LutExp,
    chunk_bits=st.lists(st.integers(4, 12), min_size=1, max_size=4).map(tuple),
    residual=st.sampled_from(["linear", "none"]),
)


@HYP
@given(lut=configs, precision=st.sampled_from(["float64", "float32"]),
       table_bits=st.sampled_from([None, None, 40, 52]),
       xs=st.lists(st.floats(-40.0, 40.0), min_size=1, max_size=8), seed=st.integers(0, 2**31))
def test_float_error_within_bound(lut, precision, table_bits, xs, seed):
    if table_bits is not None:
        lut = LutExp(lut.chunk_bits, lut.residual, f"UQ1.{table_bits}")
    x = np.concatenate([xs, np.random.default_rng(seed).uniform(-30.0, 10.0, 24)])
    y = lut.evaluate(x, precision)
    bound = lut.error_bound(x, precision)
    rel = exact_rel_errors(x, y.astype(np.float64))
    assert np.all(rel <= bound), (x[np.argmax(rel - bound)], rel.max(), bound.min())


fmt_choices = st.fixed_dictionaries({
    "x_int": st.integers(5, 7), "x_frac": st.integers(20, 56),
    "t_frac": st.integers(20, 63), "p": st.sampled_from(["table", "UQ1.62", "UQ2.30", "UQ1.45"]),
    "r_frac": st.integers(30, 55),
    "rounding": st.sampled_from(ROUNDING_MODES),
})


fixed_inputs = st.floats(-40.0, 6.0)


@HYP
@given(lut=configs, f=fmt_choices, xs=st.lists(fixed_inputs, min_size=1, max_size=8),
       exact_input=st.booleans(), seed=st.integers(0, 2**31))
def test_fixed_error_within_bound(lut, f, xs, exact_input, seed):
    x_fmt = f"Q{f['x_int']}.{min(f['x_frac'], 63 - f['x_int'] - 1)}"
    t_fmt = f"UQ1.{f['t_frac']}"
    spec = FixedExpSpec(x_format=x_fmt, table_format=t_fmt,
                        product_format=None if f["p"] == "table" else f["p"],
                        result_format=f"UQ8.{f['r_frac']}", rounding=f["rounding"], seed=seed)
    x = np.concatenate([xs, np.random.default_rng(seed).uniform(-25.0, 5.5, 24)])
    log = OverflowLog()
    if exact_input:
        xin = Fixed.from_float(x, x_fmt, "half_even", "saturate", log=log)
        xe = fixed_values(xin)
    else:
        xin, xe = x, [Fraction(float(v)) for v in x]
    res = lut.evaluate(xin, spec, log=log)
    bound = lut.error_bound(xin, spec, exact_input=exact_input)
    rel = exact_rel_errors(xe, fixed_values(res))
    finite = np.isfinite(bound)
    assert np.all(rel[finite] <= bound[finite]), (x[np.argmax(np.where(finite, rel - bound, -1))],)


# --------------------------------------------------------------- fixed: exactness --
EXACT_CASES = [
    (LutExp(), ("Q6.36", "UQ1.39", "UQ1.39", "UQ8.48", "half_even", "saturate"),
     [-20.0, -7.3, -1.0, -1e-9, 0.0, 1e-9, 0.5, 1.0, 3.14159, 5.5, 5.6, 9.0, -40.0]),
    (LutExp((7, 5), "none"), ("Q4.20", "UQ1.30", "UQ2.40", "Q6.30", "floor", "wrap"),
     [-10.0, -3.3, 0.25, 2.0, 4.1, 4.4, 6.0, 15.9]),
    (LutExp(), ("Q6.57", "UQ1.63", "UQ1.63", "UQ8.56", "half_away", "saturate"),
     [-19.9, -2.5, 0.0, 1.0, 2.302585092994046, 5.0]),
    (LutExp((4, 4, 4, 4)), ("Q8.40", "UQ1.20", "UQ1.20", "UQ3.60", "zero", "wrap"),
     [-45.0, -44.0, -1.0, 0.7, 2.0, 60.0, 100.0, 200.0]),
    (LutExp((9,), "linear"), ("Q8.40", "Q1.40", "Q1.40", "Q20.20", "half_up", "saturate"),
     [-15.0, -14.0, 1.0, 11.0, 100.0, 200.0]),
]


@pytest.mark.parametrize("lut, fmts, xs", EXACT_CASES)
def test_fixed_equals_exact_reference(lut, fmts, xs):
    x_fmt, t_fmt, p_fmt, r_fmt, rounding, overflow = fmts
    spec = FixedExpSpec(x_format=x_fmt, table_format=t_fmt, product_format=p_fmt,
                        result_format=r_fmt, rounding=rounding, overflow=overflow)
    got = lut.evaluate(np.array(xs), spec, log=OverflowLog())
    want = ref_lut_exp_fixed(xs, lut, x_fmt, t_fmt, p_fmt, r_fmt, rounding, overflow)
    assert got.raw.tolist() == want


def test_fixed_reproducible():
    lut = LutExp()
    x = np.random.default_rng(7).uniform(-20, 5, 2000)
    for rounding in ("half_even", "floor", "stochastic"):
        spec = FixedExpSpec(table_format="UQ1.39", rounding=rounding, seed=11)
        a = lut.evaluate(x, spec).raw
        b = LutExp().evaluate(x.copy(), spec).raw
        assert np.array_equal(a, b)
    spec = FixedExpSpec(table_format="UQ1.39")
    full = lut.evaluate(x, spec).raw
    assert np.array_equal(lut.evaluate(x[::7], spec).raw, full[::7])  # elementwise
    xin = Fixed.from_float(x, "Q6.36")
    assert np.array_equal(lut.evaluate(xin, spec).raw, full)


# ------------------------------------ compiled paths against the array implementations --
COMPILED_CASES = [
    # the seed configuration in the benchmark's formats
    (LutExp(), FixedExpSpec(table_format="UQ1.39")),
    # a product format other than the table's; floor, wrap-around
    (LutExp((7, 5), "none"), FixedExpSpec("Q4.20", "UQ1.30", "Q6.30", "UQ2.40",
                                          rounding="floor", overflow="wrap")),
    # 64-bit words with the top bit set: the 192-bit paths
    (LutExp(), FixedExpSpec("Q6.57", "UQ1.63", "UQ8.56", "UQ1.63", rounding="half_away")),
    # y_i up to ~290: chained shifts of 64 bits
    (LutExp((4, 4, 4, 4)), FixedExpSpec("Q8.40", "UQ1.20", "UQ3.60", rounding="zero",
                                        overflow="wrap")),
    # one table, signed formats, with and without the residual correction
    (LutExp((9,), "linear"), FixedExpSpec("Q8.40", "Q1.40", "Q20.20", "Q1.40",
                                          rounding="half_up")),
    (LutExp((9,), "none"), FixedExpSpec("Q8.40", "UQ1.40", "Q20.20")),
    # unsigned x and y, a signed log2(e) format, a table format with 61 fractional bits
    (LutExp((12, 11, 11)), FixedExpSpec("UQ6.36", "UQ1.61", "UQ8.48", y_format="UQ8.50",
                                        log2e_format="Q2.61")),
]


def wide_inputs(seed: int, n: int = 3000) -> np.ndarray:
    rng = np.random.default_rng(seed)
    return np.concatenate([rng.uniform(-50.0, 300.0, n // 3), rng.uniform(-25.0, 6.0, n // 3),
                           rng.uniform(-1.0, 1.0, n - 2 * (n // 3)),
                           [0.0, -1e-12, 1e-12, 5.5, 6.0, -44.5, 255.9, -255.9]])


@pytest.mark.parametrize("lut, spec", COMPILED_CASES)
def test_compiled_fixed_path_equals_fixed_array_operations(lut, spec):
    """Words and logged events/values per stage, bit for bit, in every deterministic mode."""
    x = wide_inputs(1)
    for rounding in {spec.rounding, "half_even"}:
        sp = replace(spec, rounding=rounding)
        got_log, want_log = OverflowLog(), OverflowLog()
        got = lut.evaluate(x, sp, log=got_log)
        want = fixed_array_reference(lut, x, sp, want_log)
        assert got.fmt == want.fmt and np.array_equal(got.raw, want.raw), rounding
        assert same_log(got_log, want_log), (dict(got_log.events), dict(want_log.events))
    xin = Fixed.from_float(x[:500], "Q9.40", "half_even", "saturate", log=OverflowLog())
    got_log, want_log = OverflowLog(), OverflowLog()
    got = lut.evaluate(xin, spec, log=got_log)  # a Fixed input is cast to x_format
    assert np.array_equal(got.raw, fixed_array_reference(lut, xin, spec, want_log).raw)
    assert same_log(got_log, want_log)


@HYP
@given(lut=configs, f=fmt_choices, xs=st.lists(st.floats(-60.0, 60.0), min_size=1, max_size=8),
       overflow=st.sampled_from(["wrap", "saturate"]), seed=st.integers(0, 2**31))
def test_compiled_fixed_path_equals_fixed_array_operations_random_formats(lut, f, xs, overflow,
                                                                           seed):
    x_fmt = f"Q{f['x_int']}.{min(f['x_frac'], 63 - f['x_int'] - 1)}"
    spec = FixedExpSpec(x_format=x_fmt, table_format=f"UQ1.{f['t_frac']}",
                        product_format=None if f["p"] == "table" else f["p"],
                        result_format=f"UQ8.{f['r_frac']}",
                        rounding="half_even" if f["rounding"] == "stochastic" else f["rounding"],
                        overflow=overflow, seed=seed)
    x = np.concatenate([xs, np.random.default_rng(seed).uniform(-45.0, 8.0, 40)])
    got_log, want_log = OverflowLog(), OverflowLog()
    got = lut.evaluate(x, spec, log=got_log)
    assert np.array_equal(got.raw, fixed_array_reference(lut, x, spec, want_log).raw)
    assert same_log(got_log, want_log)


def _specialised(lut, spec):
    fm, consts, _, fields = lut._fixed_plan(lut._precision(spec))
    return LF.kernels(fm, consts, fields, LF.SPECIALISE_MIN_SIZE)[0] is not LF._lut_fixed_parallel


# each compile takes ~15 s: the fast suite checks the seed case (also with raise) and two
# others in their own modes; the slow suite every case in its own and three more mode pairs
_FAST_SPECIALISED = [(0, None), (0, ("zero", "raise")), (1, None), (3, None)]
SPECIALISED_MODES = _FAST_SPECIALISED + [
    pytest.param(case, modes, marks=pytest.mark.slow)
    for modes in (None, ("zero", "raise"), ("half_even", "saturate"), ("floor", "wrap"))
    for case in range(len(COMPILED_CASES)) if (case, modes) not in _FAST_SPECIALISED]


@pytest.mark.parametrize("case, modes", SPECIALISED_MODES)
def test_specialised_fixed_kernels_equal_fixed_array_operations(case, modes, monkeypatch):
    """The kernels with formats compiled in (narrow int64/int128 operations, branch-free
    final shift) give the same words and logged events as the Fixed-array steps, in each
    deterministic rounding mode and each overflow mode."""
    monkeypatch.setattr(LF, "SPECIALISE_MIN_SIZE", 0)
    lut, spec = COMPILED_CASES[case]
    x = wide_inputs(2)
    if modes is not None:
        sp = replace(spec, rounding=modes[0], overflow=modes[1])
    else:
        sp = spec
    got_log, want_log = OverflowLog(), OverflowLog()
    try:
        got = lut.evaluate(x, sp, log=got_log)
    except FixedOverflowError as err:
        with pytest.raises(FixedOverflowError, match=re.escape(str(err))):
            fixed_array_reference(lut, x, sp, want_log)
        return
    want = fixed_array_reference(lut, x, sp, want_log)
    assert np.array_equal(got.raw, want.raw)
    assert same_log(got_log, want_log), (dict(got_log.events), dict(want_log.events))


def test_specialised_kernels_serve_every_case_but_128_bit_products_and_stochastic_rounding():
    """So the test above (all of it in the slow suite) checks the specialised kernels in six
    of its seven cases; case 2 (UQ1.63 tables: products of two 64-bit words need 128 bits)
    and stochastic rounding use the run-time kernels."""
    got = [_specialised(lut, spec) for lut, spec in COMPILED_CASES]
    assert got == [True, True, False, True, True, True, True]
    lut, spec = COMPILED_CASES[0]
    assert not _specialised(lut, replace(spec, rounding="stochastic"))


@pytest.mark.slow
@settings(deadline=None, max_examples=12)
@given(lut=configs, f=fmt_choices, overflow=st.sampled_from(["wrap", "saturate"]),
       seed=st.integers(0, 2**31))
def test_specialised_equals_run_time_kernels_random_formats(lut, f, overflow, seed):
    x_fmt = f"Q{f['x_int']}.{min(f['x_frac'], 63 - f['x_int'] - 1)}"
    spec = FixedExpSpec(x_format=x_fmt, table_format=f"UQ1.{f['t_frac']}",
                        product_format=None if f["p"] == "table" else f["p"],
                        result_format=f"UQ8.{f['r_frac']}",
                        rounding="half_even" if f["rounding"] == "stochastic" else f["rounding"],
                        overflow=overflow)
    x = np.random.default_rng(seed).uniform(-45.0, 8.0, 2000)
    got_log, want_log = OverflowLog(), OverflowLog()
    got = lut.evaluate(x, spec, log=got_log)  # run-time kernels (small input)
    plan = lut._fixed_plan(lut._precision(spec))
    pair = LF.specialised_kernels(*(tuple(map(int, a)) for a in (plan[0], plan[1])),
                                  tuple(tuple(map(int, r)) for r in plan[3]))
    if pair is None:  # some operation has no narrow form: the run-time kernels serve
        return
    out = np.empty(x.size, np.int64)
    events = np.zeros((LF.N_CHUNKS, 8), np.int64)
    pair[1](LF.NO_WORDS, x.copy(), plan[0], plan[1], plan[2], plan[3], np.zeros(31, np.uint64),
            out, events)
    assert np.array_equal(out, got.raw)
    lut._record_fixed(events.sum(axis=0), x.size, lut._precision(spec), want_log,
                      converted=True)
    assert same_log(got_log, want_log)


@pytest.mark.parametrize("lut, spec", COMPILED_CASES[:5])
def test_compiled_fixed_path_stochastic_rounding(lut, spec):
    """Stage s draws the bits random_bits(seed + s, flat index, 0) in both implementations;
    the array one shifts each group of equal y_i as a sub-array (its result stage indexes
    the group), so inputs with one y_i (0 or -1) compare every stage bit for bit."""
    rng = np.random.default_rng(2)
    for lo, hi in ((0.01, 0.68), (-0.68, -0.01)):
        x = rng.uniform(lo, hi, 2000)
        for seed in (0, 12345):
            sp = replace(spec, rounding="stochastic", seed=seed)
            got_log, want_log = OverflowLog(), OverflowLog()
            got = lut.evaluate(x, sp, log=got_log)
            want = fixed_array_reference(lut, x, sp, want_log)
            assert np.array_equal(got.raw, want.raw)
            assert same_log(got_log, want_log)
    floor = lut.evaluate(x, replace(spec, rounding="floor"), log=OverflowLog()).raw
    assert 0 < np.count_nonzero(got.raw != floor) < x.size  # some elements rounded up


def test_compiled_fixed_path_raise_mode():
    lut = LutExp()
    spec = FixedExpSpec(table_format="UQ1.39", overflow="raise")
    ok = np.array([-3.0, 0.0, 5.0])
    assert np.array_equal(lut.evaluate(ok, spec, log=OverflowLog()).raw,
                          fixed_array_reference(lut, ok, spec, OverflowLog()).raw)
    bad = np.array([1.0, 6.0, 30.0])  # exp(6) > 256, the range of UQ8.48
    got_log, want_log = OverflowLog(), OverflowLog()
    with pytest.raises(FixedOverflowError, match=r"2 result\(s\) of 'lut_exp.result'"):
        lut.evaluate(bad, spec, log=got_log)
    with pytest.raises(FixedOverflowError, match="lut_exp.result"):
        fixed_array_reference(lut, bad, spec, want_log)
    # the stages before the result logged alike; the array implementation stops at the
    # first group of equal y_i that overflows, so its result counts depend on that order
    for name in want_log.values:
        if name != "lut_exp.result":
            assert got_log.events[name] == want_log.events[name] == 0
            assert got_log.values[name] == want_log.values[name]
    assert got_log.events["lut_exp.result"] == 2


def test_compiled_fixed_path_input_checks():
    """Step 1 runs in the kernel for finite float input; anything else goes through
    Fixed.from_float on the host, with its checks."""
    lut, spec = LutExp(), FixedExpSpec(table_format="UQ1.39")
    with pytest.raises(FixedQMCError, match="not finite"):
        lut.evaluate(np.array([1.0, np.nan]), spec, log=OverflowLog())
    ints = [-3, 0, 2, 5]
    got_log, want_log = OverflowLog(), OverflowLog()
    got = lut.evaluate(ints, spec, log=got_log)
    assert np.array_equal(got.raw, fixed_array_reference(lut, ints, spec, want_log).raw)
    assert same_log(got_log, want_log)
    assert lut.evaluate(np.float32(1.5), spec, log=OverflowLog()).shape == ()


def test_compiled_fixed_path_does_not_depend_on_thread_count():
    lut = LutExp()
    x = np.random.default_rng(5).uniform(-40.0, 7.0, 50_000)  # parallel (and 7.0 saturates)
    spec = FixedExpSpec(table_format="UQ1.39", rounding="stochastic", seed=3)
    before = numba.get_num_threads()
    runs = []
    try:
        for threads in (1, min(2, numba.config.NUMBA_NUM_THREADS)):
            numba.set_num_threads(threads)
            log = OverflowLog()
            runs.append((lut.evaluate(x, spec, log=log).raw, log))
    finally:
        numba.set_num_threads(before)
    (one, log1), (two, log2) = runs
    assert np.array_equal(one, two) and same_log(log1, log2)
    assert log1.events["lut_exp.result"] > 0
    # elementwise, stochastic bits included: a prefix (serial twin) gives the same words
    assert np.array_equal(lut.evaluate(x[:1000], spec, log=OverflowLog()).raw, one[:1000])


@pytest.mark.parametrize("lut", [LutExp(), LutExp((7, 5), "none"), LutExp((16,)),
                                 LutExp((4, 4, 4, 4), table_format="UQ1.40"),
                                 LutExp((9,), "linear", "UQ1.30")])
@pytest.mark.parametrize("dtype", [np.float64, np.float32])
def test_compiled_float_paths_equal_numpy_operations(lut, dtype):
    rng = np.random.default_rng(4)
    x = np.concatenate([rng.uniform(-800.0, 800.0, 3000), rng.uniform(-100.0, 100.0, 3000),
                        rng.uniform(-1.0, 1.0, 3000),
                        [np.inf, -np.inf, np.nan, 0.0, -0.0, 709.78, 709.79, 88.72, 88.73,
                         -708.4, -87.34, -87.3, -1e-30, 1e-30, 5e-324, -5e-324, 3e38, -3e38]])
    got = lut.evaluate(x, np.dtype(dtype).name)
    with np.errstate(over="ignore"):  # 3e38 log2(e) overflows float32 (to inf, then clipped)
        want = numpy_float_reference(lut, x, dtype)
    assert got.dtype == want.dtype == dtype
    bits = np.uint64 if dtype == np.float64 else np.uint32
    assert np.array_equal(got.view(bits), want.view(bits))


# --------------------------------------------------------- underflow and overflow --
def test_underflow_is_exactly_zero():
    lut = LutExp()
    spec = FixedExpSpec(table_format="UQ1.39", result_format="UQ8.40")
    for precision, y_min in (("float64", -1022), ("float32", -126), (spec, -41)):
        assert lut.underflow_exponent(precision) == y_min
        thr = y_min * math.log(2.0)
        below = np.array([thr - 1e-3, thr - 1.0, thr * 1.5, -1e4 if precision != spec else -60.0])
        out = lut.evaluate(below, precision)
        vals = out.raw if isinstance(out, Fixed) else out
        assert np.all(vals == 0), (precision, vals)
        above = lut.evaluate(np.array([thr + math.log(2.0) + 1e-6]), precision)
        assert np.all((above.raw if isinstance(above, Fixed) else above) > 0)
    assert np.all(lut.evaluate(np.array([-800.0, -5000.0])) == 0.0)


def test_result_overflow_modes():
    lut = LutExp()
    x = np.array([1.0, 6.0, 30.0])  # exp(6) = 403 > UQ8.48's 256
    sat = lut.evaluate(x, FixedExpSpec(table_format="UQ1.39", overflow="saturate"),
                       log=OverflowLog())
    assert sat.to_ints()[1:] == [QFormat.parse("UQ8.48").max_raw] * 2
    log = OverflowLog()
    lut.evaluate(x, FixedExpSpec(table_format="UQ1.39", overflow="wrap"), log=log)
    assert log.events["lut_exp.result"] == 2
    with pytest.raises(FixedOverflowError):
        lut.evaluate(x, FixedExpSpec(table_format="UQ1.39", overflow="raise"), log=OverflowLog())
    assert np.isinf(lut.evaluate(np.array([710.0]))[0])
    assert np.isinf(lut.evaluate(np.array([89.0]), "float32")[0])


def test_error_report_fields():
    rep = lut_exp_error((8, 8), (-5.0, 2.0), n=500, precision="float32")
    assert rep["words"] == 512 and rep["chunk_bits"] == (8, 8) and rep["n"] == 500
    assert rep["within_bound"] and 0 < rep["max_rel_error"] <= rep["bound"]
    terms = LutExp().error_terms("float64")
    assert set(terms) == {"tables", "products", "correction", "residual"}
    assert terms["residual"] == (LN2 * 2.0 ** -34) ** 2 / 2


def test_the_kernels_exp_words_are_the_seeds_lut_tables():
    """numerics' compiled exp takes its words from numerics.exp2_tables; they are the
    tables of the seed's LUT exponential (12, 11, 11 chunk bits) in UQ1.62."""
    from fixedqmc.numerics import transcendental as T
    lut = LutExp(chunk_bits=T.EXP_CHUNK_BITS, residual="linear")
    words = np.concatenate([t.raw for t in lut.fixed_tables("UQ1.62")]).astype(np.int64)
    assert np.array_equal(T._EXP_TABLES, words) and T._EXP_TABLES.dtype == np.int64
