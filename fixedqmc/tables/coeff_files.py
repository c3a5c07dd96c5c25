"""HAQMC coefficient files of a two-region table (seed 002, Appendix "Part 1").

A table folder holds:

* ``fa.dat``, ``fb.dat``, ``fc.dat``: region I coefficients a, b, c (``n1`` lines each);
* ``faII.dat``, ``fbII.dat``, ``fcII.dat``: region II (``n_seg*n_bin`` lines each, flat index
  ``j*n_bin + m``);
* ``table.json``: sigma, s_min, s_max (s = r**2 units), transforms, offsets, scales, the bin
  layout, coef_format, the function name and the package version; for a table written with
  its function, ``bound_g``: the a-priori error bound of every bin in rescaled units g
  (``{"I": [...], "II": [...]}``, file order; :func:`~fixedqmc.tables.error_bounds.bin_bounds`),
  against which :func:`check_table` checks that adjacent bins meet; and, for a quantized
  table written with its function, ``quantization``: the measured loss of the coefficient
  format (:meth:`~fixedqmc.tables.two_region.QuantizationLoss.to_json`: per region the
  largest error of the quantized table and of the unquantized fit, the range of f, the
  allowed error and whether the format loses the fit), which :func:`check_table` fails;
* with a ``coef_format``: ``fa.hex`` ... ``fcII.hex``, ROM images for ``$readmemh`` (one word
  per line, ``ceil(word_bits/4)`` hex digits, the two's complement bit pattern).

``.dat`` lines are the float64 coefficients written with ``repr`` (shortest exact round trip)
or, for a quantized table, the exact decimal value of each fixed-point word; the ``.hex``
files are then the source of the words and must agree with the ``.dat`` values.
"""

from __future__ import annotations

import json
from importlib import metadata
from pathlib import Path

import numpy as np
import pandas as pd

from fixedqmc import jsonio
from fixedqmc.numerics.fixed import Fixed
from fixedqmc.numerics.qformat import QFormat
from fixedqmc.state_files import write_atomic, write_error
from fixedqmc.tables.error_bounds import REGION_NAMES, bin_bounds, error_report, junctions
from fixedqmc.tables.two_region import (
    COEF_NAMES,
    REGIONS,
    PairFunction,
    QuantizationLoss,
    TableError,
    TwoRegionTable,
    check_power_of_two,
    check_segments,
    quantization_loss,
)

FILE_STEMS = {"a1": "fa", "b1": "fb", "c1": "fc", "a2": "faII", "b2": "fbII", "c2": "fcII"}
SIDECAR = "table.json"
LAYOUT = "fixedqmc-two-region-table"
LAYOUT_VERSION = 1
_SIDECAR_KEYS = ("name", "s_min", "sigma", "s_max", "transform", "offset", "scale", "n1",
                 "n_seg", "n_bin", "coef_format")


def package_version() -> str:
    """Installed fixedqmc version, or ``"unknown"`` when not installed."""
    try:
        return metadata.version("fixedqmc")
    except metadata.PackageNotFoundError:
        return "unknown"


# --------------------------------------------------------------------------- writing --
def write_table(table: TwoRegionTable, folder, func: PairFunction | None = None) -> Path:
    """Write ``table`` into ``folder`` (created if needed) in the layout of the module
    docstring; returns the folder path.  Existing files of the same names are replaced.
    ``func`` (the tabulated f(r)): also store every bin's error bound in ``table.json`` and,
    for a quantized table, the measured loss of its format (``quantization``)."""
    folder = Path(folder)
    try:
        folder.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise write_error(exc, folder) from None
    for key in COEF_NAMES:
        lines = _dat_lines(table, key)
        write_atomic(folder / f"{FILE_STEMS[key]}.dat", "".join(f"{x}\n" for x in lines).encode())
        if table.quantized is not None:
            write_atomic(folder / f"{FILE_STEMS[key]}.hex",
                         _hex_text(table.quantized[key]).encode())
    sidecar = {"layout": LAYOUT, "layout_version": LAYOUT_VERSION,
               "package_version": package_version()}
    sidecar.update({k: getattr(table, k) for k in _SIDECAR_KEYS})
    sidecar["files"] = {k: f"{FILE_STEMS[k]}.dat" for k in COEF_NAMES}
    sidecar["hex_files"] = None if table.quantized is None else {
        k: f"{FILE_STEMS[k]}.hex" for k in COEF_NAMES}
    sidecar["bound_g"] = None if func is None else bin_bounds(table, func)
    sidecar["quantization"] = _quantization_record(table, func)
    write_atomic(folder / SIDECAR, (jsonio.dumps(sidecar, indent=2) + "\n").encode())
    return folder


def _quantization_record(table: TwoRegionTable, func: PairFunction | None) -> dict | None:
    """``table.json``'s ``quantization``: None for a float table or without ``func``."""
    if func is None or table.coef_format is None:
        return None
    return quantization_loss(table, func).to_json()


def _dat_lines(table: TwoRegionTable, key: str) -> list[str]:
    if table.quantized is None:
        return [repr(float(x)) for x in getattr(table, key)]
    frac = table.quantized[key].fmt.frac_bits
    return [_exact_decimal(w, frac) for w in table.quantized[key].to_ints()]


def _exact_decimal(word: int, frac_bits: int) -> str:
    """Exact decimal of ``word * 2**-frac_bits`` (a dyadic rational has a finite expansion)."""
    sign, word = ("-" if word < 0 else ""), abs(word)
    digits = str(word * 5**frac_bits).rjust(frac_bits + 1, "0")  # = value * 10**frac_bits
    whole, frac = digits[:len(digits) - frac_bits], digits[len(digits) - frac_bits:].rstrip("0")
    return f"{sign}{whole}.{frac or '0'}"


def _hex_digits(fmt: QFormat) -> int:
    return -(-fmt.word_bits // 4)


def _hex_text(words: Fixed) -> str:
    width = _hex_digits(words.fmt)
    return "".join(f"{int(b):0{width}x}\n" for b in words.bits())


# --------------------------------------------------------------------------- reading --
def read_table(folder) -> TwoRegionTable:
    """Read a table written by :func:`write_table`, bit-identical to the one written.

    A missing, truncated, mis-sized or non-numeric file raises a :class:`TableError`
    (``ValueError``) naming the file and, for a bad line, its line number.
    """
    folder = Path(folder)
    meta = _read_sidecar(folder / SIDECAR)
    sizes = {k: meta["n1"] if k.endswith("1") else meta["n_seg"] * meta["n_bin"]
             for k in COEF_NAMES}
    coefs = {k: _read_dat(folder / f"{FILE_STEMS[k]}.dat", sizes[k]) for k in COEF_NAMES}
    quantized = None
    if meta["coef_format"] is not None:
        fmt = QFormat.parse(meta["coef_format"])
        quantized = {k: _read_hex(folder / f"{FILE_STEMS[k]}.hex", sizes[k], fmt)
                     for k in COEF_NAMES}
        for k in COEF_NAMES:
            _check_agree(folder / f"{FILE_STEMS[k]}.dat", coefs[k], quantized[k])
            coefs[k] = quantized[k].to_float()
    fields = {k: meta[k] for k in _SIDECAR_KEYS}
    fields["transform"], fields["offset"], fields["scale"] = (
        tuple(meta[k]) for k in ("transform", "offset", "scale"))
    try:
        return TwoRegionTable(**fields, **coefs, quantized=quantized)
    except TableError as err:
        raise TableError(f"{folder / SIDECAR}: {err}") from err


def _read_sidecar(path: Path) -> dict:
    try:
        meta = json.loads(_read_text(path))
    except json.JSONDecodeError as err:
        raise TableError(f"{path}: not valid JSON (line {err.lineno}): {err.msg}") from None
    if not isinstance(meta, dict) or meta.get("layout") != LAYOUT:
        raise TableError(f"{path}: not a two-region table sidecar (layout must be {LAYOUT!r})")
    missing = [k for k in _SIDECAR_KEYS if k not in meta]
    if missing:
        raise TableError(f"{path}: missing key(s) {', '.join(missing)}")
    try:
        check_power_of_two("n1", meta["n1"]), check_segments(meta["n_seg"])
        check_power_of_two("n_bin", meta["n_bin"])
    except TableError as err:
        raise TableError(f"{path}: {err}") from None
    for key in ("transform", "offset", "scale"):
        if not isinstance(meta[key], list):
            raise TableError(f"{path}: {key} must be a list of two values, got {meta[key]!r}")
    if meta["coef_format"] is not None:
        try:
            QFormat.parse(meta["coef_format"])
        except ValueError as err:
            raise TableError(f"{path}: coef_format: {err}") from None
    return meta


def _read_text(path: Path) -> str:
    try:
        return path.read_text()
    except FileNotFoundError:
        raise TableError(f"{path}: file not found") from None
    except UnicodeDecodeError as err:
        raise TableError(f"{path}: not a text file ({err.reason})") from None


def _lines(path: Path, expected: int) -> list[str]:
    """The ``expected`` non-empty lines of a one-value-per-line file (a final newline is
    optional); a missing, blank or extra line is an error naming file and line number."""
    lines = _read_text(path).splitlines()
    for i, line in enumerate(lines[:expected], start=1):
        if not line.strip():
            raise TableError(f"{path}, line {i}: empty line (expected {expected} values)")
    if len(lines) < expected:
        raise TableError(f"{path}, line {len(lines) + 1}: file ends after {len(lines)} lines; "
                         f"expected {expected} values (truncated?)")
    extra = [i for i, line in enumerate(lines[expected:], start=expected + 1) if line.strip()]
    if extra:
        raise TableError(f"{path}, line {extra[0]}: unexpected value after the {expected} "
                         f"expected (mis-sized file?)")
    return [line.strip() for line in lines[:expected]]


def _read_dat(path: Path, expected: int) -> np.ndarray:
    out = np.empty(expected)
    for i, text in enumerate(_lines(path, expected)):
        try:
            out[i] = float(text)
        except ValueError:
            raise TableError(f"{path}, line {i + 1}: {text!r} is not a number") from None
        if not np.isfinite(out[i]):
            raise TableError(f"{path}, line {i + 1}: {text!r} is not finite")
    return out


def _read_hex(path: Path, expected: int, fmt: QFormat) -> Fixed:
    width = _hex_digits(fmt)
    words = []
    for i, text in enumerate(_lines(path, expected), start=1):
        try:
            bits = int(text, 16) if len(text) == width else -1
        except ValueError:
            bits = -1
        if not 0 <= bits < 1 << fmt.word_bits:
            raise TableError(f"{path}, line {i}: {text!r} is not a {fmt.word_bits}-bit word of "
                             f"{width} hex digits ({fmt})")
        words.append(bits - (1 << fmt.word_bits) if fmt.signed and bits >> (fmt.word_bits - 1)
                     else bits)
    return Fixed.from_raw(np.array(words, dtype=object), fmt)


def _check_agree(path: Path, values: np.ndarray, words: Fixed) -> None:
    differ = values.view(np.uint64) != words.to_float().view(np.uint64)
    if differ.any():
        i = int(np.argmax(differ))
        raise TableError(f"{path}, line {i + 1}: {float(values[i])!r} differs from the word "
                         f"{words.to_ints()[i]} ({float(words.to_float()[i])!r}) in "
                         f"{path.with_suffix('.hex').name}")


# ---------------------------------------------------------------------------- check --
def check_table(folder, func: PairFunction | None = None, tolerance: float | None = None
                ) -> tuple[pd.DataFrame, bool]:
    """Read and check a table folder; returns ``(report, ok)``.

    With ``func`` (f(r), vectorised): the :func:`~fixedqmc.tables.error_bounds.error_report`
    plus ``lossy`` (the coefficient format loses the fit of ``func`` in the region, measured
    again by :func:`~fixedqmc.tables.two_region.quantization_loss`) and ``problems`` (why the
    region fails, in words: a lost fit, an infinite error bound); ``ok`` when every bin is
    within its (finite) bound, no region is lossy and, if ``tolerance`` is given, the largest
    absolute error in f units is <= ``tolerance``.  Without ``func``: per region the bin count,
    coefficient ranges and ``max_jump`` (largest mismatch in f units between the end of a bin
    and the start of the next); where ``table.json`` stores the bins' error bounds
    (``bound_checked``), every jump in g units must stay within the two bins' bounds
    (:func:`~fixedqmc.tables.error_bounds.junctions`): ``jumps_over_bound`` counts those that
    do not and ``worst_junction`` names the files, lines, jump and bound of the worst;
    ``lossy`` and ``problems`` as above, from the ``quantization`` record of ``table.json``
    (a table written without one -- by an older version, or without its function -- is lossy
    where every b and c coefficient of the region is 0 while a varies: a piecewise-constant
    table has lost the quadratic fit); a bin whose stored bound is null (infinite) is a
    problem too, as an infinite bound guarantees nothing.  ``ok`` when no jump exceeds its
    bound, ``problems`` is empty and, if ``tolerance`` is given, ``max_jump <= tolerance``.
    Unreadable files raise a :class:`TableError`.
    """
    table = read_table(folder)
    if func is not None:
        report = error_report(table, func)
        loss = None if table.coef_format is None else quantization_loss(table, func)
        report["lossy"] = [loss is not None and r in loss.lossy_regions for r in REGIONS]
        report["problems"] = [_problems(loss, r, row.bound_f)
                              for r, (_, row) in zip(REGIONS, report.iterrows())]
        ok = bool(report["within_bound"].all()) and not report["lossy"].any()
        if tolerance is not None:
            ok = ok and bool((report["max_abs_err"] <= tolerance).all())
        return report, ok
    path = Path(folder) / SIDECAR
    bounds = _stored_bounds(path, table)
    loss = _stored_loss(path, table)
    report = pd.DataFrame([_structure_row(table, r, bounds, loss) for r in REGIONS]
                          ).set_index("region")
    ok = bool((report["jumps_over_bound"] == 0).all() and (report["problems"] == "").all())
    if tolerance is not None:
        ok = ok and bool((report["max_jump"] <= tolerance).all())
    return report, ok


def _problems(loss: QuantizationLoss | None, region: int, bound_f: float) -> str:
    """Why a region fails a check against its function, in words ("" if it does not)."""
    out = [] if loss is None else [loss.region_reason(region)]
    if not np.isfinite(bound_f):
        out.append("the a-priori error bound is infinite (the coefficient error can reach "
                   "F = exp(f) itself, so nothing bounds f)")
    return "; ".join(x for x in out if x)


def _stored_loss(path: Path, table: TwoRegionTable) -> QuantizationLoss | None:
    """The ``quantization`` record of ``table.json`` (None: not stored)."""
    record = _read_sidecar(path).get("quantization")
    if record is None:
        return None
    try:
        loss = QuantizationLoss.from_json(table.name, record)
    except TableError as err:
        raise TableError(f"{path}: {err}") from None
    if loss.coef_format != table.coef_format:
        raise TableError(f"{path}: the quantization record is for {loss.coef_format}, the "
                         f"table's coef_format is {table.coef_format}; regenerate the table")
    return loss


def _stored_bounds(path: Path, table: TwoRegionTable) -> dict | None:
    """The per-bin bounds of ``table.json`` (None: not stored), null read as inf (which
    :func:`check_table` fails: an infinite bound guarantees nothing)."""
    stored = _read_sidecar(path).get("bound_g")
    if stored is None:
        return None
    out = {}
    for r in REGIONS:
        name = REGION_NAMES[r]
        values = stored.get(name) if isinstance(stored, dict) else None
        if not isinstance(values, list) or len(values) != table.n_bins(r) or not all(
                v is None or (isinstance(v, (int, float)) and v >= 0) for v in values):
            raise TableError(f"{path}: bound_g.{name} must be a list of {table.n_bins(r)} "
                             "bounds >= 0 (or null), one per bin of region "
                             f"{name}; regenerate the table")
        out[r] = np.array([np.inf if v is None else v for v in values], np.float64)
    return out


def _structure_row(table: TwoRegionTable, region: int, bounds: dict | None,
                   loss: QuantizationLoss | None = None) -> dict:
    s0, _ = table.bin_spans(region)
    a, b, c = (x[np.argsort(s0, kind="stable")] for x in table.coefficients(region))
    reg = np.full(a.size - 1, region)  # bins in order of s: compare each end with the next start
    jumps = np.abs(table.unscale(reg, (a + b + c)[:-1]) - table.unscale(reg, a[1:]))
    row = {"region": REGION_NAMES[region], "bins": a.size,
           "transform": table.transform[region - 1],
           "coef_format": table.coef_format, "a_min": a.min(), "a_max": a.max(),
           "b_min": b.min(), "b_max": b.max(), "c_min": c.min(), "c_max": c.max(),
           "max_jump": float(jumps.max()) if jumps.size else 0.0,
           "bound_checked": bounds is not None, "jumps_over_bound": 0, "worst_junction": "",
           "lossy": False, "problems": ""}
    problems = []
    if loss is not None:
        problems.append(loss.region_reason(region))
    elif table.coef_format is not None and not (b.any() or c.any()) and a.max() > a.min():
        problems.append(
            f"every b and c coefficient is 0: the table is piecewise constant, coefficients "
            f"{table.coef_format} lost the quadratic fit (table.json holds no quantization "
            f"record; check it against its function to measure the error)")
    row["lossy"] = any(problems)
    if bounds is not None:
        unbounded = np.flatnonzero(~np.isfinite(bounds[region]))
        if unbounded.size:
            problems.append(f"{unbounded.size} bin(s) with an infinite (null) error bound in "
                            f"table.json, first at line {unbounded[0] + 1} of "
                            f"{FILE_STEMS['a' + str(region)]}.dat: nothing is guaranteed there")
        j = junctions(table, region, bounds[region])
        bad = j[j.jump > j.allowed]
        row["jumps_over_bound"] = len(bad)
        if len(bad):
            w = bad.loc[(bad.jump / bad.allowed).idxmax()]
            files = ", ".join(f"{FILE_STEMS[k + str(region)]}.dat" for k in "abc")
            row["worst_junction"] = (
                f"bins {int(w.bin)} and {int(w.next)} (lines {int(w.bin) + 1} and "
                f"{int(w.next) + 1} of {files}) do not meet: jump {w.jump:.4g} > bound "
                f"{w.allowed:.4g} (rescaled units g)")
            ends, count = np.unique(np.concatenate([bad.bin, bad.next]), return_counts=True)
            lines = ", ".join(str(i + 1) for i in ends[count == 2])
            if lines:
                row["worst_junction"] += f"; line(s) {lines} meet neither neighbour"
    row["problems"] = "; ".join(x for x in problems if x)
    return row
