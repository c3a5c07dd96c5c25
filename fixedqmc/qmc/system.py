"""The system protocol: what a VMC/DMC driver may ask of a physical system, and nothing more.

A *system* bundles a Hamiltonian ``H = -D sum_i lap_i + V`` (``D = hbar**2 / 2m``) and a
trial wave function built from precision-aware kernels.  Drivers (:mod:`fixedqmc.qmc.vmc`,
:mod:`fixedqmc.qmc.dmc`), the runner and the sweep only use the methods below; which
precision each kernel runs at is the system's business.  The protocol follows what QMC
codes converged on (PyQMC's wave-function protocol: recompute, ratio of a proposed move,
accept with a mask, gradient and Laplacian, parameters as a dict):

``evaluate(walkers, step=)``
    full evaluation of a batch: ``ln|psi|``, the sign of psi, ``grad ln|psi|``, the local
    energy and its named parts (an :class:`Evaluation`), and the per-walker state consistent
    with it (built from the positions when ``walkers.state`` is None, else the incremental
    state is used).
``propose(walkers, i, new, step=, grad=True)``
    a move of particle ``i`` of every walker to ``new`` (n_w, 3): the signed ratio
    ``psi'/psi`` as ``log|ratio|`` and sign, ``grad_i ln|psi|`` at the new position (or
    None if the system does not provide it) and system-private intermediates
    (a :class:`Proposal`).  ``grad=False`` says the caller will not use the gradient
    (Metropolis VMC): the system may skip it (for Gaussian orbitals, the derivative
    kernels) and return None; the ratio must be the same.
``accept(walkers, i, mask, proposal)``
    the proposed move accepted for the walkers in ``mask`` (never one whose proposal is
    ``outside``): their per-walker state (e.g. inverse Slater matrices by Sherman-Morrison)
    is updated without a full re-evaluation; other walkers are untouched.  Positions are
    not the system's to write: the caller commits them after ``accept`` (:func:`commit_move`
    does both; ``walkers.positions`` still holds the old position of particle ``i`` while
    ``accept`` runs).
``recompute(walkers, step=)``
    rebuild the per-walker state from the positions; returns drift diagnostics
    ``{name: value}`` (e.g. ``||M M^-1 - I||`` of the incrementally updated inverses).
``wrap(positions)``
    boundary handling: centre of mass (clusters), nothing (molecules), into the cell
    (periodic).  psi and its gradient are invariant under it.
``initial_positions(n_walkers, rng)``
    starting configurations, (n_walkers, n_particles, 3).
``profile(positions, step=)``
    ``{kernel: {variable: (min, max, max|x|, min nonzero |x|)}}`` of a float64 evaluation.
``formats()``, ``log``, ``kernels``, ``units``, ``hbar2_2m``, ``n_particles``
    the format (or float type) of every kernel variable, the overflow log, the named
    kernels (:class:`fixedqmc.numerics.kernel.KernelSpec`), the units, ``D`` and N.

**Optional: linear parameters** (:class:`LinearParameters`, needed only by ``fixedqmc
optimize``, :mod:`fixedqmc.qmc.optimize`).  A system whose ``ln|psi|`` is linear in some
parameters ``c`` (K,), ``ln|psi(c)| = F + c . phi(R)`` (e.g. a Jastrow factor that is a
linear combination of fixed functions), provides:

``parameter_names()``, ``parameter_vector()``
    names (K,) (for tables) and the current values c (K,);
``parameter_basis(positions)``
    ``phi`` (n_w, K), ``grad_i phi_k`` (n_w, K, N, 3) and ``sum_i lap_i phi_k`` (n_w, K)
    at positions (n_w, N, 3), float64;
``parameter_input(c)``
    the input sections (a nested dict, e.g. ``{"jastrow": {...}}``) that build the same
    system with parameters ``c``.

**Optional: operation counts** (needed only for costs, :mod:`fixedqmc.qmc.counts`):

``operation_counts(positions, step=)``
    the operations the profiling contexts counted in a float64 evaluation of ``positions``
    and in single-particle moves from them: ``{"evaluation": (walkers, {kernel: rows}),
    "move": (moves, {kernel: rows})}``, rows of
    :meth:`fixedqmc.numerics.kernel_set.KernelSet.counts` summed over the walkers or moves,
    and optionally ``"arrays"``: the constant arrays the data path stores, ``[{"kernel",
    "array", "entries", "variable"}]`` (tables, coefficients; priced in their variable's
    format).

**Optional: error bounds** (needed only by :func:`fixedqmc.bound` and ``fixedqmc bound``,
:mod:`fixedqmc.qmc.bounds`):

``bound_evaluation(positions, step=)``
    rigorous bounds on the errors of the system's precision at ``positions`` beside the
    errors measured: a :class:`~fixedqmc.numerics.bound_run.KernelBound` whose quantities
    are the kernel outputs the energy depends on, the energy parts, ``local_energy`` and
    ``ln_psi`` (its kernels run at the trial precision and in the bound context,
    :mod:`fixedqmc.numerics.kernel_bound`; host combinations by
    :func:`~fixedqmc.numerics.bound_run.linear_bound`).  Its ``trial`` values of
    ``local_energy`` and ``ln_psi`` are bit for bit ``evaluate``'s at the same ``step``, and
    its ``log`` holds the overflow events that evaluation would log: a sweep's paired point
    takes both from it instead of evaluating the samples a second time.

Per-walker state is a dict of arrays whose first axis is the walker axis, so DMC branching
(:meth:`Walkers.take`) and checkpoints (pickling) treat it like the positions.

Signs: ``sign`` is +1 or -1 (float64; bosonic systems return ones).  A DMC move that
changes the sign of psi crosses a node and is rejected (fixed-node approximation).

Units: every energy a system returns is in ``units.energy`` (e.g. K for helium, hartree for
electrons), lengths in ``units.length``, ``hbar2_2m`` in energy x length**2.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Mapping, Protocol, runtime_checkable

import numpy as np
from numba import njit

from fixedqmc.errors import FixedQMCError
from fixedqmc.numerics import aligned


@dataclass(frozen=True)
class Units:
    """A system's energy and length units and the energy units results can be shown in.

    ``conversions`` maps a unit name to the factor that converts from ``energy`` to it
    (``energy`` itself maps to 1)."""

    energy: str
    length: str
    conversions: Mapping[str, float] = field(default_factory=dict)

    def __post_init__(self):
        if self.energy not in self.conversions:
            object.__setattr__(self, "conversions", {self.energy: 1.0, **self.conversions})

    def factor(self, name: str | None) -> float:
        """The factor from the system's energy unit to ``name`` (None: the energy unit)."""
        if name is None or name == "":
            return 1.0
        if name not in self.conversions:
            raise FixedQMCError(f"units = {name!r} is not available for this system; choose "
                                f"one of {', '.join(self.conversions)}")
        return float(self.conversions[name])


class EnergyParts:
    """The local energy and its kinetic and potential parts of anything holding named
    energy ``parts`` (an :class:`Evaluation`, a driver's state)."""

    parts: dict

    @property
    def local_energy(self) -> np.ndarray:
        return sum(self.parts.values())

    @property
    def kinetic(self) -> np.ndarray:
        return self.parts["kinetic"]

    @property
    def potential(self) -> np.ndarray:
        """Every part but the kinetic energy."""
        return sum(v for k, v in self.parts.items() if k != "kinetic")


@dataclass
class Evaluation(EnergyParts):
    """A full evaluation of a batch of walkers (float64 arrays, walker axis first).

    ``ln_psi`` (n_w,) ln|psi|; ``sign`` (n_w,) +-1; ``grad`` (n_w, N, 3) grad ln|psi|
    (1/length; None when not computed); ``parts`` energy parts (n_w,) each, whose sum is
    the local energy, with ``"kinetic"`` among them (NaN where not computed); ``outside``
    (n_w,) > 0 where psi = 0 by the trial function's support; ``state`` the per-walker
    state consistent with this evaluation (a dict, possibly empty)."""

    ln_psi: np.ndarray
    sign: np.ndarray
    grad: np.ndarray | None
    parts: dict
    outside: np.ndarray
    state: dict | None = None


@dataclass
class Proposal:
    """A proposed single-particle move of every walker (see :meth:`System.propose`).

    ``new`` (n_w, 3) the proposed positions; ``log_ratio`` (n_w,) ln|psi'/psi|; ``sign``
    (n_w,) sign of psi'/psi; ``grad`` (n_w, 3) grad_i ln|psi| at the new position or None;
    ``outside`` (n_w,) > 0 where psi' = 0; ``saved`` system-private intermediates for
    :meth:`System.accept`."""

    new: np.ndarray
    log_ratio: np.ndarray
    sign: np.ndarray
    grad: np.ndarray | None
    outside: np.ndarray
    saved: Any = None


@dataclass
class Walkers:
    """Walker positions (n_w, N, 3) and per-walker system state (dict of arrays with the
    walker axis first; None: not built yet)."""

    positions: np.ndarray
    state: dict | None = None

    @property
    def n_walkers(self) -> int:
        return self.positions.shape[0]

    def take(self, index) -> "Walkers":
        """The walkers selected (or repeated) by a boolean mask or an index array."""
        state = None if self.state is None else {k: aligned.take(v, index)
                                                  for k, v in self.state.items()}
        return Walkers(self.positions[index], state)

    def put(self, mask: np.ndarray, other: "Walkers") -> None:
        """Replace the walkers in ``mask`` by those of ``other`` (same batch size)."""
        self.positions[mask] = other.positions[mask]
        if self.state is not None and other.state is not None:
            for k, v in self.state.items():
                v[mask] = other.state[k][mask]


@runtime_checkable
class System(Protocol):
    """The methods and attributes a system provides (module docstring)."""

    n_particles: int
    units: Units
    hbar2_2m: float
    kernels: Mapping
    log: Any

    def initial_positions(self, n_walkers: int, rng: np.random.Generator) -> np.ndarray: ...

    def evaluate(self, walkers: Walkers, *, step: int = 0) -> Evaluation: ...

    def propose(self, walkers: Walkers, i: int, new: np.ndarray, *, step: int = 0,
                grad: bool = True) -> Proposal: ...

    def accept(self, walkers: Walkers, i: int, mask: np.ndarray, proposal: Proposal
               ) -> None: ...

    def recompute(self, walkers: Walkers, *, step: int = 0) -> dict: ...

    def wrap(self, positions: np.ndarray) -> np.ndarray: ...

    def profile(self, positions: np.ndarray, *, step: int = 0) -> dict: ...

    def formats(self) -> dict: ...


@runtime_checkable
class LinearParameters(Protocol):
    """The optional linear-parameter members (module docstring)."""

    def parameter_names(self) -> list[str]: ...

    def parameter_vector(self) -> np.ndarray: ...

    def parameter_basis(self, positions: np.ndarray
                        ) -> tuple[np.ndarray, np.ndarray, np.ndarray]: ...

    def parameter_input(self, c: np.ndarray) -> dict: ...


def commit_move(system, walkers: Walkers, i: int, mask, proposal: Proposal) -> np.ndarray:
    """A proposed move of particle ``i`` committed for the walkers in ``mask`` (n_w,) whose
    proposal is not ``outside``: the system updates their state (``accept``), then their
    positions take ``proposal.new``.  The one place where a single-particle move changes
    positions; returns the committed walkers."""
    m = np.asarray(mask, np.bool_) & (proposal.outside == 0)
    system.accept(walkers, i, m, proposal)
    _move(walkers.positions, i, np.asarray(proposal.new, np.float64), m)
    return m


@njit(cache=True)
def _move(positions, i, new, mask):
    """``positions[mask, i] = new[mask]`` in one compiled pass (a NumPy masked assignment
    costs about 6 us per move for 256 walkers, 5 % of a molecule's single-electron move)."""
    for w in range(mask.shape[0]):
        if mask[w]:
            for c in range(3):
                positions[w, i, c] = new[w, c]


#: what :func:`check_protocol` requires, in the protocol's order
PROTOCOL_METHODS = ("initial_positions", "evaluate", "propose", "accept", "recompute", "wrap",
                    "profile", "formats")
PROTOCOL_ATTRIBUTES = ("n_particles", "units", "hbar2_2m", "kernels", "log")


def check_protocol(system, who: str = "system") -> None:
    """Raise a :class:`FixedQMCError` naming every missing method or attribute of the system
    protocol (and a wrong type of ``units``), before any work starts."""
    missing = [f"method {m}()" for m in PROTOCOL_METHODS
               if not callable(getattr(system, m, None))]
    missing += [f"attribute {a}" for a in PROTOCOL_ATTRIBUTES if not hasattr(system, a)]
    if missing:
        raise FixedQMCError(f"{who} ({type(system).__name__}) does not implement the system "
                            f"protocol (fixedqmc.qmc.system): missing {', '.join(missing)}")
    if not isinstance(system.units, Units):
        raise FixedQMCError(f"{who}: units must be a fixedqmc.qmc.system.Units, got "
                            f"{type(system.units).__name__}")
    d = system.hbar2_2m
    if isinstance(d, bool) or not isinstance(d, (int, float)) or not np.isfinite(d) or d <= 0:
        raise FixedQMCError(f"{who}: hbar2_2m must be a positive number, got {d!r}")
