"""A second round of LLVM optimisation for every compiled function of the package.

numba compiles each jitted function into its own library and optimises it once; a caller's
library links in a copy of its callees (with ``linkonce_odr`` linkage) and optimises that
copy a second time.  Inside the process that compiled them, though, a caller's calls resolve
to the first definition of the callee, the once-optimised one; a process that loads the
caller from the on-disk cache has only the twice-optimised copy.  The two differ: loops of
the kernels' walker functions that vectorise only after a first round (the slab kernel's F
loop, the Ewald real-space terms) ran as scalar code in the first process, 2-4x slower,
and float results differed in the last bits between the first and every later process
(``docs/periodic.md``).  :func:`install` makes numba run its full module pipeline a second
time on every library that defines a function of this package, so a freshly compiled
function is the same code as the cached one: the same speed and the same bits.  Measured:
the slab kernel's first compile takes about 12 % longer.  (:mod:`fixedqmc.numerics.vectorise`
adds a third round and a no-gather tuning for the helium pair kernels.)
"""

from __future__ import annotations

from numba.core import codegen

#: Mangled names of this package's functions start so (numba's Itanium-style mangling).
_PREFIX = "_ZN8fixedqmc"


def _defines_package_function(library) -> bool:
    return any(fn.name.startswith(_PREFIX) for fn in library._final_module.functions
               if not fn.is_declaration)


def install() -> None:
    """Wrap numba's final optimisation of a CPU library (idempotent; module docstring).  If
    this numba's code library lacks the internals used, nothing is changed."""
    lib = getattr(codegen, "CPUCodeLibrary", None)
    original = getattr(lib, "_optimize_final_module", None)
    if original is None or getattr(original, "_fixedqmc_second_round", False):
        return

    def optimize_final_module(self):
        original(self)
        passes = getattr(self._codegen, "_module_pass_manager", None)
        if passes is not None and _defines_package_function(self):
            made = passes()  # (manager, pass builder) in numba >= 0.64, a manager before
            if isinstance(made, tuple):
                made[0].run(self._final_module, made[1])
            else:
                made.run(self._final_module)

    optimize_final_module._fixedqmc_second_round = True
    lib._optimize_final_module = optimize_final_module
