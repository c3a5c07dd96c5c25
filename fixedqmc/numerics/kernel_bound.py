"""The bound context: a kernel run that carries, per value, a rigorous bound on the error a
trial precision makes (a running error analysis in Wilkinson's sense, per element).

A kernel written once (:mod:`fixedqmc.numerics.kernel_core`) runs in this context unchanged.
Each value is a triple ``(v, r, b)`` of float64s about the exact-arithmetic value ``X`` of
that variable (the value infinitely precise arithmetic gives from the same float64 inputs
and constants) and the value ``T`` the *trial* precision computes (its formats, rounding and
overflow modes, given per variable as for any run):

* ``v``: the float64 value computed here (each operation in float64, rounded to nearest);
* ``r``: a bound on ``|v - X|``, float64's own rounding errors propagated;
* ``b``: a bound on ``|T - X|``, the trial's rounding errors propagated.

So ``|T - v| <= r + b``: what :func:`store` reports, a bound that a measured error (the
trial run against this run's ``v``) must never exceed.  An operation with exact result
``S = op(T_x, T_y)`` of the trial operands rounds ``S`` once into its output variable, with
an error at most ``q + u |S| + eta`` (a parameter row per variable):

* fixed point ``Q(w, f)``: ``q = 2**-f`` for floor, zero and stochastic rounding,
  ``2**-(f + 1)`` for the nearest modes; ``u = eta = 0``;
* a float format with ``M`` stored mantissa bits: ``u = 2**-(M + 1)`` for the nearest modes,
  ``2**-M`` for the directed, stochastic and odd ones; ``eta`` the largest absolute error
  at the bottom of the range (half a subnormal step or a whole one, by mode; ``2**emin``
  when subnormals flush to zero); ``q = 0``; float64 and float32 kernels are these formats
  at nearest even.

The operands' bounds propagate (``X`` and ``T`` operand intervals from ``v``, ``r``, ``b``):

==========  ===============================================================================
add, sub    ``b = b_x + b_y``
mul         ``b = (|v_x| + r_x) b_y + (|v_y| + r_y + b_y) b_x``
div         ``b = (b_x + Q b_y) / t_y``, ``Q >= |X_x / X_y|``, ``t_y <= |T_y|``
sqrt        ``b = b_x / (sqrt(t_x) + sqrt(x_x))`` (``t_x``, ``x_x`` lower bounds of
            ``T_x``, ``X_x``), or ``sqrt(b_x)`` when both may be 0
==========  ===============================================================================

and ``r`` likewise, float64's own errors exact for sums and products (TwoSum, the fused
multiply-add residual), ``2**-53`` relative for the rest.  (Every operation's form is in
``docs/error_bounds.md``.)

A trial result that may leave its format's range (the interval of ``S`` does; the range's
ends are values of the format) and saturates adds how far the exact value may lie outside
the range (a clamp into [lo, hi] moves a value no farther from X than X lies from [lo,
hi]).  A bound becomes infinite (and the first variable where it does counts an event in
its column of the event rows) where such a result may wrap or overflow to infinity, where
a divisor's interval contains 0 and where a square root's operand may be negative.
Every bound is computed in float64 and inflated by ``1 + 2**-50`` per step, which covers
its own rounding.

Context ``(params, events, seed, Bounds())``: ``params`` ``(n, PARAM_COLUMNS)`` float64 rows
of the trial formats (:func:`param_rows`: rounding terms, range, the trial's function
errors, its integer rounding mode, whether it saturates); a chunk context
``(params address, event row address, seed, 0, Bounds())``, an element context the same
with the element index.  Every kernel operation has its bound form here.

Decisions (``less``, the cells of ``floor`` and ``round_int``, the table bins) are taken on the float64 values; one that the
trial or the exact arithmetic may take otherwise (the operands' intervals overlap the
decision's boundary) is *ambiguous*: it is counted, and every output the element stores
after it is unbounded (the trial may have run other code).  A chunk's event row starts with
:data:`DECISION_COLUMNS` columns for this (elements of a chunk run in order, so the last
ambiguous element of the chunk identifies the element being computed).
"""

from __future__ import annotations

import math
from fractions import Fraction

import numpy as np
from numba import njit

from fixedqmc.numerics.float_exp import exp64
from fixedqmc.numerics.float_ops import as_bits, fma, from_bits
from fixedqmc.numerics.kernel_core import bump, float_from_bits, peek, poke
from fixedqmc.numerics.modes import FLOOR, HALF_EVEN, STOCHASTIC, ZERO, rounding_code
from fixedqmc.numerics.qformat import QFormat
from fixedqmc.numerics.transcendental import EXP_DL, EXP_STATIC, TRIG_ABS_ERROR, TRIG_DI

#: float64s per variable in a bound context's parameter array
PARAM_COLUMNS = 13
(_Q, _U, _ETA, _LO, _HI, _FN0, _EXP1, _ANY_ORDER, _TURN, _RAD0, _RAD1,
 _MODE, _SATURATE) = range(PARAM_COLUMNS)
#: event-row columns before the per-variable ones: the last element with an ambiguous
#: decision (its index + 1) and the number of ambiguous decisions
DECISION_COLUMNS = 2
_LAST, DECISIONS = 0, 1
_UP = 1.0 + 2.0 ** -50  # inflation of a bound computed in float64 (covers its rounding)
_DOWN = 1.0 - 2.0 ** -50
WIDEN = _UP * _UP  # a distance made of two float64 roundings, widened
_U64, _ETA64 = 2.0 ** -53, 2.0 ** -1074  # float64's own rounding (nearest even)
_TINY = 2.0 ** -960  # float64 products above this have exact fma residuals
_NEAREST_FIXED = ("half_up", "half_away", "half_even")
_NEAREST_FLOAT = ("nearest_even", "nearest_away")


def _inward(x: Fraction) -> float:
    """The float64 nearest x on the side of 0 (a range limit never widened by rounding)."""
    f = float(x)
    return float(np.nextafter(f, 0.0)) if abs(Fraction(f)) > abs(x) else f


def function_terms(fmt, native: bool) -> tuple:
    """``(c0, c1, any_order)`` of the trial's functions into ``fmt``: its ``exp`` before the
    rounding into ``fmt`` errs by at most ``e**t expm1(c0 + c1 |t|)`` at its operand t, the
    fixed-point LUT exponential (``transcendental.exp_bound``: ``c0 = 2**-60``, ``c1 = ln 2
    |L - log2 e|``) or a float one (``c0`` 1 ulp of the type computing it, ``c1 = 0``:
    float64's ``exp64`` for float formats, float64 itself included, a float32 kernel's own
    ``exp32``, ``native``), and a float ``rsqrt`` (two roundings in that type) by ``c0``
    relative; ``any_order`` 1 for a float kernel in the machine's arithmetic, whose
    accumulators may add their terms in any order (``_radd``), else 0; then ``(turn, rad0,
    rad1)``: ``cos_turns``/``sin_turns`` err by at most ``turn`` and ``cos``/``sin`` by
    ``rad0 + rad1 |t|`` before the rounding: in fixed point the quarter-wave table's
    ``2**-59`` and ``transcendental.trig_radians_bound``; a float trial's ``cos(2 pi (t -
    rint(t)))`` by ``(pi + 1) c0`` (the argument's two roundings at ``|2 pi t| <= pi``, one
    ulp of the cosine) and its ``cos(t)`` by ``c0`` (one ulp)."""
    if isinstance(fmt, QFormat):
        return (EXP_STATIC, math.log(2) * EXP_DL, 0.0, TRIG_ABS_ERROR,
                TRIG_ABS_ERROR + 2 * math.pi * 2.0 ** -64, 2 * math.pi * TRIG_DI)
    c0 = 2.0 ** -23 if native and fmt.man_bits == 23 else 2.0 ** -52
    return (c0, 0.0, float(native), (math.pi + 1.0) * c0 * _UP, c0, 0.0)


def rounding_terms(fmt, rounding: str) -> tuple:
    """``(q, u, eta, lo, hi)``: a rounding into ``fmt`` (a :class:`QFormat` or
    :class:`FloatFormat`) with ``rounding`` errs by at most ``q + u |S| + eta`` for an exact
    result ``S`` in ``[lo, hi]`` (module docstring)."""
    if isinstance(fmt, QFormat):
        q = 2.0 ** -(fmt.frac_bits + (rounding in _NEAREST_FIXED))
        unit = Fraction(2) ** -fmt.frac_bits
        return (q, 0.0, 0.0, _inward(fmt.min_raw * unit), _inward(fmt.max_raw * unit))
    nearest = rounding in _NEAREST_FLOAT
    step = fmt.min_subnormal
    eta = (step / 2 if nearest else step) if fmt.subnormals else fmt.min_normal
    top = _inward(fmt.max_exact)
    return (0.0, 2.0 ** -(fmt.man_bits + nearest), eta, -top, top)


def integer_mode(fmt, rounding: str) -> tuple:
    """``(mode,)``: how the trial's ``round_int`` into ``fmt`` rounds, a fixed-point rounding
    code (:mod:`~fixedqmc.numerics.modes`); float trials round to nearest even (``rint``)."""
    return (float(rounding_code(rounding) if isinstance(fmt, QFormat) else HALF_EVEN),)


def saturates(fmt, overflow: str) -> tuple:
    """``(1.0,)`` if the trial clamps an overflowing result into ``fmt``'s range (fixed
    point saturate, or raise, which stops the run; a float format's ``saturate`` option),
    else ``(0.0,)`` (wrap; a float overflowing to infinity)."""
    if isinstance(fmt, QFormat):
        return (float(overflow != "wrap"),)
    return (float(fmt.overflow == "saturate"),)


def param_rows(formats, roundings, overflows, native: bool = False) -> np.ndarray:
    """The parameter array ``(n, PARAM_COLUMNS)`` float64 of a bound context: the trial's
    ``formats``, their ``roundings`` and ``overflows`` (``native``: a float kernel in the
    machine's arithmetic, whose ``exp`` is its own type's)."""
    return np.array([rounding_terms(f, r) + function_terms(f, native) + integer_mode(f, r)
                     + saturates(f, o) for f, r, o in zip(formats, roundings, overflows)],
                    np.float64).reshape(len(formats), PARAM_COLUMNS)


@njit(nogil=True, inline="always")
def _p(e, v, k):
    return float_from_bits(peek(e[0], np.int64(v) * PARAM_COLUMNS + k))


@njit(nogil=True)
def result(e, v, val, r, b):
    """The value of variable v whose float64 value is ``val`` (within ``r`` of the exact
    value X) when the trial's exact result S is within ``b`` of X: S rounded into v's
    format adds its rounding error to ``b``, after :func:`in_range` (a result that may
    leave v's range)."""
    val, r, b = in_range(e, v, val, r, b)
    if not b < np.inf:
        return (val, r, b)
    return (val, r, (b + _err(e, v, abs(val) + (r + b) * _UP) * _UP) * _UP)


@njit(nogil=True, inline="always")
def _err(e, v, s):
    """The largest error of a rounding into v of an exact value of magnitude <= s."""
    return _p(e, v, _Q) + _p(e, v, _U) * (s * _UP) + _p(e, v, _ETA)


@njit(nogil=True, inline="always")
def _inside(e, v, val, d):
    """Whether [val - d, val + d] lies in v's range."""
    return (val + d) * _UP <= _p(e, v, _HI) and (d - val) * _UP <= -_p(e, v, _LO)


@njit(nogil=True)
def in_range(e, v, val, r, b):
    """``(val, r, b)`` when the trial's value, within ``r + b`` of ``val``, lies in v's
    range.  Else, if the trial saturates, ``b`` grows by how far the exact value (within
    ``r`` of ``val``) may lie outside the range: a clamp into [lo, hi] moves a value no
    farther from X than X lies from [lo, hi].  Else (wrap, overflow to infinity) ``b`` is
    infinite, an event of v where a finite bound ends; NaN bounds are infinite."""
    r = r if r < np.inf else np.inf
    if not b < np.inf:
        return (val, r, np.inf)
    if _inside(e, v, val, (r + b) * _UP):
        return (val, r, b)
    if _p(e, v, _SATURATE) > 0.0 and r < np.inf:
        ru = r * _UP
        out = max(0.0, (val + ru) * _UP - _p(e, v, _HI), (ru - val) * _UP + _p(e, v, _LO))
        return (val, r, (b + out * _UP) * _UP)
    bump(e[1], DECISION_COLUMNS + v)
    return (val, r, np.inf)


@njit(nogil=True, inline="always")
def _own(x, r):
    """``r`` plus the rounding error of the float64 result x (nearest even)."""
    return (r + _U64 * abs(x) + _ETA64) * _UP


@njit(nogil=True, inline="always")
def _unbounded(e, v, val, counted):
    """``(val, inf, inf)``: no bound on v's value; an event of v if ``counted`` (the
    operands' bounds were finite: the bound ends here)."""
    if counted:
        bump(e[1], DECISION_COLUMNS + v)
    return (val, np.inf, np.inf)


@njit(nogil=True)
def load(e, x, v):
    """A kernel input (or constant) x, exact, rounded into v by the trial."""
    return result(e, v, x, 0.0, 0.0)


@njit(nogil=True)
def load_bounded(e, x, v):
    """A value a bound run stored, ``value + 1j * bound`` (:func:`store`: the bound's low
    bits say how much of it is float64's own error ``r``, so ``r`` and ``b`` come back
    apart and a value stored and loaded again, e.g. a sum kept in an output array, does not
    double its bound), rounded into v by the trial (as the trial re-encodes its own
    output): kernels chained through host arrays, or state a system keeps between calls."""
    r, b = unpack_bound(x.imag)
    return result(e, v, x.real, r, b)


@njit(nogil=True)
def add(e, x, y, v):
    s = x[0] + y[0]
    bv = s - x[0]
    own = abs((x[0] - (s - bv)) + (y[0] - bv)) if abs(s) < np.inf else np.inf  # TwoSum
    return result(e, v, s, (x[1] + y[1] + own) * _UP, (x[2] + y[2]) * _UP)


@njit(nogil=True)
def sub(e, x, y, v):
    return add(e, x, (-y[0], y[1], y[2]), v)


@njit(nogil=True)
def mul(e, x, y, v):
    p = x[0] * y[0]
    ax, ay = abs(x[0]), abs(y[0])
    # float64's own error: the exact fma residual, where it is exact (not near underflow)
    if abs(p) >= _TINY or ax == 0.0 or ay == 0.0:
        own = abs(fma(x[0], y[0], -p))
    else:
        own = _U64 * abs(p) + _ETA64
    r = ((ax * y[1] + (ay + y[1]) * x[1]) * _UP + own) * _UP
    b = ((ax + x[1]) * _UP * y[2] + (ay + y[1] + y[2]) * _UP * x[2]) * _UP
    return result(e, v, p, r, b)


@njit(nogil=True)
def div(e, x, y, v):
    """x / y; unbounded (an event of v) if y's exact or trial interval contains 0."""
    ay = abs(y[0])
    xy = (ay - y[1]) * _DOWN  # <= |X_y|
    ty = (ay - (y[1] + y[2]) * _UP) * _DOWN  # <= |T_y|
    q = x[0] / y[0] if y[0] != 0.0 else 0.0
    if not (xy > 0.0 and ty > 0.0):
        return _unbounded(e, v, q, x[2] < np.inf and y[2] < np.inf)
    qmax = (abs(x[0]) + x[1]) * _UP / xy * _UP  # >= |X_x / X_y|
    r = _own(q, (x[1] + qmax * y[1]) * _UP / ay * _UP)
    b = (x[2] + qmax * y[2]) * _UP / ty * _UP
    return result(e, v, q, r, b)


@njit(nogil=True)
def recip(e, x, v):
    return div(e, (1.0, 0.0, 0.0), x, v)


@njit(nogil=True, inline="always")
def _root_gap(d, lo1, lo2):
    """A bound on |sqrt(a) - sqrt(c)| for |a - c| <= d, a >= lo1 >= 0, c >= lo2 >= 0."""
    s = (np.sqrt(lo1 * _DOWN) + np.sqrt(lo2 * _DOWN)) * _DOWN
    g = np.sqrt(d) * _UP
    return min(g, d / s * _UP) if s > 0.0 else g


@njit(nogil=True)
def sqrt(e, x, v):
    """sqrt(x); unbounded (an event of v) if x's exact or trial interval reaches below 0."""
    s = np.sqrt(x[0]) if x[0] >= 0.0 else 0.0
    xl = (x[0] - x[1] * _UP) * _DOWN if x[0] > 0.0 else x[0] - x[1] * _UP  # <= X_x
    tl = xl - x[2] * _UP  # <= T_x
    if not (xl >= 0.0 and tl >= 0.0):
        return _unbounded(e, v, s, x[2] < np.inf)
    r = _own(s, _root_gap(x[1], x[0], xl))
    return result(e, v, s, r, _root_gap(x[2], tl, xl))


@njit(nogil=True)
def rsqrt(e, x, v):
    """1 / sqrt(x): the operand's distance through the largest slope ``t**-1.5 / 2`` over
    its interval; a float trial's two roundings (``c0`` relative) besides v's rounding;
    unbounded (an event of v) if the interval reaches 0."""
    s = 1.0 / np.sqrt(x[0]) if x[0] > 0.0 else 0.0
    xl = (x[0] - x[1] * _UP) * _DOWN  # <= X_x
    tl = (xl - x[2] * _UP) * _DOWN  # <= T_x
    if not (xl > 0.0 and tl > 0.0):
        return _unbounded(e, v, s, x[2] < np.inf)
    r = _own(s, x[1] / (2.0 * xl * np.sqrt(xl) * _DOWN) * _UP + 2.0 ** -53 * s)
    fn = 0.0 if _p(e, v, _Q) > 0.0 else _p(e, v, _FN0)  # fixed: correctly rounded
    b = (x[2] / (2.0 * tl * np.sqrt(tl) * _DOWN) * _UP
         + fn * (1.0 / np.sqrt(tl) * _UP)) * _UP
    return result(e, v, s, r, b)


# ---------------------------------------------------------------------- accumulators --
@njit(nogil=True, inline="always")
def acc_zero():
    """An empty sum ``(v, r, bt, bs, asum, n)``: the float64 sum and its bound, the trial's
    term bound (operand bounds plus each term's rounding into the sum variable), its
    partial sums' roundings (float formats: in the kernel's order), a bound on the sum of
    the trial's |terms| and the number of terms."""
    return (0.0, 0.0, 0.0, 0.0, 0.0, 0.0)


@njit(nogil=True)
def acc_add(e, acc, x, v):
    """The term x rounded once into v, overflow-handled like any result of v (a term that
    may leave v's range saturates or wraps there, before the sum), then added: exactly
    (fixed point: ``q > 0``, ``u = 0``) or with a rounding of the partial sum (float
    formats; a partial sum that may leave v's range makes the sum unbounded)."""
    t = result(e, v, x[0], x[1], x[2])
    s = acc[0] + t[0]
    r = _own(s, acc[1] + t[1])
    bt = (acc[2] + t[2]) * _UP
    partial = (abs(s) + (r + bt + acc[3]) * _UP) * _UP  # >= |partial sum of the trial|
    bs = (acc[3] + (_p(e, v, _U) * partial + _p(e, v, _ETA)) * _UP) * _UP
    if not partial <= _p(e, v, _HI) or not partial <= -_p(e, v, _LO):
        if _p(e, v, _U) > 0.0 and bs < np.inf:  # a float partial sum may overflow
            bump(e[1], DECISION_COLUMNS + v)
            bs = np.inf
    mag = (abs(t[0]) + (t[1] + t[2]) * _UP) * _UP  # >= |T_term|
    return (s, r, bt, bs, (acc[4] + mag) * _UP, acc[5] + 1.0)


@njit(nogil=True)
def acc_value(e, acc, v):
    """The sum as a value of v: the terms' bound plus the partial sums' roundings, in the
    kernel's order, or (a float kernel in the machine's arithmetic, which may reassociate)
    in any order, ``gamma_(n-1) sum |t|``; then v's range (no further rounding)."""
    if _p(e, v, _ANY_ORDER) > 0.0:
        k = max(acc[5] - 1.0, 0.0) * _p(e, v, _U)
        sums = (k / (1.0 - k) * _UP * acc[4] + acc[5] * _p(e, v, _ETA)) * _UP if k < 1.0 \
            else np.inf
    else:
        sums = acc[3]
    return in_range(e, v, acc[0], acc[1], (acc[2] + sums) * _UP)


@njit(nogil=True)
def abs_(e, x, v):
    return result(e, v, abs(x[0]), x[1], x[2])


@njit(nogil=True)
def minimum(e, x, y, v):
    """min(x, y): within the larger of the operands' distances (exact in float64)."""
    return result(e, v, min(x[0], y[0]), max(x[1], y[1]), max(x[2], y[2]))


@njit(nogil=True)
def maximum(e, x, y, v):
    return result(e, v, max(x[0], y[0]), max(x[1], y[1]), max(x[2], y[2]))


@njit(nogil=True)
def exp(e, x, v):
    """e**x: the operand's distance through the largest slope over its interval, plus the
    trial's exponential error (:func:`function_terms`) and rounding; float64's exp64 within
    1 ulp for the value."""
    y = exp64(x[0])
    top = x[0] + (x[1] + x[2]) * _UP  # >= T_x, X_x
    big = np.exp(top) * _UP  # >= e**T_x, e**X_x
    rel = _p(e, v, _FN0) + _p(e, v, _EXP1) * ((abs(x[0]) + (x[1] + x[2]) * _UP) * _UP)
    rel = np.expm1(rel * _UP) * _UP
    r = (np.exp(x[0] + x[1] * _UP) * _UP * np.expm1(x[1] * _UP) * _UP
         + 2.0 ** -52 * abs(y) + 2.0 ** -1070) * _UP
    b = big * ((np.expm1(x[2] * _UP) * _UP + rel) * _UP)
    return result(e, v, y, r, b)


_TWO_PI = 2.0 * np.pi


@njit(nogil=True, inline="always")
def _trig(e, x, v, val, slope, fn):
    """A cosine or sine value ``val`` of x: the operand's distance times the largest slope
    (``slope``: 2 pi in turns, 1 in radians; never above 2), the trial's own error ``fn``,
    float64's (the turn form: the argument's two roundings, one ulp)."""
    r = (min(slope * x[1] * _UP, 2.0) + (np.pi + 1.0) * 2.0 ** -52) * _UP
    b = (min(slope * x[2] * _UP, 2.0) + fn) * _UP
    return result(e, v, val, r, b)


@njit(nogil=True)
def cos_turns(e, x, v):
    t = x[0] - np.rint(x[0])
    return _trig(e, x, v, np.cos(_TWO_PI * t), _TWO_PI * _UP, _p(e, v, _TURN))


@njit(nogil=True)
def sin_turns(e, x, v):
    t = x[0] - np.rint(x[0])
    return _trig(e, x, v, np.sin(_TWO_PI * t), _TWO_PI * _UP, _p(e, v, _TURN))


@njit(nogil=True)
def cos(e, x, v):
    fn = _p(e, v, _RAD0) + _p(e, v, _RAD1) * ((abs(x[0]) + (x[1] + x[2]) * _UP) * _UP)
    return _trig(e, x, v, np.cos(x[0]), 1.0, fn)


@njit(nogil=True)
def sin(e, x, v):
    fn = _p(e, v, _RAD0) + _p(e, v, _RAD1) * ((abs(x[0]) + (x[1] + x[2]) * _UP) * _UP)
    return _trig(e, x, v, np.sin(x[0]), 1.0, fn)


@njit(nogil=True, inline="always")
def decide(e, ambiguous):
    """Record a decision (a comparison, a rounding cell, a bin) the trial may take otherwise
    than the exact arithmetic: every later output of this element is unbounded."""
    if ambiguous:
        poke(e[1], _LAST, e[3] + 1)
        bump(e[1], DECISIONS)


@njit(nogil=True)
def less(e, x, y):
    """x < y decided on the float64 values; ambiguous if the operands' intervals (exact
    and trial) overlap."""
    d = (x[1] + x[2] + y[1] + y[2]) * _UP
    decide(e, not abs(x[0] - y[0]) > d)
    return x[0] < y[0]


@njit(nogil=True)
def floor(e, x, v):
    """The largest integer <= x: exact (bound 0 before v's rounding) when the operand's
    intervals lie in one cell [k, k + 1), else an ambiguous decision."""
    f = np.floor(x[0])
    d = (x[1] + x[2]) * _UP
    decide(e, not (x[0] - d >= f and x[0] + d < f + 1.0))
    return result(e, v, f, 0.0, 0.0)


@njit(nogil=True)
def round_int(e, x, v):
    """x rounded to an integer the way v's trial rounds it (nearest modes, floor, toward
    zero; stochastic: random unless x is an integer): exact when the operand's intervals
    lie in one rounding cell, else an ambiguous decision."""
    mode = _p(e, v, _MODE)
    d = (x[1] + x[2]) * _UP * _UP
    a = x[0]
    if mode == FLOOR or (mode == ZERO and a - d >= 0.0):
        k = np.floor(a)
        ok = a - k > d and k + 1.0 - a > d or (d == 0.0)
    elif mode == ZERO and a + d <= 0.0:
        k = np.ceil(a)
        ok = k - a > d and a - (k - 1.0) > d or (d == 0.0)
    elif mode == ZERO:  # the intervals hold 0: the integer is 0 if they lie in (-1, 1)
        k = 0.0
        ok = abs(a) + d < 1.0
    elif mode == STOCHASTIC:
        k = np.rint(a)
        ok = d == 0.0 and k == a
    else:  # the nearest modes: the cell (k - 1/2, k + 1/2), its ends ambiguous
        k = np.rint(a)
        ok = abs(a - k) + d < 0.5
    decide(e, not ok)
    return result(e, v, k, 0.0, 0.0)


@njit(nogil=True, inline="always")
def _bin(e, t, k, lo, hi, slope, u, vu):
    """``(k, u)`` of a table bin [lo, hi) of t (lo = -inf for the first bin, where t is
    clamped to 0 in every format): ambiguous unless t's intervals lie inside (so a t that
    may reach 1, clamped to the largest value below 1 *of its format*, is ambiguous); u =
    slope (t - lo) within slope times t's distances."""
    d = (t[1] + t[2]) * _UP * _UP
    decide(e, not (t[0] - lo > d and hi - t[0] > d))
    return k, result(e, vu, u, slope * t[1], slope * t[2])


@njit(nogil=True)
def uniform_edges(k, n_bits):
    """``(lo, hi, slope)`` of bin k among ``2**n_bits`` uniform bins of [0, 1) (lo = -inf
    for the first bin, where every format clamps t to 0)."""
    n = np.float64(np.int64(1) << n_bits)
    return (k / n if k > 0 else -np.inf), (k + 1.0) / n, n


@njit(nogil=True)
def log2_edges(k, n_seg, bin_bits):
    """``(lo, hi, slope)`` of bin k (segment ``j = k >> bin_bits``, bin m within it) in
    ``n_seg`` power-of-two segments of ``2**bin_bits`` uniform bins (lo = -inf for the
    bin at 0)."""
    nb = np.float64(np.int64(1) << bin_bits)
    j, m = k >> bin_bits, np.float64(k & ((np.int64(1) << bin_bits) - 1))
    if j < n_seg - 1:
        base, scale = 2.0 ** -(j + 1), 2.0 ** (j + 1) * nb
    else:
        base, scale = 0.0, 2.0 ** (n_seg - 1) * nb
    lo = -np.inf if j == n_seg - 1 and m == 0.0 else base + m / scale  # (0 clamps here)
    return lo, base + (m + 1.0) / scale, scale


@njit(nogil=True)
def uniform_bin(e, t, k, u, n_bits, vu):
    """Bin k of t among ``2**n_bits`` uniform bins of [0, 1) and its local coordinate u,
    as the float64 form of :func:`~fixedqmc.numerics.kernel_lookup.uniform_bin` decides
    them on t's value."""
    lo, hi, slope = uniform_edges(k, n_bits)
    return _bin(e, t, k, lo, hi, slope, u, vu)


@njit(nogil=True)
def log2_bin(e, t, k, u, n_seg, bin_bits, vu):
    """Bin k of t in power-of-two segments (:func:`log2_edges`) and its local coordinate
    u, as the float64 form of :func:`~fixedqmc.numerics.kernel_lookup.log2_bin` decides
    them."""
    lo, hi, slope = log2_edges(k, n_seg, bin_bits)
    return _bin(e, t, k, lo, hi, slope, u, vu)


@njit(nogil=True)
def bin_crossing(e, t, k, u, lo, hi, slope, vu):
    """Bin k ``[lo, hi)`` of t (its float64 value's) where a table lookup can follow the
    trial into the adjacent bin: ``(u, side, cross_x)`` with u as :func:`uniform_bin`
    gives it, ``side`` 0 if t's trial and exact intervals lie inside the bin, +1 or -1 if
    they reach into the next or previous bin only (the caller evaluates that bin too and
    joins the two with :func:`either`), and ``cross_x`` whether the exact value may lie
    there.  A t that may reach both neighbours, a clamp at 1, or beyond the neighbour is
    an ambiguous decision (:func:`decide`), side 0."""
    d = (t[1] + t[2]) * _UP * _UP
    below, above = not t[0] - lo > d, not hi - t[0] > d
    side = 0
    if below != above and not (above and hi >= 1.0) and slope * d < 1.0:
        side = 1 if above else -1
    else:
        decide(e, below or above)
    dx = t[1] * _UP * _UP
    return (result(e, vu, u, slope * t[1], slope * t[2]), side,
            not (t[0] - lo > dx and hi - t[0] > dx))


@njit(nogil=True)
def neighbour_u(e, t, lo, slope, vu):
    """The local coordinate ``slope (t - lo)`` of t in a neighbouring bin ``[lo, ...)``
    (slightly outside [0, 1) for t's float64 value): float64's rounding of it in r, t's
    distances times the slope, rounded into vu by the trial."""
    u = (t[0] - lo) * slope
    return result(e, vu, u, _own(u, slope * t[1]), slope * t[2])


@njit(nogil=True)
def either(y, y2, cross_x):
    """A table value where the trial may have taken the adjacent bin: ``y`` from t's own
    bin, ``y2`` from the neighbour (each with its trial's roundings); the two pieces
    differ by at most ``D = |v - v2| + r + r2`` at the exact t, so the trial's value is
    within ``max(b, b2 + D)`` of the exact one (``max(b, b2) + D`` and float64's own error
    ``r + D`` if the exact t, too, may lie in the neighbour: ``cross_x``)."""
    gap = (abs(y[0] - y2[0]) + y[1] + y2[1]) * _UP * _UP
    if cross_x:
        return (y[0], (y[1] + gap) * _UP, (max(y[2], y2[2]) + gap) * _UP)
    return (y[0], y[1], max(y[2], (y2[2] + gap) * _UP))


#: low bits of a stored bound that hold float64's share of it (:func:`pack_bound`)
SHARE_BITS = 17
_SHARE_MASK = np.uint64((1 << SHARE_BITS) - 1)
_SHARE_ONE = 65536.0  # the share is counted in 2**-16 of the bound


@njit(nogil=True)
def pack_bound(r, b):
    """``B >= r + b`` as a float64 whose lowest :data:`SHARE_BITS` mantissa bits hold
    ``c = ceil(2**16 r / B')``, at least 1 if ``r > 0`` (``B'``: ``r + b`` rounded up to
    36 significant bits, so ``B' <= B``; inf stays inf).  :func:`unpack_bound` gets back ``r <= B' c 2**-16`` and
    ``b <= B' (2**16 + 2 - c) 2**-16`` (``r > B' (c - 2) 2**-16``, with room for the
    rounding of ``c``'s quotient), whose sum exceeds ``B'`` by at most ``2**-15 B'``."""
    total = (r + b) * _UP
    if not total < np.inf:
        return np.inf
    bits = (as_bits(total) + _SHARE_MASK) & ~_SHARE_MASK
    whole = from_bits(bits)
    if not whole < np.inf or whole == 0.0:
        return whole
    c = min(_SHARE_ONE, max(1.0 if r > 0.0 else 0.0, math.ceil(r * _SHARE_ONE / whole * _UP)))
    return from_bits(bits | np.uint64(c))


@njit(nogil=True)
def unpack_bound(packed):
    """``(r, b)`` of a bound :func:`pack_bound` wrote (both infinite for inf; both the
    whole bound below 2**-960, where the products could round); the products are exact
    (36 by 17 significant bits)."""
    if not packed < np.inf:
        return np.inf, np.inf
    bits = as_bits(packed)
    c = float(bits & _SHARE_MASK)
    whole = from_bits(bits & ~_SHARE_MASK)
    if whole < _TINY:  # (products with the share could round below)
        return whole, whole
    return whole * (c / _SHARE_ONE), whole * (min(_SHARE_ONE, _SHARE_ONE + 2.0 - c)
                                             / _SHARE_ONE)


@njit(nogil=True)
def store(e, x):
    """What a bound kernel writes: ``v + 1j * B``, the float64 value and the bound ``B >= r
    + b`` on the trial's distance from it (and from the exact value), with float64's share
    ``r`` kept in its low bits (:func:`pack_bound`); infinite after an ambiguous decision
    of this element."""
    if peek(e[1], _LAST) == e[3] + 1:
        return complex(x[0], np.inf)
    return complex(x[0], pack_bound(x[1], x[2]))
