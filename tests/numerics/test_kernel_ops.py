"""The kernel operations of fixedqmc.numerics.kernel_ops in every context: fixed results
(words and overflow events) against the exact reference of tests/reference.py over random
formats (negative integer bits included) and every rounding and overflow mode, typed and
run-time formats bit-identical, float64 and float32 computed in their type, and the error
bounds of the transcendental operations against 40-digit values."""

from decimal import Decimal, localcontext
from fractions import Fraction

import numba
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from numba import njit

import reference as R
from fixedqmc.errors import FixedOverflowError
from fixedqmc.numerics import transcendental as T
from fixedqmc.numerics.kernel import (KernelPrecision, KernelSpec, Variable, add, at, chunk,
                                      chunk_bounds, convert, less, load, n_chunks, quiet,
                                      events, store)
from fixedqmc.numerics.kernel_ops import (abs_, cos, cos_turns, div, exp, floor, maximum,
                                          minimum, recip, round_int, rsqrt, select, sin,
                                          sin_turns, sqrt)
from fixedqmc.numerics.modes import overflow_code, rounding_code
from fixedqmc.numerics.qformat import QFormat
from strategies import overflow_modes, qformats, qformats_scaled, raw_words, rounding_modes

SPEC = KernelSpec("ops", (Variable("x", -1, 1), Variable("y", -1, 1), Variable("z", -1, 1)))
X, Y, Z = range(3)
OPS = ("div", "recip", "sqrt", "rsqrt", "floor", "round_int", "abs", "minimum", "maximum",
       "select", "exp", "cos_turns", "sin_turns", "cos", "sin")
OP = {name: i for i, name in enumerate(OPS)}
#: op code of 2 min(x, y) by ``select`` then ``add`` (not in OPS: no float reference)
SELECT_ADD = len(OPS)
SEED = 2024


@njit(inline="always")
def _twice_the_smaller(e, x, y):
    """2 min(x, y) in z: the selected value goes on into another operation."""
    m = select(e, less(e, x, y), convert(e, x, e, Z), convert(e, y, e, Z))
    return add(e, m, m, Z)


@njit
def _op(e, op, x, y):
    if op == 0:
        return div(e, x, y, Z)
    if op == 1:
        return recip(e, x, Z)
    if op == 2:
        return sqrt(e, x, Z)
    if op == 3:
        return rsqrt(e, x, Z)
    if op == 4:
        return floor(e, x, Z)
    if op == 5:
        return round_int(e, x, Z)
    if op == 6:
        return abs_(e, x, Z)
    if op == 7:
        return minimum(e, x, y, Z)
    if op == 8:
        return maximum(e, x, y, Z)
    if op == 9:
        return select(e, less(e, x, y), convert(e, x, e, Z), convert(e, y, e, Z))
    if op == 10:
        return exp(e, x, Z)
    if op == 11:
        return cos_turns(e, x, Z)
    if op == 12:
        return sin_turns(e, x, Z)
    if op == 13:
        return cos(e, x, Z)
    if op == SELECT_ADD:
        return _twice_the_smaller(e, x, y)
    return sin(e, x, Z)


@njit
def ops_kernel(ctx, op, xs, ys, out):
    """out[i] = op(x[i], y[i]) for a run-time op code: one compilation per context type."""
    n = xs.size
    for k in range(n_chunks(ctx, n)):
        c = chunk(ctx, k)
        lo, hi = chunk_bounds(ctx, n, k)
        for i in range(lo, hi):
            e = at(c, i)
            out[i] = store(e, _op(e, op, load(e, xs[i], X), load(e, ys[i], Y)))


@njit
def _quiet_op(e, op, x, y):
    """A few operations of each kind (unary, binary, table, select) for quiet contexts."""
    if op == 0:
        return div(e, x, y, Z)
    if op == 2:
        return sqrt(e, x, Z)
    if op == 10:
        return exp(e, x, Z)
    if op == SELECT_ADD:
        return _twice_the_smaller(e, x, y)
    return select(e, less(e, x, y), convert(e, x, e, Z), convert(e, y, e, Z))


QUIET_OPS = ("div", "sqrt", "exp", "select")


@njit
def quiet_kernel(ctx, op, xs, ys, out, flags):
    n = xs.size
    for k in range(n_chunks(ctx, n)):
        c = chunk(ctx, k)
        lo, hi = chunk_bounds(ctx, n, k)
        for i in range(lo, hi):
            e = quiet(at(c, i))
            z = _quiet_op(e, op, load(e, xs[i], X), load(e, ys[i], Y))
            out[i] = store(e, z)
            flags[i] = events(e, z)


def precision(fx, fy, fz, rnd, ovf):
    return KernelPrecision(SPEC, "formats", (fx, fy, fz), ("half_even", "half_even", rnd),
                           ("saturate", "saturate", ovf))


def run(kp, op, wx, wy, seed=SEED):
    ctx = kp.context(seed)
    out = np.zeros(len(wx), kp.dtype)
    xs, ys = (np.array([int(w) - (1 << 64) if w >= 1 << 63 else int(w) for w in ws],
                       np.int64)  # unsigned 64-bit words as their bit patterns
              if kp.kind == "formats" else np.asarray(ws, kp.dtype) for ws in (wx, wy))
    ops_kernel(ctx, OP[op], xs, ys, out)
    return out, (ctx[1].sum(axis=0) if kp.kind == "formats" else None)


# ------------------------------------------------------------------ the reference --
def _tables():
    raw = T._EXP_TABLES.tolist()
    return raw[:4096], raw[4096:6144], raw[6144:]


EXP_TABLES = _tables()


def reference(op, x, y, fz, rnd, ovf, rbits):
    """(raw, event) of op on the exact values x, y into fz."""
    if op == "div":
        return R.div(x, y, fz, rnd, ovf, rbits)
    if op == "recip":
        return R.div(Fraction(1), x, fz, rnd, ovf, rbits)
    if op in ("sqrt", "rsqrt"):
        return getattr(R, op)(x, fz, rnd, ovf, rbits)
    if op == "floor":
        return R.to_int(x, "floor", fz, rnd, ovf, rbits)
    if op == "round_int":
        return R.to_int(x, rnd, fz, rnd, ovf, rbits)
    if op == "exp":
        return R.lut_exp(x, EXP_TABLES, T._LOG2E_RAW, int(np.uint64(T._LN2_WORD.view(np.uint64))),
                         fz, rnd, ovf, rbits)
    if op in ("cos_turns", "sin_turns", "cos", "sin"):
        t = R.turn_of(x) if op.endswith("turns") else R.radians_turn(x, T._INV_2PI_RAW)
        if op.startswith("sin"):
            t -= 1 << 62
        return R.cos_turn64(t, T._SIN_TABLE.tolist(), int(T._TWO_PI_60), fz, rnd, ovf, rbits)
    if op == "select":  # the kernel converts both into z, then selects: both count
        (rx, ox), (ry, oy) = (R.quantize(v, fz, rnd, ovf, rbits) for v in (x, y))
        return (rx if x < y else ry), ox + oy
    v = {"abs": lambda: abs(x), "minimum": lambda: min(x, y), "maximum": lambda: max(x, y)}[op]()
    return R.quantize(v, fz, rnd, ovf, rbits)


def check_against_reference(op, fx, fy, fz, rnd, ovf, wx, wy):
    kp = precision(fx, fy, fz, rnd, ovf).at_runtime()
    got, counts = run(kp, op, wx, wy)
    n_over = 0
    for i, (a, b) in enumerate(zip(wx, wy)):
        want, over = reference(op, R.value(a, fx), R.value(b, fy), fz, rnd, ovf,
                               R.random_bits(SEED, i, Z))
        assert int(got[i]) == want, (op, fx, fy, fz, rnd, ovf, a, b)
        n_over += over
    assert counts[Z] == n_over


@st.composite
def case(draw, ops, small_x=False):
    fx = draw(qformats_scaled(max_word=40 if small_x else 64))
    fy, fz = draw(qformats_scaled()), draw(qformats_scaled())
    wx = draw(st.lists(raw_words(fx), min_size=1, max_size=6))
    wy = draw(st.lists(raw_words(fy), min_size=len(wx), max_size=len(wx)))
    return draw(st.sampled_from(ops)), fx, fy, fz, wx, wy


EXACT_OPS = ("div", "recip", "sqrt", "rsqrt", "floor", "round_int", "abs", "minimum",
             "maximum", "select")


@settings(max_examples=300)
@given(c=case(EXACT_OPS), rnd=rounding_modes, ovf=overflow_modes)
def test_exact_ops_match_reference(c, rnd, ovf):
    check_against_reference(c[0], *c[1:4], rnd, ovf, *c[4:])


@settings(max_examples=200)
@given(c=case(("exp", "cos_turns", "sin_turns", "cos", "sin")), rnd=rounding_modes,
       ovf=overflow_modes)
def test_table_ops_match_their_integer_transcription(c, rnd, ovf):
    check_against_reference(c[0], *c[1:4], rnd, ovf, *c[4:])


@pytest.mark.parametrize("op, x, y, want", [
    ("div", 1.5, 0.0, "max"), ("div", -1.5, 0.0, "min"), ("div", 0.0, 0.0, "max"),
    ("recip", 0.0, 0.0, "max"), ("sqrt", -0.25, 0.0, 0.0), ("rsqrt", -0.25, 0.0, 0.0),
    ("rsqrt", 0.0, 0.0, "max")])
def test_special_cases_count_an_event(op, x, y, want):
    f = QFormat.parse("Q3.12")
    kp = precision(f, f, f, "half_even", "wrap").at_runtime()
    got, counts = run(kp, op, [round(x * 4096)], [round(y * 4096)])
    expect = {"max": f.max_raw, "min": f.min_raw}.get(want, want)
    assert int(got[0]) == expect and counts[Z] == 1
    kp = precision(f, f, f, "half_even", "raise").at_runtime()
    ctx = kp.context()
    ops_kernel(ctx, OP[op], np.array([round(x * 4096)]), np.array([round(y * 4096)]),
               np.zeros(1, np.int64))
    with pytest.raises(FixedOverflowError, match="ops.z"):
        kp.report(ctx)


def test_minimum_image_wrap():
    """x - L round(x / L) with fixed formats: the minimum-image displacement."""
    box, fx = 5.0, QFormat.parse("Q5.20")
    xs = np.array([-7.3, -2.6, -2.4, 0.1, 2.49, 2.51, 9.9])
    wx = [round(v * 2**20) for v in xs]
    kp = precision(fx, fx, QFormat.parse("Q4.20"), "half_even", "saturate").at_runtime()
    q, _ = run(kp, "div", wx, [round(box * 2**20)] * len(wx))
    kp2 = precision(QFormat.parse("Q4.20"), fx, QFormat.parse("Q4.20"), "half_even",
                    "saturate").at_runtime()
    n, _ = run(kp2, "round_int", q.tolist(), [0] * len(wx))
    assert np.array_equal(n / 2**20, np.rint(xs / box))
    assert np.all(np.abs(xs - box * n / 2**20) <= box / 2)


# -------------------------------------------------------- contexts and bit identity --
TYPED = (QFormat.parse("Q6.36"), QFormat.parse("UQ-3.40"), QFormat.parse("Q2.40"))


@pytest.mark.heavy
def test_typed_formats_equal_run_time_formats(rnd="stochastic", ovf="wrap"):
    rng = np.random.default_rng(5)
    fx, fy, _ = TYPED
    wx = rng.integers(fx.min_raw, fx.max_raw, 300)
    wx[:5] = [0, -1, 1, fx.min_raw, fx.max_raw]
    wy = rng.integers(fy.min_raw, fy.max_raw, 300)
    wy[:5] = [0, 0, 1, 0, fy.max_raw]
    kp = precision(*TYPED, rnd, ovf)
    for op in OPS:
        a, ca = run(kp, op, wx, wy)
        b, cb = run(kp.at_runtime(), op, wx, wy)
        assert np.array_equal(a, b) and np.array_equal(ca, cb), op
        if op in QUIET_OPS:  # quiet contexts: the same words, a flag where an event was
            out, flags = np.zeros(300, np.int64), np.zeros(300, np.int64)
            quiet_kernel(kp.context(SEED), OP[op], wx, wy, out, flags)
            assert np.array_equal(out, a) and (flags.sum() > 0) == (ca[Z] > 0), op


def float_reference(op, x, y, dt):
    x, y = dt(x), dt(y)
    with np.errstate(all="ignore"):
        return {"div": lambda: x / y, "recip": lambda: dt(1) / x, "sqrt": lambda: np.sqrt(x),
                "rsqrt": lambda: dt(1) / np.sqrt(x), "floor": lambda: np.floor(x),
                "round_int": lambda: np.rint(x), "abs": lambda: np.abs(x),
                "minimum": lambda: np.minimum(x, y), "maximum": lambda: np.maximum(x, y),
                "select": lambda: np.where(x < y, x, y), "exp": lambda: np.exp(x),
                "cos_turns": lambda: np.cos(dt(2 * np.pi) * (x - np.rint(x))),
                "sin_turns": lambda: np.sin(dt(2 * np.pi) * (x - np.rint(x))),
                "cos": lambda: np.cos(x), "sin": lambda: np.sin(x)}[op]()


@pytest.mark.parametrize("dt", [np.float64, np.float32])
def test_float_contexts_compute_in_their_type(dt):
    rng = np.random.default_rng(1)
    x = rng.uniform(-4, 4, 200)
    y = rng.uniform(-4, 4, 200)
    x[:4], y[:4] = [2.5, -2.5, 0.0, 1.0], [0.0, 1.5, 0.0, 1.0]
    ctx = dt(0)
    for op in OPS:
        out = np.zeros(200, dt)
        ops_kernel(ctx, OP[op], x.astype(dt), y.astype(dt), out)
        want = float_reference(op, x, y, dt)
        assert want.dtype == dt
        if op in ("exp", "cos_turns", "sin_turns", "cos", "sin"):  # libm vs numpy: 2 ulp
            np.testing.assert_array_max_ulp(out, want, maxulp=2)
            if dt == np.float32:  # really float32: differs from the float64 values rounded
                assert not np.array_equal(out, float_reference(op, x, y, np.float64)
                                          .astype(np.float32))
        else:
            assert np.array_equal(out, want, equal_nan=True), op


def test_run_time_float64_and_profiling_contexts():
    rng = np.random.default_rng(2)
    x, y = rng.uniform(0.1, 3, 100), rng.uniform(0.1, 3, 100)
    kp = KernelPrecision(SPEC, "float64", (), (), ())
    for op in OPS:
        typed = np.zeros(100)
        ops_kernel(np.float64(0), OP[op], x, y, typed)
        rt, _ = run(kp.at_runtime(), op, x.view(np.int64), y.view(np.int64))
        assert np.array_equal(rt.view(np.float64), typed), op
        prof = kp.profiling()
        ctx = prof.context()
        ops_kernel(ctx, OP[op], x.view(np.int64), y.view(np.int64), np.zeros(100, np.int64))
        lo, hi, _, _ = prof.profile(ctx)["z"]
        seen = np.concatenate([x, y]) if op == "select" else typed  # (select: both converts)
        assert (lo, hi) == (seen.min(), seen.max()), op
        # each operation counted once per element (select, a multiplexer: its compare and
        # conversions only)
        name, binary = {"abs": "abs_"}.get(op, op), op in ("div", "minimum", "maximum")
        want = ([{"variable": "x", "op": "less", "count": 100, "a": "x", "b": "y"},
                 {"variable": "z", "op": "convert", "count": 200, "a": "", "b": ""}]
                if op == "select" else
                [{"variable": "z", "op": name, "count": 100, "a": "x",
                  "b": "y" if binary else ""}])
        assert prof.counts(ctx) == want, op



def test_a_typed_fixed_context_is_typed_by_its_table():
    """A typed fixed context gets the numba type its format table built once (no typing of
    the tuple and its arrays at every call), the same type numba gives the plain tuple, and
    runs as one."""
    kp = precision(QFormat(True, 16, 8), QFormat(True, 16, 8), QFormat(True, 20, 10),
                   "half_even", "saturate")
    ctx = kp.context(SEED)
    assert numba.typeof(ctx) is ctx[0].context_type
    assert numba.typeof(ctx) == numba.typeof(tuple(ctx))
    out = np.zeros(3, np.int64)
    _maximum_kernel(tuple(ctx), np.array([1, 2, 3]), np.array([4, 5, 6]), out)
    again = np.zeros(3, np.int64)
    _maximum_kernel(ctx, np.array([1, 2, 3]), np.array([4, 5, 6]), again)
    assert np.array_equal(out, again) and out.any()


@njit
def _maximum_kernel(ctx, xs, ys, out):
    """One operation (the full ``ops_kernel`` compiles every operation for a new type)."""
    e = at(chunk(ctx, 0), 0)
    for i in range(xs.size):
        out[i] = store(e, maximum(e, load(e, xs[i], X), load(e, ys[i], Y), Z))

# ---------------------------------------------------------------- error bounds --
def exact_exp(x: Fraction) -> Decimal:
    with localcontext() as c:
        c.prec = 50
        return (Decimal(x.numerator) / Decimal(x.denominator)).exp()


def to_dec(v: Fraction) -> Decimal:
    with localcontext() as c:
        c.prec = 50
        return Decimal(v.numerator) / Decimal(v.denominator)


def exact_trig(op, x: Fraction) -> Decimal:
    """cos or sin of x in turns (op *_turns) or radians, to 45 digits."""
    with localcontext() as c:
        c.prec = 50
        two_pi = 2 * T._PI
        if op.endswith("turns"):
            theta = two_pi * to_dec(x - round(x))
        else:
            theta = to_dec(x)
            theta -= two_pi * (theta / two_pi).to_integral_value()
        s, co = T.decimal_sin_cos(theta, 45)
        return s if op.startswith("sin") else co


@settings(max_examples=30)
@given(fx=st.sampled_from(["Q6.36", "Q4.58", "Q10.20", "UQ3.60"]),
       fz=st.sampled_from(["UQ20.44", "UQ12.40", "UQ-2.40", "UQ1.63"]), rnd=rounding_modes)
def test_exp_error_bound(fx, fz, rnd):
    fx, fz = QFormat.parse(fx), QFormat.parse(fz)
    rng = np.random.default_rng(hash((fx, fz, rnd)) % 2**32)
    wx = rng.integers(fx.min_raw, fx.max_raw, 200, endpoint=True)
    kp = precision(fx, fx, fz, rnd, "saturate").at_runtime()
    got, _ = run(kp, "exp", wx, wx)
    worst = 0.0
    for w, r in zip(wx.tolist(), got.tolist()):
        x = R.value(w, fx)
        want = exact_exp(x)
        if want >= Decimal(fz.max):
            continue  # overflowing results are not covered
        rel, q = T.exp_bound(float(x), fz, rnd)
        err = abs(to_dec(R.value(r, fz)) - want)
        bound = want * Decimal(float(rel)) + Decimal(q)
        assert err <= bound, (fx, fz, rnd, x)
        worst = max(worst, float((err - Decimal(q)) / want))
    assert worst <= float(T.exp_bound(float(fx.max), fz, rnd)[0])


@settings(max_examples=15, deadline=None)  # a compilation per example
@given(fx=qformats(max_word=62), fo=qformats(), rnd=rounding_modes, ovf=overflow_modes,
       data=st.data(), rbits=st.integers(0, 2**64 - 1))
@pytest.mark.heavy
def test_exp_on_machine_words_equals_the_general_exp(fx, fo, rnd, ovf, data, rbits):
    """The LUT exponential of formats compiled in (inputs of at most 62 bits with a
    fractional bit) on machine words: the words and events of the 192-bit one."""
    out = (fo.signed, fo.word_bits, fo.frac_bits, rounding_code(rnd), overflow_code(ovf))
    op = T.exp_narrow(fx.signed, fx.word_bits, fx.frac_bits, *out)
    assert (op is None) == (fx.frac_bits < 1)
    if op is None:
        return
    for _ in range(40):
        ra = np.int64(data.draw(raw_words(fx)))
        got = op(ra, np.uint64(rbits))
        want = _exp_general(ra, fx.signed, fx.word_bits, fx.frac_bits, *out, np.uint64(rbits))
        assert (int(got[0]), int(got[1])) == (int(want[0]), int(want[1])), ra


_exp_general = njit(lambda *args: T.exp_raw(*args))


def test_exp_relative_error_of_the_lut_itself_is_below_the_static_bound():
    """With a 64-bit result format the rounding into v is 2**-64 of a value in [1, 2):
    the LUT's own relative error shows, and stays below EXP_REL."""
    fx, fz = QFormat.parse("Q1.62"), QFormat.parse("UQ1.63")
    wx = np.linspace(0, 0.69 * 2.0**62, 400).astype(np.int64)  # x in [0, 0.69]: e**x < 2
    got, _ = run(precision(fx, fx, fz, "half_even", "saturate").at_runtime(), "exp", wx, wx)
    rel = [abs(to_dec(R.value(r, fz)) / exact_exp(R.value(w, fx)) - 1)
           for w, r in zip(wx.tolist(), got.tolist())]
    assert 2.0**-66 < float(max(rel)) < T.EXP_STATIC + 2.0**-64


@pytest.mark.parametrize("op", ["cos_turns", "sin_turns", "cos", "sin"])
def test_trig_error_bound(op):
    fx = QFormat.parse("Q8.54") if op.endswith("turns") else QFormat.parse("Q5.58")
    fz = QFormat.parse("Q1.62")
    rng = np.random.default_rng(3)
    wx = rng.integers(fx.min_raw, fx.max_raw, 400, endpoint=True)
    wx[:8] = [0, 1, -1, 1 << 52, 1 << 53, 3 << 52, fx.max_raw, fx.min_raw]
    for rnd in ("half_even", "floor"):
        got, counts = run(precision(fx, fx, fz, rnd, "saturate").at_runtime(), op, wx, wx)
        q = fz.resolution * (0.5 if rnd == "half_even" else 1.0)
        worst = 0.0
        for w, r in zip(wx.tolist(), got.tolist()):
            x = R.value(w, fx)
            want = exact_trig(op, x)
            bound = T.TRIG_ABS_ERROR + q if op.endswith("turns") else \
                float(T.trig_radians_bound(float(x))) + q
            err = float(abs(to_dec(R.value(r, fz)) - want))
            assert err <= bound, (op, x, err, bound)
            worst = max(worst, err - q)
        assert worst > 2.0**-66  # the bound is not vacuous: errors of its order show


@njit
def _select_two_variables(ctx, xs, ys, out):
    e = at(chunk(ctx, 0), 0)
    x, y = load(e, xs[0], X), load(e, ys[0], Y)
    out[0] = store(e, select(e, less(e, x, y), x, y))


def test_a_selected_value_goes_on_into_further_operations():
    """With formats compiled in (typed contexts, plain and quiet) as at run time: the
    selected value keeps its variable, so another operation takes it."""
    rng = np.random.default_rng(11)
    fx, fy, fz = TYPED
    wx = rng.integers(fx.min_raw, fx.max_raw, 200)
    wy = rng.integers(fy.min_raw, fy.max_raw, 200)
    kp = precision(*TYPED, "half_even", "saturate")
    outs = [np.zeros(200, np.int64) for _ in range(3)]
    ops_kernel(kp.context(SEED), SELECT_ADD, wx, wy, outs[0])
    ops_kernel(kp.at_runtime().context(SEED), SELECT_ADD, wx, wy, outs[1])
    quiet_kernel(kp.context(SEED), SELECT_ADD, wx, wy, outs[2], np.zeros(200, np.int64))
    assert np.array_equal(outs[0], outs[1]) and np.array_equal(outs[0], outs[2])
    want = 2 * np.minimum(wx * 2.0 ** -fx.frac_bits, wy * 2.0 ** -fy.frac_bits)
    got = outs[0] * 2.0 ** -fz.frac_bits
    assert np.max(np.abs(got - np.clip(want, fz.min, fz.max))) <= fz.resolution


def test_select_of_two_variables_is_refused():
    """A typing error with formats compiled in; at run time (ids are run-time integers
    there) an error as the kernel runs."""
    from numba.core.errors import TypingError
    kp = precision(*TYPED, "half_even", "saturate")
    words = [np.zeros(1, np.int64) for _ in range(3)]
    with pytest.raises(TypingError, match="same kernel variable"):
        _select_two_variables(kp.context(), *words)
    with pytest.raises(ValueError, match="same kernel variable"):
        _select_two_variables(kp.at_runtime().context(), *words)
