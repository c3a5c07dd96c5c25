"""One-source kernels at floating-point formats (the run-time format context): every
operation's result is its operands' exact result rounded once into the output variable's
format (bit-identical to fixedqmc.numerics.float_ops, itself tested against the exact
reference), mixed plans, exact conversion of fixed words, events per variable, float32 and
float64 reproduced bit for bit, thread-count independence and the spec errors."""

import math
from dataclasses import replace
from fractions import Fraction

import numba
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from numba import njit

from fixedqmc.errors import PrecisionSpecError
from fixedqmc.numerics import float_format as FF
from fixedqmc.numerics import float_ops as FO
from fixedqmc.numerics import kernel_float as KF
from fixedqmc.numerics.kernel import (KernelSpec, Variable, acc_add, acc_value, acc_zero, add,
                                      at, chunk, chunk_bounds, convert, load, n_chunks, store)
from fixedqmc.numerics.kernel_ops import abs_, div, exp, floor, minimum, recip, rsqrt, sqrt
from fixedqmc.numerics.overflow import OverflowLog
from fixedqmc.numerics.policy import parse_precision
from fixedqmc.numerics.polynomial import QUADRATIC, evaluate_quadratic, quadratic_kernel
from strategies import float_format_values, float_formats

SEED = 11
RNG = np.random.default_rng(7)
N = 400
COEFFS = [RNG.uniform(-2, 2, N) * 2.0 ** RNG.integers(-12, 4, N) for _ in range(3)]
COORD = RNG.uniform(0, 1, N)


def chain(fmts, rounding, seed, a, b, c, u):
    """a + u (b + u c) by the array operations of float_ops, each rounded once into the
    format of its variable (``fmts``: variable name -> FloatFormat), with the kernel's
    random bits (seed, element index, variable id)."""
    var = {name: i for i, name in enumerate(QUADRATIC.names)}

    def rnd(x, name):
        return FF.round_to_format(x, fmts[name], rounding, seed, var[name])

    def op(f, x, y, name):
        return f(x, y, fmts[name], rounding, seed, var[name])

    a, b, c, u = rnd(a, "a"), rnd(b, "b"), rnd(c, "c"), rnd(u, "u")
    uc = op(FO.mul, u, c, "uc")
    return op(FO.add, a, op(FO.mul, u, op(FO.add, b, uc, "buc"), "ubuc"), "y")


def same_bits(x, y):
    return np.array_equal(np.asarray(x, np.float64).view(np.int64),
                          np.asarray(y, np.float64).view(np.int64))


@pytest.mark.heavy
@settings(max_examples=40, deadline=None)
@given(float_formats(), st.sampled_from(FF.ROUNDINGS), st.integers(0, 2**63))
def test_quadratic_kernel_rounds_every_operation_once(fmt, rounding, seed):
    spec = FF.FloatFormat(fmt.exp_bits, fmt.man_bits, fmt.subnormals, fmt.overflow, fmt.fn,
                          rounding).spec
    got = evaluate_quadratic(*COEFFS, COORD, spec, seed=seed)
    want = chain(dict.fromkeys(QUADRATIC.names, FF.parse_float_format(spec)), rounding, seed,
                 *COEFFS, COORD)
    assert same_bits(got.values, want)


@pytest.mark.heavy
@pytest.mark.parametrize("spec", ["bfloat16", "float:e6m9:stochastic", "fp8e4m3",
                                  "float:e3m2:toward_neg:nosubnormals"])
def test_float_format_context_equals_the_general_runtime_context(spec):
    """A precision of float formats only runs in the float-format context (float64
    values, inline fast paths); the general run-time context gives the same bits and
    events."""
    kp = QUADRATIC.resolve(spec)
    assert kp.float_only and kp.dtype == np.float64
    results = []
    for p in (kp, replace(kp, float_context=False)):
        ins = [p.encode(n, x, SEED) for n, x in zip("abcu", (*COEFFS, COORD))]
        out = np.zeros(N, p.dtype)
        ctx = p.context(SEED)
        quadratic_kernel(ctx, *ins, out)
        results.append((p.decode("y", out), ctx[1].sum(axis=0)))
    assert same_bits(results[0][0], results[1][0])
    assert np.array_equal(results[0][1], results[1][1])


@pytest.mark.heavy
def test_mixed_plan_rounds_each_variable_into_its_own_format():
    plan = "quadratic=bfloat16:toward_zero,quadratic.y=float32,quadratic.buc=fp8e5m2"
    got = evaluate_quadratic(*COEFFS, COORD, plan, seed=SEED)
    fmts = dict.fromkeys(QUADRATIC.names, FF.parse_float_format("bfloat16:toward_zero"))
    fmts["y"], fmts["buc"] = FF.NAMED_FORMATS["float32"], FF.NAMED_FORMATS["fp8e5m2"]
    # every variable rounds with its own format's mode: y and buc to nearest even
    var = {name: i for i, name in enumerate(QUADRATIC.names)}
    a, b, c, u = (FF.round_to_format(x, fmts[n], None, SEED, var[n])
                  for x, n in zip((*COEFFS, COORD), "abcu"))
    uc = FO.mul(u, c, fmts["uc"])
    buc = FO.add(b, uc, fmts["buc"])
    y = FO.add(a, FO.mul(u, buc, fmts["ubuc"]), fmts["y"])
    assert same_bits(got.values, y)
    kp = QUADRATIC.resolve(plan)  # an emulated float32 is named by its spec
    assert (kp.format_name("y"), kp.format_name("buc")) == (
        "float:e8m23:nearest_even:subnormals,inf", "fp8e5m2")


def test_float32_and_float64_as_formats_equal_the_machine_kernels():
    for emulated, native in (("float:e8m23", "float32"), ("float:e11m52", "float64")):
        got = evaluate_quadratic(*COEFFS, COORD, emulated)
        want = evaluate_quadratic(*COEFFS, COORD, native)
        assert same_bits(got.values, want.values), emulated
    # a float64 variable in a float-format kernel: the machine's float64 add
    fmts = dict.fromkeys(QUADRATIC.names, FF.NAMED_FORMATS["bfloat16"])
    bf = {n: FF.round_to_format(x, fmts[n]) for x, n in zip((*COEFFS, COORD), "abcu")}
    ubuc = FO.mul(bf["u"], FO.add(bf["b"], FO.mul(bf["u"], bf["c"], fmts["uc"]),
                                  fmts["buc"]), fmts["ubuc"])
    got = evaluate_quadratic(*COEFFS, COORD, "quadratic=bfloat16,quadratic.y=float64")
    assert same_bits(got.values, bf["a"] + ubuc)


@pytest.mark.heavy
@pytest.mark.parametrize("op", ["div", "recip", "sqrt"])
@pytest.mark.parametrize("spec", ["float:e5m6", "float:e3m4:toward_neg:nosubnormals",
                                  "float:e8m7:stochastic", "fp8e4m3", "float:e11m40:odd"])
def test_division_and_roots_are_rounded_once(op, spec):
    x = RNG.uniform(-3, 3, 300) * 2.0 ** RNG.integers(-30, 30, 300)
    y = RNG.uniform(-3, 3, 300) * 2.0 ** RNG.integers(-30, 30, 300)
    if op == "sqrt":
        x = np.abs(x)
    x[:3], y[:3] = (0.0, -0.0, 1.0), (0.0, 1.0, 0.0)
    out, kp, ctx = run_ops(op, spec, x, y, runtime_too=spec.startswith("float:e3m4"))
    fmt = kp.formats[2]
    if op == "recip":
        want = FO.div(np.ones_like(x), x, fmt, fmt.rounding, SEED, 2)
    elif op == "sqrt":
        want = FO.sqrt(x, fmt, fmt.rounding, SEED, 2)
    else:
        want = FO.div(x, y, fmt, fmt.rounding, SEED, 2)
    assert same_bits(out.view(np.float64), want)


SPEC = KernelSpec("ops", (Variable("x", -1, 1), Variable("y", -1, 1), Variable("z", -1, 1)))
OPS = ("div", "recip", "sqrt", "rsqrt", "exp", "minimum", "abs", "floor", "add")


@njit
def ops_kernel(ctx, op, xs, ys, out):
    """out[i] = OPS[op](x[i], y[i]) into z (a few operations of each kind: every context
    compiles every one, so the list is short)."""
    n = xs.size
    for k in range(n_chunks(ctx, n)):
        c = chunk(ctx, k)
        lo, hi = chunk_bounds(ctx, n, k)
        for i in range(lo, hi):
            e = at(c, i)
            x, y = load(e, xs[i], 0), load(e, ys[i], 1)
            if op == 0:
                z = div(e, x, y, 2)
            elif op == 1:
                z = recip(e, x, 2)
            elif op == 2:
                z = sqrt(e, x, 2)
            elif op == 3:
                z = rsqrt(e, x, 2)
            elif op == 4:
                z = exp(e, x, 2)
            elif op == 5:
                z = minimum(e, x, y, 2)
            elif op == 6:
                z = abs_(e, x, 2)
            elif op == 7:
                z = floor(e, x, 2)
            else:
                z = add(e, x, y, 2)
            out[i] = store(e, z)


def run_ops(op, spec, x, y, runtime_too=False):
    """``ops_kernel`` with x, y in float64 and the output z in ``spec``, in the float-format
    context; ``runtime_too``: the same bits and events in the general run-time context."""
    kp = SPEC.resolve(f"ops=float64,ops.z={spec}")
    runs = []
    for p in (kp, replace(kp, float_context=False))[:1 + runtime_too]:
        ctx = p.context(SEED)
        out = np.zeros(len(x), p.dtype)
        ops_kernel(ctx, OPS.index(op), p.encode("x", x), p.encode("y", y), out)
        runs.append((out.view(np.int64), ctx))
    out, ctx = runs[0]
    for out_rt, ctx_rt in runs[1:]:
        assert np.array_equal(out, out_rt) and np.array_equal(ctx[1], ctx_rt[1])
    return out, kp, ctx


short_formats = float_formats().filter(lambda f: f.man_bits + 1 <= KF.SHORT_PRECISION
                                       and f.subnormals)
OPERATIONS = {"add": FO.add, "div": FO.div, "sqrt": lambda x, y, *a: FO.sqrt(x, *a)}


@settings(max_examples=60, deadline=None)
@given(st.data())
def test_short_formats_round_sums_quotients_and_roots_once(data):
    """Nearest even into a short format (p <= 25 bits, subnormals): the float64 sum,
    quotient or root of p-bit operands, cast, is the single rounding of the exact result
    (the float-format context's innocuous double rounding), and operands that are not p-bit
    numbers (a wider input format) take the exact path: the same bits as float_ops."""
    out_fmt = data.draw(short_formats, label="output format")
    in_fmt = data.draw(st.one_of(st.just(out_fmt), float_formats()), label="input format")
    op = data.draw(st.sampled_from(sorted(OPERATIONS)), label="op")
    grid = data.draw(st.sampled_from([out_fmt, in_fmt]), label="values on the grid of")
    values = st.lists(float_format_values(grid), min_size=8, max_size=8)
    x, y = np.array(data.draw(values)), np.array(data.draw(values))
    if op == "sqrt":
        x = np.abs(x)
    kp = SPEC.resolve(f"ops={in_fmt.spec},ops.z={out_fmt.spec}")
    assert kp.float_only
    xs, ys = kp.encode("x", x, SEED), kp.encode("y", y, SEED)
    out = np.zeros(len(x))
    ops_kernel(kp.context(SEED), OPS.index(op), xs, ys, out)
    with np.errstate(all="ignore"):
        want = OPERATIONS[op](xs, ys, out_fmt, "nearest_even", SEED, 2)
    assert same_bits(out, want), (xs, ys, out, want)


@pytest.mark.parametrize("spec", ["bfloat16", "float16", "fp8e4m3"])
def test_operands_wider_than_a_short_format_are_not_double_rounded(spec):
    """A float64 operand on a midpoint of the short format plus one far below its last bit:
    the float64 sum is the midpoint itself (nearest even would round it to the even
    neighbour), the exact sum lies beyond it; the kernel gives the exact sum's rounding."""
    fmt = FF.parse_float_format(spec)
    mid = 1.0 + 2.0 ** -(fmt.man_bits + 1)  # halfway between 1 and its successor
    x = np.array([mid, mid, -mid, 2 * mid])
    y = np.array([2.0 ** -60, -(2.0 ** -60), -(2.0 ** -60), 2.0 ** -59])
    assert np.array_equal(x + y, x)  # the float64 sum is the midpoint
    kp = SPEC.resolve(f"ops=float64,ops.z={spec}")
    out = np.zeros(len(x))
    ops_kernel(kp.context(SEED), OPS.index("add"), x, y, out)
    up = 1.0 + 2.0 ** -fmt.man_bits
    assert same_bits(out, [up, 1.0, -up, 2 * up])


def ulp(x, fmt):
    """The spacing of the format at |x| (subnormal spacing below the normal range)."""
    e = max(math.frexp(abs(x))[1] - 1, fmt.emin) if x else fmt.emin
    return math.ldexp(1.0, e - fmt.man_bits)


@pytest.mark.parametrize("op, f", [("exp", np.exp), ("rsqrt", lambda x: 1 / np.sqrt(x))])
@pytest.mark.parametrize("spec", ["bfloat16", "float:e6m9:toward_zero", "float16:stochastic"])
def test_transcendentals_within_one_format_ulp(op, f, spec):
    """exp and rsqrt (as cos and sin): the float64 operation, then one rounding into the format:
    within one ulp of the format (plus the float64 operation's few ulp) in every mode."""
    x = RNG.uniform(0.01 if op == "rsqrt" else -6, 6, 400)
    out, kp, _ = run_ops(op, spec, x, x)
    fmt, got = kp.formats[2], out.view(np.float64)
    exact = f(x)
    for g, w in zip(got, exact):
        assert abs(g - w) <= ulp(w, fmt) + 4 * np.spacing(abs(w)), (op, g, w)


@pytest.mark.parametrize("op, f", [("minimum", np.minimum), ("abs", lambda x, y: np.abs(x)),
                                   ("floor", lambda x, y: np.floor(x))])
def test_exact_operations_round_once(op, f):
    x, y = RNG.uniform(-300, 300, 200), RNG.uniform(-300, 300, 200)
    out, kp, _ = run_ops(op, "float:e5m3:toward_pos", x, y)
    assert same_bits(out.view(np.float64),
                     FF.round_to_format(f(x, y), kp.formats[2], "toward_pos"))


FIXED_TO_FLOAT = KernelSpec("conv", (Variable("w", -1, 1), Variable("f", -1, 1)))


@njit
def convert_kernel(ctx, words, out):
    n = words.size
    for k in range(n_chunks(ctx, n)):
        c = chunk(ctx, k)
        lo, hi = chunk_bounds(ctx, n, k)
        for i in range(lo, hi):
            e = at(c, i)
            out[i] = store(e, convert(e, load(e, words[i], 0), e, 1))


@settings(max_examples=30, deadline=None)
@given(st.lists(st.integers(-2**63, 2**63 - 1), min_size=1, max_size=20),
       st.sampled_from(["nearest_even", "toward_pos", "odd"]))
def test_fixed_words_convert_exactly(words, rounding):
    """A 64-bit fixed word into a float format is rounded once from its exact value (a
    float64 in between would round twice)."""
    spec = f"conv=fixed:Q0.63,conv.f=float:e8m30:{rounding}"
    kp = FIXED_TO_FLOAT.resolve(spec)
    ctx = kp.context(0)
    out = np.zeros(len(words), np.int64)
    convert_kernel(ctx, np.array(words, np.int64), out)
    fmt = kp.formats[1]
    for w, got in zip(words, out.view(np.float64)):
        assert got == FF.reference_round(Fraction(w, 2**63), fmt, rounding)


SUM = KernelSpec("sum", (Variable("x", -1, 1), Variable("s", -100, 100)))


@njit
def row_sums(ctx, x, out):
    n = x.shape[0]
    for k in range(n_chunks(ctx, n)):
        c = chunk(ctx, k)
        lo, hi = chunk_bounds(ctx, n, k)
        for i in range(lo, hi):
            e = at(c, i)
            acc = acc_zero(e, 1)
            for j in range(x.shape[1]):
                acc = acc_add(e, acc, load(e, x[i, j], 0), 1)
            out[i] = store(e, acc_value(e, acc, 1))


def test_float_format_sums_round_every_partial_sum():
    """A float-format accumulator: each term rounded into the sum's format, then each
    partial sum rounded, left to right (as a float accumulator does)."""
    x = RNG.uniform(-1, 1, (50, 30))
    kp = SUM.resolve("sum=float64,sum.s=bfloat16")
    ctx = kp.context(0)
    out = np.zeros(50, kp.dtype)
    row_sums(ctx, kp.encode("x", x), out)
    fmt = FF.NAMED_FORMATS["bfloat16"]
    want = np.zeros(50)
    for j in range(30):
        want = FO.add(want, FF.round_to_format(x[:, j], fmt), fmt)
    assert same_bits(out.view(np.float64), want)


def test_events_are_counted_per_variable_and_kind():
    """Overflow (to inf or saturated), underflow to zero, subnormal results and NaNs are
    counted per variable in the overflow log, with the format."""
    a = np.array([1e5, 1.0, 1e-9, 0.0])
    b = np.array([0.0, 1.0, 0.0, 0.0])
    c = np.array([1.0, 2.0**-15, 0.0, 0.0])
    u = np.array([0.5, 2.0**-1, 0.0, 0.0])
    log = OverflowLog()
    evaluate_quadratic(a, b, c, u, "fp8e5m2", log=log)
    df = log.to_frame().set_index("variable")
    assert df.loc["quadratic.a", "events"] == 1  # 1e5 > 57344: inf
    assert df.loc["quadratic.a", "underflow"] == 1  # 1e-9 < half the smallest subnormal
    assert df.loc["quadratic.c", "subnormal"] == 1  # 2**-15 is subnormal in e5m2
    assert df.loc["quadratic.uc", "subnormal"] == 1  # 2**-16
    assert df.loc["quadratic.y", "format"] == "fp8e5m2"
    log = OverflowLog()
    evaluate_quadratic(a, b, c, u, "fp8e4m3:inf", log=log)  # fn without saturation: NaN
    df = log.to_frame().set_index("variable")
    assert df.loc["quadratic.a", "nan"] == 1 and df.loc["quadratic.y", "nan"] == 1
    log = OverflowLog()
    evaluate_quadratic(a, b, c, u, "fp8e4m3", log=log)  # saturates: no NaN
    assert log.to_frame()["nan"].sum() == 0 and log.events["quadratic.a"] == 1


def test_thread_count_does_not_change_bits():
    before = numba.get_num_threads()
    try:
        runs = []
        for threads in (1, before):
            numba.set_num_threads(threads)
            runs.append(evaluate_quadratic(*COEFFS, COORD, "float:e6m9:stochastic",
                                           seed=3).values)
    finally:
        numba.set_num_threads(before)
    assert same_bits(*runs)
    again = evaluate_quadratic(*COEFFS, COORD, "float:e6m9:stochastic", seed=4).values
    assert not same_bits(runs[0], again)  # another seed, other bits


@pytest.mark.parametrize("spec, match", [
    ("float:e12m3", "E=12 out of range; allowed: 2..11"),
    ("float:e5m0", "M=0 out of range; allowed: 1..52"),
    ("bfloat16:nearest", "unknown rounding or option 'nearest'"),
    ("float:e5", "expected e<E>m<M>"),
    ("float8", "unknown precision 'float8'.*bfloat16"),
    ("quadratic.y=bfloat16,quadratic.y=float16", "sets variable quadratic.y twice"),
])
def test_bad_float_specs_name_the_problem(spec, match):
    with pytest.raises(PrecisionSpecError, match=match):
        parse_precision(spec)


def test_spec_strings_round_trip():
    pol = parse_precision("default=fixed:30,quadratic=bfloat16:stochastic,quadratic.y=float32")
    assert parse_precision(str(pol)) == pol
    kp = QUADRATIC.resolve(pol)
    assert kp.runtime and kp.format_name("uc") == "float:e8m7:stochastic:subnormals,inf"
    assert QUADRATIC.resolve("float:e8m7").format_name("uc") == "bfloat16"
