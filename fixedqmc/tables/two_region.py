"""Two-region quadratic interpolation tables in s = r**2 (float side).

HAQMC (seed 002), Sec. 3 "Kernel 1-3" and Appendix "Part 1": a pair function f(r) (potential,
trial wave function, kinetic term) is tabulated as a function of the squared distance
``s = r**2`` so that the hardware never takes a square root; the s range is split at ``sigma``
into region I ``[s_min, sigma)`` and region II ``[sigma, s_max]``; in each region the (possibly
transformed) function is rescaled to ``[0, 1]`` and approximated per bin by a quadratic
``g(u) ~= a + u*(b + u*c)``, ``u`` in ``[0, 1)`` the position inside the bin.

Units: ``s``, ``s_min``, ``sigma``, ``s_max`` are squared lengths in the caller's length unit
(angstrom**2 for helium); ``offset`` and ``scale`` are in the units of the transformed value
``F`` (f's unit for ``transform="none"``, dimensionless for ``"exp"``); coefficients are
dimensionless (rescaled units, per unit of ``u``).

Bin layout (the fixed-point index is read straight off the bits of ``t``):

* Region I: ``t = (s - s_min) / (sigma - s_min)`` in ``[0, 1)``; ``n1`` uniform bins (a power
  of two, default 256 as in HAQMC); bin ``k = floor(t*n1)``, ``u = t*n1 - k``.
* Region II: ``t = (s - sigma) / (s_max - sigma)`` in ``[0, 1)``; ``n_seg`` power-of-two
  segments (default 21) of ``n_bin`` uniform bins each (default 64; 21*64 = 1344 entries as in
  HAQMC).  Segment ``j < n_seg-1`` covers ``t`` in ``[2**-(j+1), 2**-j)`` with
  ``w = (t - 2**-(j+1)) * 2**(j+1)``; the last segment covers ``[0, 2**-(n_seg-1))`` with
  ``w = t * 2**(n_seg-1)`` (a "denormal" range).  ``m = floor(w*n_bin)``, ``u = w*n_bin - m``,
  flat index ``j*n_bin + m``: for a fixed-point ``t`` the segment is the leading-zero count and
  ``m`` the ``log2(n_bin)`` bits after the leading one.

Transforms (HAQMC Sec. 4, accumulator configurations): ``"none"`` tabulates ``F = f``;
``"exp"`` tabulates ``F = exp(f)``, for a region whose pair sum ``sum_ij f(r_ij)`` is to be
accumulated in hardware as the product ``prod_ij exp(f(r_ij))`` (region II of the potential;
the wave function ``psi = exp(T2)`` in both regions).  The rescaled value is
``g = (F - offset) / scale`` with ``offset = min F`` and ``scale = max F - min F`` over the
region (``scale = 1`` for a constant region), so ``g`` lies in ``[0, 1]`` to within the dense
sampling used to find the extremes.

Quantization (:func:`quantize_table`, ``coef_format``) rounds every coefficient to the
format's step ``LSB = 2**-frac_bits``, which moves ``g`` by up to ``1.5 LSB``.  A format
*loses the fit* (:func:`quantization_loss`) when, in either region, the quantized table's
largest measured error in f units, ``E_q = max |f_table - f|`` over ``LOSSY_SAMPLES`` points
per bin, exceeds both

* ``LOSSY_FACTOR`` (10) times ``E_fit``, the same error of the unquantized fit: the format,
  not the bin layout, then decides the error; and
* ``LOSSY_REL`` (1 %) of the region's range of f, ``max f - min f`` over those points: the
  error is then large on the scale of the function itself,

or when ``E_q`` is not finite (an ``"exp"`` region whose interpolated ``F`` reaches ``<= 0``).
Both conditions are needed: a coarse layout whose float fit is already poor is not the
format's fault, and a format 1000 times coarser than a very good fit can still be far below
the function's scale (``Q1.16``, an 18-bit word: about ``2e-5`` of the range of a
``"none"`` region).  All b and c coefficients of a region rounding to 0 (a piecewise-constant
table) is the extreme case.  :func:`build_table` refuses such a format with a
:class:`LossyTableError` naming the measured errors and the narrowest wider format (same
signedness and integer bits) that keeps the fit, unless ``allow_lossy=True``, which builds
the table and emits a :class:`LossyTableWarning` instead.
"""

from __future__ import annotations

import math
import warnings
from dataclasses import dataclass, replace
from functools import cached_property
from typing import Callable, Mapping

import numpy as np
from scipy.optimize import brentq, minimize_scalar

from fixedqmc.errors import FixedOverflowError, FixedQMCError
from fixedqmc.numerics.fixed import Fixed
from fixedqmc.numerics.qformat import MAX_FRAC_BITS, MAX_WORD_BITS, QFormat

DEFAULT_N1 = 256
DEFAULT_N_SEG = 21
DEFAULT_N_BIN = 64
TRANSFORMS = ("none", "exp")
SIGMA_RULES = ("zero", "max", "sign_change")
COEF_NAMES = ("a1", "b1", "c1", "a2", "b2", "c2")
REGIONS = (1, 2)

FIT_POINTS = 129  # samples per bin for the minimax fit, u = j/128
SIGMA_GRID = 4097  # r samples bracketing the root / maximum that defines sigma
REMEZ_ITERATIONS = 12
MAX_SEGMENTS = 64  # region II segments: one per leading-zero count of a 64-bit t
LOSSY_FACTOR = 10.0  # a format loses the fit above this many times the float fit's error ...
LOSSY_REL = 0.01  # ... and above this fraction of the region's range of f (module docstring)
LOSSY_SAMPLES = 32  # measurement points per bin for the loss, u = (i + 1/2) / LOSSY_SAMPLES

_ONE_BELOW = float(np.nextafter(1.0, 0.0))
_CHEB_REF = np.array([0.0, 0.25, 0.75, 1.0])  # extrema of T3 mapped to [0, 1]
_ALTERNATING = np.array([1.0, -1.0, 1.0, -1.0])

PairFunction = Callable[[np.ndarray], np.ndarray]


class TableError(FixedQMCError):
    """An invalid table argument, table file or function value (a ``ValueError``)."""


class LossyTableError(TableError):
    """A coefficient format that loses the fit (module docstring); ``loss`` is the
    :class:`QuantizationLoss` measured, or None."""

    def __init__(self, message: str, loss: "QuantizationLoss | None" = None):
        super().__init__(message)
        self.loss = loss


class LossyTableWarning(UserWarning):
    """A table built with ``allow_lossy=True`` whose coefficient format loses the fit;
    ``loss`` is the :class:`QuantizationLoss` measured, or None."""

    def __init__(self, message: str, loss: "QuantizationLoss | None" = None):
        super().__init__(message)
        self.loss = loss


# ------------------------------------------------------------------------ validation --
def check_power_of_two(name: str, n) -> int:
    """``n`` as an int if it is a power of two >= 1, else a :class:`TableError` naming it."""
    if isinstance(n, bool) or not isinstance(n, (int, np.integer)) or n < 1 or n & (n - 1):
        raise TableError(f"{name} must be a power of two >= 1, got {n!r}")
    return int(n)


def check_segments(n_seg) -> int:
    """``n_seg`` as an int in ``1..MAX_SEGMENTS``, else a :class:`TableError`."""
    if isinstance(n_seg, bool) or not isinstance(n_seg, (int, np.integer)) \
            or not 1 <= n_seg <= MAX_SEGMENTS:
        raise TableError(f"n_seg must be an integer in 1..{MAX_SEGMENTS}, got {n_seg!r}")
    return int(n_seg)


def _finite(name: str, x) -> float:
    try:
        v = float(x)
    except (TypeError, ValueError):
        raise TableError(f"{name} must be a real number, got {x!r}") from None
    if not math.isfinite(v):
        raise TableError(f"{name} must be finite, got {x!r}")
    return v


def _check_range(s_min, sigma, s_max) -> tuple[float, float, float]:
    s_min, s_max = _finite("s_min", s_min), _finite("s_max", s_max)
    if s_min < 0:
        raise TableError(f"s_min = r_min**2 must be >= 0, got {s_min!r}")
    if not s_min < s_max:
        raise TableError(f"s_min must be < s_max, got s_min={s_min!r}, s_max={s_max!r}")
    if sigma is None:
        return s_min, float("nan"), s_max
    sigma = _finite("sigma", sigma)
    if not s_min < sigma < s_max:
        raise TableError(f"sigma must lie strictly inside (s_min, s_max) = ({s_min!r}, {s_max!r}) "
                         f"so that both regions are non-empty, got sigma={sigma!r}")
    return s_min, sigma, s_max


def _check_transform(transform) -> tuple[str, str]:
    pair = (transform, transform) if isinstance(transform, str) else tuple(transform)
    if len(pair) != 2 or any(t not in TRANSFORMS for t in pair):
        raise TableError(f"transform must be one of {TRANSFORMS} or a pair of them "
                         f"(region I, region II), got {transform!r}")
    return pair


def _check_format(coef_format) -> QFormat:
    try:
        return QFormat.parse(coef_format)
    except FixedQMCError as err:
        raise TableError(f"coef_format: {err}") from err


# ------------------------------------------------------------------------ bin layout --
def region1_spans(s_min: float, sigma: float, n1: int) -> tuple[np.ndarray, np.ndarray]:
    """Start ``s0`` and width ``ds`` (shape ``(n1,)``) of the region I bins: ``s = s0 + u*ds``."""
    edges = s_min + (sigma - s_min) * (np.arange(n1 + 1) / n1)
    return edges[:-1], np.diff(edges)


def region2_spans(sigma: float, s_max: float, n_seg: int,
                  n_bin: int) -> tuple[np.ndarray, np.ndarray]:
    """Start ``s0`` and width ``ds`` (shape ``(n_seg*n_bin,)``) of the region II bins, in the
    flat order ``j*n_bin + m`` (segment ``j``, bin ``m``; see the module docstring)."""
    j = np.repeat(np.arange(n_seg), n_bin)
    m = np.tile(np.arange(n_bin), n_seg)
    last = j == n_seg - 1
    width = np.ldexp(1.0, -np.where(last, n_seg - 1, j + 1))  # t width of the segment
    t0 = np.where(last, 0.0, width) + m * width / n_bin
    return sigma + (s_max - sigma) * t0, (s_max - sigma) * width / n_bin


def locate_region1(s, s_min: float, sigma: float, n1: int) -> tuple[np.ndarray, np.ndarray]:
    """Bin index (int64) and ``u`` in ``[0, 1)`` of region I points; ``t`` is clamped to
    ``[0, 1)``."""
    t = np.clip((np.asarray(s, np.float64) - s_min) / (sigma - s_min), 0.0, _ONE_BELOW)
    x = t * n1
    k = np.minimum(np.floor(x), n1 - 1)
    return k.astype(np.int64), x - k


def locate_region2(s, sigma: float, s_max: float, n_seg: int,
                   n_bin: int) -> tuple[np.ndarray, np.ndarray]:
    """Flat bin index ``j*n_bin + m`` (int64) and ``u`` in ``[0, 1)`` of region II points;
    ``t`` is clamped to ``[0, 1)``.  The segment is read from the binary exponent of ``t``
    (``np.frexp``), exactly as a leading-zero count on a fixed-point ``t``."""
    t = np.clip((np.asarray(s, np.float64) - sigma) / (s_max - sigma), 0.0, _ONE_BELOW)
    mant, exp = np.frexp(t)  # t = mant * 2**exp, mant in [1/2, 1): t in [2**-(j+1), 2**-j), j=-exp
    last = t < math.ldexp(1.0, -(n_seg - 1))
    j = np.where(last, n_seg - 1, -exp)
    w = np.where(last, t * 2.0 ** (n_seg - 1), 2.0 * mant - 1.0)
    x = w * n_bin
    m = np.minimum(np.floor(x), n_bin - 1)
    return (j * n_bin + m).astype(np.int64), x - m


# ---------------------------------------------------------------------------- table --
@dataclass(frozen=True, eq=False, repr=False)
class TwoRegionTable:
    """A two-region quadratic interpolation table of a pair function (HAQMC, seed 002, Sec. 3).

    Fields
    ------
    name : str
        Function name (goes into the coefficient files' sidecar).
    s_min, sigma, s_max : float
        Table range and region split, in squared length units (``s = r**2``).
    transform : (str, str)
        Per region (I, II): ``"none"`` (``F = f``) or ``"exp"`` (``F = exp(f)``, for a sum
        over pairs accumulated as a product; see the module docstring).
    offset, scale : (float, float)
        Per region: the table holds ``g = (F - offset) / scale`` in ``[0, 1]``; F's units.
    n1 : int
        Region I bins (power of two).
    n_seg : int
        Region II power-of-two segments (1..64).
    n_bin : int
        Region II bins per segment (power of two).
    a1, b1, c1 : ndarray, float64, shape ``(n1,)``
        Region I coefficients: ``g(u) ~= a + u*(b + u*c)``, ``u`` in ``[0, 1)``.
    a2, b2, c2 : ndarray, float64, shape ``(n_seg*n_bin,)``
        Region II coefficients, flat index ``j*n_bin + m``.
    coef_format : str or None
        Q format of the quantized coefficients (e.g. ``"Q2.30"``), or None for a float table.
    quantized : mapping name -> Fixed, or None
        With ``coef_format``: the quantized coefficients keyed ``"a1" ... "c2"``; the float
        arrays ``a1 ... c2`` are then their values (``Fixed.to_float``), which
        :meth:`evaluate` uses.

    Arrays are stored read-only; two tables compare equal when every field is bit-identical.
    """

    name: str
    s_min: float
    sigma: float
    s_max: float
    transform: tuple
    offset: tuple
    scale: tuple
    n1: int
    n_seg: int
    n_bin: int
    a1: np.ndarray
    b1: np.ndarray
    c1: np.ndarray
    a2: np.ndarray
    b2: np.ndarray
    c2: np.ndarray
    coef_format: str | None = None
    quantized: Mapping[str, Fixed] | None = None

    def __post_init__(self) -> None:
        self._set("name", str(self.name))
        for key, value in zip(("s_min", "sigma", "s_max"),
                              _check_range(self.s_min, self.sigma, self.s_max)):
            self._set(key, value)
        self._set("transform", _check_transform(self.transform))
        self._set("n1", check_power_of_two("n1", self.n1))
        self._set("n_seg", check_segments(self.n_seg))
        self._set("n_bin", check_power_of_two("n_bin", self.n_bin))
        for key in ("offset", "scale"):
            pair = tuple(_finite(f"{key}[{i}]", v) for i, v in enumerate(getattr(self, key)))
            if len(pair) != 2:
                raise TableError(f"{key} must hold two values (region I, region II), got {pair!r}")
            self._set(key, pair)
        if min(self.scale) <= 0:
            raise TableError(f"scale must be > 0 in both regions, got {self.scale!r}")
        for key in COEF_NAMES:
            self._set(key, self._coefficient_array(key))
        self._check_quantized()

    def _set(self, key: str, value) -> None:
        object.__setattr__(self, key, value)  # normalising fields of a frozen dataclass

    def _coefficient_array(self, key: str) -> np.ndarray:
        size = self.n1 if key.endswith("1") else self.n2
        arr = np.array(getattr(self, key), dtype=np.float64, copy=True)
        if arr.shape != (size,):
            raise TableError(f"coefficient {key} must have shape ({size},), got {arr.shape}")
        if not np.isfinite(arr).all():
            raise TableError(f"coefficient {key} holds a non-finite value at index "
                             f"{int(np.argmin(np.isfinite(arr)))}")
        arr.flags.writeable = False
        return arr

    def _check_quantized(self) -> None:
        if self.coef_format is None:
            if self.quantized is not None:
                raise TableError("quantized coefficients given without coef_format")
            return
        fmt = _check_format(self.coef_format)
        self._set("coef_format", str(fmt))
        q = dict(self.quantized or {})
        if sorted(q) != sorted(COEF_NAMES):
            raise TableError(f"coef_format {fmt} needs quantized coefficients {COEF_NAMES}, "
                             f"got keys {sorted(q)}")
        for key in COEF_NAMES:
            fx = q[key]
            if not isinstance(fx, Fixed) or fx.fmt != fmt:
                raise TableError(f"quantized[{key!r}] must be a Fixed array in {fmt}")
            if not _bit_equal(fx.to_float(), getattr(self, key)):
                raise TableError(f"coefficient {key} differs from the value of quantized[{key!r}]")
        self._set("quantized", q)

    # -- layout -------------------------------------------------------------------------
    @property
    def n2(self) -> int:
        """Region II entries, ``n_seg * n_bin``."""
        return self.n_seg * self.n_bin

    def n_bins(self, region: int) -> int:
        """Bins in region 1 (I) or 2 (II)."""
        return self.n1 if _region(region) == 1 else self.n2

    def coefficients(self, region: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """``(a, b, c)`` of region 1 (I) or 2 (II), rescaled units."""
        return (self.a1, self.b1, self.c1) if _region(region) == 1 else (self.a2, self.b2, self.c2)

    def bin_spans(self, region: int) -> tuple[np.ndarray, np.ndarray]:
        """Start ``s0`` and width ``ds`` of each bin of a region; ``s = s0 + u*ds``."""
        if _region(region) == 1:
            return region1_spans(self.s_min, self.sigma, self.n1)
        return region2_spans(self.sigma, self.s_max, self.n_seg, self.n_bin)

    @cached_property
    def _stacked(self) -> np.ndarray:
        # (3, n1 + n2): region II entries follow region I
        return np.stack([np.concatenate([self.a1, self.a2]), np.concatenate([self.b1, self.b2]),
                         np.concatenate([self.c1, self.c2])])

    # -- evaluation ---------------------------------------------------------------------
    def locate(self, s) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """Region (int8: 1 for ``s < sigma``, else 2), bin index within the region (int64) and
        ``u`` in ``[0, 1)`` (float64) for each ``s`` (any shape).  ``s`` outside
        ``[s_min, s_max]`` is clamped to the nearest end (located as s_min or s_max)."""
        s = np.asarray(s, dtype=np.float64)
        if not np.isfinite(s).all():
            raise TableError("s must be finite; got non-finite values")
        s = np.clip(s, self.s_min, self.s_max)
        k1, u1 = locate_region1(s, self.s_min, self.sigma, self.n1)
        k2, u2 = locate_region2(s, self.sigma, self.s_max, self.n_seg, self.n_bin)
        first = s < self.sigma
        region = np.where(first, 1, 2).astype(np.int8)
        return region, np.where(first, k1, k2), np.where(first, u1, u2)

    def interpolate(self, s) -> tuple[np.ndarray, np.ndarray]:
        """Region (int8) and the interpolated rescaled value ``g`` (float64) at each ``s``."""
        region, index, u = self.locate(s)
        a, b, c = self._stacked[:, index + (region == 2) * self.n1]
        return region, a + u * (b + u * c)

    @cached_property
    def _is_exp(self) -> np.ndarray:
        return np.array([t == "exp" for t in self.transform])

    def unscale(self, region, g) -> np.ndarray:
        """f from rescaled ``g`` (``region`` 1 or 2 per element): ``F = offset + scale*g``,
        ``f = F``, or ``log(F)`` for ``"exp"`` (NaN where an interpolated F is <= 0)."""
        i = np.asarray(region) - 1
        is_exp = self._is_exp[i]
        big_f = np.asarray(self.offset)[i] + np.asarray(self.scale)[i] * g
        with np.errstate(divide="ignore", invalid="ignore"):
            return np.where(is_exp, np.log(np.where(is_exp, big_f, 1.0)), big_f)

    def rescale(self, region, f) -> np.ndarray:
        """Rescaled ``g = (F - offset)/scale`` of function values ``f`` (inverse of
        :meth:`unscale`)."""
        i = np.asarray(region) - 1
        is_exp = self._is_exp[i]
        with np.errstate(over="ignore"):
            big_f = np.where(is_exp, np.exp(np.where(is_exp, f, 0.0)), f)
        return (big_f - np.asarray(self.offset)[i]) / np.asarray(self.scale)[i]

    def evaluate(self, s) -> np.ndarray:
        """Interpolated f at squared distances ``s`` (any shape; float64, f's units), with the
        rescaling and transform undone; ``s`` outside ``[s_min, s_max]`` is clamped."""
        region, g = self.interpolate(s)
        return self.unscale(region, g)

    # -- comparison ---------------------------------------------------------------------
    def __eq__(self, other) -> bool:
        if not isinstance(other, TwoRegionTable):
            return NotImplemented
        scalars = ("name", "s_min", "sigma", "s_max", "transform", "offset", "scale", "n1",
                   "n_seg", "n_bin", "coef_format")
        if any(not _bit_equal(getattr(self, k), getattr(other, k)) for k in scalars):
            return False
        if not all(_bit_equal(getattr(self, k), getattr(other, k)) for k in COEF_NAMES):
            return False
        if self.quantized is None:
            return True
        return all(_bit_equal(self.quantized[k].raw, other.quantized[k].raw) for k in COEF_NAMES)

    __hash__ = None

    def __repr__(self) -> str:
        q = f", coef_format={self.coef_format!r}" if self.coef_format else ""
        return (f"TwoRegionTable(name={self.name!r}, s_min={self.s_min!r}, sigma={self.sigma!r}, "
                f"s_max={self.s_max!r}, transform={self.transform!r}, n1={self.n1}, "
                f"n_seg={self.n_seg}, n_bin={self.n_bin}{q})")


def _region(region) -> int:
    if region not in REGIONS:
        raise TableError(f"region must be 1 (I) or 2 (II), got {region!r}")
    return int(region)


def _bit_equal(x, y) -> bool:
    """Exact equality; float arrays and scalars compare bit patterns (so -0.0 != 0.0)."""
    if isinstance(x, (np.ndarray, float)) or isinstance(y, (np.ndarray, float)):
        x, y = np.asarray(x), np.asarray(y)
        if x.dtype != y.dtype or x.shape != y.shape:
            return False
        if x.dtype.kind == "f":
            return bool(np.array_equal(x.view(np.uint64), y.view(np.uint64)))
        return bool(np.array_equal(x, y))
    if isinstance(x, tuple) and isinstance(y, tuple):
        return len(x) == len(y) and all(_bit_equal(a, b) for a, b in zip(x, y))
    return x == y


# ------------------------------------------------------------------------- sampling --
def sample_transformed(func: PairFunction, s: np.ndarray, transform: str) -> np.ndarray:
    """``F = f(sqrt(s))`` or ``exp(f(sqrt(s)))`` for ``transform="exp"``, same shape as ``s``.

    ``func`` must be vectorised in r; non-finite values raise a :class:`TableError` naming the
    first offending r."""
    s = np.asarray(s, dtype=np.float64)
    r = np.sqrt(s)
    f = np.asarray(func(r), dtype=np.float64)
    if f.shape != r.shape:
        raise TableError(f"func must be vectorised: func(r) for r of shape {r.shape} returned "
                         f"shape {f.shape}")
    with np.errstate(over="ignore"):
        big_f = np.exp(f) if transform == "exp" else f
    bad = ~np.isfinite(big_f)
    if bad.any():
        i = int(np.argmax(bad.ravel()))
        why = " (exp transform overflows)" if np.isfinite(f.ravel()[i]) else ""
        raise TableError(f"func returned a non-finite value{why}: f(r={float(r.ravel()[i])!r}) "
                         f"= {float(f.ravel()[i])!r} at s = {float(s.ravel()[i])!r}")
    return big_f


def bin_grid(s0: np.ndarray, ds: np.ndarray, points: int) -> tuple[np.ndarray, np.ndarray]:
    """``u = linspace(0, 1, points)`` and the matching ``s`` grid, shape ``(bins, points)``."""
    u = np.linspace(0.0, 1.0, points)
    return u, s0[:, None] + ds[:, None] * u


# --------------------------------------------------------------------- minimax fit ---
def minimax_quadratic(g, max_iter: int = REMEZ_ITERATIONS):
    """Per-row minimax quadratic ``a + u*(b + u*c)`` to samples ``g`` (shape ``(bins, M)``,
    at ``u = j/(M-1)``, M >= 4), by the Remez exchange on that grid, vectorised over rows.

    Starts from the reference ``u = {0, 1/4, 3/4, 1}`` (extrema of the Chebyshev polynomial
    T3; exact for a cubic), then solves the levelled system and exchanges to the signed error
    extrema until the reference stops moving.  Returns ``a, b, c, err`` with ``err`` the
    largest absolute error on the grid (per row, the best iterate kept).
    """
    g = np.asarray(g, dtype=np.float64)
    n, m_pts = g.shape
    if m_pts < 4:
        raise TableError(f"minimax_quadratic needs at least 4 samples per bin, got {m_pts}")
    u = np.linspace(0.0, 1.0, m_pts)
    ref = np.tile(np.round(_CHEB_REF * (m_pts - 1)).astype(np.int64), (n, 1))
    coef, best = np.zeros((n, 3)), np.full(n, np.inf)
    rows = np.arange(n)
    for _ in range(max_iter):
        p, level = _levelled_solve(u, g[rows], ref[rows])
        err = g[rows] - _poly(p, u)
        emax = np.abs(err).max(axis=1)
        better = emax < best[rows]
        coef[rows[better]], best[rows[better]] = p[better], emax[better]
        new_ref, ok = _exchange(err)
        moved = ok & (new_ref != ref[rows]).any(axis=1) & (emax > np.abs(level) * (1 + 1e-12))
        ref[rows[moved]] = new_ref[moved]
        rows = rows[moved]
        if rows.size == 0:
            break
    return coef[:, 0], coef[:, 1], coef[:, 2], best


def _poly(p: np.ndarray, u: np.ndarray) -> np.ndarray:
    return p[:, :1] + u * (p[:, 1:2] + u * p[:, 2:3])


def _levelled_solve(u, g, ref):
    """Solve ``a + b x_i + c x_i**2 + (-1)**i E = g(x_i)`` at the 4 reference points."""
    x = u[ref]
    lhs = np.stack([np.ones_like(x), x, x * x, np.broadcast_to(_ALTERNATING, x.shape)], axis=-1)
    sol = np.linalg.solve(lhs, np.take_along_axis(g, ref, axis=1)[..., None])[..., 0]
    return sol[:, :3], sol[:, 3]


def _exchange(err: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """New 4-point references: the |err| maxima of 4 consecutive constant-sign runs (the window
    holding the global maximum with the largest smallest extremum).  ``ok`` is False for rows
    with fewer than 4 runs (converged to rounding noise or exactly quadratic)."""
    n, m_pts = err.shape
    arg, vals, counts = _run_extrema(err)
    first = np.cumsum(counts) - counts
    start = first.copy()
    for r in np.flatnonzero(counts > 4):
        start[r] += _best_window(vals[first[r]:first[r] + counts[r]])
    ok = counts >= 4
    ref = np.zeros((n, 4), np.int64)
    ref[ok] = arg[start[ok, None] + np.arange(4)] - np.flatnonzero(ok)[:, None] * m_pts
    return ref, ok


def _run_extrema(err: np.ndarray):
    """Flat position and value of max |err| in every run of constant sign, and runs per row."""
    n, m_pts = err.shape
    positive = err >= 0
    new_run = np.ones((n, m_pts), bool)
    new_run[:, 1:] = positive[:, 1:] != positive[:, :-1]
    starts = np.flatnonzero(new_run.ravel())
    mag = np.abs(err).ravel()
    vals = np.maximum.reduceat(mag, starts)
    lengths = np.diff(np.append(starts, mag.size))
    pos = np.where(mag == np.repeat(vals, lengths), np.arange(mag.size), mag.size)
    return np.minimum.reduceat(pos, starts), vals, new_run.sum(axis=1)


def _best_window(vals: np.ndarray) -> int:
    top = int(np.argmax(vals))
    starts = range(max(0, top - 3), min(top, len(vals) - 4) + 1)
    return max(starts, key=lambda i: vals[i:i + 4].min())


def fit_region(func: PairFunction, s0: np.ndarray, ds: np.ndarray, transform: str):
    """Fit one region: returns ``offset, scale, a, b, c`` (see :class:`TwoRegionTable`)."""
    _, s = bin_grid(s0, ds, FIT_POINTS)
    big_f = sample_transformed(func, s, transform)
    lo, hi = float(big_f.min()), float(big_f.max())
    scale = hi - lo if hi > lo else 1.0
    a, b, c, _ = minimax_quadratic((big_f - lo) / scale)
    return lo, scale, a, b, c


# ---------------------------------------------------------------------------- sigma --
def find_sigma(func: PairFunction, s_min: float, s_max: float, rule: str) -> float:
    """Region split ``sigma`` (in s) by the HAQMC rules (seed 002, Sec. 3):

    * ``"zero"``: first root of f in r (potential, kernel 1): a sign change on a grid of
      ``SIGMA_GRID`` points in r refined with ``brentq``, or a sampled exact zero;
    * ``"max"``: interior maximum of f (wave function, kernel 2), refined with bounded
      ``minimize_scalar`` around the grid maximum;
    * ``"sign_change"``: first strict sign change of f (kinetic term, kernel 3).
    """
    if rule not in SIGMA_RULES:
        raise TableError(f"sigma must be a number (in s = r**2) or one of {SIGMA_RULES}, "
                         f"got {rule!r}")
    s_min, _, s_max = _check_range(s_min, None, s_max)
    r = np.linspace(math.sqrt(s_min), math.sqrt(s_max), SIGMA_GRID)
    f = sample_transformed(func, r * r, "none")
    if rule == "max":
        r_star = _maximum(func, r, f)
    else:
        r_star = _first_root(func, r, f, strict=rule == "sign_change", rule=rule)
    return r_star * r_star


def _scalar(func: PairFunction) -> Callable[[float], float]:
    return lambda x: float(np.asarray(func(np.array([x])), dtype=np.float64)[0])


def _first_root(func, r, f, strict: bool, rule: str) -> float:
    crossing = np.flatnonzero(np.sign(f[:-1]) * np.sign(f[1:]) < 0)
    zeros = np.array([], np.int64) if strict else np.flatnonzero(f == 0)
    if crossing.size == 0 and zeros.size == 0:
        raise TableError(f"sigma={rule!r}: f has no {'sign change' if strict else 'root'} for r in "
                         f"[{r[0]!r}, {r[-1]!r}]; pass sigma as a number instead")
    if zeros.size and (crossing.size == 0 or zeros[0] <= crossing[0]):
        return float(r[zeros[0]])
    i = int(crossing[0])
    return brentq(_scalar(func), r[i], r[i + 1], xtol=1e-15, rtol=4 * np.finfo(float).eps)


def _maximum(func, r, f) -> float:
    i = int(np.argmax(f))
    if i in (0, len(r) - 1):
        raise TableError(f"sigma='max': f has no interior maximum for r in [{r[0]!r}, {r[-1]!r}] "
                         f"(largest value at r = {r[i]!r}); pass sigma as a number instead")
    neg = _scalar(func)
    res = minimize_scalar(lambda x: -neg(x), bounds=(r[i - 1], r[i + 1]), method="bounded",
                          options={"xatol": 1e-12 * r[i]})
    return float(res.x) if -res.fun >= f[i] else float(r[i])


# -------------------------------------------------------------------------- builder --
def build_table(func: PairFunction, s_min: float, s_max: float, sigma,
                n1: int = DEFAULT_N1, n_seg: int = DEFAULT_N_SEG, n_bin: int = DEFAULT_N_BIN,
                transform=("none", "none"), coef_format=None, name: str | None = None,
                allow_lossy: bool = False) -> TwoRegionTable:
    """Build a two-region table of ``func`` (HAQMC, seed 002, Sec. 3 and Appendix Part 1).

    Parameters
    ----------
    func : callable
        Vectorised pair function ``f(r)`` of the distance r (not of s).
    s_min, s_max : float
        Table range in ``s = r**2``, ``0 <= s_min < s_max``.
    sigma : float or {"zero", "max", "sign_change"}
        Region split in s, or the rule to find it (see :func:`find_sigma`).
    n1, n_seg, n_bin : int
        Bin layout (module docstring): n1 and n_bin powers of two, n_seg in 1..64.
    transform : str or (str, str)
        ``"none"`` or ``"exp"`` per region (I, II).
    coef_format : str or None
        If given (e.g. ``"Q2.30"``), the coefficients are quantized to it with round-half-even
        (see :func:`quantize_table`) and the result is checked against ``func``: a format that
        loses the fit (module docstring, :func:`quantization_loss`) raises a
        :class:`LossyTableError` naming the measured error and a wider format that keeps it.
    name : str, optional
        Defaults to ``func.__name__``.
    allow_lossy : bool
        Build a table whose format loses the fit anyway, with a :class:`LossyTableWarning`
        stating the measured error, instead of raising.
    """
    s_min, _, s_max = _check_range(s_min, None, s_max)
    n1, n_seg, n_bin = check_power_of_two("n1", n1), check_segments(n_seg), \
        check_power_of_two("n_bin", n_bin)
    transform = _check_transform(transform)
    fmt = None if coef_format is None else _check_format(coef_format)
    if isinstance(sigma, str):
        sigma = find_sigma(func, s_min, s_max, sigma)
    s_min, sigma, s_max = _check_range(s_min, sigma, s_max)
    fits = [fit_region(func, *spans, t) for spans, t in
            zip((region1_spans(s_min, sigma, n1), region2_spans(sigma, s_max, n_seg, n_bin)),
                transform)]
    (o1, k1, a1, b1, c1), (o2, k2, a2, b2, c2) = fits
    table = TwoRegionTable(name=name or getattr(func, "__name__", "table"), s_min=s_min,
                           sigma=sigma, s_max=s_max, transform=transform, offset=(o1, o2),
                           scale=(k1, k2), n1=n1, n_seg=n_seg, n_bin=n_bin,
                           a1=a1, b1=b1, c1=c1, a2=a2, b2=b2, c2=c2)
    if fmt is None:
        return table
    return quantize_table(table, fmt, func=func, allow_lossy=allow_lossy)


# --------------------------------------------------------------------- quantization --
def quantize_table(table: TwoRegionTable, coef_format, func: PairFunction | None = None,
                   allow_lossy: bool = False) -> TwoRegionTable:
    """The table with its float coefficients rounded (half-even) into ``coef_format``.

    Raises a :class:`TableError` naming the first coefficient the format cannot hold (no
    saturation), or if the table is already quantized.  With ``func`` (the tabulated f(r))
    the result is checked as in :func:`build_table`: a format that loses the fit of
    ``table`` (module docstring) raises a :class:`LossyTableError`, or with
    ``allow_lossy=True`` emits a :class:`LossyTableWarning`.  Without ``func`` nothing is
    measured (error sweeps quantize to every width on purpose).
    """
    if table.coef_format is not None:
        raise TableError(f"table is already quantized to {table.coef_format}; quantize the "
                         "float table instead")
    fmt = _check_format(coef_format)
    quantized = {key: _quantize(key, getattr(table, key), fmt) for key in COEF_NAMES}
    floats = {key: fx.to_float() for key, fx in quantized.items()}
    out = replace(table, coef_format=str(fmt), quantized=quantized, **floats)
    if func is not None:
        loss = quantization_loss(out, func, fit=table, suggest=True)
        if loss.lossy:
            if not allow_lossy:
                raise LossyTableError(loss.describe(), loss)
            warnings.warn(LossyTableWarning(loss.describe(allowed=True), loss), stacklevel=2)
    return out


def _quantize(key: str, values: np.ndarray, fmt: QFormat) -> Fixed:
    try:
        return Fixed.from_float(values, fmt, rounding="half_even", overflow="raise",
                                name=f"table coefficient {key}")
    except FixedOverflowError as err:
        half = fmt.resolution / 2
        outside = (values < fmt.min - half) | (values > fmt.max + half)
        i = int(np.argmax(outside)) if outside.any() else int(np.argmax(np.abs(values)))
        sign = " and a signed format" if (values < 0).any() and not fmt.signed else ""
        top = float(np.round(np.abs(values).max() / fmt.resolution)) * fmt.resolution
        need = math.floor(math.log2(top)) + 1 if top >= 1 else 0
        raise TableError(f"coef_format {fmt} cannot hold coefficient {key}: {key}[{i}] = "
                         f"{float(values[i])!r} rounds outside {fmt.min}..{fmt.max}; use at least "
                         f"{need} integer bits{sign}") from err


# ------------------------------------------------------------------ quantization loss --
@dataclass(frozen=True)
class QuantizationLoss:
    """What a coefficient format does to a table's fit (module docstring), per region (I, II).

    Fields
    ------
    name : str
        The table's name.
    coef_format : str
        The format measured.
    err_f : (float, float)
        Largest measured ``|f_table - f|`` of the quantized table, f units (NaN where an
        ``"exp"`` region's interpolated F reaches ``<= 0``).
    fit_err_f : (float, float)
        The same of the unquantized fit.
    range_f : (float, float)
        ``max f - min f`` over the region's measurement points, f units.
    suggestion : str or None
        With ``suggest``: the narrowest wider format (same signedness and integer bits) that
        keeps the fit, or None if none of at most 64 bits does.
    suggestion_err_f : (float, float) or None
        ``err_f`` of ``suggestion``.
    """

    name: str
    coef_format: str
    err_f: tuple
    fit_err_f: tuple
    range_f: tuple
    suggestion: str | None = None
    suggestion_err_f: tuple | None = None

    @property
    def allowed_f(self) -> tuple:
        """Per region ``max(LOSSY_FACTOR * fit_err_f, LOSSY_REL * range_f)``, f units."""
        return tuple(_allowed(e, r) for e, r in zip(self.fit_err_f, self.range_f))

    @property
    def lossy_regions(self) -> tuple:
        """Regions (1, 2) where ``err_f`` is not finite or exceeds ``allowed_f``."""
        return tuple(r for r, e, a in zip(REGIONS, self.err_f, self.allowed_f)
                     if not e <= a)

    @property
    def lossy(self) -> bool:
        """True when the format loses the fit in at least one region."""
        return bool(self.lossy_regions)

    def region_reason(self, region: int) -> str:
        """One region's verdict in words ("" when it keeps the fit)."""
        i = _region(region) - 1
        if region not in self.lossy_regions:
            return ""
        return (f"coefficients {self.coef_format} lose the fit: largest |error| "
                f"{_err_text(self.err_f[i])} > allowed {self.allowed_f[i]:.4g} (f units; "
                f"{LOSSY_FACTOR:g} x the unquantized fit's {self.fit_err_f[i]:.4g} and "
                f"{LOSSY_REL:.0%} of the range of f, {self.range_f[i]:.4g})")

    def describe(self, format_hint: str = "coef_format={}", allow_hint: str =
                 "allow_lossy=True to build it anyway", allowed: bool = False) -> str:
        """The refusal (or, ``allowed``, the warning) in words: measured errors, the
        criterion and what would keep the fit; ``format_hint`` formats a suggested format
        for the caller's interface (``"--coef-format {}"`` on the command line)."""
        parts = [f"{_err_text(self.err_f[r - 1])} in region {_REGION_NAME[r]} (unquantized "
                 f"fit {self.fit_err_f[r - 1]:.4g}; allowed {self.allowed_f[r - 1]:.4g})"
                 for r in self.lossy_regions]
        head = (f"coef_format {self.coef_format} loses the fit of {self.name!r}"
                + (" (built anyway, as allowed)" if allowed else "")
                + f": the largest measured |error| is {' and '.join(parts)}, in f units; a "
                f"format loses the fit where its error exceeds both {LOSSY_FACTOR:g} x the "
                f"unquantized fit's and {LOSSY_REL:.0%} of the region's range of f")
        fmt = QFormat.parse(self.coef_format)
        if self.suggestion is None:
            need = (f"no wider format with {fmt.int_bits} integer bits keeps the fit within "
                    f"{MAX_WORD_BITS}-bit words: refine the bin layout")
        else:
            wide = QFormat.parse(self.suggestion)
            errs = " and ".join(f"{e:.3g}" for e in self.suggestion_err_f)
            need = (f"{format_hint.format(wide)} keeps it (largest errors {errs} in regions I "
                    f"and II): use at least {wide.frac_bits} fractional bits (a "
                    f"{wide.word_bits}-bit word)")
        return f"{head}; {need}" + ("" if allowed else f", or {allow_hint}")

    def to_json(self) -> dict:
        """A JSON-ready record (``table.json`` key ``quantization``; non-finite -> null)."""
        return {"coef_format": self.coef_format, "lossy": self.lossy,
                "criterion": {"factor": LOSSY_FACTOR, "rel_of_range": LOSSY_REL},
                "regions": {_REGION_NAME[r]: {
                    "err_f": self.err_f[r - 1], "fit_err_f": self.fit_err_f[r - 1],
                    "range_f": self.range_f[r - 1], "allowed_f": self.allowed_f[r - 1],
                    "lossy": r in self.lossy_regions} for r in REGIONS}}

    @classmethod
    def from_json(cls, name: str, record) -> "QuantizationLoss":
        """Back from :meth:`to_json` (null errors read as NaN); a :class:`TableError` for a
        malformed record."""
        try:
            regions = [record["regions"][_REGION_NAME[r]] for r in REGIONS]
            values = {key: tuple(math.nan if x[key] is None else float(x[key])
                                 for x in regions)
                      for key in ("err_f", "fit_err_f", "range_f")}
            return cls(name=str(name), coef_format=str(QFormat.parse(record["coef_format"])),
                       **values)
        except (KeyError, TypeError, ValueError) as err:
            raise TableError(f"quantization record malformed ({type(err).__name__}: {err}); "
                             "regenerate the table") from None


_REGION_NAME = {1: "I", 2: "II"}


def _allowed(fit_err: float, range_f: float) -> float:
    return max(LOSSY_FACTOR * fit_err, LOSSY_REL * range_f)


def _err_text(err: float) -> str:
    if math.isfinite(err):
        return f"{err:.4g}"
    return "not finite (the interpolated F = exp(f) reaches 0 or below)"


def quantization_loss(table: TwoRegionTable, func: PairFunction,
                      fit: TwoRegionTable | None = None, suggest: bool = False
                      ) -> QuantizationLoss:
    """Measure what ``table``'s coefficient format does to the fit of ``func`` (f(r)).

    ``fit`` is the unquantized table (default: refitted from ``func`` with ``table``'s range,
    sigma, layout and transforms, the fit :func:`build_table` makes).  Both are evaluated at
    ``LOSSY_SAMPLES`` points per bin, ``u = (i + 1/2) / LOSSY_SAMPLES``; the criterion is in
    the module docstring (``lossy``).  With ``suggest`` and a lossy format, the narrowest
    wider format that keeps the fit is searched (by bisection on the fractional bits, each
    candidate measured).
    """
    if table.coef_format is None:
        raise TableError("quantization_loss needs a quantized table (coef_format is None)")
    if fit is None:
        fit = build_table(func, table.s_min, table.s_max, table.sigma, table.n1, table.n_seg,
                          table.n_bin, table.transform, name=table.name)
    u = (np.arange(LOSSY_SAMPLES) + 0.5) / LOSSY_SAMPLES
    points = [(s0[:, None] + ds[:, None] * u).ravel()
              for s0, ds in (table.bin_spans(r) for r in REGIONS)]
    exact = [sample_transformed(func, s, "none") for s in points]
    fit_err = _max_errors(fit, points, exact)
    ranges = tuple(float(f.max() - f.min()) for f in exact)
    loss = QuantizationLoss(table.name, table.coef_format, _max_errors(table, points, exact),
                            fit_err, ranges)
    if not (suggest and loss.lossy):
        return loss
    allowed = loss.allowed_f
    fmt = QFormat.parse(table.coef_format)

    def keeps(frac_bits: int):
        try:
            wide = quantize_table(fit, QFormat(fmt.signed, fmt.int_bits, frac_bits))
        except FixedQMCError:
            return None
        errs = _max_errors(wide, points, exact)
        return errs if all(e <= a for e, a in zip(errs, allowed)) else None

    lo = fmt.frac_bits + 1
    hi = min(MAX_FRAC_BITS, MAX_WORD_BITS - int(fmt.signed) - fmt.int_bits)
    best = keeps(hi) if hi >= lo else None
    if best is None:
        return loss
    while lo < hi:  # smallest frac_bits in [lo, hi] that keeps the fit (hi always does)
        mid = (lo + hi) // 2
        errs = keeps(mid)
        if errs is None:
            lo = mid + 1
        else:
            hi, best = mid, errs
    return replace(loss, suggestion=str(QFormat(fmt.signed, fmt.int_bits, hi)),
                   suggestion_err_f=best)


def _max_errors(table: TwoRegionTable, points, exact) -> tuple:
    """Per region, the largest ``|table.evaluate(s) - f|`` (NaN if any value is NaN)."""
    with np.errstate(invalid="ignore"):
        return tuple(float(np.max(np.abs(table.evaluate(s) - f))) for s, f in zip(points, exact))
