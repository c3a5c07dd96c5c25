"""``fixedqmc bench floats``: the quadratic chain y = a + u (b + u c) in emulated
floating-point formats, ours against the Python emulators, on one thread side by side.

Formats: ``bfloat16`` (e8m7) and the custom ``float:e6m9``, round to nearest even, with
subnormals and overflow to infinity (the IEEE defaults, which every peer below has too).
Every variable of the chain is in the format: the four inputs are rounded into it once, and
each of the four operations (``u c``, ``b + u c``, ``u (b + u c)``, ``a + ...``) rounds its
exact result once into it.

Methods, at each format:

1. ours, end to end: :func:`~fixedqmc.numerics.polynomial.evaluate_quadratic` (encode the
   float64 inputs into the format, the compiled kernel in the context that
   :meth:`KernelPrecision.context` builds, formats read at run time, decode; events
   recorded in an overflow log; the context is printed);
2. ours, kernel call only: ``quadratic_kernel(kp.context(), ...)`` on inputs already
   encoded by :meth:`KernelPrecision.encode`;
3. APyTypes ``APyFloatArray`` (same exponent and mantissa bits, IEEE bias, quantization
   TIES_EVEN): end to end (``from_array``, the chain, ``to_numpy``) and the chain alone on
   converted arrays (compared with our kernel call);
4. pychop ``Chop(E, M, rmode=1)`` (numpy backend) and gfloat ``round_ndarray`` (a
   ``FormatInfo`` with the format's E and M), if they import: each float64 operation of the
   chain, then a rounding into the format;
5. ml_dtypes' ``bfloat16`` numpy dtype (bfloat16 only; informative, no target).

and our float32 and float64 kernels (the machine's arithmetic; kernel call and end to end).

``ratio_to_ours`` is a method's time over ours at the same format, like for like (end to end
over our end to end; a chain or kernel call alone over our kernel call): above 1, ours is
faster.  Times are the median (and the best) of ``repeats`` runs after a first call (numba
compilation or loading from its cache, reported separately), the methods interleaved round
by round so that a change of the machine's load hits them alike; a method whose first timed
run takes more than :data:`SLOW_CALL` seconds is timed :data:`SLOW_REPEATS` times at most.
numba runs on one thread (restored afterwards); APyTypes, pychop, gfloat and ml_dtypes are
single-threaded.

Bit identity: every peer's results are compared with ours bit for bit (float64 bit patterns;
APyTypes' own format bit patterns against :func:`~fixedqmc.numerics.float_format.encode` of
ours; NaNs compare equal whatever their payload), on the timed inputs (a, b, c uniform in
[-1, 1], u in [0, 1)) and on :data:`EDGE_N` "edge" inputs (magnitudes log-uniform from a
quarter of the smallest subnormal to the largest finite value, random signs: subnormal
results, underflows and overflows).  Each mismatch is explained where a model reproduces the
peer: double rounding via float64 (a float64 operation, then a cast) or via float32 (a
float32 cast or operation, then a cast), overflow handling (ours gives IEEE +-inf), or
subnormal / underflow handling; anything else is "unexplained" and fails the run (exit 1).

The issue's targets (speed ratios measured in this run, printed with PASS or FAIL):
at least 30x APyTypes' APyFloat arrays, at least 100x pychop and gfloat, within 2x of our
float32 kernel.  Figures are printed, never asserted.

A second part (:mod:`fixedqmc.bench.float_systems`, ``--systems``) times one whole
local-energy evaluation of each seed system at bfloat16 against float32 and float64.
"""

from __future__ import annotations

import time

import numpy as np
import pandas as pd

from fixedqmc.numerics.float_format import encode, parse_float_format, round_to_format
from fixedqmc.numerics.overflow import OverflowLog
from fixedqmc.numerics.polynomial import QUADRATIC, evaluate_quadratic, quadratic_kernel

#: the emulated formats timed: (spec, exponent bits, mantissa bits)
FORMATS = (("bfloat16", 8, 7), ("float:e6m9", 6, 9))
#: the issue's targets: peer time / ours at least this; ours / float32 at most this
TARGET_APYTYPES = 30.0
TARGET_PYCHOP_GFLOAT = 100.0
TARGET_FLOAT32 = 2.0
#: a method whose first timed run takes longer is timed at most SLOW_REPEATS times
SLOW_CALL = 1.0
SLOW_REPEATS = 3
#: elements of the edge inputs (bit identity only, not timed)
EDGE_N = 20_000

END_TO_END = "end to end"
CALL_ONLY = "call only"


# ------------------------------------------------------------------------ inputs --
def chain_inputs(n: int, seed: int = 0):
    """The timed inputs: a, b, c uniform in [-1, 1], u uniform in [0, 1)."""
    rng = np.random.default_rng(seed)
    a, b, c = rng.uniform(-1.0, 1.0, (3, n))
    u = rng.uniform(0.0, 1.0, n)
    return a, b, c, u


def edge_inputs(fmt, n: int, seed: int = 1):
    """Inputs that reach the format's edges: a, b, c with magnitudes log-uniform from a
    quarter of the smallest subnormal to the largest finite value and random signs, u
    uniform in [0, 1)."""
    rng = np.random.default_rng(seed)
    lo, hi = np.log2(fmt.min_subnormal) - 2.0, np.log2(fmt.max_finite)

    def mags():
        return rng.choice([-1.0, 1.0], n) * np.exp2(rng.uniform(lo, hi, n))

    return mags(), mags(), mags(), rng.uniform(0.0, 1.0, n)


# ----------------------------------------------------------------------- methods --
def ours_end_to_end(spec: str, x, seed: int = 0):
    """Our whole call: float64 arrays in, float64 values of y out."""
    log = OverflowLog()
    return lambda: evaluate_quadratic(*x, spec, seed=seed, log=log, runtime=True).values


def context_name(spec: str) -> str:
    """Which kernel context our precision ``spec`` runs in (as :meth:`KernelPrecision.context`
    builds it)."""
    kp = QUADRATIC.resolve(spec)
    if kp.kind != "formats":
        return f"{kp.kind} (the machine's)"
    if getattr(kp, "float_only", False):
        return "the float-format context (float64 values, formats read at run time)"
    return "the run-time-format context"


def ours_kernel_call(spec: str, x, seed: int = 0):
    """The compiled kernel alone on encoded inputs; returns the float64 values of y."""
    kp = QUADRATIC.resolve(spec)
    if kp.kind == "formats":
        kp = kp.at_runtime()
    log = OverflowLog()
    ins = [kp.encode(name, v, seed, log) for name, v in zip("abcu", x)]
    out = np.empty(ins[0].size, kp.dtype)

    def run():
        quadratic_kernel(kp.context(seed), *ins, out)
        return out

    return run, lambda y: kp.decode("y", y)


def apytypes_chain(E: int, M: int, x):
    """APyTypes (``APyFloatArray``): (end to end, chain only) as functions returning the
    result array; arithmetic of two arrays of one format stays in it, rounded by the
    float quantization mode (TIES_EVEN)."""
    import apytypes as apy

    def convert():
        return [apy.APyFloatArray.from_array(v, E, M) for v in x]

    A, B, C, U = convert()

    def chain(A, B, C, U):
        with apy.APyFloatQuantizationContext(apy.QuantizationMode.TIES_EVEN):
            return A + U * (B + U * C)

    def end_to_end():
        return chain(*convert()).to_numpy()

    return end_to_end, lambda: chain(A, B, C, U)


def pychop_chain(E: int, M: int, x):
    """pychop: each float64 operation, then ``Chop`` (round to nearest even, subnormals)."""
    from pychop import Chop

    ch = Chop(E, M, rmode=1, subnormal=True)
    a, b, c, u = x

    def run():
        ra, rb, rc, ru = ch(a), ch(b), ch(c), ch(u)
        return np.asarray(ch(ra + ch(ru * ch(rb + ch(ru * rc)))), np.float64)

    return run


def gfloat_format(E: int, M: int):
    """gfloat's description of the IEEE-style format e<E>m<M> (infinities, NaNs in the
    all-ones exponent, subnormals, signed zero)."""
    import gfloat

    return gfloat.FormatInfo(name=f"e{E}m{M}", k=1 + E + M, precision=M + 1,
                             bias=2 ** (E - 1) - 1, is_signed=True,
                             domain=gfloat.Domain.Extended, has_nz=True,
                             num_high_nans=2 ** M - 1, has_subnormals=True,
                             is_twos_complement=False)


def gfloat_chain(E: int, M: int, x):
    """gfloat: each float64 operation, then ``round_ndarray`` (ties to even, no
    saturation)."""
    import gfloat

    fi = gfloat_format(E, M)
    a, b, c, u = x

    def r(v):
        return gfloat.round_ndarray(fi, v, gfloat.RoundMode.TiesToEven, sat=False)

    def run():
        ra, rb, rc, ru = r(a), r(b), r(c), r(u)
        return np.asarray(r(ra + r(ru * r(rb + r(ru * rc)))), np.float64)

    return run


def ml_dtypes_chain(x):
    """ml_dtypes' bfloat16 numpy dtype: ``astype`` of the inputs and bfloat16 array
    arithmetic (each operation computed in float32, then cast)."""
    import ml_dtypes

    bf = ml_dtypes.bfloat16

    def run():
        A, B, C, U = (v.astype(bf) for v in x)
        return (A + U * (B + U * C)).astype(np.float64)

    return run


def peer_status(module: str) -> str | None:
    """None if ``module`` imports, else why not."""
    try:
        __import__(module)
    except Exception as exc:  # noqa: BLE001 - ImportError, or the peer's own dependencies
        return f"{type(exc).__name__}: {exc}"
    return None


# ------------------------------------------------------------------ bit identity --
def same_bits(ours, theirs) -> np.ndarray:
    """Elementwise: the float64 bit patterns agree (any NaN equals any NaN)."""
    o = np.ascontiguousarray(ours, np.float64)
    t = np.ascontiguousarray(theirs, np.float64)
    nan_o, nan_t = np.isnan(o), np.isnan(t)
    return ((o.view(np.uint64) == t.view(np.uint64)) & ~nan_o & ~nan_t) | (nan_o & nan_t)


def same_format_bits(ours, apy_result, fmt) -> np.ndarray:
    """Elementwise: APyTypes' bit patterns equal ours encoded in ``fmt`` (NaN: any
    payload)."""
    theirs = np.asarray(apy_result.to_bits(), np.uint64).ravel()
    mine = encode(ours, fmt).ravel()
    nan = np.isnan(ours).ravel()
    vals = apy_result.to_numpy().ravel()
    return np.where(nan | np.isnan(vals), nan & np.isnan(vals), mine == theirs)


def _chain_model(x, fmt, via=None):
    """The chain with each float64 operation rounded into ``fmt`` afterwards (through
    float32 first if ``via`` is float32): the inputs and the intermediates."""
    def r(v):
        v = np.asarray(v, np.float64)
        if via is not None:
            v = v.astype(via).astype(np.float64)
        return round_to_format(v, fmt)

    a, b, c, u = (r(v) for v in x)
    uc = r(u * c)
    buc = r(b + uc)
    ubuc = r(u * buc)
    return (a, b, c, u, uc, buc, ubuc), r(a + ubuc)


def _kind(v, fmt) -> str:
    if np.isnan(v):
        return "NaN"
    if np.isinf(v):
        return "inf"
    if v == 0:
        return "0"
    if round_to_format(np.array([v]), fmt)[0] != v:
        return "not a format value"
    if abs(v) < fmt.min_normal:
        return "subnormal"
    return "max" if abs(v) == fmt.max_finite else "finite"


def explain_mismatches(x, ours, theirs, fmt, limit: int = 100_000) -> dict:
    """``{reason: count}`` over the elements where ``theirs`` differs from ``ours`` (at
    most ``limit`` of them examined; the rest counted as "not examined").  Reasons: the
    models of double rounding (via float64, via float32) that reproduce the peer, then
    overflow handling, subnormal / underflow handling, else "unexplained"."""
    bad = np.nonzero(~same_bits(ours, theirs))[0]
    out: dict = {}
    if bad.size == 0:
        return out
    idx = bad[:limit]
    if bad.size > limit:
        out["not examined"] = int(bad.size - limit)
    xs = [np.asarray(v, np.float64)[idx] for v in x]
    o, t = np.asarray(ours, np.float64)[idx], np.asarray(theirs, np.float64)[idx]
    with np.errstate(all="ignore"):
        inter64, y64 = _chain_model(xs, fmt)
        _, y32 = _chain_model(xs, fmt, via=np.float32)
        values = np.stack([*inter64, o])
        over = (~np.isfinite(values).all(axis=0) | ~np.isfinite(t)
                | (np.abs(t) > fmt.max_finite))
        mags = np.abs(np.stack([*values, t]))
        tiny = ((mags > 0) & (mags < fmt.min_normal)).any(axis=0) | (o == 0) | (t == 0)
    reasons = np.where(
        same_bits(y64, t), "double rounding via float64 (float64 operation, then a cast)",
        np.where(same_bits(y32, t), "double rounding via float32 (float32 cast or operation, "
                 "then a cast)",
                 np.where(over, "overflow handling", np.where(
                     tiny, "subnormal / underflow handling", "unexplained"))))
    for reason in dict.fromkeys(reasons):
        sel = reasons == reason
        if reason in ("overflow handling", "subnormal / underflow handling"):
            ko = sorted({_kind(v, fmt) for v in o[sel][:200]})
            kt = sorted({_kind(v, fmt) for v in t[sel][:200]})
            reason = f"{reason} (ours {'/'.join(ko)}, theirs {'/'.join(kt)})"
        out[reason] = out.get(reason, 0) + int(sel.sum())
    return out


def describe(explained: dict) -> str:
    """One line of ``explain_mismatches``' result."""
    return "; ".join(f"{n} {why}" for why, n in explained.items()) if explained else ""


# ------------------------------------------------------------------------ timing --
def _first_call(fn):
    """(seconds, result, how) of the first call; ``how`` says whether numba compiled our
    kernel for it, loaded it from its cache, or had it already."""
    sigs = len(quadratic_kernel.signatures)
    hits = sum(quadratic_kernel.stats.cache_hits.values())
    t0 = time.perf_counter()
    result = fn()
    seconds = time.perf_counter() - t0
    if len(quadratic_kernel.signatures) == sigs:
        how = "already compiled in this process"
    elif sum(quadratic_kernel.stats.cache_hits.values()) > hits:
        how = "loaded from numba's cache"
    else:
        how = "compiled"
    return seconds, result, how


def time_interleaved(methods: dict, repeats: int) -> dict:
    """``{key: (median seconds, runs, first-call seconds, how, result, best seconds)}``: a
    first call of each method, then ``repeats`` rounds in which each method runs once (a
    slow method, whose first timed run took over :data:`SLOW_CALL` seconds, in the first
    :data:`SLOW_REPEATS` rounds only)."""
    first = {key: _first_call(fn) for key, fn in methods.items()}
    runs = {key: [] for key in methods}
    for rnd in range(max(1, repeats)):
        for key, fn in methods.items():
            if rnd >= SLOW_REPEATS and runs[key][0] > SLOW_CALL:
                continue
            t0 = time.perf_counter()
            fn()
            runs[key].append(time.perf_counter() - t0)
    return {key: (float(np.median(runs[key])), len(runs[key]), first[key][0], first[key][2],
                  first[key][1], min(runs[key])) for key in methods}


# ------------------------------------------------------------------------- bench --
def run_benchmark(n: int = 1_000_000, repeats: int = 5, seed: int = 0,
                  edge_n: int = EDGE_N, peers=("apytypes", "pychop", "gfloat", "ml_dtypes")
                  ) -> pd.DataFrame:
    """Time every method on one thread; one row per (format, method, what is timed).
    ``df.attrs``: the first-call times of our kernels, the skipped peers and why, and the
    mismatches on the edge inputs."""
    import numba

    threads = numba.get_num_threads()
    numba.set_num_threads(1)
    try:
        return _run(n, repeats, seed, edge_n, tuple(peers))
    finally:
        numba.set_num_threads(threads)


def _peer_methods(peer: str, E: int, M: int, x) -> dict:
    """``{(method, timed): function}`` of a peer at format e<E>m<M>."""
    if peer == "apytypes":
        e2e, chain = apytypes_chain(E, M, x)
        return {("APyTypes APyFloatArray", END_TO_END): e2e,
                ("APyTypes APyFloatArray chain", CALL_ONLY): chain}
    if peer == "pychop":
        return {("pychop Chop", END_TO_END): pychop_chain(E, M, x)}
    if peer == "gfloat":
        return {("gfloat round_ndarray", END_TO_END): gfloat_chain(E, M, x)}
    if peer == "ml_dtypes" and (E, M) == (8, 7):
        return {("ml_dtypes bfloat16", END_TO_END): ml_dtypes_chain(x)}
    return {}


def _run(n, repeats, seed, edge_n, peers):
    x = chain_inputs(n, seed)
    skipped = {p: why for p in peers if (why := peer_status(p)) is not None}
    present = [p for p in peers if p not in skipped]
    methods, decoders = {}, {}
    for spec in ("float32", "float64"):
        methods[(spec, "ours", CALL_ONLY)], _ = ours_kernel_call(spec, x, seed)
        methods[(spec, "ours", END_TO_END)] = ours_end_to_end(spec, x, seed)
    for spec, E, M in FORMATS:
        methods[(spec, "ours", CALL_ONLY)], decoders[spec] = ours_kernel_call(spec, x, seed)
        methods[(spec, "ours", END_TO_END)] = ours_end_to_end(spec, x, seed)
        for peer in present:
            for (method, kind), fn in _peer_methods(peer, E, M, x).items():
                methods[(spec, method, kind)] = fn
    res = time_interleaved(methods, repeats)

    first_calls = {f"our {spec} kernel": res[(spec, "ours", CALL_ONLY)][2:4]
                   for spec in ("float32", "float64", *(f[0] for f in FORMATS))}
    rows, edges = [], {}
    for (spec, method, kind), (t, runs, _, _, result, best) in res.items():
        row = {"format": spec, "method": method, "timed": kind, "time_ms": t * 1e3,
               "best_ms": best * 1e3, "elements_per_s": n / t, "ratio_to_ours": np.nan,
               "bit_identical": "n/a", "mismatches": "", "repeats": runs,
               "how_they_differ": ""}
        rows.append(row)
        if spec in ("float32", "float64"):
            continue
        row["ratio_to_ours"] = t / res[(spec, "ours", kind)][0]
        y_ours = decoders[spec](res[(spec, "ours", CALL_ONLY)][4])
        if method == "ours":
            if kind == END_TO_END:  # our two ways agree, or the bench is wrong
                assert same_bits(y_ours, result).all(), "our kernel call and whole call differ"
            continue
        fmt = parse_float_format(spec)
        if method.startswith("APyTypes") and kind == CALL_ONLY:
            same, values = same_format_bits(y_ours, result, fmt), result.to_numpy()
        else:
            values = result
            same = same_bits(y_ours, values)
        bad = int((~same).sum())
        row.update(bit_identical="yes" if bad == 0 else "no", mismatches=bad,
                   how_they_differ=describe(explain_mismatches(x, y_ours, values, fmt)))
        if kind == END_TO_END:
            edges.setdefault(spec, {})[method] = _edge_mismatches(spec, method, edge_n, seed)
    df = pd.DataFrame(rows)
    df.attrs.update(first_calls=first_calls, skipped=skipped, edges=edges, n=n,
                    edge_n=edge_n, contexts={spec: context_name(spec) for spec, _, _ in FORMATS})
    return df


def _edge_mismatches(spec: str, method: str, edge_n: int, seed: int) -> dict:
    """``explain_mismatches`` of a peer's chain on the edge inputs of a format."""
    fmt = parse_float_format(spec)
    x = edge_inputs(fmt, edge_n, seed + 1)
    ours = evaluate_quadratic(*x, spec, seed=seed, log=OverflowLog(), runtime=True).values
    peer = {"APyTypes": "apytypes", "pychop": "pychop", "gfloat": "gfloat",
            "ml_dtypes": "ml_dtypes"}[method.split()[0]]
    fn = _peer_methods(peer, fmt.exp_bits, fmt.man_bits, x)[(method, END_TO_END)]
    with np.errstate(all="ignore"):
        theirs = fn()
    return explain_mismatches(x, ours, theirs, fmt)


def targets(df: pd.DataFrame) -> list:
    """``(format, comparison, ratio, target text, passed)`` of the issue's targets."""
    t = {(r.format, r.method, r.timed): r.time_ms for r in df.itertuples()}
    out = []
    for spec, _, _ in FORMATS:
        for (fmt_name, method, kind), ms in t.items():
            if fmt_name != spec or method == "ours":
                continue
            ratio = ms / t[(spec, "ours", kind)]
            mine = "our kernel call" if kind == CALL_ONLY else "ours"
            if method.startswith("APyTypes"):
                out.append((spec, f"{method} ({kind}) / {mine}", ratio,
                            f">= {TARGET_APYTYPES:g}x", ratio >= TARGET_APYTYPES))
            elif method.startswith(("pychop", "gfloat")):
                out.append((spec, f"{method} ({kind}) / {mine}", ratio,
                            f">= {TARGET_PYCHOP_GFLOAT:g}x", ratio >= TARGET_PYCHOP_GFLOAT))
        for kind in (CALL_ONLY, END_TO_END):
            ratio = t[(spec, "ours", kind)] / t[("float32", "ours", kind)]
            out.append((spec, f"ours / our float32 ({kind})", ratio,
                        f"<= {TARGET_FLOAT32:g}x", ratio <= TARGET_FLOAT32))
    return out


def main_floats(n: int = 1_000_000, repeats: int = 5, systems: str | None = None,
                walkers: int | None = None) -> int:
    from fixedqmc.bench import float_systems
    from fixedqmc.bench.machine import load_average, print_machine
    from fixedqmc.input_checks import check_int

    check_int("--n", n)
    check_int("--repeats", repeats)
    names = float_systems.parse_systems(systems)
    walkers = float_systems.WALKERS if walkers is None else walkers
    check_int("--walkers", walkers)
    print_machine()
    print(f"Chain a + u (b + u c) on {n} elements, every variable in the format (nearest "
          "even, subnormals, overflow to inf); numba on 1 thread; methods interleaved, "
          f"{repeats} rounds", flush=True)
    df = run_benchmark(n=n, repeats=repeats)
    for peer, why in df.attrs["skipped"].items():
        print(f"{peer} is not installed: skipping it ({why})")
    for spec, name in df.attrs["contexts"].items():
        print(f"our kernel at {spec} runs in {name}")
    for what, (t, how) in df.attrs["first_calls"].items():
        print(f"first call of {what}: {t:.3g} s ({how}; not in the times below)")
    print("time_ms: median of the timed runs (best_ms: the fastest; elements_per_s and the "
          "ratios from the median); ratio_to_ours: the method's time over ours at the same "
          "format (end to end over our end to end, call only over our kernel call)")
    with pd.option_context("display.width", 250, "display.max_colwidth", 120):
        print(df.drop(columns="how_they_differ").to_string(index=False, na_rep="", formatters={
            "time_ms": "{:.4g}".format, "best_ms": "{:.4g}".format,
            "elements_per_s": "{:.3e}".format,
            "ratio_to_ours": lambda r: "" if np.isnan(r) else f"{r:.3g}x"}))
    unexplained = False
    for r in df[df.how_they_differ != ""].itertuples():
        print(f"{r.format}, {r.method} ({r.timed}) differs from ours: {r.how_they_differ}")
        unexplained |= "unexplained" in r.how_they_differ
    print(f"edge inputs ({df.attrs['edge_n']} elements; a, b, c of magnitudes from a quarter "
          "of the smallest subnormal to the largest finite value), mismatches with ours:")
    for spec, peers in df.attrs["edges"].items():
        for method, why in peers.items():
            count = sum(why.values())
            print(f"  {spec}, {method}: {count}" + (f" ({describe(why)})" if count else ""))
            unexplained |= any("unexplained" in k for k in why)
    print("targets (ratios measured side by side in this run):")
    for spec, what, ratio, target, passed in targets(df):
        print(f"  {spec:<10} {what:<58} {ratio:8.3g}x  (target {target})  "
              f"{'PASS' if passed else 'FAIL'}")
    if names:
        float_systems.print_systems(float_systems.run_systems(names, walkers, repeats))
    print(f"load average at the end: {load_average()}")
    if unexplained:
        print("some mismatches with a peer are unexplained (exit code 1)")
    return 1 if unexplained else 0
