"""Compile hot kernels with two rounds of LLVM optimisation, so their loops vectorise.

numba optimises a compiled library in two steps: a "cheap" pass over each function (at -O0,
to inline and prune reference counts) and one -O3 pass over the linked module.  The
store-free pair loops of :mod:`fixedqmc.systems.helium.kernels` are only simplified enough
for LLVM's loop vectoriser after a first full round (measured: the fixed-point pair loop
runs 4x faster with AVX-512 gathers than the scalar loop one round leaves).  numba's
``NUMBA_OPT=max`` does this for every function of a process; :func:`vectorising_compile`
does it only for what is compiled inside its ``with`` block (the cheap pass at -O3 with loop
vectorisation), and restores numba's settings afterwards.  (Every package function now gets
a second full round anyway, :mod:`fixedqmc._numba_rounds`; the block adds the -O3 cheap
pass and the tuning below.)  Compiled results are cached as
usual, so the cost (longer compiles) is paid once per kernel and format table.

Inside the block the optimiser also sees the host CPU with LLVM's ``prefer-no-gather``
tuning: vectorised loops then load table coefficients lane by lane instead of with gather
instructions, which on AMD Zen 4 (whose 512-bit gathers are slow) made the helium pair loop
15-30% faster (float64 3.1e8-3.7e8 -> 3.5e8-4.2e8 pairs/s, fixed:32 0.95e8-1.0e8 ->
1.15e8-1.4e8, median of 15 calls at N = 512..2048).  Only the optimiser's target machine is
swapped (the one numba's pass builder and object emission use); the machine code runs on the
same CPU as everything else.
"""

from __future__ import annotations

from contextlib import contextmanager
from functools import lru_cache

from numba.core.compiler_lock import global_compiler_lock


def _codegen():
    from numba.core.registry import cpu_target
    return cpu_target.target_context.codegen()


@lru_cache(maxsize=1)
def _no_gather_target_machine(cg):
    """numba's target machine for the host with ``+prefer-no-gather`` (an x86 tuning), or
    None off x86 or if this numba's code generator does not expose what building it needs."""
    import llvmlite.binding as ll
    from numba.core import config
    triple = ll.get_process_triple()
    if not (triple.startswith(("x86_64", "i686")) and hasattr(cg, "_customize_tm_options")
            and hasattr(cg, "_tm")):
        return None
    options = dict(opt=config.OPT)
    cg._customize_tm_options(options)
    options["features"] = ",".join(f for f in (options.get("features", ""),
                                                "+prefer-no-gather") if f)
    return ll.Target.from_triple(triple).create_target_machine(**options)


@contextmanager
def vectorising_compile():
    """Within the block, numba compiles with the cheap pass at -O3 and loop vectorisation,
    for a target that prefers no gathers (module docstring).

    Uses attributes of numba's CPU code generator (``_opt_level``, ``_loopvect``, as set by
    ``NUMBA_OPT=max``, and its target machine ``_tm``); if a numba version lacks them the
    block compiles as usual.  The swapped target's features also enter numba's on-disk cache
    key, so a kernel compiled here and the same kernel compiled outside (one round, not
    vectorised) are cached apart: a cached ordinary compile (a test calling a kernel
    directly, say) is never loaded in place of a vectorised one.  (Other settings that
    change code but not the key still share entries: a float32 Jastrow kernel compiled once
    under ``NUMBA_ENABLE_PROFILING`` was later loaded from the cache and ran 25-50x slower;
    clear ``__pycache__`` after such runs.)  The block holds numba's global compiler lock,
    so a kernel compiled meanwhile in another thread never sees the swapped settings."""
    cg = _codegen()
    if not (hasattr(cg, "_opt_level") and hasattr(cg, "_loopvect")):
        yield
        return
    with global_compiler_lock:  # numba's own: no other thread compiles with these settings
        tm = _no_gather_target_machine(cg)
        features = getattr(cg, "_tm_features", None)
        saved = cg._opt_level, cg._loopvect, cg._tm
        cg._opt_level, cg._loopvect = 3, True
        if tm is not None:
            cg._tm = tm
            if features is not None:  # part of the on-disk cache key (``magic_tuple``)
                cg._tm_features = ",".join(f for f in (features, "+prefer-no-gather") if f)
        try:
            yield
        finally:
            cg._opt_level, cg._loopvect, cg._tm = saved
            if features is not None:
                cg._tm_features = features


def vectorised(dispatcher, *args):
    """``dispatcher``, compiled (or loaded from the cache) for the types of ``args`` under
    :func:`vectorising_compile` if it was not yet; call the result with the same args."""
    from numba import typeof
    sig = tuple(typeof(a) for a in args)
    if sig not in dispatcher.overloads:
        with vectorising_compile():
            dispatcher.compile(sig)
    return dispatcher
