"""Command-line tools for two-region tables and the LUT exponential.

::

    fixedqmc tables generate --function sapt2 --coef-format Q1.30 --out tables/sapt2
    fixedqmc tables functions      the built-in functions and their defaults
    fixedqmc tables check tables/sapt2 --function sapt2 --tolerance 1e-3
    fixedqmc tables eval tables/sapt2 --s 7.0 9.0 25.0 --precision fixed:32
    fixedqmc lutexp --chunk-bits 12,11,11 --residual linear --x-min -20 --x-max 5

``generate`` builds a table of a built-in function (:mod:`fixedqmc.tables.builtin`) or of
your own vectorised ``f(r)`` named ``module:function``, writes the HAQMC coefficient files
(:mod:`fixedqmc.tables.coeff_files`) and prints the measured error against the function with
its a-priori bound (:func:`~fixedqmc.tables.error_bounds.error_report`), and stores every
bin's bound in ``table.json``.  A ``--coef-format`` that loses the fit (its measured error
exceeds both 10 times the unquantized fit's and 1 % of the region's range of f; see
:mod:`fixedqmc.tables.two_region`) is refused, naming the measured error and the
fractional bits that keep the fit; ``--allow-lossy`` writes such a table with a warning,
and ``check`` then fails it.  ``check`` reads a table folder back and prints the same
report (with ``--function``; an infinite bound or a lost fit fails) or a structural one, in
which adjacent bins must meet within the stored bounds (a damaged coefficient line is named
by file and line) and the stored quantization record must not say the fit is lost;
``eval`` evaluates a table with the compiled kernel (:mod:`fixedqmc.tables.evaluate`);
``lutexp`` prints the measured error and bound of a lookup-table exponential
(:func:`~fixedqmc.tables.lut_exp.lut_exp_error`).

Units: r in angstrom, s = r**2 in angstrom**2 (for ``lj``, r in its own length unit).
Exit status: 0 on success, 1 when a check or tolerance fails, 2 on bad input (printed as
``fixedqmc: error: ...``).
"""

from __future__ import annotations

import argparse
import math
import sys
import warnings

import numpy as np
import pandas as pd

from fixedqmc.errors import FixedQMCError
from fixedqmc.numerics.qformat import QFormat
from fixedqmc.tables.builtin import builtin_names, get_builtin, resolve_function
from fixedqmc.tables.two_region import (DEFAULT_N1, DEFAULT_N_BIN, DEFAULT_N_SEG, SIGMA_RULES,
                                        TRANSFORMS, LossyTableError, LossyTableWarning,
                                        TableError, check_power_of_two, check_segments)

_REPORT_COLUMNS = ["transform", "coef_format", "bins", "s_lo", "s_hi", "max_abs_err",
                   "max_rel_err", "bound_f", "worst_ratio", "within_bound"]
_FORMAT_HINT = "--coef-format {}"


# ------------------------------------------------------------------------- helpers --
def _option(option: str, fn, *args, **kwargs):
    """Call fn; a FixedQMCError is re-raised with the command-line option named first."""
    try:
        return fn(*args, **kwargs)
    except FixedQMCError as err:
        raise type(err)(f"{option}: {err}") from None


def _finite(option: str, value: float | None) -> float | None:
    if value is not None and not math.isfinite(value):
        raise TableError(f"{option} must be a finite number, got {value!r}")
    return value


def _parse_transform(text: str | None):
    if text is None:
        return None
    parts = [p.strip() for p in text.split(",")]
    if len(parts) not in (1, 2) or any(p not in TRANSFORMS for p in parts):
        raise TableError(f"--transform must be one of {', '.join(TRANSFORMS)} or two of them "
                         f"comma-separated for regions I,II (e.g. none,exp); got {text!r}")
    return (parts[0], parts[-1])


def _parse_sigma(text: str | None, in_r: bool):
    """A rule name, or a number in r (angstrom) when in_r else in s; returns sigma in s."""
    if text is None or text in SIGMA_RULES:
        return text
    try:
        value = float(text)
    except ValueError:
        raise TableError(f"--sigma must be one of {', '.join(SIGMA_RULES)} or a number, "
                         f"got {text!r}") from None
    _finite("--sigma", value)
    if in_r and value < 0:
        raise TableError(f"--sigma is a distance r (angstrom) here and must be >= 0, got {text}")
    return value * value if in_r else value


def _parse_format(option: str, text: str | None) -> str | None:
    if text is None:
        return None
    return str(_option(option, QFormat.parse, text))


def _print_frame(df: pd.DataFrame) -> None:
    with pd.option_context("display.width", 160, "display.max_columns", 30):
        print(df.to_string(float_format=lambda x: f"{x:.4g}"))


def _function(name: str):
    """(display name, f, defaults entry or None) for --function."""
    if ":" in name:
        return name, _option("--function", resolve_function, name), None
    entry = _option("--function", get_builtin, name)
    return entry.name, entry.func, entry


# ------------------------------------------------------------------- tables generate --
def _range(args, entry) -> tuple[float, float, bool]:
    """(s_min, s_max, given_in_r) from --r-min/--r-max or --s-min/--s-max, else the
    built-in's default range (in r)."""
    for opt in ("r_min", "r_max", "s_min", "s_max"):
        _finite(f"--{opt.replace('_', '-')}", getattr(args, opt))
    in_s = args.s_min is not None or args.s_max is not None
    if in_s and (args.r_min is not None or args.r_max is not None):
        raise TableError("give the table range either in r (--r-min/--r-max, angstrom) or in "
                         "s = r^2 (--s-min/--s-max, angstrom^2), not both")
    unit = "s" if in_s else "r"
    names = (f"--{unit}-min", f"--{unit}-max")
    lo, hi = getattr(args, f"{unit}_min"), getattr(args, f"{unit}_max")
    if entry is not None:
        lo = getattr(entry, f"{unit}_min") if lo is None else lo
        hi = getattr(entry, f"{unit}_max") if hi is None else hi
    missing = [n for n, v in zip(names, (lo, hi)) if v is None]
    if missing:
        raise TableError(f"{' and '.join(missing)} needed: a user function has no default "
                         "range (give --r-min/--r-max in angstrom or --s-min/--s-max in "
                         "angstrom^2)")
    if lo < 0:
        raise TableError(f"{names[0]} must be >= 0, got {lo!r}")
    if not lo < hi:
        raise TableError(f"{names[0]} must be < {names[1]}, got {lo!r} and {hi!r}")
    return (lo, hi, False) if in_s else (lo * lo, hi * hi, True)


def cmd_generate(args: argparse.Namespace) -> int:
    from fixedqmc.output_folder import probe_folder, remove_created
    from fixedqmc.tables.coeff_files import read_table, write_table
    from fixedqmc.tables.error_bounds import error_report
    from fixedqmc.tables.two_region import build_table

    name, func, entry = _function(args.function)
    s_min, s_max, in_r = _range(args, entry)
    sigma = _parse_sigma(args.sigma, in_r)
    if sigma is None:
        sigma = entry.sigma if entry is not None else "zero"
    transform = _parse_transform(args.transform)
    if transform is None:
        transform = entry.transform if entry is not None else ("none", "none")
    n1 = _option("--n1", check_power_of_two, "n1", args.n1)
    n_seg = _option("--n-seg", check_segments, args.n_seg)
    n_bin = _option("--n-bin", check_power_of_two, "n_bin", args.n_bin)
    coef_format = _parse_format("--coef-format", args.coef_format)
    if isinstance(sigma, float) and not s_min < sigma < s_max:
        unit = "r (angstrom)" if in_r else "s (angstrom^2)"
        lo, hi = (math.sqrt(s_min), math.sqrt(s_max)) if in_r else (s_min, s_max)
        raise TableError(f"--sigma must lie strictly inside the table range ({lo:g}, {hi:g}) "
                         f"in {unit}, got {args.sigma}")
    created = probe_folder(args.out, "--out folder")
    try:
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always", LossyTableWarning)
            table = build_table(func, s_min, s_max, sigma, n1=n1, n_seg=n_seg, n_bin=n_bin,
                                transform=transform, coef_format=coef_format,
                                name=args.name or name, allow_lossy=args.allow_lossy)
    except LossyTableError as err:
        remove_created(created)
        text = str(err) if err.loss is None else err.loss.describe(
            _FORMAT_HINT, "--allow-lossy to write the table anyway")
        raise TableError(f"--coef-format: {text}") from None
    except FixedQMCError as err:
        remove_created(created)
        text = str(err)
        opt = ("--coef-format" if "coef_format" in text else
               "--sigma" if text.startswith("sigma") else "--function")
        raise type(err)(f"{opt}: {text}") from None
    except BaseException:
        remove_created(created)
        raise
    lossy = []
    for w in caught:  # the lossy-format warning is printed below; any other is passed on
        if not issubclass(w.category, LossyTableWarning):
            warnings.warn_explicit(w.message, w.category, w.filename, w.lineno)
        else:
            lossy.append(str(w.message) if w.message.loss is None else
                         w.message.loss.describe(_FORMAT_HINT, allowed=True))
    folder = write_table(table, args.out, func)
    same = read_table(folder) == table
    print(f"table {table.name!r}: s in [{table.s_min:.6g}, {table.s_max:.6g}] A^2 "
          f"(r in [{math.sqrt(table.s_min):.6g}, {math.sqrt(table.s_max):.6g}] A), "
          f"sigma = {table.sigma:.10g} A^2 (r = {math.sqrt(table.sigma):.10g} A)")
    print(f"layout: n1 = {table.n1}, n_seg = {table.n_seg}, n_bin = {table.n_bin} "
          f"({table.n1} + {table.n2} entries); transform {','.join(table.transform)}; "
          f"coefficients {table.coef_format or 'float64'}"
          + (" -- LOSSY, written because of --allow-lossy" if lossy else ""))
    print(f"written to {folder} (read back bit-identical: {same})")
    print("error against the function (f units), measured and a-priori bound:")
    report = error_report(table, func)
    _print_frame(report[_REPORT_COLUMNS])
    for message in lossy:
        print(f"fixedqmc: WARNING: --allow-lossy: {message}; `fixedqmc tables check` fails "
              "this table", file=sys.stderr)
    if not lossy and not report["within_bound"].all():
        print("WARNING: not every bin is within its a-priori error bound (see within_bound; "
              "an infinite bound_f bounds nothing); `fixedqmc tables check` fails this table")
        return 1
    return 0 if same else 1


# ---------------------------------------------------------------------- tables check --
def cmd_check(args: argparse.Namespace) -> int:
    from fixedqmc.tables.coeff_files import check_table

    func = None if args.function is None else _function(args.function)[1]
    tolerance = _finite("--tolerance", args.tolerance)
    if tolerance is not None and tolerance < 0:
        raise TableError(f"--tolerance must be >= 0, got {tolerance!r}")
    report, ok = check_table(args.folder, func, tolerance)
    if func is not None:
        _print_frame(report[_REPORT_COLUMNS + ["lossy"]])
        what = "every bin within its (finite) error bound, no lost fit" + (
            f" and max_abs_err <= {tolerance:g}" if tolerance is not None else "")
    else:
        _print_frame(report.drop(columns=["worst_junction", "problems"]))
        for region, row in report[report.jumps_over_bound > 0].iterrows():
            print(f"region {region}: {row.jumps_over_bound} junction(s) beyond the stored "
                  f"error bound; worst: {row.worst_junction}")
        if report.bound_checked.all():
            what = "adjacent bins meet within the error bounds stored in table.json"
        elif tolerance is None:
            what = ("only readability and layout were checked (table.json stores no error "
                    "bounds: give --function to check the error, or --tolerance for max_jump)")
        else:
            what = "files readable and consistent (table.json stores no error bounds)"
        if tolerance is not None:
            what += f"; max_jump <= {tolerance:g}"
        if report.coef_format.notna().any():
            what += "; the coefficient format keeps the fit"
    for region, row in report[report.problems != ""].iterrows():
        print(f"region {region}: {row.problems}")
    print(f"check {'passed' if ok else 'FAILED'}: {what}")
    return 0 if ok else 1


# ------------------------------------------------------------------ tables functions --
def cmd_functions(args: argparse.Namespace) -> int:
    from fixedqmc.tables.builtin import defaults_table

    print("built-in table functions (name, unit of f, default r range, sigma rule, "
          "transforms per region):")
    print(defaults_table())
    return 0


# ----------------------------------------------------------------------- tables eval --
def cmd_eval(args: argparse.Namespace) -> int:
    from fixedqmc.numerics.overflow import OverflowLog
    from fixedqmc.tables.coeff_files import read_table
    from fixedqmc.tables.evaluate import evaluate_table

    if (args.s is None) == (args.r is None):
        raise TableError("give the points as --s VALUES (s = r^2, angstrom^2) or --r VALUES "
                         "(angstrom), exactly one of them")
    values = np.asarray(args.s if args.s is not None else args.r, np.float64)
    opt = "--s" if args.s is not None else "--r"
    if not np.isfinite(values).all() or (opt == "--r" and (values < 0).any()):
        raise TableError(f"{opt} values must be finite{' and >= 0' if opt == '--r' else ''}, "
                         f"got {values.tolist()}")
    s = values if opt == "--s" else values * values
    table = read_table(args.folder)
    log = OverflowLog()
    res = _option("--precision", evaluate_table, table, s, args.precision, log=log)
    df = pd.DataFrame({"s": s, "r": np.sqrt(s), "f": res.values})
    if res.fixed is not None:
        df["g"] = res.fixed.to_float()
        df["g_word"] = [hex(w) for w in res.fixed.bits().tolist()]
    print(f"table {table.name!r} at precision {args.precision} "
          f"(s in [{table.s_min:.6g}, {table.s_max:.6g}], clamped outside)")
    with pd.option_context("display.width", 160, "display.max_columns", 30):
        print(df.to_string(index=False, float_format=lambda x: f"{x:.10g}"))
    events = {k: v for k, v in res.events.items() if v}
    if res.fixed is not None:
        print("overflow events: " + (", ".join(f"{k}={v}" for k, v in events.items())
                                     if events else "none"))
    return 0


# --------------------------------------------------------------------------- lutexp --
def _chunk_bits(text: str) -> tuple:
    try:
        bits = tuple(int(p) for p in text.split(","))
    except ValueError:
        raise FixedQMCError(f"--chunk-bits must be comma-separated integers, e.g. 12,11,11; "
                            f"got {text!r}") from None
    return bits


def cmd_lutexp(args: argparse.Namespace) -> int:
    from fixedqmc.tables.lut_exp import FixedExpSpec, LutExp, lut_exp_error

    bits = _chunk_bits(args.chunk_bits)
    x_min, x_max = _finite("--x-min", args.x_min), _finite("--x-max", args.x_max)
    if not x_min < x_max:
        raise FixedQMCError(f"--x-min must be < --x-max, got {x_min!r} and {x_max!r}")
    if args.n < 2:
        raise FixedQMCError(f"--n must be >= 2, got {args.n}")
    tolerance = _finite("--tolerance", args.tolerance)
    if tolerance is not None and tolerance < 0:
        raise FixedQMCError(f"--tolerance must be >= 0, got {tolerance!r}")
    table_format = _parse_format("--table-format", args.table_format)
    try:
        lut = LutExp(chunk_bits=bits, residual=args.residual, table_format=table_format)
    except FixedQMCError as err:
        opt = "--table-format" if "format" in str(err) else "--chunk-bits"
        raise type(err)(f"{opt}: {err}") from None
    precision = args.precision
    if precision == "fixed":
        if table_format is None:
            raise FixedQMCError("--precision fixed needs --table-format (the table words' "
                                "format, e.g. UQ1.39)")
        spec = _option("--x-format/--result-format", FixedExpSpec,
                       x_format=_parse_format("--x-format", args.x_format),
                       result_format=_parse_format("--result-format", args.result_format))
        precision = _option("--x-format/--result-format", lut._precision, spec)
    report = lut_exp_error(lut, (x_min, x_max), n=args.n, precision=precision, seed=args.seed)
    print("LUT exponential exp(x) = 2**y_i * prod_k T_k[j_k] (seed 001, App. B)")
    width = max(len(k) for k in report)
    for key, value in report.items():
        text = f"{value:.4g}" if isinstance(value, float) else str(value)
        print(f"  {key:<{width}}  {text}")
    if tolerance is not None:
        ok = bool(report["max_rel_error"] <= tolerance)
        print(f"tolerance {tolerance:g} on max_rel_error: {'passed' if ok else 'EXCEEDED'}")
        return 0 if ok else 1
    return 0


# -------------------------------------------------------------------------- parsers --
def add_table_commands(sub) -> None:
    """Add ``tables {generate,check,eval}`` and ``lutexp`` to the fixedqmc subparsers."""
    fmt = argparse.RawDescriptionHelpFormatter
    tables = sub.add_parser(
        "tables", help="two-region interpolation tables: generate, check, evaluate",
        description="Two-region quadratic interpolation tables in s = r^2 (HAQMC).",
        formatter_class=fmt)
    actions = tables.add_subparsers(dest="tables_command", metavar="ACTION")
    actions.required = True

    gen = actions.add_parser(
        "generate", help="build a table and write its coefficient files",
        formatter_class=fmt,
        description="Build a two-region table of a function and write the coefficient files "
                    "(fa.dat ... fcII.dat, table.json, .hex ROM images with --coef-format), "
                    "then print the error report.\n\nbuilt-in functions: "
                    + ", ".join(builtin_names()) + " (their defaults: fixedqmc tables functions)")
    gen.add_argument("--function", required=True, metavar="NAME|module:func",
                     help=f"built-in ({', '.join(builtin_names())}) or your vectorised f(r) "
                          "as module:function")
    gen.add_argument("--r-min", type=float, help="table start in r (angstrom)")
    gen.add_argument("--r-max", type=float, help="table end in r (angstrom)")
    gen.add_argument("--s-min", type=float, help="table start in s = r^2 (angstrom^2)")
    gen.add_argument("--s-max", type=float, help="table end in s = r^2 (angstrom^2)")
    gen.add_argument("--sigma", metavar="RULE|NUMBER",
                     help=f"region split: one of {', '.join(SIGMA_RULES)}, or a number in the "
                          "units of the range options (r in angstrom, or s with --s-min/"
                          "--s-max); default: the built-in's rule, 'zero' for your function")
    gen.add_argument("--transform", metavar="T|T1,T2",
                     help="none or exp, per region I,II (default: the built-in's; none,none)")
    gen.add_argument("--n1", type=int, default=DEFAULT_N1,
                     help=f"region I bins, a power of two (default {DEFAULT_N1})")
    gen.add_argument("--n-seg", type=int, default=DEFAULT_N_SEG,
                     help=f"region II power-of-two segments, 1..64 (default {DEFAULT_N_SEG})")
    gen.add_argument("--n-bin", type=int, default=DEFAULT_N_BIN,
                     help=f"region II bins per segment, a power of two (default {DEFAULT_N_BIN})")
    gen.add_argument("--coef-format", metavar="QFORMAT",
                     help="quantize the coefficients, e.g. Q1.30 (default: float64); a format "
                          "that loses the fit (measured error above both 10 x the unquantized "
                          "fit's and 1%% of the region's range of f) is refused")
    gen.add_argument("--allow-lossy", action="store_true",
                     help="write a table whose --coef-format loses the fit anyway, with a "
                          "warning stating the measured error (tables check then fails it)")
    gen.add_argument("--name", help="table name in table.json (default: the function's)")
    gen.add_argument("--out", required=True, metavar="FOLDER", help="output folder")
    gen.set_defaults(func=cmd_generate)

    chk = actions.add_parser("check", help="read a table folder back and report its error",
                             description="Read a table folder and print its error report "
                                         "against --function, or a structural report: "
                                         "adjacent bins must meet within the error bounds "
                                         "stored in table.json by generate.")
    chk.add_argument("folder", metavar="FOLDER")
    chk.add_argument("--function", metavar="NAME|module:func",
                     help="compare with this function (default: structural check only)")
    chk.add_argument("--tolerance", type=float,
                     help="largest allowed max_abs_err (f units); without --function the "
                          "largest allowed max_jump between bins")
    chk.set_defaults(func=cmd_check)

    fun = actions.add_parser("functions", help="list the built-in table functions and their "
                             "defaults")
    fun.set_defaults(func=cmd_functions)

    ev = actions.add_parser("eval", help="evaluate a table at given points",
                            description="Evaluate a table folder with the compiled kernel.")
    ev.add_argument("folder", metavar="FOLDER")
    ev.add_argument("--s", type=float, nargs="+", metavar="S", help="points s = r^2 (angstrom^2)")
    ev.add_argument("--r", type=float, nargs="+", metavar="R", help="points r (angstrom)")
    ev.add_argument("--precision", default="float64", metavar="SPEC",
                    help="precision spec, kernel name 'table' (e.g. float32, fixed:32, "
                         "table=fixed:40); default float64")
    ev.set_defaults(func=cmd_eval)

    lut = sub.add_parser(
        "lutexp", help="error report of a lookup-table exponential",
        description="Measured maximum relative error and a-priori bound of the LUT "
                    "exponential exp(x) = 2**y_i * prod_k T_k[j_k] (seed 001, Appendix B).")
    lut.add_argument("--chunk-bits", default="12,11,11", metavar="B0,B1,...",
                     help="bits per lookup, most significant first (default 12,11,11)")
    lut.add_argument("--residual", default="linear", choices=["linear", "none"],
                     help="correction for the bits below the last chunk (default linear)")
    lut.add_argument("--table-format", metavar="QFORMAT",
                     help="table word format, e.g. UQ1.39 (default: float64 tables)")
    lut.add_argument("--x-min", type=float, default=-20.0, help="smallest x (default -20)")
    lut.add_argument("--x-max", type=float, default=5.0, help="largest x (default 5)")
    lut.add_argument("--n", type=int, default=20000, help="sample points (default 20000)")
    lut.add_argument("--precision", default="float64", choices=["float64", "float32", "fixed"],
                     help="arithmetic (fixed needs --table-format; default float64)")
    lut.add_argument("--x-format", default="Q6.36", metavar="QFORMAT",
                     help="input format of the fixed path (default Q6.36)")
    lut.add_argument("--result-format", default="UQ8.48", metavar="QFORMAT",
                     help="result format of the fixed path (default UQ8.48)")
    lut.add_argument("--seed", type=int, default=0, help="seed of the random samples")
    lut.add_argument("--tolerance", type=float,
                     help="exit 1 if the measured max relative error exceeds this")
    lut.set_defaults(func=cmd_lutexp)
