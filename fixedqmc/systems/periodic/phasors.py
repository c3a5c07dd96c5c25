"""Plane-wave phasors from powers of three complex exponentials (seed 000, Eq. 10), shared by
the ``jastrow_p`` and ``ewald_recip`` kernels.

A plane wave ``e^{i G . r}`` with ``G = sum_k n_k b_k`` (integer ``n_k`` in the reduced
reciprocal basis) and ``r`` of reduced fractional coordinates ``t_k`` (turns) is the product
``prod_k (e^{2 pi i t_k})**n_k``.  :func:`powers` buffers ``e^{2 pi i m t}``, m = -nmax ..
nmax, of one coordinate from ``cos_turns``/``sin_turns(t)`` by repeated complex
multiplication (negative powers as conjugates), :func:`all_powers` the same of every
particle's coordinates (the same operations per value, as loops over the particles), and
:func:`times` multiplies two buffered phasors; so ``n_G`` plane waves of a particle cost a
cosine and a sine per axis, ``3 nmax`` complex products, and two complex products each (one
in 2D) instead of a cosine and a sine each (the seed: "computed and buffered").

The variables come first in a kernel's table (:data:`PHASOR_VARIABLES`, ids 0-5: the
phasors' and ``frac``, the coordinates :func:`all_powers` loads), so these helpers serve
every kernel that puts them there.

*Fixed-point error.*  ``cos_turns`` and ``sin_turns`` read only the fractional bits of
``t`` (a whole turn is exact) and are within ``2**-59`` plus one rounding of the result.
Each further power is one complex multiplication of rounded words, so ``z**m`` carries
about ``m`` roundings of ``pp`` and ``pw`` (errors of order ``m 2**-F``, growing linearly
with ``m``, and ``|z**m|`` drifts from 1 by as much: the ``pw`` format keeps one integer bit
so the drift never overflows), and the products over the axes add two more roundings: the
error of ``cos(G . r)`` is about ``(|n_0| + |n_1| + |n_2| + 2)`` units of the
``pw``/``pp``/``zz`` formats, against one for a direct ``cos_turns`` per G.  In float32
the same growth applies to float32 roundings (relative 6e-8 per step).
"""

from __future__ import annotations

import numpy as np
from numba import njit

from fixedqmc.numerics.kernel import add, const, load, mul, store, sub
from fixedqmc.numerics.kernel_ops import cos_turns, sin_turns

PHASOR_VARIABLES = (
    ("cos", "cos(2 pi t) of a coordinate t in turns"),
    ("sin", "sin(2 pi t)"),
    ("pp", "a product of two phasor components"),
    ("pw", "a component of a power e^{2 pi i m t}"),
    ("zz", "a component of a product of powers; at the end cos or sin of G . r"),
    ("frac", "a reduced fractional coordinate, [0, 1)"),
)
COS, SIN, PP, PW, ZZ, FRAC = range(6)


@njit(inline="always")  # takes kernel values: their variable ids must stay literal
def powers(e, t, buf, nmax):
    """Buffer ``e^{2 pi i m t}``, m = -nmax..nmax, of the turn ``t`` at ``buf[nmax + m]``
    (``pw`` words: real, imaginary; ``buf`` of shape (2 nmax + 1, 2))."""
    c = cos_turns(e, t, COS)
    s = sin_turns(e, t, SIN)
    zero = const(e, 0.0, PW)
    re = const(e, 1.0, PW)
    im = const(e, 0.0, PW)
    buf[nmax, 0] = store(e, re)
    buf[nmax, 1] = store(e, im)
    for m in range(1, nmax + 1):
        re, im = (sub(e, mul(e, re, c, PP), mul(e, im, s, PP), PW),
                  add(e, mul(e, re, s, PP), mul(e, im, c, PP), PW))
        buf[nmax + m, 0] = store(e, re)
        buf[nmax + m, 1] = store(e, im)
        buf[nmax - m, 0] = store(e, re)
        buf[nmax - m, 1] = store(e, sub(e, zero, im, PW))


@njit(inline="always")  # takes kernel values: their variable ids must stay literal
def all_powers(e, f, buf, nmax, three):
    """Buffer ``e^{2 pi i m f_jk}``, m = -nmax..nmax, of every particle j and axis k (3, or
    2 unless ``three``) of ``f`` (N, 3) ``frac`` words at ``buf[k, nmax + m, :, j]`` (``pw``
    words: real, imaginary; ``buf`` of shape (3, 2 nmax + 1, 2, N), the particles innermost,
    so a loop over them per G reads memory in order).  Per value the operations of
    :func:`powers`, each step a loop over the particles (the power loops vectorise in float
    contexts; the cosines and sines are calls): faster than :func:`powers` per particle
    (measured, ``ewald_recip`` with 4 G vectors, N = 54 and 250: 1.5-2.2x in float64,
    2.2-3.4x in float32, 1.05x at fixed:32)."""
    n = f.shape[0]
    cs = np.empty((2, n), buf.dtype)
    zero = const(e, 0.0, PW)  # (no format fails to hold 0: no event to count per call)
    for k in range(3 if three else 2):
        b = buf[k]
        for j in range(n):
            t = load(e, f[j, k], FRAC)
            cs[0, j] = store(e, cos_turns(e, t, COS))
            cs[1, j] = store(e, sin_turns(e, t, SIN))
            b[nmax, 0, j] = store(e, const(e, 1.0, PW))  # an event per call, as powers()
            b[nmax, 1, j] = store(e, zero)
        for m in range(1, nmax + 1):
            for j in range(n):
                re, im = load(e, b[nmax + m - 1, 0, j], PW), load(e, b[nmax + m - 1, 1, j], PW)
                c, s = load(e, cs[0, j], COS), load(e, cs[1, j], SIN)
                re, im = (sub(e, mul(e, re, c, PP), mul(e, im, s, PP), PW),
                          add(e, mul(e, re, s, PP), mul(e, im, c, PP), PW))
                b[nmax + m, 0, j], b[nmax + m, 1, j] = store(e, re), store(e, im)
                b[nmax - m, 0, j] = store(e, re)
                b[nmax - m, 1, j] = store(e, sub(e, zero, im, PW))


@njit(inline="always")  # takes kernel values: their variable ids must stay literal
def times(e, ar, ai, br, bi):
    """The complex product ``(ar + i ai) (br + i bi)`` (``pp`` products, ``zz`` result)."""
    return (sub(e, mul(e, ar, br, PP), mul(e, ai, bi, PP), ZZ),
            add(e, mul(e, ar, bi, PP), mul(e, ai, br, PP), ZZ))
