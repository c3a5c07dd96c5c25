"""The bound context (fixedqmc.numerics.kernel_bound) and bound_kernel: for every operation
it implements, on hypothesis-drawn precisions (fixed point in every rounding mode, float
formats in every mode, float32, float64) and inputs, the trial's exact distance from the
exact-arithmetic value (Python fractions) never exceeds the propagated bound, nor does its
distance from the bound run's float64 value."""

import math
from decimal import Decimal, localcontext
from fractions import Fraction

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from numba import njit

import fixedqmc
from fixedqmc.errors import FixedQMCError
from fixedqmc.numerics.kernel import (KernelSpec, Variable, acc_add, acc_array,
                                      acc_array_add, acc_array_clear, acc_array_value,
                                      acc_value, acc_zero, add, at, chunk, chunk_bounds,
                                      const, convert, less, load, log2_bin, mul, n_chunks,
                                      store, sub, uniform_bin)
from fixedqmc.numerics.kernel_bound import rounding_terms
from fixedqmc.numerics.kernel_ops import (abs_, cos, cos_turns, div, exp, floor, maximum,
                                          minimum, recip, round_int, rsqrt, select, sin,
                                          sin_turns, sqrt)
from fixedqmc.numerics.polynomial import QUADRATIC, quadratic_kernel
from fixedqmc.testing.strategies import kernel_arrays, precision_specs, precisions

# Every operation's bound context compiled for drawn formats: minutes on 2 cores cold.
pytestmark = pytest.mark.heavy

OPS = KernelSpec("ops", (
    Variable("x", 0.0, 4.0), Variable("y", 0.5, 2.0), Variable("c", -1.0, 1.0),
    Variable("s", 0.5, 6.0), Variable("d", -2.0, 3.5), Variable("p", -12.0, 21.0),
    Variable("q", -24.0, 42.0), Variable("rt", 0.0, 2.0), Variable("iv", 0.5, 2.0),
    Variable("qc", -4.2, 4.2), Variable("z", -4.2, 6.2),
))
X, Y, C, S, D, P, Q, RT, IV, QC, Z = range(11)
C_VALUE = 0.1  # a constant not on any binary grid


@njit
def ops_kernel(ctx, x, y, p_out, q_out, rt_out, iv_out, z_out):
    """p = (x + y)(x - y), q = p / y, rt = sqrt(x), iv = 1 / y, z = 0.1 q + rt."""
    n = x.size
    for k in range(n_chunks(ctx, n)):
        cc = chunk(ctx, k)
        lo, hi = chunk_bounds(ctx, n, k)
        for i in range(lo, hi):
            e = at(cc, i)
            xi, yi = load(e, x[i], X), load(e, y[i], Y)
            p = mul(e, add(e, xi, yi, S), sub(e, xi, yi, D), P)
            q = div(e, p, yi, Q)
            rt = sqrt(e, xi, RT)
            p_out[i] = store(e, p)
            q_out[i] = store(e, q)
            rt_out[i] = store(e, rt)
            iv_out[i] = store(e, recip(e, yi, IV))
            z_out[i] = store(e, add(e, mul(e, q, const(e, C_VALUE, C), QC), rt, Z))


OUTPUTS = ("p", "q", "rt", "iv", "z")


def _within(t: float, b: float, exact: Fraction | None = None, root_of: Fraction | None = None,
            plus: Fraction = Fraction(0)) -> bool:
    """|t - X| <= b for X = exact, or X = plus + sqrt(root_of) (decided exactly)."""
    if not np.isfinite(b):
        return True
    t, b = Fraction(t), Fraction(b)
    if root_of is None:
        return abs(t - exact) <= b
    lo, hi = t - b - plus, t + b - plus  # lo <= sqrt(root_of) <= hi
    return hi >= 0 and (lo <= 0 or lo * lo <= root_of) and root_of <= hi * hi


def _with_decode_slack(res, spec: KernelSpec, precision: str) -> dict:
    """The bounds, each widened by half a float64 ulp of the trial's value where the
    output's fixed words are wider than 53 bits (their float64 decode rounds; the exact
    errors of ``res.error`` are from the words)."""
    kp = spec.resolve(precision)
    out = {}
    for name, b in res.bound.items():
        fmt = kp.format_of(name) if kp.kind == "formats" else None
        wide = isinstance(fmt, fixedqmc.QFormat) and fmt.word_bits > 53
        out[name] = b + np.spacing(np.abs(res.trial[name])) / 2 if wide else b
    return out


def _exact(x: float, y: float) -> dict:
    fx, fy, fc = Fraction(x), Fraction(y), Fraction(C_VALUE)
    p = (fx + fy) * (fx - fy)
    q = p / fy
    return {"p": p, "q": q, "iv": 1 / fy, "qc": q * fc}


def _check_against_exact(res, x, y, spec):
    B = _with_decode_slack(res, OPS, spec)
    for i in range(x.size):
        ex = _exact(float(x[i]), float(y[i]))
        for name in ("p", "q", "iv"):
            assert _within(res.trial[name][i], B[name][i], ex[name]), (name, i)
        assert _within(res.trial["rt"][i], B["rt"][i], root_of=Fraction(x[i]))
        assert _within(res.trial["z"][i], B["z"][i], root_of=Fraction(x[i]),
                       plus=ex["qc"])
    for name in OUTPUTS:
        assert (res.error[name] <= res.bound[name]).all(), name


@settings(max_examples=40)
@given(spec=precision_specs({"ops": OPS}, overflows=("saturate", "wrap")),
       arrays=kernel_arrays(OPS, st.integers(1, 40), names=("x", "y")))
def test_every_operation_stays_within_its_bound(spec, arrays):
    try:
        res = fixedqmc.bound_kernel(OPS, ops_kernel, arrays, OUTPUTS, spec)
    except FixedQMCError:  # a drawn format too narrow for a declared range
        return
    _check_against_exact(res, arrays["x"], arrays["y"], spec)


@settings(max_examples=25)
@given(spec=precisions(), arrays=kernel_arrays(QUADRATIC, st.integers(1, 40),
                                               names=("a", "b", "c", "u")))
def test_quadratic_chain_stays_within_its_bound(spec, arrays):
    try:
        res = fixedqmc.bound_kernel(QUADRATIC, quadratic_kernel, arrays, "y", spec)
    except FixedQMCError:
        return
    a, b, c, u = (arrays[k] for k in "abcu")
    B = _with_decode_slack(res, QUADRATIC, spec)
    for i in range(u.size):
        fa, fb, fc, fu = (Fraction(float(v[i])) for v in (a, b, c, u))
        assert _within(res.trial["y"][i], B["y"][i], fa + fu * (fb + fu * fc))
    assert (res.error["y"] <= res.bound["y"]).all()


@pytest.mark.parametrize("spec", ["fixed:20:floor", "fixed:20:half_even", "bfloat16",
                                  "float:e5m6:toward_zero", "float32"])
def test_bounds_are_tight_on_the_quadratic_chain(spec):
    """Not 10**6 times too wide: on 4000 random elements, the largest bound is within a
    small factor of the largest error seen (each term of the bound is attained by some
    element), and no element's bound is below its error."""
    rng = np.random.default_rng(7)
    n = 4000
    arrays = {k: rng.uniform(-2, 2, n) for k in "abc"} | {"u": rng.uniform(0, 1, n)}
    table = fixedqmc.bound_kernel(QUADRATIC, quadratic_kernel, arrays, "y", spec).table()
    row = table.loc["y"]
    assert row["violations"] == 0 and row["unbounded"] == 0
    assert 1.0 <= row["ratio"] < 4.0, row


def test_rounding_terms_match_each_mode():
    """Each rounding mode's stated error term: half a step for the nearest modes, a whole
    one for the directed and stochastic modes (fixed and float formats)."""
    for mode, q in (("half_even", 2.0 ** -9), ("half_up", 2.0 ** -9), ("floor", 2.0 ** -8),
                    ("zero", 2.0 ** -8), ("stochastic", 2.0 ** -8)):
        assert rounding_terms(fixedqmc.QFormat.parse("Q3.8"), mode)[0] == q
    fmt = fixedqmc.parse_precision("bfloat16").for_kernel("k").fmt
    for mode, u in (("nearest_even", 2.0 ** -8), ("nearest_away", 2.0 ** -8),
                    ("toward_zero", 2.0 ** -7), ("stochastic", 2.0 ** -7), ("odd", 2.0 ** -7)):
        assert rounding_terms(fmt, mode)[1] == u
    lo, hi = rounding_terms(fixedqmc.QFormat.parse("Q0.63"), "floor")[3:]
    assert Fraction(hi) <= Fraction(2 ** 63 - 1, 2 ** 63) and lo == -1.0  # never widened


def test_overflow_makes_the_bound_infinite_where_it_happens():
    """A product that may leave its format (Q2.8 for p) and wraps is unbounded from p on,
    counted at p only; the assertion helper names it."""
    x, y = np.array([0.1, 3.9]), np.array([1.5, 0.6])
    spec = "fixed:24,ops.p=fixed:Q2.8:half_even:wrap"
    res = fixedqmc.bound_kernel(OPS, ops_kernel, {"x": x, "y": y}, OUTPUTS, spec)
    assert np.isfinite(res.bound["p"][0]) and res.bound["p"][1] == np.inf
    assert res.bound["q"][1] == np.inf and np.isfinite(res.bound["rt"][1])
    assert res.unbounded["p"] == 1 and res.unbounded["q"] == 0
    with pytest.raises(AssertionError, match=r"infinite .*'p': 1"):
        fixedqmc.testing.assert_within_bound(OPS, ops_kernel, {"x": x, "y": y}, OUTPUTS, spec)
    fixedqmc.testing.assert_within_bound(OPS, ops_kernel, {"x": x, "y": y}, OUTPUTS, spec,
                                         allow_unbounded=True)


def test_saturation_adds_how_far_the_exact_value_lies_outside():
    """Saturating at Q2.8 (max 4 - 2**-8) a product whose exact value is 14.85: the bound
    stays finite, at least the distance, and holds."""
    x, y = np.array([3.9]), np.array([0.6])
    res = fixedqmc.testing.assert_within_bound(OPS, ops_kernel, {"x": x, "y": y}, OUTPUTS,
                                               "fixed:24,ops.p=fixed:Q2.8")
    assert res.trial["p"][0] == 4 - 2 ** -8
    assert 14.85 - 4 < res.bound["p"][0] < 14.85 - 4 + 0.01
    assert res.unbounded["p"] == 0


def test_a_divisor_that_may_round_to_zero_is_unbounded():
    """y = 1e-9 rounds to 0 at Q2.16: 1 / y is unbounded (never a finite, false bound)."""
    res = fixedqmc.bound_kernel(OPS, ops_kernel, {"x": np.array([1.0]), "y": np.array([1e-9])},
                                OUTPUTS, "fixed:24,ops.y=fixed:Q2.16")
    assert res.bound["iv"][0] == np.inf and res.bound["q"][0] == np.inf
    assert res.unbounded["iv"] == 1 and res.unbounded["q"] == 1


PIECES = KernelSpec("pieces", (
    Variable("x", -3.0, 3.0), Variable("y", -3.0, 3.0), Variable("a", 0.0, 3.0),
    Variable("lo", -3.0, 3.0), Variable("hi", -3.0, 3.0), Variable("ex", 0.0, 20.1),
    Variable("fl", -3.0, 3.0), Variable("sel", -6.0, 6.0),
))


@njit
def pieces_kernel(ctx, x, y, a_out, lo_out, hi_out, ex_out, fl_out, sel_out):
    """|x|, min, max, e**x, floor(x), then x + y if x < y else x - y."""
    n = x.size
    for k in range(n_chunks(ctx, n)):
        cc = chunk(ctx, k)
        lo, hi = chunk_bounds(ctx, n, k)
        for i in range(lo, hi):
            e = at(cc, i)
            xi, yi = load(e, x[i], 0), load(e, y[i], 1)
            a_out[i] = store(e, abs_(e, xi, 2))
            lo_out[i] = store(e, minimum(e, xi, yi, 3))
            hi_out[i] = store(e, maximum(e, xi, yi, 4))
            ex_out[i] = store(e, exp(e, xi, 5))
            fl_out[i] = store(e, floor(e, xi, 6))
            sel_out[i] = store(e, select(e, less(e, xi, yi), add(e, xi, yi, 7),
                                         sub(e, xi, yi, 7)))


PIECE_OUTPUTS = ("a", "lo", "hi", "ex", "fl", "sel")


def _exp_within(t: float, b: float, x: float) -> bool:
    """|t - e**x| <= b, e**x to 60 digits (decimal, correctly rounded)."""
    if not np.isfinite(b):
        return True
    with localcontext() as ctx:
        ctx.prec = 60
        ex = Decimal(x).exp()
        return abs(Decimal(t) - ex) <= Decimal(b) + ex * Decimal(10) ** -55


@settings(max_examples=40)
@given(spec=precision_specs({"pieces": PIECES}, overflows=("saturate", "wrap")),
       arrays=kernel_arrays(PIECES, st.integers(1, 40), names=("x", "y")))
def test_decisions_and_transcendentals_stay_within_their_bounds(spec, arrays):
    """abs, min, max, exp, floor, less and select against exact values; where a comparison
    or a floor is ambiguous the element's later outputs are unbounded, never wrong."""
    try:
        res = fixedqmc.bound_kernel(PIECES, pieces_kernel, arrays, PIECE_OUTPUTS, spec)
    except FixedQMCError:
        return
    B = _with_decode_slack(res, PIECES, spec)
    for i, (x, y) in enumerate(zip(arrays["x"].tolist(), arrays["y"].tolist())):
        fx, fy = Fraction(x), Fraction(y)
        exact = {"a": abs(fx), "lo": min(fx, fy), "hi": max(fx, fy),
                 "fl": Fraction(math.floor(x)), "sel": fx + fy if fx < fy else fx - fy}
        for name, value in exact.items():
            assert _within(res.trial[name][i], B[name][i], value), (name, i)
        assert _exp_within(res.trial["ex"][i], B["ex"][i], x)
    for name in PIECE_OUTPUTS:
        assert (res.error[name] <= res.bound[name]).all(), name


@pytest.mark.parametrize("spec", ["fixed:20:half_even,pieces.y=fixed:Q3.9:floor",
                                  "float:e5m6:toward_zero,pieces.x=bfloat16",
                                  "fixed:16:stochastic,pieces.ex=float16"])
def test_no_violation_on_many_elements(spec):
    """Worst cases of each operation's propagation are rare in small samples: 20,000
    elements, mixed formats (y coarser than x: min and max must take the larger operand
    bound)."""
    rng = np.random.default_rng(11)
    arrays = {"x": rng.uniform(-3, 3, 20_000), "y": rng.uniform(-3, 3, 20_000)}
    fixedqmc.testing.assert_within_bound(PIECES, pieces_kernel, arrays, PIECE_OUTPUTS, spec,
                                         allow_unbounded=True)


def test_an_ambiguous_comparison_unbounds_the_element_after_it():
    """x = y: the trial may compare either way; x just below an integer: floor's cell is
    ambiguous.  Outputs stored before the decision keep their bounds."""
    x, y = np.array([0.5, 1.0 - 1e-12, 0.25]), np.array([0.5, 2.0, 1.5])
    res = fixedqmc.bound_kernel(PIECES, pieces_kernel, {"x": x, "y": y}, PIECE_OUTPUTS,
                                "fixed:24")
    assert res.ambiguous == 2
    assert res.bound["sel"][0] == np.inf and np.isfinite(res.bound["fl"][0])
    assert res.bound["fl"][1] == np.inf and np.isfinite(res.bound["ex"][1])
    assert all(np.isfinite(res.bound[k][2]) for k in PIECE_OUTPUTS)
    with pytest.raises(AssertionError, match="2 ambiguous decision"):
        fixedqmc.testing.assert_within_bound(PIECES, pieces_kernel, {"x": x, "y": y},
                                             PIECE_OUTPUTS, "fixed:24")


SUMS = KernelSpec("sums", (
    Variable("x", -2.0, 2.0), Variable("y", 0.25, 4.0), Variable("c", -1.0, 1.0),
    Variable("t", -2.0, 2.0), Variable("s", -32.0, 32.0), Variable("arr", -12.0, 12.0),
    Variable("rs", 0.5, 2.0),
))
N_TERMS = 16


@njit
def sums_kernel(ctx, x, y, c, s_out, a_out, rs_out):
    """s = sum_j x c_j (one accumulator), a = sum of the terms j = 0 mod 3 (accumulator 0
    of an array of three), rs = 1 / sqrt(y)."""
    n = x.size
    for k in range(n_chunks(ctx, n)):
        cc = chunk(ctx, k)
        buf = acc_array(cc, 3, 5)
        lo, hi = chunk_bounds(ctx, n, k)
        for i in range(lo, hi):
            e = at(cc, i)
            acc_array_clear(e, buf)
            xi = load(e, x[i], 0)
            acc = acc_zero(e, 4)
            for j in range(N_TERMS):
                t = mul(e, xi, const(e, c[j], 2), 3)
                acc = acc_add(e, acc, t, 4)
                acc_array_add(e, buf, j % 3, t, 5)
            s_out[i] = store(e, acc_value(e, acc, 4))
            a_out[i] = store(e, acc_array_value(e, buf, 0, 5))
            rs_out[i] = store(e, rsqrt(e, load(e, y[i], 1), 6))


SUM_CONSTANTS = np.linspace(-0.7, 1.0, N_TERMS) / 3.0  # not on a binary grid, no symmetry


def _rsqrt_within(t: float, b: float, y: float) -> bool:
    """|t - 1/sqrt(y)| <= b, decided exactly (squares)."""
    if not np.isfinite(b):
        return True
    lo, hi, fy = Fraction(t) - Fraction(b), Fraction(t) + Fraction(b), Fraction(y)
    return hi > 0 and hi * hi * fy >= 1 and (lo <= 0 or lo * lo * fy <= 1)


@settings(max_examples=30)
@given(spec=precision_specs({"sums": SUMS}, overflows=("saturate", "wrap")),
       arrays=kernel_arrays(SUMS, st.integers(1, 30), names=("x", "y")))
def test_accumulators_and_rsqrt_stay_within_their_bounds(spec, arrays):
    """A sum of 16 products (scalar accumulator and accumulator array: each term rounded
    into the sum variable, then added exactly in fixed point or rounded partial sums in
    float formats, in any order in a float kernel) and rsqrt against exact values."""
    try:
        res = fixedqmc.bound_kernel(SUMS, sums_kernel, arrays, ("s", "arr", "rs"), spec,
                                    constants=(SUM_CONSTANTS,))
    except FixedQMCError:
        return
    B = _with_decode_slack(res, SUMS, spec)
    cs = [Fraction(float(c)) for c in SUM_CONSTANTS]
    for i, (x, y) in enumerate(zip(arrays["x"].tolist(), arrays["y"].tolist())):
        terms = [Fraction(x) * c for c in cs]
        assert _within(res.trial["s"][i], B["s"][i], sum(terms)), i
        assert _within(res.trial["arr"][i], B["arr"][i], sum(terms[::3])), i
        assert _rsqrt_within(res.trial["rs"][i], B["rs"][i], y), i
    for name in ("s", "arr", "rs"):
        assert (res.error[name] <= res.bound[name]).all(), name


@pytest.mark.parametrize("spec", ["float32", "fixed:18:floor", "bfloat16,sums.s=float32",
                                  "float:e8m20,sums.s=float:e5m6:toward_pos"])
def test_sums_hold_their_bounds_on_many_elements(spec):
    rng = np.random.default_rng(5)
    arrays = {"x": rng.uniform(-2, 2, 20_000), "y": rng.uniform(0.25, 4, 20_000)}
    fixedqmc.testing.assert_within_bound(SUMS, sums_kernel, arrays, ("s", "arr", "rs"), spec,
                                         constants=(SUM_CONSTANTS,))


TRIG = KernelSpec("trig", (
    Variable("x", -2.0, 2.0), Variable("ct", -1.0, 1.0), Variable("st", -1.0, 1.0),
    Variable("cr", -1.0, 1.0), Variable("sr", -1.0, 1.0),
))
TRIG_OUTPUTS = ("ct", "st", "cr", "sr")


@njit
def trig_kernel(ctx, x, ct_out, st_out, cr_out, sr_out):
    """cos(2 pi x), sin(2 pi x) (turns), cos x, sin x."""
    n = x.size
    for k in range(n_chunks(ctx, n)):
        cc = chunk(ctx, k)
        lo, hi = chunk_bounds(ctx, n, k)
        for i in range(lo, hi):
            e = at(cc, i)
            xi = load(e, x[i], 0)
            ct_out[i] = store(e, cos_turns(e, xi, 1))
            st_out[i] = store(e, sin_turns(e, xi, 2))
            cr_out[i] = store(e, cos(e, xi, 3))
            sr_out[i] = store(e, sin(e, xi, 4))


_PI = Decimal("3.14159265358979323846264338327950288419716939937510582097494459230781")


def _cos_sin(a: Decimal) -> tuple:
    """cos a, sin a to about 60 digits (Taylor series, |a| <= 13)."""
    c, s, term, k = Decimal(0), Decimal(0), Decimal(1), 0
    while k < 120:
        if k % 4 == 0:
            c += term
        elif k % 4 == 1:
            s += term
        elif k % 4 == 2:
            c -= term
        else:
            s -= term
        k += 1
        term = term * a / k
    return c, s


@settings(max_examples=30)
@given(spec=precision_specs({"trig": TRIG}, overflows=("saturate",)),
       arrays=kernel_arrays(TRIG, st.integers(1, 30), names=("x",)))
def test_cosines_and_sines_stay_within_their_bounds(spec, arrays):
    try:
        res = fixedqmc.bound_kernel(TRIG, trig_kernel, arrays, TRIG_OUTPUTS, spec)
    except FixedQMCError:
        return
    B = _with_decode_slack(res, TRIG, spec)
    with localcontext() as ctx:
        ctx.prec = 70
        for i, x in enumerate(arrays["x"].tolist()):
            exact = dict(zip(TRIG_OUTPUTS, _cos_sin(2 * _PI * Decimal(x)) + _cos_sin(Decimal(x))))
            for name, value in exact.items():
                b = B[name][i]
                if np.isfinite(b):
                    gap = abs(Decimal(res.trial[name][i]) - value)
                    assert gap <= Decimal(b) + Decimal(10) ** -55, (name, i, gap, b)
    for name in TRIG_OUTPUTS:
        assert (res.error[name] <= res.bound[name]).all(), name


@pytest.mark.parametrize("spec", ["fixed:20:floor", "float32", "bfloat16", "fixed:60"])
def test_trig_holds_its_bounds_on_many_elements(spec):
    x = np.random.default_rng(2).uniform(-2, 2, 20_000)
    fixedqmc.testing.assert_within_bound(TRIG, trig_kernel, {"x": x}, TRIG_OUTPUTS, spec)


ROUND = KernelSpec("round", (
    Variable("x", -3.0, 3.0), Variable("ri", -3.0, 3.0), Variable("t", 0.0, 1.0),
    Variable("k", 0.0, 16.0), Variable("u", 0.0, 1.0), Variable("yu", 0.0, 16.0),
    Variable("ul", 0.0, 1.0), Variable("yl", 0.0, 12.0),
))
ROUND_OUTPUTS = ("ri", "yu", "yl")


@njit
def round_kernel(ctx, x, t, ri_out, yu_out, yl_out):
    """round_int(x) in ri's mode; a uniform bin of t (16 bins) and a log2 bin (3 segments
    of 4 bins) given back as index + local coordinate."""
    n = x.size
    for c in range(n_chunks(ctx, n)):
        cc = chunk(ctx, c)
        lo, hi = chunk_bounds(ctx, n, c)
        for i in range(lo, hi):
            e = at(cc, i)
            ri_out[i] = store(e, round_int(e, load(e, x[i], 0), 1))
            ti = load(e, t[i], 2)
            k, u = uniform_bin(e, ti, 4, 4)
            yu_out[i] = store(e, add(e, const(e, np.float64(k), 3), u, 5))
            k, u = log2_bin(e, ti, 3, 2, 6)
            yl_out[i] = store(e, add(e, const(e, np.float64(k), 3), u, 7))


def _rounded(x: Fraction, mode: str):
    """x rounded to an integer in a rounding mode of modes (None: stochastic)."""
    if mode == "floor":
        return Fraction(math.floor(x))
    if mode == "zero":
        return Fraction(math.trunc(x))
    if mode == "half_up":
        return Fraction(math.floor(x + Fraction(1, 2)))
    if mode == "half_away":
        return Fraction(math.floor(abs(x) + Fraction(1, 2))) * (1 if x >= 0 else -1)
    if mode == "half_even":
        return Fraction(round(x))
    return None


@settings(max_examples=30)
@given(spec=precision_specs({"round": ROUND}, overflows=("saturate",)),
       arrays=kernel_arrays(ROUND, st.integers(1, 30), names=("x", "t")))
def test_integers_and_table_bins_stay_within_their_bounds(spec, arrays):
    """round_int in every mode, and both table bins, against exact values; near a cell or
    bin edge the element is unbounded (an ambiguous decision), never wrong."""
    try:
        res = fixedqmc.bound_kernel(ROUND, round_kernel, arrays, ROUND_OUTPUTS, spec)
    except FixedQMCError:
        return
    B = _with_decode_slack(res, ROUND, spec)
    kp = ROUND.resolve(spec)
    ri = ROUND.index("ri")
    mode = (kp.roundings[ri] if kp.kind == "formats"
            and isinstance(kp.formats[ri], fixedqmc.QFormat) else "half_even")
    one_below = Fraction(np.nextafter(1.0, 0.0))
    for i, (x, t) in enumerate(zip(arrays["x"].tolist(), arrays["t"].tolist())):
        fx, ft = Fraction(x), min(max(Fraction(t), Fraction(0)), one_below)
        exact_ri = _rounded(fx, mode)
        if exact_ri is not None:
            assert _within(res.trial["ri"][i], B["ri"][i], exact_ri), i
        elif np.isfinite(B["ri"][i]):
            assert res.trial["ri"][i] == x  # stochastic: bounded only for an integer x
        assert _within(res.trial["yu"][i], B["yu"][i], ft * 16), i
        j = 0 if ft >= Fraction(1, 2) else (1 if ft >= Fraction(1, 4) else 2)
        w = (ft - Fraction(1, 2 ** (j + 1))) * 2 ** (j + 1) if j < 2 else ft * 4
        assert _within(res.trial["yl"][i], B["yl"][i], 4 * j + 4 * w), i
    for name in ROUND_OUTPUTS:
        assert (res.error[name] <= res.bound[name]).all(), name


@pytest.mark.parametrize("spec", ["fixed:12:half_up", "fixed:10:floor,round.t=fixed:UQ1.7",
                                  "fixed:12,round.ri=fixed:Q3.8:floor",
                                  "bfloat16", "float:e5m9:toward_zero"])
def test_integers_and_bins_hold_their_bounds_on_many_elements(spec):
    rng = np.random.default_rng(9)
    arrays = {"x": rng.uniform(-3, 3, 20_000), "t": rng.uniform(0, 1, 20_000)}
    res = fixedqmc.testing.assert_within_bound(ROUND, round_kernel, arrays, ROUND_OUTPUTS,
                                               spec, allow_unbounded=True)
    assert res.ambiguous > 0  # edges are crossed, by some elements only:
    assert all(np.isfinite(res.bound[k]).mean() > 0.5 for k in ROUND_OUTPUTS)


def test_a_value_of_another_context_is_refused_by_a_bound_context():
    with pytest.raises(Exception, match="converts only values of another bound context"):
        convert_kernel(OPS.resolve("fixed:24").bounding().context(0), np.zeros(1),
                       np.zeros(1, np.complex128))


@njit
def convert_kernel(ctx, x, out):
    e = at(chunk(ctx, 0), 0)
    out[0] = store(e, convert(e, 0.5, 0.0, 1))


def test_bad_input_is_refused_before_any_work():
    with pytest.raises(FixedQMCError, match="no variable 'w'"):
        fixedqmc.bound_kernel(OPS, ops_kernel, {"w": np.zeros(2)}, OUTPUTS, "fixed:24")
    with pytest.raises(FixedQMCError, match="different lengths"):
        fixedqmc.bound_kernel(OPS, ops_kernel, {"x": np.zeros(2), "y": np.ones(3)}, OUTPUTS,
                              "fixed:24")
    with pytest.raises(FixedQMCError, match="takes 8 arguments.*make 4"):
        fixedqmc.bound_kernel(OPS, ops_kernel, {"x": np.zeros(2), "y": np.ones(2)}, "p",
                              "fixed:24")


WIRE_A = KernelSpec("wire_a", (Variable("x", -2.0, 2.0), Variable("sq", 0.0, 4.0)))
WIRE_B = KernelSpec("wire_b", (Variable("sq", 0.0, 4.0), Variable("y", 0.0, 5.0)))


@njit
def wire_kernel(ca, cb, x, out):
    """sq = x * x in kernel a, sent over the wire to kernel b: y = sq + 1."""
    n = x.size
    for k in range(n_chunks(ca, n)):
        ka, kb = chunk(ca, k), chunk(cb, k)
        lo, hi = chunk_bounds(ca, n, k)
        for i in range(lo, hi):
            ea, eb = at(ka, i), at(kb, i)
            sq = mul(ea, load(ea, x[i], 0), load(ea, x[i], 0), 1)
            out[i] = store(eb, add(eb, convert(eb, sq, ea, 0), const(eb, 1.0, 1), 1))


@pytest.mark.parametrize("spec", ["wire_a=fixed:24,wire_b=fixed:10:floor",
                                  "wire_a=bfloat16,wire_b=fixed:Q3.12",
                                  "wire_a=fixed:Q2.20,wire_b=float:e5m4:toward_zero"])
def test_a_value_converted_between_kernels_keeps_its_bound(spec):
    """convert: the source kernel's bound, then the rounding into the receiving variable
    (the wire between two hardware units whose formats differ)."""
    x = np.random.default_rng(4).uniform(-2, 2, 5_000)
    a, b = (s.resolve(spec) for s in (WIRE_A, WIRE_B))
    a, b = (p.at_runtime() if p.kind == "formats" else p for p in (a, b))

    def run(pa, pb):
        out = np.empty(x.size, pb.dtype)
        wire_kernel(pa.context(0), pb.context(0), pa.encode("x", x), out)
        return out

    trial = b.decode("y", run(a, b))
    ab, bb = a.bounding(), b.bounding()
    out = run(ab, bb)
    value, bound = bb.decode("y", out), bb.bounds("y", out)
    assert (np.abs(trial - value) <= bound).all()
    for t, bd, xi in zip(trial[:500].tolist(), bound[:500].tolist(), x[:500].tolist()):
        assert _within(t, bd, Fraction(xi) ** 2 + 1)


def test_a_stored_bound_run_output_loads_with_its_bound():
    """Two calls chained through a host array (as a system keeps state between calls):
    the second loads the first's ``value + 1j * bound`` and keeps that bound, as the trial
    re-encodes its own first output."""
    rng = np.random.default_rng(8)
    a, b, c = (rng.uniform(-2, 2, 3_000) for _ in range(3))
    u = rng.uniform(0, 1, 3_000)
    spec = "fixed:18:floor"
    kp = QUADRATIC.resolve(spec).at_runtime()
    kb = kp.bounding()

    def twice(p, first_a):
        out1 = np.empty(u.size, p.dtype)
        ins = [p.encode(k, v) for k, v in zip("bcu", (b, c, u))]
        quadratic_kernel(p.context(0), p.encode("a", first_a), *ins, out1)
        y1 = out1 if p is kb else p.decode("y", out1)  # the trial re-encodes its value
        out2 = np.empty(u.size, p.dtype)
        quadratic_kernel(p.context(0), p.encode("a", y1 / 4), *ins, out2)
        return out2

    trial = kp.decode("y", twice(kp, a))
    out = twice(kb, a)
    assert out.dtype == np.complex128
    value, bound = kb.decode("y", out), kb.bounds("y", out)
    assert (np.abs(trial - value) <= bound).all()
    single = fixedqmc.bound_kernel(QUADRATIC, quadratic_kernel,
                                   {"a": a, "b": b, "c": c, "u": u}, "y", spec)
    assert (bound > single.bound["y"]).all()  # the first call's bound came along


ACC = KernelSpec("acc", (Variable("x", -1.0, 1.0), Variable("s", -100.0, 100.0)))


@njit
def acc_kernel(ctx, x, s_io):
    """s += x, with s kept in the output array between calls (state in kernel words)."""
    n = x.size
    for k in range(n_chunks(ctx, n)):
        cc = chunk(ctx, k)
        lo, hi = chunk_bounds(ctx, n, k)
        for i in range(lo, hi):
            e = at(cc, i)
            s_io[i] = store(e, add(e, load(e, s_io[i], 1), load(e, x[i], 0), 1))


@pytest.mark.parametrize("spec", ["fixed:Q8.16:floor", "float:e6m9", "float64"])
def test_a_value_stored_and_loaded_again_grows_its_bound_linearly(spec):
    """State kept in an output array and loaded back 60 times (helium's gradient sums, a
    molecule's inverse matrices): the stored bound keeps float64's share apart
    (pack_bound), so each round trip adds its roundings instead of doubling the bound."""
    x = np.random.default_rng(9).uniform(0.5, 1, 1_000)
    kp = ACC.resolve(spec)
    kp = kp.at_runtime() if kp.kind == "formats" else kp
    kb = kp.bounding()
    trial, out = np.zeros(x.size, kp.dtype), np.zeros(x.size, kb.dtype)
    for k in range(60):
        acc_kernel(kp.context(0), kp.encode("x", x), trial)
        acc_kernel(kb.context(0), kb.encode("x", x), out)
        if k == 0:
            first = kb.bounds("s", out)
    value, bound = kb.decode("s", out), kb.bounds("s", out)
    assert (np.abs(kp.decode("s", trial) - value) <= bound).all()
    # each step's rounding grows at most with the sum (60 x), so 60 steps stay below
    # 4 * 60**2 first steps; doubling at each load would give 2**60
    assert (bound <= 4 * 60 ** 2 * first).all() and (first > 0).all()


@settings(max_examples=400, deadline=None)
@given(st.floats(0, 1e300), st.floats(0, 1e300), st.integers(-1074, 900))
def test_a_packed_bound_gives_back_both_shares(r, b, scale):
    """pack_bound / unpack_bound: the packed value is at least r + b, the shares come
    back at least as large as they went in, and their sum exceeds r + b by at most about
    2**-15 of it (or a subnormal step)."""
    from fixedqmc.numerics.kernel_bound import pack_bound, unpack_bound
    r, b = r * 2.0 ** scale if r * 2.0 ** scale < 1e300 else r, b
    packed = pack_bound(r, b)
    r2, b2 = unpack_bound(packed)
    assert packed >= r + b and r2 >= r and b2 >= b
    assert r2 + b2 <= (r + b) * (1 + 2.0 ** -14) + 2.0 ** -959


def test_a_term_outside_the_sum_format_is_overflow_handled_before_the_sum():
    """Negative terms into an unsigned saturating sum (UQ0.5) are clamped to 0 one by one
    (the trial sums the positive terms only: 0.75 against an exact -0.8); the bound covers
    it, and with wrap it is unbounded."""
    arrays = {"x": np.array([-1.0]), "y": np.array([1.0])}
    outputs = ("s", "arr", "rs")
    res = fixedqmc.testing.assert_within_bound(
        SUMS, sums_kernel, arrays, outputs, "float64,sums.s=fixed:UQ0.5:floor",
        constants=(SUM_CONSTANTS,))
    assert res.trial["s"][0] == 0.75
    wrap = fixedqmc.bound_kernel(SUMS, sums_kernel, arrays, outputs,
                                 "float64,sums.s=fixed:UQ0.5:floor:wrap",
                                 constants=(SUM_CONSTANTS,))
    assert wrap.bound["s"][0] == np.inf and wrap.unbounded["s"] > 0
