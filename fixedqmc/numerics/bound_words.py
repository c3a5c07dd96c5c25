"""A bound run's outputs on the host: words ``value + 1j * bound``
(:func:`~fixedqmc.numerics.kernel_bound.store`), split into their shares and combined.

A bound word's imaginary part ``B >= r + b`` keeps float64's share ``r`` (a bound on
``|v - X|``, ``v`` the real part, ``X`` the exact value) in its low bits beside the trial's
share ``b`` (a bound on ``|T - X|``, ``T`` the trial's value):
:func:`~fixedqmc.numerics.kernel_bound.pack_bound`.  Host code that passes kernel outputs on
to other kernels (a system's evaluation: orbitals into the determinant kernel, Laplacians
into the energy kernel) works on either kind of array with the functions here: plain
float64 arrays (a trial run: the float64 operation itself) or bound words (a bound run: the
value and both shares of the same operation done by the trial in float64).
"""

from __future__ import annotations

import numpy as np
from numba import njit

from fixedqmc.numerics import bound_linalg
from fixedqmc.numerics.kernel_bound import pack_bound, unpack_bound

#: inflation of a bound computed in float64 (covers its own rounding)
_UP = 1.0 + 2.0 ** -45


def words(v, bound) -> np.ndarray:
    """Complex words of values ``v`` and imaginary parts ``bound`` (an infinite bound kept
    apart from the value, which ``v + 1j * bound`` would make not a number)."""
    v = np.asarray(v, np.float64)
    out = np.empty(v.shape, np.complex128)
    out.real, out.imag = v, bound
    return out


def is_bound(x) -> bool:
    """Whether ``x`` holds bound words (complex) rather than float64 values."""
    return np.iscomplexobj(x)


@njit(cache=True)
def _unpack(bounds, r, b):
    for i in range(bounds.size):
        r[i], b[i] = unpack_bound(bounds[i])


@njit(cache=True)
def _pack(r, b, out):
    for i in range(r.size):
        out[i] = pack_bound(r[i], b[i])


def split(x) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """``(v, r, b)`` of bound words ``x``: the float64 values, float64's and the trial's
    shares of their bounds (arrays of the words' shape)."""
    w = np.asarray(x, np.complex128)
    im = np.ascontiguousarray(w.imag).ravel()
    r, b = np.empty_like(im), np.empty_like(im)
    _unpack(im, r, b)
    return w.real.copy(), r.reshape(w.shape), b.reshape(w.shape)


def join(v, r, b) -> np.ndarray:
    """Bound words of values ``v`` with float64's share ``r`` and the trial's ``b`` (not a
    number: an infinite bound)."""
    v = np.asarray(v, np.float64)
    r = np.where(np.isnan(r), np.inf, np.broadcast_to(r, v.shape)).ravel()
    b = np.where(np.isnan(b), np.inf, np.broadcast_to(b, v.shape)).ravel()
    im = np.empty_like(r)
    _pack(np.ascontiguousarray(r), np.ascontiguousarray(b), im)
    return words(v, im.reshape(v.shape))


def add(*xs):
    """``x_1 + x_2 + ...`` in that order.  Float64 arrays: their float64 sum.  Bound words:
    the float64 sum of the values and, for ``k`` terms, the shares ``r = sum r_i +
    gamma_{k-1} sum |v_i|`` and ``b = sum b_i + gamma_{k-1} sum (|v_i| + r_i + b_i)``
    (Higham's bound on a float64 sum in any order, ``gamma_m = m u / (1 - m u)``, ``u =
    2**-53``: float64's own sum, and the trial's sum of its values ``|T_i| <= |v_i| + r_i +
    b_i``; additions never underflow), inflated for their own rounding and raised by ``k``
    subnormal steps for products with ``gamma`` that underflow."""
    if not any(is_bound(x) for x in xs):
        total = xs[0]
        for x in xs[1:]:
            total = total + x
        return total
    parts = [split(x) for x in xs]
    k = len(parts)
    gamma = bound_linalg.gamma(k - 1)
    v = parts[0][0]
    for p in parts[1:]:
        v = v + p[0]
    size = sum(np.abs(p[0]) for p in parts)
    tiny = k * 2.0 ** -1074  # (the products with gamma may underflow)
    r = (sum(p[1] for p in parts) + gamma * size) * _UP + tiny
    b = (sum(p[2] for p in parts) + gamma * sum(np.abs(p[0]) + p[1] + p[2] for p in parts)
         ) * _UP + tiny
    return join(v, r, b)


def negate(x):
    """``-x``: of bound words, the values negated and the bounds kept."""
    if is_bound(x):
        return words(-x.real, x.imag)
    return -x
