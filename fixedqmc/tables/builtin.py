"""Built-in pair functions for two-region tables, and user functions by ``module:function``.

Each entry is a vectorised ``f(r)`` of the pair distance r (angstrom for helium) with the
defaults HAQMC (seed 002, Sec. 3 "Kernel 1-3" and Sec. 4) uses to tabulate it in
``s = r**2``: an r range, the rule that places the region split sigma, and a transform per
region (I, II) chosen by how the hardware accumulates the pair terms:

========= ================================= ====== ============ =========== ==============
name      f(r)                              unit   r range (A)  sigma rule  transform I, II
========= ================================= ====== ============ =========== ==============
sapt2     SAPT2 He-He potential (Eq. 10)    K      [1.5, 15]    zero        none, exp
hfd-b     HFD-B(HE) He-He potential         K      [1.5, 15]    zero        none, exp
lm2m2     LM2M2 He-He potential             K      [1.5, 15]    zero        none, exp
psi       pair factor exp(T2(r)) (Eq. 11)   1      [1.5, 15]    max         none, none
kinetic   psi'' + 2 psi'/r (Fig. 8 term)    1/A^2  [1.5, 15]    sign_change none, none
lj        4 (r^-12 - r^-6)                  1      [0.9, 4]     zero        none, exp
========= ================================= ====== ============ =========== ==============

Transforms, following HAQMC's three accumulator configurations (Sec. 4):

* potential (kernel 1): region I, the steep repulsive wall, is summed (``acc_Sum``:
  ``"none"``); region II, the well and the tail, is accumulated as a product of
  ``exp(V(r_ij))`` (``acc_Prod``: ``"exp"``, ``F = exp(V / K)``, in [exp(V_min), 1]);
* wave function (kernel 2): the pair factors ``psi = exp(T2)`` are multiplied in both regions
  (``acc_Prod``).  The table holds ``psi`` itself, i.e. ``f = psi`` with ``"none"`` in both
  regions (the same table as ``f = T2`` with ``"exp"``; evaluating it returns psi);
* kinetic term (kernel 3): summed in both regions (``"none"``), separately per region since
  the rescalings differ;
* ``lj`` is a dimensionless test function (r in units of its own length scale) tabulated like
  a potential.

Sigma rules (:func:`~fixedqmc.tables.two_region.find_sigma`): ``zero`` the root of the
potential, ``max`` the maximum of psi, ``sign_change`` where the kinetic term changes sign
(HAQMC Sec. 3).  r_min = 1.5 A: with the default trial function psi(1.5 A)**2 = 1e-15, so
closer pairs essentially never occur (s below s_min is clamped to the table end).  psi and
kinetic use :data:`~fixedqmc.systems.helium.DEFAULT_PAIR_PARAMS`.

Only ``lj`` lives here: the helium functions belong to the helium system
(:mod:`fixedqmc.systems.helium.table_functions`), which registers them in the entry-point
group :data:`GROUP`, as any installed package can register its own; their names are read
from the package metadata, and a function's package is imported when it is first asked
for (so tables never import a system).

A user function is named ``"module:function"`` (``"package.module:object.attribute"``): a
vectorised ``f(r)`` that :func:`resolve_function` imports.
"""

from __future__ import annotations

import importlib
from dataclasses import dataclass
from functools import lru_cache
from importlib import metadata
from typing import Callable

import numpy as np

from fixedqmc.errors import FixedQMCError
from fixedqmc.tables.two_region import (DEFAULT_N1, DEFAULT_N_BIN, DEFAULT_N_SEG,
                                        TwoRegionTable, build_table)

__all__ = ["GROUP", "BuiltinFunction", "builtin_functions", "builtin_names", "defaults_table",
           "get_builtin", "lennard_jones", "resolve_function"]

#: the entry-point group in which packages (fixedqmc's helium system among them) register
#: named table functions: ``name = "package.module:ENTRY"``, ENTRY a :class:`BuiltinFunction`
GROUP = "fixedqmc.table_functions"


def lennard_jones(r):
    """``4 (r**-12 - r**-6)``: dimensionless Lennard-Jones test function (r > 0, any shape)."""
    r = np.asarray(r, dtype=np.float64)
    with np.errstate(divide="ignore", over="ignore"):
        r6 = r**-6.0
        return 4.0 * (r6 * r6 - r6)


@dataclass(frozen=True)
class BuiltinFunction:
    """A pair function with its tabulation defaults (module docstring).

    Attributes
    ----------
    name : str
    func : callable
        Vectorised ``f(r)``, r in angstrom (any shape), values in ``unit``.
    r_min, r_max : float
        Default table range in r (angstrom); ``s = r**2``.
    sigma : str
        Default sigma rule (``zero``, ``max`` or ``sign_change``).
    transform : (str, str)
        Default transform per region (I, II).
    unit : str
        Unit of f.
    doc : str
    """

    name: str
    func: Callable
    r_min: float
    r_max: float
    sigma: str
    transform: tuple
    unit: str
    doc: str

    @property
    def s_min(self) -> float:
        return self.r_min**2

    @property
    def s_max(self) -> float:
        return self.r_max**2

    def build(self, *, s_min: float | None = None, s_max: float | None = None, sigma=None,
              n1: int = DEFAULT_N1, n_seg: int = DEFAULT_N_SEG, n_bin: int = DEFAULT_N_BIN,
              transform=None, coef_format=None, allow_lossy: bool = False
              ) -> TwoRegionTable:
        """:func:`~fixedqmc.tables.two_region.build_table` with this entry's defaults for
        anything not given (s in angstrom**2); a ``coef_format`` that loses the fit raises
        a :class:`~fixedqmc.tables.two_region.LossyTableError` unless ``allow_lossy``."""
        return build_table(self.func, self.s_min if s_min is None else s_min,
                           self.s_max if s_max is None else s_max,
                           self.sigma if sigma is None else sigma, n1=n1, n_seg=n_seg,
                           n_bin=n_bin, transform=self.transform if transform is None
                           else transform, coef_format=coef_format, name=self.name,
                           allow_lossy=allow_lossy)


#: the table functions of this module itself (the others come through :data:`GROUP`)
_OWN = {"lj": BuiltinFunction("lj", lennard_jones, r_min=0.9, r_max=4.0, sigma="zero",
                              transform=("none", "exp"), unit="1",
                              doc="Lennard-Jones 4(r^-12 - r^-6), dimensionless test function")}


@lru_cache(maxsize=1)
def _registered() -> dict:
    """The entry points of :data:`GROUP` by name (package metadata only: nothing is
    imported until a function is asked for)."""
    return {ep.name: ep for ep in metadata.entry_points(group=GROUP)}


def builtin_names() -> list[str]:
    """Names of the built-in functions: the registered ones (sorted), then this module's
    own."""
    return list(dict.fromkeys([*sorted(_registered()), *_OWN]))


def get_builtin(name: str) -> BuiltinFunction:
    """The built-in entry ``name`` (case-insensitive; a registered one is imported on first
    use); a :class:`FixedQMCError` listing the allowed names otherwise."""
    key = name.strip().lower() if isinstance(name, str) else None
    if key in _OWN:
        return _OWN[key]
    if key in _registered():
        return _load(key)
    raise FixedQMCError(f"unknown table function {name!r}; allowed: "
                        f"{', '.join(builtin_names())}, or 'module:function' for your own "
                        "vectorised f(r)")


@lru_cache(maxsize=None)
def _load(name: str) -> BuiltinFunction:
    ep = _registered()[name]
    entry = ep.load()
    if not isinstance(entry, BuiltinFunction) or entry.name != name:
        raise FixedQMCError(f"table function {name!r} registered as {ep.value!r} is not a "
                            f"fixedqmc.tables.builtin.BuiltinFunction named {name!r}")
    return entry


def builtin_functions() -> dict[str, BuiltinFunction]:
    """Every built-in entry by name (imports the packages that register them)."""
    return {name: get_builtin(name) for name in builtin_names()}


def resolve_function(spec: str) -> Callable:
    """A vectorised f(r): a built-in name, or ``"module:function"`` imported from your code
    (``"pkg.mod:obj.attr"`` follows attributes).

    Raises a :class:`FixedQMCError` naming the module or attribute that does not exist, or
    the object that is not callable.
    """
    if not isinstance(spec, str) or not spec.strip():
        raise FixedQMCError(f"a function must be a built-in name or 'module:function', "
                            f"got {spec!r}")
    spec = spec.strip()
    if ":" not in spec:
        return get_builtin(spec).func
    module_name, _, attr_path = spec.partition(":")
    if not module_name or not attr_path or ":" in attr_path:
        raise FixedQMCError(f"malformed function {spec!r}; expected 'module:function', e.g. "
                            "'mypackage.pairs:my_potential'")
    try:
        obj = importlib.import_module(module_name)
    except ModuleNotFoundError as err:
        missing = f"module {err.name!r}" if err.name else "a module"
        raise FixedQMCError(f"cannot import {module_name!r} for function {spec!r}: "
                            f"{missing} not found (is it on sys.path / PYTHONPATH?)") from None
    except Exception as err:  # noqa: BLE001 - the user's module failed while importing
        raise FixedQMCError(f"importing {module_name!r} for function {spec!r} failed: "
                            f"{type(err).__name__}: {err}") from err
    done = module_name
    for attr in attr_path.split("."):
        if not hasattr(obj, attr):
            raise FixedQMCError(f"{done!r} has no attribute {attr!r} (function {spec!r})")
        obj = getattr(obj, attr)
        done = f"{done}:{attr}" if done == module_name else f"{done}.{attr}"
    if not callable(obj):
        raise FixedQMCError(f"{spec!r} is not callable (it is a {type(obj).__name__}); it must "
                            "be a vectorised f(r)")
    return obj


def defaults_table() -> str:
    """One line per built-in: name, unit, r range, sigma rule, transforms (for help texts)."""
    return "\n".join(f"{b.name:<8} {b.unit:<6} r in [{b.r_min:g}, {b.r_max:g}] A, sigma "
                     f"{b.sigma}, transform {','.join(b.transform)}: {b.doc}"
                     for b in builtin_functions().values())

