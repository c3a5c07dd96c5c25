"""Lookup-table exponential: range reduction to base 2 and a product of small-table lookups.

The method of seed 001, Appendix B ("The exponential function")::

    exp(x) = 2**(x log2 e) = 2**(y_i + y_f) = 2**y_i * 2**y_f                  (B1, B2)

with ``y_i = floor(x log2 e)`` an integer and ``y_f`` in [0, 1).  The fraction ``y_f`` is
read as a binary number of ``B = sum(chunk_bits)`` bits (plus any lower, *residual* bits)
and cut into ``K = len(chunk_bits)`` bit fields; field ``k`` holds ``b_k = chunk_bits[k]``
bits, below ``C_{k-1}`` more significant bits (``C_k = b_0 + ... + b_k``), so that::

    y_f = sum_k j_k * 2**-C_k + r,     0 <= j_k < 2**b_k,   0 <= r < 2**-B
    2**y_f = prod_k T_k[j_k] * 2**r,   T_k[j] = 2**(j * 2**-C_k)   (1 <= T_k[j] < 2)

The seed's "8 K words, 3 concurrent lookups" is ``chunk_bits=(12, 11, 11)``: tables of
4096 + 2048 + 2048 = 8192 entries covering B = 34 bits of ``y_f``.

Why a residual correction
-------------------------
Dropping ``r`` (``residual="none"``) multiplies the result by ``2**-r``, a relative error of
up to ``1 - 2**(-2**-B) ~ ln2 * 2**-B``: 4.0e-11 for B = 34, forty times the seed's quoted
1e-12, however exact the tables are.  ``residual="linear"`` multiplies by the first-order
term ``1 + r ln2`` instead, leaving ``2**r - (1 + r ln2) <= (r ln2)**2 / 2 <= 2.4e-22`` for
B = 34: the 8 K-word tables then reach the 1e-12 target with room to spare (float64 tables:
measured 1.8e-15 over x in [-20, 5], against 4.0e-11 without the correction).

Three precisions (:meth:`LutExp.evaluate`)
------------------------------------------
``"float64"`` / ``"float32"``
    IEEE arithmetic in that type throughout: ``y = fl(x * fl(log2 e))``, ``y_i = floor(y)``,
    ``y_f = y - y_i`` (exact except for -1 < y < 0), the fields by exact scaling by
    ``2**b_k`` and ``floor``, the products left to right, then ``ldexp``.  Tables are the
    correctly rounded float64 / float32 values of ``2**(j 2**-C_k)`` (float64: the values of
    the fixed-point entries instead if ``table_format`` is set).  One compiled, parallel
    kernel serves both types (``_lut_float_kernel``).
:class:`FixedExpSpec` (or a tuple ``(x_format, table_format, result_format)``)
    Bit-exact fixed point: the data path of :class:`FixedExpSpec`, compiled and parallel
    (:mod:`fixedqmc.tables.lut_exp_fixed`), with the exact operations of :mod:`fixedqmc.numerics.quantize`.

Both are compiled once for all configurations (tables, formats and modes are run-time
arguments); fixed evaluations of 2**18 elements or more use a kernel built for their spec
instead, vectorised and bit-identical (:mod:`fixedqmc.tables.lut_exp_fixed`).  Results
never depend on the number of threads.  Rates of ``fixedqmc bench
lutexp``: ``docs/benchmarks.md``.

Underflow and overflow
----------------------
Results with ``y_i < y_min`` are *exactly* 0 (flush to zero): ``y_min = -1022`` for float64,
``-126`` for float32 (below these the result would be subnormal) and ``-min(F_r + 1, 64)``
for a fixed result with ``F_r`` fractional bits (a result below half an LSB).  In terms of
x: exactly 0 for ``x < y_min * ln2`` up to the range-reduction rounding, i.e. for
x < -708.40 (float64), x < -87.34 (float32), x < -(F_r + 1) ln2 (fixed, F_r <= 63).
Overflow: the float paths return ``inf`` like ``np.exp`` (x > 709.78 float64, x > 88.72
float32); the fixed path applies the spec's overflow mode (saturate, wrap, raise, see
:mod:`fixedqmc.numerics.modes`) to the result word.

A-priori error bound (:meth:`LutExp.error_bound`)
-------------------------------------------------
Relative error of the result against the exact ``exp(x)`` of the given input ``x``::

    |lut(x) / exp(x) - 1| <= expm1( K e_T + M e_p + e_c + e_r + ln2 dy(x) + dx(x) ) + q_out / exp(x)

``e_T``
    relative rounding of one table entry (entries are >= 1, rounded to nearest): 2**-53
    float64, 2**-24 float32, 2**-(F_t + 1) for a fixed table with F_t fractional bits;
    times ``K`` lookups.
``e_p``
    relative rounding of one product (>= 1): 2**-53, 2**-24, or one quantum of the product
    format (half of 2**-F_p for the round-to-nearest modes, a whole 2**-F_p for floor, zero
    and stochastic); ``M = K - 1`` products, plus one for the residual correction factor.
``e_c``
    rounding of the correction factor ``1 + r ln2`` (like one table entry; 0 without it).
``e_r``
    residual truncation: ``(ln2 2**-B)**2 / 2`` with the linear correction (the ``r**2/2``
    term), ``ln2 2**-B`` without.
``dy(x)``
    absolute error of ``y = x log2 e``: ``|x| |log2 e - L| + q_y`` where ``L`` is the
    quantized constant and ``q_y`` the rounding of ``y`` (float: ``|y| u + u``; fixed: one
    quantum of the y format).  A change ``dy`` of the exponent changes the result by a
    factor ``2**dy``, hence ``ln2 dy``.
``dx(x)``
    input quantization: 0 for float64 (and for exact fixed inputs), ``|x| 2**-24`` for the
    conversion to float32, one quantum of the x format for the fixed path: ``exp(x + dx) =
    exp(x) e**dx``, so an absolute input error is a relative output error.
``q_out``
    rounding of the final ``2**y_i * p`` to the result format (fixed only; 0 for float,
    whose ``ldexp`` is exact in the normal range), absolute, hence relative ``q_out/exp(x)``.

Every multiplicative error factor ``(1 + e)`` with ``|e| <= eps`` satisfies
``|prod(1 + e_i) - 1| <= prod(1 + eps_i) - 1 <= expm1(sum eps_i)``, which gives the formula.
It is 1 where the result is flushed to zero and ``inf`` where the result or (fixed) the
input overflows its format.

Units and shapes: ``x`` is dimensionless, any shape; results have the shape of ``x``.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from decimal import Decimal, localcontext
from fractions import Fraction
from typing import Sequence

import numpy as np
from numba import njit, prange

from fixedqmc.errors import (FixedOverflowError, FixedQMCError, FormatError,
                             PrecisionSpecError)
from fixedqmc.numerics import fixed as F
from fixedqmc.numerics.exp2_tables import const_raw, exp2_table_raw
from fixedqmc.numerics.fixed import Fixed
from fixedqmc.numerics.modes import overflow_code, rounding_code
from fixedqmc.numerics.overflow import OverflowLog, default_log
from fixedqmc.numerics.qformat import QFormat
from fixedqmc.numerics.vectorise import vectorised
from fixedqmc.tables import lut_exp_fixed as LF

__all__ = [
    "LutExp",
    "FixedExpSpec",
    "lut_exp_error",
    "RESIDUAL_MODES",
    "MAX_CHUNK_BITS",
    "LOG2E",
    "LN2",
]

RESIDUAL_MODES = ("linear", "none")
MAX_CHUNK_BITS = 20
LOG2E = 1.4426950408889634  # float64 nearest to log2(e)
LN2 = 0.6931471805599453  # float64 nearest to ln(2)

_NEAREST = ("half_up", "half_away", "half_even")
_FLOAT_PRECISIONS = ("float64", "float32")


def _quantum(fmt: QFormat, rounding: str) -> float:
    """Largest absolute rounding error of one operation into ``fmt``."""
    return fmt.resolution * (0.5 if rounding in _NEAREST else 1.0)


# ------------------------------------------------------------ compiled float paths --
@njit(nogil=True)
def _pow2(n):
    """2**n as a float64, exactly, for -1022 <= n <= 1023 (built from its bits)."""
    return np.uint64((n + 1023) << 52).view(np.float64)


@njit(parallel=True, cache=True)
def _lut_float_kernel(xs, tables, fields, c_res, linear, y_min, out):
    """The float path (module docstring) in the type of ``xs`` (float64 or float32), one
    source for both: ``fields[k]`` = (2**b_k, offset of table k in ``tables``), ``c_res``
    = ln2 2**-B in that type, ``y_min`` the underflow exponent.  Every operation is the
    IEEE operation of that type, as numpy performs them element by element."""
    ft = xs.dtype.type
    zero, one = ft(0), ft(1)
    lo, hi, log2e = ft(-4096), ft(4096), ft(LOG2E)
    for i in prange(xs.size):
        x = xs[i]
        y = (x if np.isfinite(x) else zero) * log2e
        y = min(max(y, lo), hi)
        yi = np.floor(y)
        yf = y - yi  # exact unless -1 < y < 0, where it may round up to 1
        if yf >= one:
            yi += one
            yf = zero
        s = yf
        p = one
        for k in range(fields.shape[0]):
            s = s * fields[k, 0]  # exact
            j = np.floor(s)
            s = s - j  # exact: the remaining bits, in units of the field's LSB
            entry = tables[np.int64(fields[k, 1]) + np.int64(j)]
            p = entry if k == 0 else p * entry
        if linear:
            p = p * (one + s * c_res)
        n = np.int64(yi)
        if n < y_min:
            r = zero
        elif n > 1023:
            r = ft(np.inf)  # p >= 1: beyond every float range, as ldexp gives it
        else:  # p 2**n exact in float64 (or inf), then one rounding: ldexp without a call
            r = ft(np.float64(p) * _pow2(n))
        if np.isnan(x):
            r = ft(np.nan)
        elif np.isinf(x):
            r = max(x, zero)  # inf, or 0 for -inf
        out[i] = r


# --------------------------------------------------------------------- fixed spec --
@dataclass(frozen=True)
class FixedExpSpec:
    """Formats and modes of the bit-exact fixed-point exponential.

    Data path (every arrow is one exact operation rounded once with ``rounding`` and
    overflow-handled with ``overflow``, the operation of the same name of
    :mod:`fixedqmc.numerics.fixed`; overflow events are logged under the names
    ``lut_exp.<stage>``, as many values per stage as those operations would log):

    1. ``xq = from_float(x, x_format)`` (a :class:`Fixed` input is ``cast`` instead);
    2. ``y = mul(xq, L, y_format)``, ``L`` = log2(e) rounded to nearest in
       ``log2e_format`` (default UQ1.63, |log2 e - L| < 2**-64);
    3. bit slicing of the raw word of ``y`` (``F_y`` fractional bits): ``y_i = raw >> F_y``
       (floor), ``y_f = raw & (2**F_y - 1)``; field k is bits ``[F_y - C_k, F_y - C_{k-1})``;
       the ``F_y - B`` bits below the fields are the residual ``r``;
    4. ``p = T_0[j_0]``, ``p = mul(p, T_k[j_k], product_format)`` for k = 1..K-1 (tables
       hold ``2**(j 2**-C_k)`` rounded to nearest in ``table_format``);
    5. residual ``"linear"``: ``t = mul(r, ln2, UQ0.64)`` (ln2 rounded to nearest in UQ0.64),
       ``c = add(1, t, table_format)``, ``p = mul(p, c, product_format)``;
    6. ``result = shift(p, y_i, result_format)`` (``2**y_i`` as an exact shift, then one
       rounding; shifts beyond 64 are chained, which is exact), and exactly 0 where
       ``y_i < -min(F_r + 1, 64)``.

    The steps run in one compiled kernel on the scalar operations of
    :mod:`fixedqmc.numerics.quantize`, bit-identical to the same steps written with
    :class:`Fixed` arrays (tested); step 1 runs on the host instead
    (:meth:`Fixed.from_float` / :func:`~fixedqmc.numerics.fixed.cast`, with their checks)
    for a :class:`Fixed` input, input other than finite floats, or ``overflow="raise"``.
    Exactness is what permits the kernel's fast paths: log2(e) and ln2 enter with their
    trailing zero bits dropped (the same values; those of the default UQ1.63 and of UQ0.64
    then fit int64 words, so their products take the 128-bit path instead of the 192-bit
    one), 1 + t is rounded as 1 plus t rounded, and the final shift of words below 2**62 is
    one int64 rounding; the remaining cases use the general operations.

    Stochastic rounding: stage ``s`` (x 0, y 1, product k ``1 + k``, residual 20,
    correction 21, corrected product 22, result 30) draws the bits ``random_bits(seed + s,
    i, 0)`` for the element of flat index ``i``, like a Fixed-array operation over all
    elements; a ``raise``-mode overflow is raised after the kernel, at
    the first stage of the data path that overflowed.

    Parameters
    ----------
    x_format : str
        Input format (default ``Q6.36``: |x| < 64, 2**-36 resolution).
    table_format : str or None
        Table entry format; None uses the :class:`LutExp`'s ``table_format``.
    result_format : str
        Format of ``exp(x)`` (default ``UQ8.48``: up to exp(5.5), 2**-48 resolution).
    product_format : str or None
        Format of the running product (None: the table format).
    y_format : str or None
        Format of ``x log2 e`` (None: a 64-bit word with one more integer bit than
        ``x_format``, the rest fractional; needs at least ``B`` fractional bits).
    log2e_format : str
        Format of the constant log2(e) (needs at least one integer bit).
    rounding, overflow : str
        Modes of :mod:`fixedqmc.numerics.modes` for every runtime operation.
    seed : int
        Seed of stochastic rounding (stage s uses ``seed + s``).
    """

    x_format: str = "Q6.36"
    table_format: str | None = None
    result_format: str = "UQ8.48"
    product_format: str | None = None
    y_format: str | None = None
    log2e_format: str = "UQ1.63"
    rounding: str = "half_even"
    overflow: str = "saturate"
    seed: int = 0

    def __post_init__(self) -> None:
        for name in ("x_format", "result_format", "log2e_format"):
            QFormat.parse(getattr(self, name))
        for name in ("table_format", "product_format", "y_format"):
            if getattr(self, name) is not None:
                QFormat.parse(getattr(self, name))
        rounding_code(self.rounding)
        overflow_code(self.overflow)
        if QFormat.parse(self.log2e_format).int_bits < 1:
            raise FormatError(f"log2e_format {self.log2e_format!r} cannot hold log2(e) = 1.44; "
                              "it needs at least one integer bit")

    def __str__(self) -> str:
        return (f"fixed(x={self.x_format}, table={self.table_format}, "
                f"product={self.product_format or self.table_format}, "
                f"result={self.result_format}, {self.rounding}, {self.overflow})")


@dataclass(frozen=True)
class _Resolved:
    """The formats of one fixed evaluation, parsed and completed."""

    x: QFormat
    table: QFormat
    product: QFormat
    result: QFormat
    y: QFormat
    log2e: QFormat
    rounding: str
    overflow: str
    seed: int

    def describe(self) -> str:
        return (f"fixed(x={self.x}, y={self.y}, table={self.table}, product={self.product}, "
                f"result={self.result}, {self.rounding}, {self.overflow})")


# ------------------------------------------------------------------------- LutExp --
@dataclass(frozen=True)
class LutExp:
    """Lookup-table exponential ``exp(x) = 2**y_i * prod_k T_k[j_k] (* (1 + r ln2))``.

    See the module docstring for the equations (seed 001, Appendix B, eqs. B1-B2), the
    precisions, the underflow threshold and the error bound.

    Parameters
    ----------
    chunk_bits : sequence of int
        Bits of ``y_f`` read by each lookup, most significant first; each 1..20, at least
        one.  Table k has ``2**chunk_bits[k]`` entries.  Default ``(12, 11, 11)``: 8192
        words, three lookups, B = 34 bits (the seed's configuration).
    residual : {"linear", "none"}
        Correction for the bits of ``y_f`` below the last field: ``"linear"`` multiplies by
        ``1 + r ln2``; ``"none"`` drops them (relative error up to ln2 2**-B).
    table_format : str or None
        Table entry format: None for float64 tables, or a Q format with at least one integer
        bit (entries lie in [1, 2)), e.g. ``"UQ1.39"`` (40-bit words) or ``"UQ1.63"``.

    Attributes
    ----------
    tables : list
        ``K`` tables: float64 arrays of shape ``(2**chunk_bits[k],)`` (``table_format`` None)
        or :class:`Fixed` arrays in ``table_format``.
    words : int
        Total number of table entries, ``sum(2**b_k)``.
    """

    chunk_bits: Sequence[int] = (12, 11, 11)
    residual: str = "linear"
    table_format: str | None = None
    _cache: dict = field(default_factory=dict, init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        given = self.chunk_bits
        if isinstance(given, (int, np.integer)) or not isinstance(given, (tuple, list, np.ndarray)):
            raise FixedQMCError(f"chunk_bits must be a sequence of integers, got {given!r}")
        bits = tuple(given)
        if len(bits) == 0:
            raise FixedQMCError("chunk_bits must name at least one chunk, "
                                f"got chunk_bits={given!r}")
        for b in bits:
            if isinstance(b, bool) or not isinstance(b, (int, np.integer)):
                raise FixedQMCError(f"chunk bits must be integers, got {b!r} "
                                    f"in chunk_bits={given!r}")
            if not 1 <= int(b) <= MAX_CHUNK_BITS:
                raise FixedQMCError(f"chunk bits must be in 1..{MAX_CHUNK_BITS}, got {int(b)} "
                                    f"in chunk_bits={given!r}")
        object.__setattr__(self, "chunk_bits", tuple(int(b) for b in bits))
        if self.residual not in RESIDUAL_MODES:
            raise FixedQMCError(f"unknown residual mode {self.residual!r}; allowed: "
                                f"{', '.join(RESIDUAL_MODES)}")
        if self.table_format is not None:
            fmt = QFormat.parse(self.table_format)
            _check_table_format(fmt, "table_format")

    # -- geometry -----------------------------------------------------------------------
    @property
    def n_lookups(self) -> int:
        """K, the number of tables (and of lookups per evaluation)."""
        return len(self.chunk_bits)

    @property
    def total_bits(self) -> int:
        """B = sum(chunk_bits), the bits of y_f resolved by the tables."""
        return sum(self.chunk_bits)

    @property
    def cumulative_bits(self) -> tuple:
        """C_k = chunk_bits[0] + ... + chunk_bits[k]; table k steps by 2**-C_k in y_f."""
        return tuple(int(c) for c in np.cumsum(self.chunk_bits))

    @property
    def words(self) -> int:
        """Total table entries, sum(2**b_k) (8192 for (12, 11, 11))."""
        return sum(1 << b for b in self.chunk_bits)

    # -- tables -------------------------------------------------------------------------
    def _raw_tables(self, frac_bits: int) -> list:
        return [exp2_table_raw(c, b, frac_bits)
                for c, b in zip(self.cumulative_bits, self.chunk_bits)]

    def fixed_tables(self, fmt) -> list:
        """The tables as :class:`Fixed` arrays in ``fmt`` (entries rounded to nearest)."""
        fmt = QFormat.parse(fmt)
        _check_table_format(fmt, "table format")
        key = ("fixed", fmt)
        if key not in self._cache:
            out = []
            for raw in self._raw_tables(fmt.frac_bits):
                arr = np.array([min(v, fmt.max_raw) for v in raw], dtype=np.uint64)
                out.append(Fixed.from_raw(arr, fmt))
            self._cache[key] = out
        return self._cache[key]

    def float_tables(self, dtype="float64") -> list:
        """Tables as float arrays used by the float paths: float32 always correctly rounded;
        float64 correctly rounded, or the fixed entries' values if ``table_format`` is set."""
        dtype = np.dtype(dtype)
        key = ("float", dtype.name)
        if key not in self._cache:
            if dtype == np.float64 and self.table_format is not None:
                out = [t.to_float() for t in self.fixed_tables(self.table_format)]
            elif dtype in (np.float64, np.float32):
                mant = 52 if dtype == np.float64 else 23
                out = [np.ldexp(np.array(raw, dtype=np.float64), -mant).astype(dtype)
                       for raw in self._raw_tables(mant)]
            else:
                raise PrecisionSpecError(f"float tables are float64 or float32, not {dtype}")
            for t in out:
                t.flags.writeable = False
            self._cache[key] = out
        return self._cache[key]

    @property
    def tables(self) -> list:
        """The K tables: float64 arrays if ``table_format`` is None, else Fixed arrays."""
        if self.table_format is None:
            return self.float_tables("float64")
        return self.fixed_tables(self.table_format)

    # -- precision ----------------------------------------------------------------------
    def _precision(self, precision):
        if isinstance(precision, _Resolved):
            return precision
        if isinstance(precision, str):
            if precision in _FLOAT_PRECISIONS:
                return precision
            raise PrecisionSpecError(
                f"unknown precision {precision!r}; allowed: 'float64', 'float32', a "
                "FixedExpSpec, or a tuple (x_format, table_format, result_format)")
        if isinstance(precision, FixedExpSpec):
            return self._resolve(precision)
        if isinstance(precision, (tuple, list)) and len(precision) == 3:
            return self._resolve(FixedExpSpec(x_format=precision[0], table_format=precision[1],
                                              result_format=precision[2]))
        raise PrecisionSpecError(
            f"unknown precision {precision!r}; allowed: 'float64', 'float32', a FixedExpSpec, "
            "or a tuple (x_format, table_format, result_format)")

    def _resolve(self, spec: FixedExpSpec) -> _Resolved:
        tf = spec.table_format if spec.table_format is not None else self.table_format
        if tf is None:
            raise PrecisionSpecError(
                "the fixed-point path needs a table format: set LutExp(table_format=...) or "
                "FixedExpSpec(table_format=...), e.g. 'UQ1.39'")
        table = QFormat.parse(tf)
        _check_table_format(table, "table_format")
        product = QFormat.parse(spec.product_format) if spec.product_format else table
        _check_table_format(product, "product_format")
        x = QFormat.parse(spec.x_format)
        if spec.y_format is None:
            y = QFormat.from_word(64, x.int_bits + 1, x.signed)
        else:
            y = QFormat.parse(spec.y_format)
        B = self.total_bits
        if y.frac_bits < B:
            raise FormatError(f"y_format {y} has {y.frac_bits} fractional bits but the chunks "
                              f"{self.chunk_bits} need B = {B}; widen y_format or reduce "
                              "x_format's integer bits")
        if y.frac_bits > 63:
            raise FormatError(f"y_format {y} has {y.frac_bits} fractional bits; at most 63 allowed")
        return _Resolved(x, table, product, QFormat.parse(spec.result_format), y,
                         QFormat.parse(spec.log2e_format), spec.rounding, spec.overflow, spec.seed)

    def underflow_exponent(self, precision="float64") -> int:
        """y_min: results with ``y_i = floor(x log2 e) < y_min`` are exactly 0.

        -1022 (float64), -126 (float32), ``-min(F_r + 1, 64)`` (fixed result with ``F_r``
        fractional bits).  The x threshold is about ``y_min * ln2``.
        """
        prec = self._precision(precision)
        if prec == "float64":
            return -1022
        if prec == "float32":
            return -126
        return -min(prec.result.frac_bits + 1, 64)

    # -- evaluation ---------------------------------------------------------------------
    def evaluate(self, x, precision="float64", *, log: OverflowLog | None = None):
        """exp(x) by table lookup.

        Parameters
        ----------
        x : array_like or Fixed, any shape
            Arguments (dimensionless).  A :class:`Fixed` input is used exactly by the fixed
            path (cast to ``x_format``) and via its float64 values by the float paths.
        precision : "float64", "float32", FixedExpSpec or (x_format, table_format, result_format)
            Arithmetic of the evaluation (see the module docstring).
        log : OverflowLog, optional
            Where the fixed path counts overflow events (default log if None).

        Returns
        -------
        numpy.ndarray (float64 or float32) or Fixed (in the result format), shape of ``x``.
        """
        prec = self._precision(precision)
        if isinstance(prec, str):
            xv = x.to_float() if isinstance(x, Fixed) else np.asarray(x, dtype=np.float64)
            return self._evaluate_float(xv, np.dtype(prec))
        return self._evaluate_fixed(x, prec, log)

    __call__ = evaluate

    def _evaluate_float(self, x: np.ndarray, dtype: np.dtype) -> np.ndarray:
        """The float path, compiled (``_lut_float_kernel``) on x converted to ``dtype``."""
        run, out = self._float_kernel_call(x, dtype)
        run()
        return out.reshape(np.shape(x))

    def _float_kernel_call(self, x, dtype: np.dtype):
        """(run, out): x converted to ``dtype`` and the tables prepared; ``run()`` launches
        the compiled float kernel, which writes ``out`` (flat)."""
        ft = dtype.type
        xs = np.ascontiguousarray(np.atleast_1d(x).astype(dtype).ravel())
        key = ("float plan", dtype.name)
        if key not in self._cache:
            tables = self.float_tables(dtype)
            offsets = np.cumsum([0] + [t.size for t in tables[:-1]])
            fields = np.array([[2.0 ** b, o] for b, o in zip(self.chunk_bits, offsets)], dtype)
            self._cache[key] = (np.ascontiguousarray(np.concatenate(tables), dtype), fields)
        tables, fields = self._cache[key]
        out = np.empty(xs.size, dtype)
        args = (xs, tables, fields, ft(LN2 * 2.0 ** -self.total_bits), self.residual == "linear",
                np.int32(-1022 if dtype == np.float64 else -126), out)
        return (lambda: _lut_float_kernel(*args)), out

    def kernel_call(self, x, precision):
        """A benchmark hook: ``(run, n)`` where ``run()`` launches only the compiled kernel of
        :meth:`evaluate` on ``x``, already converted to the input type (float) or rounded to
        ``x_format`` (fixed; events are not recorded), for ``n`` elements."""
        prec = self._precision(precision)
        if isinstance(prec, str):
            run, out = self._float_kernel_call(np.asarray(x, np.float64), np.dtype(prec))
            return run, out.size
        xq = Fixed.from_float(x, prec.x, prec.rounding, prec.overflow, log=OverflowLog(),
                              seed=prec.seed)
        run, _, _ = self._fixed_kernel_call(np.ascontiguousarray(xq.raw).ravel(), prec)
        return run, xq.size

    def _fixed_plan(self, r: _Resolved) -> tuple:
        """The arguments of the compiled fixed kernel for the resolved formats ``r`` (all
        but the input, the seeds and the outputs): format vector, constants, tables, fields."""
        key = ("plan", r.x, r.log2e, r.y, r.table, r.product, r.result, r.rounding, r.overflow)
        if key in self._cache:
            return self._cache[key]
        Fixed.from_raw(np.array([const_raw("log2e", r.log2e.frac_bits)], np.uint64),
                       r.log2e)  # log2(e) must fit its format
        log2e, log2e_frac = LF.reduced(const_raw("log2e", r.log2e.frac_bits), r.log2e.frac_bits)
        ln2, ln2_frac = LF.reduced(const_raw("ln2", 64), 64)
        consts = np.array([log2e, log2e_frac, ln2, ln2_frac, 1 << r.table.frac_bits],
                          np.uint64).view(np.int64)
        tables = self.fixed_tables(r.table)
        words = np.ascontiguousarray(np.concatenate([t.raw for t in tables]), np.int64)
        fy = r.y.frac_bits
        offsets = np.cumsum([0] + [t.size for t in tables[:-1]])
        fields = np.array([[fy - c, (1 << b) - 1, o] for c, b, o in
                           zip(self.cumulative_bits, self.chunk_bits, offsets)], np.int64)
        fm = LF.format_vector(dict(x=r.x, y=r.y, table=r.table, product=r.product,
                                   result=r.result), rounding_code(r.rounding),
                              overflow_code(r.overflow), self.n_lookups, self.total_bits,
                              self.residual == "linear", -min(r.result.frac_bits + 1, 64))
        plan = (fm, consts, words, fields)
        self._cache[key] = plan
        return plan

    def _evaluate_fixed(self, x, r: _Resolved, log) -> Fixed:
        """The fixed path (:class:`FixedExpSpec`), compiled (:mod:`fixedqmc.tables.lut_exp_fixed`): step 1
        in the kernel for finite float input (overflow mode other than ``raise``), otherwise
        on the host (``Fixed.from_float`` or ``cast``, with their checks and messages);
        overflow events recorded per stage in ``log`` (the default log if None) as the
        Fixed-array operations record them, and raised at the first overflowing stage in
        ``raise`` mode."""
        log = default_log if log is None else log
        if not isinstance(x, Fixed) and r.overflow != "raise":
            xa = np.asarray(x)
            if xa.dtype.kind == "f" and np.isfinite(xa).all():
                xv = np.require(xa, np.float64, ["C", "W"]).ravel()
                run, out, events = self._fixed_kernel_call(LF.NO_WORDS, r, xv)
                run()
                self._record_fixed(events.sum(axis=0), out.size, r, log, converted=True)
                return Fixed(out.reshape(xa.shape), r.result)
        kw = dict(rounding=r.rounding, overflow=r.overflow, log=log)
        if isinstance(x, Fixed):
            xq = F.cast(x, r.x, name="lut_exp.x", seed=r.seed, **kw)
        else:
            xq = Fixed.from_float(x, r.x, name="lut_exp.x", seed=r.seed, **kw)
        run, out, events = self._fixed_kernel_call(np.ascontiguousarray(xq.raw).ravel(), r)
        run()
        self._record_fixed(events.sum(axis=0), out.size, r, log)
        return Fixed(out.reshape(xq.shape), r.result)

    def _fixed_kernel_call(self, xr: np.ndarray, r: _Resolved, xv=None):
        """(run, out, events) for the x words ``xr`` (flat, in x's format), or for the
        float64 values ``xv`` if ``xr`` is empty: ``run()`` launches the compiled fixed
        kernel (the serial twin below ``_PARALLEL_MIN_SIZE`` elements), which writes the
        result words to ``out`` and the events per chunk and stage to ``events``."""
        xv = LF.NO_VALUES if xv is None else xv
        n = xv.size if xr.size == 0 else xr.size
        fm, consts, words, fields = self._fixed_plan(r)
        seeds = np.array([r.seed + s for s in range(max(31, self.n_lookups + 1))], np.uint64)
        out = np.empty(n, np.int64)
        events = np.zeros((LF.N_CHUNKS, 8), np.int64)
        parallel, serial = LF.kernels(fm, consts, fields, n)
        kernel = parallel if n >= LF.PARALLEL_MIN_SIZE else serial
        args = (xr, xv, fm, consts, words, fields, seeds, out, events)
        return (lambda: vectorised(kernel, *args)(*args)), out, events

    def _record_fixed(self, counts, n: int, r: _Resolved, log: OverflowLog,
                      converted: bool = False) -> None:
        """Record the stages' events like the Fixed-array operations of each stage would,
        in data-path order, raising at the first overflowing stage in ``raise`` mode
        (``converted``: step 1 ran in the kernel)."""
        K, lin = self.n_lookups, self.residual == "linear"
        stages = [("x", LF.EV_X, n, r.x)] if converted else []
        stages.append(("y", LF.EV_Y, n, r.y))
        if K > 1:
            stages.append(("product", LF.EV_PRODUCT, n * (K - 1), r.product))
        if lin:
            stages += [("residual", LF.EV_RESIDUAL, n, QFormat.parse("UQ0.64")),
                       ("correction", LF.EV_CORRECTION, n, r.table),
                       ("product", LF.EV_PRODUCT_CORR, n, r.product)]
        if counts[LF.N_RESULT]:
            stages.append(("result", LF.EV_RESULT, int(counts[LF.N_RESULT]), r.result))
        for stage, col, values, fmt in stages:
            name, events = f"lut_exp.{stage}", int(counts[col])
            log.record(name, events, values, str(fmt), r.overflow)
            if events and r.overflow == "raise":
                raise FixedOverflowError(
                    f"{events} result(s) of {name!r} do not fit {fmt} (range {fmt.min}.."
                    f"{fmt.max}) under overflow='raise'. Widen the format or use "
                    "overflow='saturate' or 'wrap'.")

    # -- error bound --------------------------------------------------------------------
    def error_terms(self, precision="float64") -> dict:
        """The x-independent terms of the a-priori bound (relative; see module docstring):
        ``tables`` (K e_T), ``products`` (M e_p), ``correction`` (e_c), ``residual`` (e_r)."""
        prec = self._precision(precision)
        K, B = self.n_lookups, self.total_bits
        lin = self.residual == "linear"
        if isinstance(prec, str):
            u = 2.0 ** -53 if prec == "float64" else 2.0 ** -24
            e_t = u
            if prec == "float64" and self.table_format is not None:
                tf = QFormat.parse(self.table_format)
                e_t = 2.0 ** -(tf.frac_bits + 1) + (u if tf.frac_bits > 52 else 0.0)
            e_p = u
            e_c = u + LN2 * 2.0 ** -B * 2 * u if lin else 0.0
        else:
            e_t = 2.0 ** -(prec.table.frac_bits + 1)
            e_p = _quantum(prec.product, prec.rounding)
            e_c = (_quantum(prec.table, prec.rounding) + 2.0 ** -64 + 2.0 ** -(B + 64)
                   if lin else 0.0)
        m = K - 1 + int(lin)
        a = LN2 * 2.0 ** -B
        return {
            "tables": K * e_t,
            "products": m * e_p,
            "correction": e_c,
            "residual": a * a / 2 if lin else a,
        }

    def error_bound(self, x, precision="float64", *, exact_input: bool = False) -> np.ndarray:
        """A-priori bound of the relative error at each ``x`` (shape of ``x``).

        ``exact_input=True`` drops the input quantization term (the input is already a
        float32, resp. a word of ``x_format``).  1 where the result may be flushed to 0,
        inf where it (or, fixed, the input) may overflow.
        """
        prec = self._precision(precision)
        xv = x.to_float() if isinstance(x, Fixed) else np.asarray(x, dtype=np.float64)
        ax = np.abs(xv)
        static = sum(self.error_terms(prec).values())
        y = xv * LOG2E
        if isinstance(prec, str):
            if prec == "float64":
                u, L = 2.0 ** -53, LOG2E
                dx = np.zeros_like(ax)
                y_min, y_max = -1022, 1024
            else:
                u, L = 2.0 ** -24, float(np.float32(LOG2E))
                dx = np.zeros_like(ax) if exact_input else ax * 2.0 ** -24 + 2.0 ** -149
                y_min, y_max = -126, 128
            dl = abs(float(Fraction(L) - _LOG2E_EXACT))
            dy = (ax + dx) * dl + np.abs(y) * (1 + 2 * u) * u + u
            bound = np.expm1(static + LN2 * dy + dx)
            bound = np.where(y < y_min + 1e-6, np.maximum(bound, 1.0), bound)
            return np.where(y > y_max - 1e-6, np.inf, bound)
        dx = np.zeros_like(ax) if exact_input else np.full_like(ax, _quantum(prec.x, prec.rounding))
        lq = Fraction(const_raw("log2e", prec.log2e.frac_bits), 1 << prec.log2e.frac_bits)
        dl = abs(float(lq - _LOG2E_EXACT))
        dy = (ax + dx) * dl + _quantum(prec.y, prec.rounding)
        with np.errstate(over="ignore"):
            q_out = _quantum(prec.result, prec.rounding) / np.exp(xv)
        bound = np.expm1(static + LN2 * dy + dx) + q_out
        y_min = -min(prec.result.frac_bits + 1, 64)
        bound = np.where(y < y_min + 1e-6, np.maximum(bound, 1.0), bound)
        too_big = (xv > math.log(prec.result.max) - 1e-9) | (xv > prec.x.max) | (xv < prec.x.min)
        return np.where(too_big, np.inf, bound)


_LOG2E_EXACT = Fraction(const_raw("log2e", 160), 1 << 160)


def _check_table_format(fmt: QFormat, what: str) -> None:
    if fmt.int_bits < 1:
        raise FormatError(f"{what} {fmt} cannot hold table entries in [1, 2); it needs at least "
                          "one integer bit (e.g. UQ1.39)")


# -------------------------------------------------------------------- error report --
def _as_lut(config) -> LutExp:
    if isinstance(config, LutExp):
        return config
    if isinstance(config, dict):
        return LutExp(**config)
    if isinstance(config, (tuple, list)):
        return LutExp(chunk_bits=tuple(config))
    raise FixedQMCError("config must be a LutExp, a dict of its arguments or chunk bits, "
                        f"got {config!r}")


def _exact_rel_errors(x_exact: list, approx: list) -> np.ndarray:
    """|approx/exp(x) - 1| for exact Decimal inputs and outputs (40 significant digits)."""
    out = np.empty(len(x_exact))
    with localcontext() as ctx:
        ctx.prec = 40
        for i, (xe, a) in enumerate(zip(x_exact, approx)):
            ref = xe.exp()
            out[i] = float(abs(a - ref) / ref)
    return out


def lut_exp_error(config=None, x_range=(-20.0, 5.0), n: int = 20000, precision="float64", *,
                  seed: int = 0, quantized_inputs: bool = True) -> dict:
    """Measured maximum relative error of a LUT exponential, with its a-priori bound.

    Samples ``n // 2`` evenly spaced and ``n - n // 2`` uniform random points (``seed``) of
    ``x_range``; each result is compared with the exact exponential of its input (Decimal
    ``exp`` to 40 digits, so the figures are exact to several digits even for 64-bit words).

    Parameters
    ----------
    config : LutExp, dict of LutExp arguments, or chunk bits (default: the seed's LutExp())
    x_range : (float, float)
    n : int
        Number of sample points.
    precision : see :meth:`LutExp.evaluate`
    quantized_inputs : bool
        If True (default) samples are first rounded to the input type (float32 / x_format),
        so the figures measure the exponential on its input grid; if False the error also
        contains the input quantization (and so does the bound).

    Returns
    -------
    dict with keys ``chunk_bits, residual, table_format, words, precision, x_min, x_max, n,
    max_rel_error, x_at_max, mean_rel_error, bound, within_bound, n_underflow, n_overflow``
    (max/mean/bound over the samples whose result is neither flushed nor overflowed).
    """
    lut = _as_lut(LutExp() if config is None else config)
    prec = lut._precision(precision)
    lo, hi = float(x_range[0]), float(x_range[1])
    rng = np.random.default_rng(seed)
    x = np.concatenate([np.linspace(lo, hi, n // 2), rng.uniform(lo, hi, n - n // 2)])
    with localcontext() as ctx:
        ctx.prec = 60
        if isinstance(prec, str):
            if quantized_inputs and prec == "float32":
                x = x.astype(np.float32).astype(np.float64)
            xin = x
            res = lut.evaluate(x, prec).astype(np.float64)
            xe = [Decimal(float(v)) for v in x]
            ae = [Decimal(float(v)) if np.isfinite(v) else Decimal(0) for v in res]
            underflow = res == 0
            label = prec
        else:
            if quantized_inputs:
                xin = Fixed.from_float(x, prec.x, "half_even", "saturate", log=OverflowLog())
                scale = Decimal(2) ** -prec.x.frac_bits
                xe = [Decimal(v) * scale for v in xin.to_ints()]
            else:
                xin = x
                xe = [Decimal(float(v)) for v in x]
            res = lut._evaluate_fixed(xin, prec, OverflowLog())
            scale = Decimal(2) ** -prec.result.frac_bits
            ae = [Decimal(v) * scale for v in res.to_ints()]
            underflow = res.raw == 0
            label = prec.describe()
    bound = lut.error_bound(xin, prec, exact_input=quantized_inputs)
    overflow = ~np.isfinite(bound)
    rel = _exact_rel_errors(xe, ae)
    ok = ~(overflow | underflow)
    within = bool(np.all(rel[ok] <= bound[ok])) and bool(np.all(rel[underflow & ~overflow] <= 1.0))
    i = int(np.argmax(np.where(ok, rel, -1.0))) if ok.any() else 0
    return {
        "chunk_bits": lut.chunk_bits,
        "residual": lut.residual,
        "table_format": lut.table_format,
        "words": lut.words,
        "precision": label,
        "x_min": lo,
        "x_max": hi,
        "n": int(x.size),
        "max_rel_error": float(rel[ok].max()) if ok.any() else float("nan"),
        "x_at_max": float(x[i]),
        "mean_rel_error": float(rel[ok].mean()) if ok.any() else float("nan"),
        "bound": float(bound[ok].max()) if ok.any() else float("nan"),
        "within_bound": within,
        "n_underflow": int(underflow.sum()),
        "n_overflow": int(overflow.sum()),
    }
