"""``fixedqmc bench tables`` and ``fixedqmc bench lutexp``: evaluation rates of the tables.

``tables``: the compiled two-region table kernel (:mod:`fixedqmc.tables.evaluate`: region
test, bin index, quadratic) on the built-in SAPT2 table (HAQMC layout: 256 + 21 x 64 bins) at
``n`` random s values, half in each region, in float64 and in fixed point with 32- and 40-bit
words (``fixed:32``, ``fixed:40``: each variable's integer bits from the table's ranges).
Two rates per precision: the kernel on encoded inputs (what hardware would do per pair) and
the whole :func:`~fixedqmc.tables.evaluate.evaluate_table` call (encoding s, decoding g and
undoing the rescaling on the host included).  The target line compares the fixed kernel with
100 M evaluations/s.

``lutexp``: the LUT exponential (seed 001, App. B; chunk bits 12, 11, 11, linear residual)
at ``n`` uniform x in [-20, 5] in float64 and float32 and fixed point
(:class:`~fixedqmc.tables.lut_exp.FixedExpSpec` defaults, UQ1.39 tables), all compiled and
parallel, on all ``n`` elements; at this size the fixed path runs the kernels with its formats
compiled in (:mod:`fixedqmc.tables.lut_exp_fixed`).  Two rates, as for the tables: the whole
:meth:`~fixedqmc.tables.lut_exp.LutExp.evaluate` call (``elements_per_s``) and the compiled
kernel on prepared inputs (``kernel_per_s``: x converted to the float type, or rounded to
the x format; :meth:`~fixedqmc.tables.lut_exp.LutExp.kernel_call`).  The target line
compares the fixed kernel with the same 100 M evaluations/s.

Rates are elements per second, best of ``repeats`` timed runs after a warm-up (compilation
excluded).  Figures are printed, never asserted.
"""

from __future__ import annotations

import time

import numpy as np
import pandas as pd

TABLE_PRECISIONS = ("float64", "fixed:32", "fixed:40")
TARGET_RATE = 100e6  # evaluations per second, fixed path
COEF_FORMAT = "Q1.30"  # coefficient words of the benchmark table (HAQMC-like ROM words)
LUT_TABLE_FORMAT = "UQ1.39"


def _best_time(fn, repeats: int) -> float:
    fn()  # warm-up: compilation, caches
    best = float("inf")
    for _ in range(max(1, repeats)):
        t0 = time.perf_counter()
        fn()
        best = min(best, time.perf_counter() - t0)
    return best


def table_inputs(table, n: int, seed: int = 0) -> np.ndarray:
    """n random s values (shuffled), half uniform in region I, half in region II."""
    rng = np.random.default_rng(seed)
    s = np.concatenate([rng.uniform(table.s_min, table.sigma, n // 2),
                        rng.uniform(table.sigma, table.s_max, n - n // 2)])
    rng.shuffle(s)
    return s


def run_tables(n: int = 10_000_000, repeats: int = 5, seed: int = 0) -> pd.DataFrame:
    """Time the table kernel per precision; one row per precision."""
    from fixedqmc.numerics.overflow import OverflowLog
    from fixedqmc.tables.builtin import get_builtin
    from fixedqmc.tables.evaluate import TableEvaluator

    table = get_builtin("sapt2").build(coef_format=COEF_FORMAT)
    s = table_inputs(table, n, seed)
    rows, ref = [], None
    for prec in TABLE_PRECISIONS:
        ev = TableEvaluator(table, prec, seed=seed)
        log = OverflowLog()
        s_in = ev.encode(s, log)
        out = np.empty(n, ev.precision.dtype)
        region = np.empty(n, np.int8)
        t_kernel = _best_time(lambda: ev.run(s_in, out, region), repeats)
        t_call = _best_time(lambda: ev(s, log=log), max(1, repeats // 2))
        f = ev(s, log=OverflowLog()).values
        ref = f if ref is None else ref
        kp = ev.precision
        formats = "" if kp.kind != "formats" else ", ".join(
            f"{v}={kp.format_of(v)}" for v in ("s", "t", "u", "a", "y"))
        rows.append({"precision": prec, "elements": n, "kernel_per_s": n / t_kernel,
                     "call_per_s": n / t_call,
                     "max_abs_diff_K": float(np.max(np.abs(f - ref))), "formats": formats})
    df = pd.DataFrame(rows)
    df.attrs["table"] = table
    return df


def main_tables(n: int = 10_000_000, repeats: int = 5) -> int:
    df = run_tables(n=n, repeats=repeats)
    table = df.attrs["table"]
    print(f"Two-region table evaluation (SAPT2, K): {table.n1} + {table.n_seg} x {table.n_bin} "
          f"bins, {n} random s values (half per region); region test + bin index + "
          "quadratic")
    print("kernel_per_s: compiled kernel on encoded s; call_per_s: evaluate_table with host "
          "encode/decode/unscale; max_abs_diff_K: |f - f_float64|")
    with pd.option_context("display.width", 160, "display.max_colwidth", 70):
        print(df.to_string(index=False, formatters={
            "kernel_per_s": "{:.3e}".format, "call_per_s": "{:.3e}".format,
            "max_abs_diff_K": "{:.2e}".format}))
    for _, row in df[df["precision"] != "float64"].iterrows():
        rate = row["kernel_per_s"]
        print(f"target: fixed path >= {TARGET_RATE / 1e6:.0f} M evaluations/s -- "
              f"{row['precision']}: {rate / 1e6:.1f} M/s measured, "
              f"{rate / TARGET_RATE:.2f}x the target")
    return 0


def run_lutexp(n: int = 1_000_000, repeats: int = 5, seed: int = 0) -> pd.DataFrame:
    """Time the LUT exponential per precision; one row per precision."""
    from fixedqmc.numerics.overflow import OverflowLog
    from fixedqmc.tables.lut_exp import FixedExpSpec, LutExp

    x = np.random.default_rng(seed).uniform(-20.0, 5.0, n)
    spec = FixedExpSpec(table_format=LUT_TABLE_FORMAT)
    rows = []
    for prec, lut in (("float64", LutExp()), ("float32", LutExp()),
                      (spec, LutExp(table_format=LUT_TABLE_FORMAT))):
        run, m = lut.kernel_call(x, prec)
        t_kernel = _best_time(run, repeats)
        t_call = _best_time(lambda lut=lut, prec=prec: lut.evaluate(x, prec, log=OverflowLog()),
                            max(1, repeats // 2))
        fixed = not isinstance(prec, str)
        note = (f"compiled, bit-identical to the Fixed-array operations; {prec}" if fixed
                else "compiled, bit-identical to numpy's operations")
        rows.append({"precision": "fixed" if fixed else prec, "elements": n,
                     "elements_per_s": n / t_call, "kernel_per_s": m / t_kernel, "note": note})
    return pd.DataFrame(rows)


def main_lutexp(n: int = 1_000_000, repeats: int = 5) -> int:
    df = run_lutexp(n=n, repeats=repeats)
    print(f"LUT exponential (chunk bits 12,11,11, linear residual), {n} uniform x in [-20, 5]")
    print("elements_per_s: LutExp.evaluate (x converted on the host or in the kernel); "
          "kernel_per_s: the compiled kernel on x already converted to its type / format")
    width = int(df["note"].str.len().max())
    with pd.option_context("display.width", 200, "display.max_colwidth", 140):
        print(df.to_string(index=False, formatters={
            "elements_per_s": "{:.3e}".format, "kernel_per_s": "{:.3e}".format,
            "note": lambda v: f"{v:<{width}}"}))
    rate = float(df.loc[df["precision"] == "fixed", "kernel_per_s"].iloc[0])
    print(f"target: fixed path >= {TARGET_RATE / 1e6:.0f} M evaluations/s -- fixed: "
          f"{rate / 1e6:.1f} M/s measured, {rate / TARGET_RATE:.2f}x the target")
    return 0
