"""Quadratic polynomial evaluation y = a + u (b + u c): the inner step of the two-region
interpolation tables (HAQMC, seed 002, section 3), written once for every precision.

Variables (declared ranges are the defaults for width-only specs such as ``fixed:40``):

==== ============== ======================================
name range          meaning
==== ============== ======================================
a    [-2, 2]        constant coefficient
b    [-2, 2]        linear coefficient
c    [-2, 2]        quadratic coefficient
u    [0, 1)         local coordinate in the bin
uc   [-2, 2]        u * c
buc  [-4, 4]        b + u c
ubuc [-4, 4]        u (b + u c)
y    [-6, 6]        a + u (b + u c), the result
==== ============== ======================================
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from numba import njit, prange

from fixedqmc.numerics.fixed import Fixed
from fixedqmc.numerics.kernel import (KernelSpec, Variable, add, at, chunk, chunk_bounds, load,
                                      mul, n_chunks, store)
from fixedqmc.numerics.overflow import OverflowLog
from fixedqmc.numerics.qformat import QFormat

QUADRATIC = KernelSpec(
    "quadratic",
    (
        Variable("a", -2.0, 2.0, "constant coefficient"),
        Variable("b", -2.0, 2.0, "linear coefficient"),
        Variable("c", -2.0, 2.0, "quadratic coefficient"),
        Variable("u", 0.0, float(np.nextafter(1.0, 0.0)), "local coordinate in [0, 1)"),
        Variable("uc", -2.0, 2.0, "u * c"),
        Variable("buc", -4.0, 4.0, "b + u c"),
        Variable("ubuc", -4.0, 4.0, "u (b + u c)"),
        Variable("y", -6.0, 6.0, "result a + u (b + u c)"),
    ),
)
A, B, C, U, UC, BUC, UBUC, Y = range(8)


@njit(parallel=True, cache=True)
def quadratic_kernel(ctx, a, b, c, u, out):
    """out[i] = a[i] + u[i] (b[i] + u[i] c[i]) (Horner), for every precision."""
    n = u.size
    for k in prange(n_chunks(ctx, n)):
        cc = chunk(ctx, k)
        lo, hi = chunk_bounds(ctx, n, k)
        for i in range(lo, hi):
            e = at(cc, i)
            ui = load(e, u[i], U)
            t = mul(e, ui, load(e, c[i], C), UC)
            t = add(e, load(e, b[i], B), t, BUC)
            t = mul(e, ui, t, UBUC)
            out[i] = store(e, add(e, load(e, a[i], A), t, Y))


@dataclass
class KernelResult:
    """Output of a kernel call: float64 values, the fixed result (fixed runs only) and the
    overflow events per variable."""

    values: np.ndarray
    fixed: Fixed | None
    events: dict


def evaluate_quadratic(a, b, c, u, precision="float64", *, seed: int = 0,
                       log: OverflowLog | None = None, runtime: bool = False) -> KernelResult:
    """Evaluate a + u (b + u c) elementwise at a precision spec (see :mod:`policy`).

    Inputs are float arrays of one shape (converted to the variables' formats in fixed
    mode); returns a :class:`KernelResult` with float64 values of the same shape.
    ``runtime``: fixed formats read at run time (one compilation for every format,
    bit-identical; :meth:`KernelPrecision.at_runtime`).
    """
    kp = QUADRATIC.resolve(precision)
    if runtime and kp.kind == "formats":
        kp = kp.at_runtime()
    arrays = np.broadcast_arrays(*(np.asarray(x, np.float64) for x in (a, b, c, u)))
    shape = arrays[0].shape
    ins = [kp.encode(name, x.ravel(), seed, log) for name, x in zip("abcu", arrays)]
    out = np.empty(ins[0].size, kp.dtype)
    ctx = kp.context(seed)
    quadratic_kernel(ctx, *ins, out)
    events = kp.report(ctx, log)
    fixed = (Fixed(out.reshape(shape), kp.format_of("y"))
             if kp.kind == "formats" and isinstance(kp.format_of("y"), QFormat) else None)
    return KernelResult(kp.decode("y", out).reshape(shape), fixed, events)
