"""Real plane-wave orbitals at any precision: the ``orbitals`` kernel of the electron gas.

For the occupied wave vectors of one spin (:class:`~.shells.Occupied`: ``k = 0`` and a half
set of vectors ``k_m``, one of each ``+-k`` pair) the orbitals are the real plane waves::

    phi_0 = 1,   phi_{2m+1} = cos(k_m . r),   phi_{2m+2} = sin(k_m . r)

which span the same space as ``exp(+-i k_m . r)`` (so their Slater determinant is the
plane-wave determinant up to a constant).  Gradients ``grad cos = -k sin``, ``grad sin =
k cos``; Laplacians ``lap phi = -|k|**2 phi`` (1/bohr, 1/bohr**2).

The phase is formed in turns from the fractional coordinates ``f`` in [0, 1) of the cell
(``x = f A``): ``k_m . r / 2 pi = sum_c n_c f_c`` with the integer coordinates ``n`` of
``k_m`` in the reciprocal basis (``k = n B``, ``B = 2 pi A^-T``).  In fixed point that sum is
exact (integer times word) up to its rounding into ``phase``, and ``cos_turns`` /
``sin_turns`` read only its fractional bits, so no reduction by 2 pi is needed.

Kernel ``orbitals`` (variables below, one source for float64, float32 and fixed point),
parallel over points in the fixed chunks of :mod:`fixedqmc.numerics.kernel`.  2D cells pad
the third coordinate of ``f`` and ``n`` with zeros.
"""

from __future__ import annotations

import numpy as np
from numba import njit, prange

from fixedqmc.numerics.kernel import (acc_add, acc_value, acc_zero, at, chunk, chunk_bounds,
                                      const, load, mul, n_chunks, store)
from fixedqmc.numerics.kernel_ops import cos_turns, sin_turns

ORBITAL_VARIABLES = (
    ("frac", "a fractional coordinate of the cell, [0, 1)"),
    ("gint", "an integer coordinate n_c of k in the reciprocal basis"),
    ("nf", "n_c f_c (turns)"),
    ("phase", "k . r / 2 pi = sum_c n_c f_c (sum, turns)"),
    ("value", "an orbital value: 1, cos(k . r) or sin(k . r)"),
    ("kvec", "a cartesian component of +-k (1/bohr)"),
    ("grad", "an orbital gradient component (1/bohr)"),
    ("nk2", "-|k|**2 (1/bohr**2)"),
    ("lap", "an orbital Laplacian, -|k|**2 phi (1/bohr**2)"),
)
FRAC, GINT, NF, PHASE, VALUE, KVEC, GRAD, NK2, LAP = range(9)
assert len(ORBITAL_VARIABLES) == LAP + 1


def orbital_ranges(gints: np.ndarray, kvecs: np.ndarray) -> dict:
    """Declared ranges ``{variable: (lo, hi)}`` of the ``orbitals`` kernel for the half set
    ``gints`` (n_half, dim), ``kvecs`` (n_half, dim) (1/bohr)."""
    nmax = float(np.abs(gints).max(initial=1))
    kmax = float(np.abs(kvecs).max(initial=1e-3))
    k2 = float(np.sum(kvecs ** 2, axis=1).max(initial=1e-6))
    dim = gints.shape[1] if gints.ndim == 2 else 3
    return {"frac": (0, 1), "gint": (-nmax, nmax), "nf": (-nmax, nmax),
            "phase": (-dim * nmax, dim * nmax), "value": (-1, 1), "kvec": (-kmax, kmax),
            "grad": (-kmax, kmax), "nk2": (-k2, 0), "lap": (-k2, k2)}


@njit(inline="always")  # takes kernel values: their variable ids must stay literal
def _phase(e, f0, f1, f2, g):
    """``sum_c gint_c f_c`` (turns) of the fractional coordinate values f0, f1, f2."""
    acc = acc_add(e, acc_zero(e, PHASE), mul(e, const(e, g[0], GINT), f0, NF), PHASE)
    acc = acc_add(e, acc, mul(e, const(e, g[1], GINT), f1, NF), PHASE)
    acc = acc_add(e, acc, mul(e, const(e, g[2], GINT), f2, NF), PHASE)
    return acc_value(e, acc, PHASE)


@njit
def _point(e, derivs, f, gint, kvec, nk2, out_v, out_d):
    """Orbitals (and derivatives) at one point: ``f`` (3,) ``frac`` words; writes ``out_v``
    (n_orb,) ``value`` words and ``out_d`` (n_orb, 4) ``grad`` x3, ``lap`` words."""
    f0, f1, f2 = load(e, f[0], FRAC), load(e, f[1], FRAC), load(e, f[2], FRAC)
    out_v[0] = store(e, const(e, 1.0, VALUE))
    if derivs:
        for d in range(3):
            out_d[0, d] = store(e, const(e, 0.0, GRAD))
        out_d[0, 3] = store(e, const(e, 0.0, LAP))
    for m in range(gint.shape[0]):
        ph = _phase(e, f0, f1, f2, gint[m])
        c = cos_turns(e, ph, VALUE)
        s = sin_turns(e, ph, VALUE)
        out_v[2 * m + 1] = store(e, c)
        out_v[2 * m + 2] = store(e, s)
        if derivs:
            for d in range(3):
                out_d[2 * m + 1, d] = store(e, mul(e, const(e, -kvec[m, d], KVEC), s, GRAD))
                out_d[2 * m + 2, d] = store(e, mul(e, const(e, kvec[m, d], KVEC), c, GRAD))
            q = const(e, nk2[m], NK2)
            out_d[2 * m + 1, 3] = store(e, mul(e, q, c, LAP))
            out_d[2 * m + 2, 3] = store(e, mul(e, q, s, LAP))


@njit
def _orbital_chunk(ctx, k, derivs, f, gint, kvec, nk2, out_v, out_d):
    c = chunk(ctx, k)
    lo, hi = chunk_bounds(ctx, f.shape[0], k)
    for p in range(lo, hi):
        _point(at(c, p), derivs, f[p], gint, kvec, nk2, out_v[p], out_d[p])


@njit(parallel=True, cache=True)
def orbital_kernel(ctx, derivs, f, gint, kvec, nk2, out_v, out_d):
    """Real plane waves at points (module docstring).

    ``f`` (P, 3) ``orbitals.frac`` words; ``gint`` (n_half, 3) float64 integer coordinates
    of the half set, ``kvec`` (n_half, 3) its vectors (1/bohr), ``nk2`` (n_half,) ``-|k|**2``;
    writes ``out_v`` (P, 1 + 2 n_half) ``value`` words and, if ``derivs``, ``out_d`` (P,
    1 + 2 n_half, 4): three gradient components (``grad``) and the Laplacian (``lap``)."""
    for k in prange(n_chunks(ctx, f.shape[0])):
        _orbital_chunk(ctx, k, derivs, f, gint, kvec, nk2, out_v, out_d)


def plane_waves_numpy(x: np.ndarray, kvecs: np.ndarray):
    """Reference (float64 numpy): values (P, n_orb), gradients (P, n_orb, dim) and
    Laplacians (P, n_orb) of the real plane waves of the half set ``kvecs`` (n_half, dim) at
    cartesian points ``x`` (P, dim) (bohr)."""
    x = np.asarray(x, np.float64)
    ph = x @ kvecs.T  # (P, n_half)
    c, s = np.cos(ph), np.sin(ph)
    P, nh, dim = x.shape[0], kvecs.shape[0], x.shape[1]
    vals = np.ones((P, 1 + 2 * nh))
    vals[:, 1::2], vals[:, 2::2] = c, s
    grad = np.zeros((P, 1 + 2 * nh, dim))
    grad[:, 1::2] = -s[..., None] * kvecs
    grad[:, 2::2] = c[..., None] * kvecs
    lap = -vals * np.concatenate([[0.0], np.repeat(np.sum(kvecs ** 2, axis=1), 2)])
    return vals, grad, lap
