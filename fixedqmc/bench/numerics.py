"""``fixedqmc bench numerics``: the quadratic chain y = a + u (b + u c) four ways.

1. fixedqmc's compiled one-source kernel in fixed point (40-bit words, half_even, saturate);
2. APyTypes array arithmetic with the same formats (exact product/sum, then one cast);
3. fxpmath with the same formats (timed on a subset: it is orders of magnitude slower);
4. the same compiled kernel in float64.

The fixed-point outputs are checked bit for bit against APyTypes (and the agreement with
fxpmath is reported).  Rates are elements per second, best of several repeats.
"""

from __future__ import annotations

import time

import numpy as np
import pandas as pd

from fixedqmc.numerics.polynomial import QUADRATIC, quadratic_kernel

WORD_BITS = 40
SPEC = f"fixed:{WORD_BITS}:half_even:saturate"


def _best_time(fn, repeats: int) -> float:
    fn()  # warm-up (compilation, caches)
    best = float("inf")
    for _ in range(repeats):
        t0 = time.perf_counter()
        fn()
        best = min(best, time.perf_counter() - t0)
    return best


def _inputs(n: int, seed: int):
    rng = np.random.default_rng(seed)
    a, b, c = rng.uniform(-1.0, 1.0, (3, n))
    u = rng.uniform(0.0, 1.0, n)
    return a, b, c, u


def _apytypes_chain(kp, raws):
    """The chain with APyTypes: exact products and sums, one cast per variable."""
    import apytypes as apy

    def arr(raw, fmt):
        # APyTypes words are signed (given as signed integers); an unsigned format UQi.f
        # fits the signed word with one more integer bit
        return apy.APyFixedArray(np.array(raw, np.int64), int_bits=fmt.int_bits + 1,
                                 frac_bits=fmt.frac_bits)

    def cast(x, name):
        f = kp.format_of(name)
        return x.cast(int_bits=f.int_bits + 1, frac_bits=f.frac_bits,
                      quantization=apy.QuantizationMode.TIES_EVEN, overflow=apy.OverflowMode.SAT)

    A, B, C, U = (arr(r, kp.format_of(n)) for r, n in zip(raws, "abcu"))

    def run():
        t = cast(U * C, "uc")
        t = cast(B + t, "buc")
        t = cast(U * t, "ubuc")
        return cast(A + t, "y")

    return run


def _fxpmath_chain(kp, x):
    """The chain with fxpmath on float inputs x = (a, b, c, u)."""
    from fxpmath import Fxp

    def fxp(name, val=None):
        f = kp.format_of(name)
        return Fxp(val, signed=f.signed, n_word=f.word_bits, n_frac=f.frac_bits,
                   rounding="around", overflow="saturate")

    A, B, C, U = (fxp(n, v) for n, v in zip("abcu", x))

    def run():
        t = fxp("uc")
        t.equal(U * C)
        t2 = fxp("buc")
        t2.equal(B + t)
        t3 = fxp("ubuc")
        t3.equal(U * t2)
        y = fxp("y")
        y.equal(A + t3)
        return np.asarray(y.val, dtype=object).ravel()

    return run


def run_benchmark(n: int = 1_000_000, n_fxpmath: int = 20_000, repeats: int = 5,
                  seed: int = 0) -> pd.DataFrame:
    """Time the four implementations; returns one row per method."""
    kp = QUADRATIC.resolve(SPEC)
    x = _inputs(n, seed)
    raws = [kp.encode(name, v) for name, v in zip("abcu", x)]

    out_fx = np.empty(n, np.int64)
    ctx = kp.context(seed)
    t_fixed = _best_time(lambda: quadratic_kernel(ctx, *raws, out_fx), repeats)

    out_f64 = np.empty(n, np.float64)
    t_f64 = _best_time(lambda: quadratic_kernel(np.float64(0.0), *x, out_f64), repeats)

    apy_run = _apytypes_chain(kp, raws)
    t_apy = _best_time(apy_run, max(1, repeats // 2))
    y_fmt = kp.format_of("y")
    mask = np.uint64((1 << (y_fmt.word_bits)) - 1)
    apy_bits = np.asarray(apy_run().to_bits(), dtype=np.uint64)
    ours_bits = out_fx.view(np.uint64) & mask
    apy_identical = bool(np.array_equal(apy_bits & mask, ours_bits))

    m = min(n_fxpmath, n)
    fxp_run = _fxpmath_chain(kp, [v[:m] for v in x])
    t0 = time.perf_counter()
    fxp_vals = fxp_run()
    t_fxp = (time.perf_counter() - t0) * n / m  # scaled to n elements
    fxp_agree = float(np.mean([int(v) == int(w) for v, w in zip(fxp_vals, out_fx[:m])]))

    rows = [
        ("fixedqmc fixed-point kernel", n, t_fixed, ""),
        ("APyTypes arrays", n, t_apy, f"bit-identical: {apy_identical}"),
        ("fxpmath", m, t_fxp, f"timed on {m} elements, scaled; agrees on {fxp_agree:.1%}"),
        ("float64 numba kernel", n, t_f64, ""),
    ]
    df = pd.DataFrame(rows, columns=["method", "elements_timed", "seconds_per_1e6", "note"])
    df["seconds_per_1e6"] = df["seconds_per_1e6"] * 1e6 / n
    df["elements_per_s"] = 1e6 / df["seconds_per_1e6"]
    df["fixedqmc_speedup"] = df["seconds_per_1e6"] / df["seconds_per_1e6"].iloc[0]
    df.attrs.update(apytypes_bit_identical=apy_identical, fxpmath_agreement=fxp_agree,
                    formats={v: str(kp.format_of(v)) for v in QUADRATIC.names}, spec=SPEC)
    return df


def main(n: int = 1_000_000, repeats: int = 5) -> int:
    df = run_benchmark(n=n, repeats=repeats)
    print(f"Quadratic chain a + u(b + u c), {n} elements, precision {SPEC}")
    print("formats: " + ", ".join(f"{k}={v}" for k, v in df.attrs["formats"].items()))
    with pd.option_context("display.width", 140, "display.max_colwidth", 60):
        print(df.to_string(index=False, formatters={
            "seconds_per_1e6": "{:.4g}".format, "elements_per_s": "{:.3e}".format,
            "fixedqmc_speedup": "{:.3g}x".format}))
    t = df.set_index("method")["seconds_per_1e6"]
    fixed = t["fixedqmc fixed-point kernel"]
    print(f"fixed vs APyTypes: {t['APyTypes arrays'] / fixed:.1f}x faster (target >= 20x)")
    print(f"fixed vs fxpmath: {t['fxpmath'] / fixed:.0f}x faster (target >= 1000x)")
    print(f"fixed vs float64: {fixed / t['float64 numba kernel']:.2f}x slower (target <= 4x)")
    print(f"bit-identical to APyTypes: {df.attrs['apytypes_bit_identical']}")
    return 0 if df.attrs["apytypes_bit_identical"] else 1
