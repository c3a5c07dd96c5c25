"""Compile hot kernels with two rounds of LLVM optimisation, so their loops vectorise.

numba optimises a compiled library in two steps: a "cheap" pass over each function (at -O0,
to inline and prune reference counts) and one -O3 pass over the linked module.  The
store-free pair loops of :mod:`fixedqmc.systems.helium.kernels` are only simplified enough
for LLVM's loop vectoriser after a first full round (measured: the fixed-point pair loop
runs 4x faster with AVX-512 gathers than the scalar loop one round leaves).  numba's
``NUMBA_OPT=max`` does this for every function of a process; :func:`vectorising_compile`
does it only for what is compiled inside its ``with`` block (the cheap pass at -O3 with loop
vectorisation), and restores numba's settings afterwards.  Compiled results are cached as
usual, so the cost (longer compiles) is paid once per kernel and format table.
"""

from __future__ import annotations

import threading
from contextlib import contextmanager

_LOCK = threading.RLock()


def _codegen():
    from numba.core.registry import cpu_target
    return cpu_target.target_context.codegen()


@contextmanager
def vectorising_compile():
    """Within the block, numba compiles with the cheap pass at -O3 and loop vectorisation.

    Uses two attributes of numba's CPU code generator (``_opt_level``, ``_loopvect``, as
    set by ``NUMBA_OPT=max``); if a numba version lacks them the block compiles as usual."""
    cg = _codegen()
    if not (hasattr(cg, "_opt_level") and hasattr(cg, "_loopvect")):
        yield
        return
    with _LOCK:
        saved = cg._opt_level, cg._loopvect
        cg._opt_level, cg._loopvect = 3, True
        try:
            yield
        finally:
            cg._opt_level, cg._loopvect = saved


def vectorised(dispatcher, *args):
    """``dispatcher``, compiled (or loaded from the cache) for the types of ``args`` under
    :func:`vectorising_compile` if it was not yet; call the result with the same args."""
    from numba import typeof
    sig = tuple(typeof(a) for a in args)
    if sig not in dispatcher.overloads:
        with vectorising_compile():
            dispatcher.compile(sig)
    return dispatcher
