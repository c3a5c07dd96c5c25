"""The homogeneous electron gas (HEG) as a QMC system: plane-wave Slater determinants in a
periodic cell with Ewald interactions (seed 000, Sec. 2 and 6: the 3D and 2D HEG).

Hamiltonian (hartree, bohr, ``hbar**2 / 2m = 1/2``) of N electrons in a cell of volume
``Omega = N 4/3 pi r_s**3`` (3D) or area ``A = N pi r_s**2`` (2D) with a uniform neutralising
background::

    H = -1/2 sum_i lap_i + V_Ewald(r_1 .. r_N)

``V_Ewald`` is the Ewald energy of Eq. 2-4 (3D) or 5-6 (2D) with charges -1 (parts of
:mod:`.ewald`: ``real``, ``recip`` from the ``ewald_real`` and ``ewald_recip`` kernels, and the
position-independent ``images + self + background``).

Trial function: ``psi = exp(J) det[phi_k(r_i)]_up det[phi_k(r_i)]_down`` with the real plane
waves of the closed shells of each spin (:mod:`.shells`, :mod:`.plane_waves`) and an optional
Jastrow factor ``exp(J)`` (None by default: the Slater determinant alone, whose VMC energy is
the Hartree-Fock energy of the cell, :mod:`.hartree_fock`).

Energy parts (hartree, per walker; they sum to the local energy): ``kinetic``,
``ewald_real``, ``ewald_recip``, ``ewald_constant`` (images + self + background); the
runner's ``potential`` is their Ewald total.  :meth:`ElectronGas.per_electron` divides a
summary's energies by N.

Kernels, each at its own precision: ``orbitals`` (:mod:`.plane_waves`), ``determinant``
(:mod:`fixedqmc.systems.determinants`: ratios, Sherman-Morrison updates, contractions),
``energy`` (:mod:`fixedqmc.systems.slater`), ``ewald_real`` and ``ewald_recip``
(:mod:`.kernels`), plus those
of a Jastrow factor.  Values pass between kernels as float64.

The system composes (:class:`fixedqmc.systems.slater.SlaterJastrow`, shared with the
molecules) a :class:`~fixedqmc.systems.determinant_part.DeterminantPart` over the plane-wave
orbitals (:meth:`ElectronGas._orbitals`), the Jastrow factor's parts and the Ewald
Hamiltonian (:meth:`ElectronGas._potential`).  Per-walker state: the determinant part's
(per spin ``s`` the inverse Slater matrix ``inv{s}``, and ``ln_det``, ``sign``).

2D cells: walkers keep the engine's (n_w, N, 3) positions; psi and the energy depend on
``x, y`` only, ``wrap`` puts every electron back into the cell and into the plane ``z = 0``
(psi is independent of z, so a move's z component changes nothing and is undone at the next
wrap; the z component of every gradient is zero).

The Jastrow factor: an object (e.g. :class:`~.jastrow_eval.JastrowEvaluator`) with
``kernels`` (``{name: KernelSpec}``, added to the system's kernel set so the precision spec
reaches them), ``params`` (its :class:`~.jastrow.JastrowParameters`, for ``optimize``) and
``parts()``, its Jastrow parts (:mod:`fixedqmc.systems.parts`: ``exp(u + p)``, run in the
system's kernel set).
"""

from __future__ import annotations

import math

import numpy as np

from fixedqmc.errors import FixedQMCError
from fixedqmc.numerics.kernel import KernelSpec, Variable
from fixedqmc.numerics.kernel_set import KernelSet
from fixedqmc.qmc.system import Units
from fixedqmc.systems import determinants as det
from fixedqmc.systems.determinant_part import DeterminantPart
from fixedqmc.systems.slater import SlaterJastrow, energy_spec
from fixedqmc.systems.periodic import jastrow as J
from fixedqmc.systems.periodic import plane_waves as PW
from fixedqmc.systems.periodic.cell import Cell, heg_cell
from fixedqmc.systems.periodic.evaluator import EwaldEvaluator, pad3
from fixedqmc.systems.periodic.hartree_fock import hartree_fock_energy
from fixedqmc.systems.periodic.sampling import sample_determinant
from fixedqmc.systems.periodic.shells import Occupied, occupied

HARTREE_EV = 27.211386245988  # CODATA 2018
UNITS = Units("hartree", "bohr", {"millihartree": 1e3, "rydberg": 2.0, "eV": HARTREE_EV})
#: Declared ranges of the energy kernel: per-electron derivatives of ln|D| up to this many
#: times the largest |k| (gradients) and |k|**2 (Laplacians).
DERIV_SCALE = 1e3


class ElectronGas(SlaterJastrow):
    """``n_up`` + ``n_down`` electrons (closed shells) in ``cell`` (a :class:`Cell`, 3D or
    2D), with ``jastrow`` (module docstring) or None; implements the system protocol
    (:mod:`fixedqmc.qmc.system`).  ``ewald_accuracy``: the Ewald sums' relative truncation
    error (:func:`~.ewald.ewald_parameters`); ``specialise``: fixed formats compiled into the
    kernels instead of read at run time (bit-identical)."""

    units = UNITS

    def __init__(self, cell: Cell, n_up: int, n_down: int, precision="float64", *,
                 ewald_accuracy: float = 1e-8, jastrow=None, ranges=None, seed: int = 0,
                 specialise: bool = False):
        self.cell = cell
        self.dim = cell.dim
        self.occ: tuple[Occupied, Occupied] = (occupied(cell, int(n_up), "n_up"),
                                               occupied(cell, int(n_down), "n_down"))
        self.n = (int(n_up), int(n_down))
        self.n_particles = sum(self.n)
        if self.n_particles < 1:
            raise FixedQMCError("the electron gas needs at least one electron")
        self.jastrow = jastrow
        self.ewald = EwaldEvaluator(cell, -np.ones(self.n_particles), accuracy=ewald_accuracy)
        big = max(self.occ, key=lambda o: o.n_half)
        self._gint = pad3(big.gints.astype(np.float64))
        self._kvec = pad3(big.kvecs)
        self._nk2 = -np.sum(big.kvecs ** 2, axis=1)
        self.kernels = self._declared_kernels(big)
        if jastrow is not None:
            clash = set(jastrow.kernels) & set(self.kernels)
            if clash:
                raise FixedQMCError(f"the Jastrow factor's kernels {sorted(clash)} clash with "
                                    "the electron gas's own")
            self.kernels.update(jastrow.kernels)
        self.ks = KernelSet(self.kernels, precision, ranges=ranges, seed=seed,
                            runtime=not specialise)
        self.log = self.ks.log
        self._constant = sum(self.ewald.constants.values())
        super().__init__(DeterminantPart(self.n, self._orbitals),
                         () if jastrow is None else jastrow.parts(), self._potential)

    @classmethod
    def from_density(cls, n_electrons: int, r_s: float, *, dim: int = 3, shape=None,
                     polarisation: float = 0.0, **options) -> "ElectronGas":
        """The gas of ``n_electrons`` at density ``r_s`` (bohr) in the :func:`heg_cell` of
        ``dim`` and ``shape``, ``polarisation`` ``zeta = (N_up - N_down) / N``."""
        n_up, n_down = spin_counts(n_electrons, polarisation)
        return cls(heg_cell(n_electrons, r_s, dim, shape), n_up, n_down, **options)

    # -- declared ranges ----------------------------------------------------------------
    def _declared_kernels(self, big: Occupied) -> dict:
        kmax = float(np.abs(big.kvecs).max(initial=0.0)) or 1.0
        k2 = float(np.sum(big.kvecs ** 2, axis=1).max(initial=0.0)) or 1.0
        dmax = max(kmax, k2)  # gradient components and Laplacians of the orbitals
        r = PW.orbital_ranges(big.gints, big.kvecs)
        out = {"orbitals": KernelSpec("orbitals", tuple(Variable(v, *r[v], doc)
                                                        for v, doc in PW.ORBITAL_VARIABLES)),
               "energy": energy_spec(DERIV_SCALE * k2, DERIV_SCALE * kmax, self.n_particles)}
        out["determinant"] = det.determinant_spec(det.determinant_ranges(
            1.0, dmax, DERIV_SCALE * kmax, max(max(self.n), 1)))
        out.update(self.ewald.kernels)
        return out

    # -- physics helpers ----------------------------------------------------------------
    @property
    def volume(self) -> float:
        return self.cell.volume

    def hartree_fock(self) -> dict:
        """The closed-form Hartree-Fock energy of this cell (:mod:`.hartree_fock`)."""
        return hartree_fock_energy(self.cell, [o.all_k for o in self.occ])

    @property
    def kinetic_exact(self) -> float:
        """``sum_occ |k|**2 / 2`` (hartree): the kinetic energy of the determinant alone."""
        return sum(o.kinetic for o in self.occ)

    def per_electron(self, summary: dict) -> dict:
        """Energies per electron (hartree) of a run summary: the final energy and, per
        stage, the energy and its parts, each with its error."""
        n = self.n_particles
        out = {"energy": summary["energy"] / n, "energy_error": summary["energy_error"] / n}
        for name, st in summary.get("stages", {}).items():
            cols = st.get("energy_columns", ())
            out[name] = {c: st[c] / n for c in cols if c in st} | {
                f"{c}_error": st[f"{c}_error"] / n for c in cols if f"{c}_error" in st}
        return out

    # -- kernels ------------------------------------------------------------------------
    def _frac(self, x: np.ndarray) -> np.ndarray:
        """Fractional coordinates in [0, 1) of cartesian points x (..., 3), padded to 3."""
        return pad3(self.cell.wrap_fractional(x[..., :self.dim]))

    def _orbitals(self, ks, pts, s: int, derivs: bool, step: int):
        """Orbital values (P, n_s) and with ``derivs`` gradients and Laplacians (P, n_s, 4)
        of spin s at cartesian points ``pts`` (P, 3), float64."""
        nh = self.occ[s].n_half
        m = self.n[s]
        P = pts.shape[0]
        dt = ks["orbitals"].dtype
        out_v = np.zeros((P, m), dt)
        out_d = np.zeros((P, m if derivs else 0, 4), dt)
        ctx = ks.context("orbitals", step)
        PW.orbital_kernel(ctx, derivs, ks.encode("orbitals", "frac", self._frac(pts), step),
                          self._gint[:nh], self._kvec[:nh], self._nk2[:nh], out_v, out_d)
        ks.report("orbitals", ctx)
        vals = ks.decode("orbitals", "value", out_v)
        if not derivs:
            return vals, None
        d = ks.decode("orbitals", "grad", out_d)
        d[..., 3] = ks.decode("orbitals", "lap", out_d[..., 3])
        return vals, d

    def _potential(self, ks, pos, step):
        """The Ewald energy by part (hartree): the two kernels' sums and the constant."""
        x = pos[..., :self.dim]
        real = self.ewald.real(x, step, ks)
        recip, _ = self.ewald.recip(x, step, ks)
        return {"ewald_real": real, "ewald_recip": recip,
                "ewald_constant": np.full(pos.shape[0], self._constant)}

    def bound_evaluation(self, positions, *, step: int = 0):
        """Rigorous bounds on the errors of this gas's precision at ``positions`` beside
        the errors measured (:meth:`SlaterJastrow._bounds`; parts ``kinetic``,
        ``ewald_real``, ``ewald_recip`` and ``ewald_constant``, hartree; the constant is
        computed on the host in float64 for the trial and the bound run alike, an exact
        input of both)."""
        return self._bounds("heg", positions, step)

    # -- linear parameters (fixedqmc optimize) ------------------------------------------
    def _jastrow_params(self):
        return None if self.jastrow is None else self.jastrow.params

    def parameter_names(self) -> list[str]:
        """The Jastrow factor's optimisable parameters (:func:`.jastrow.parameter_names`);
        none without a Jastrow factor."""
        p = self._jastrow_params()
        return [] if p is None else J.parameter_names(p)

    def parameter_vector(self) -> np.ndarray:
        p = self._jastrow_params()
        return np.zeros(0) if p is None else J.parameter_vector(p)

    def parameter_basis(self, positions):
        """``d ln psi / dc`` (n_w, K), its gradients (n_w, K, N, 3) and summed Laplacians
        (n_w, K) at ``positions`` (n_w, N, 3) (:func:`.jastrow.linear_basis`, float64)."""
        x = np.asarray(positions, np.float64)[..., :self.dim]
        p = self._jastrow_params()
        if p is None:
            nw = x.shape[0]
            return np.zeros((nw, 0)), np.zeros((nw, 0, self.n_particles, 3)), np.zeros((nw, 0))
        phi, grad, lap = J.linear_basis(p, x)
        return phi, pad3(grad), lap

    def parameter_input(self, c) -> dict:
        """The ``[jastrow]`` keys of parameters c (:func:`.jastrow.parameter_lists`)."""
        return {"jastrow": J.parameter_lists(self._jastrow_params(), c)}

    # -- the protocol -------------------------------------------------------------------
    def initial_positions(self, n_walkers: int, rng: np.random.Generator) -> np.ndarray:
        """Exact samples of ``|D_up D_down|**2`` (:func:`.sampling.sample_determinant`), so
        that the walkers of the determinant start in equilibrium and away from its nodes,
        (n_walkers, N, 3) bohr (2D: z = 0)."""
        parts = [sample_determinant(self.cell, o.all_k, n_walkers, rng)
                 for o in self.occ if o.n]
        return pad3(np.concatenate(parts, axis=1))

    def wrap(self, positions: np.ndarray) -> np.ndarray:
        """Positions moved by lattice vectors into the cell (2D: and into z = 0)."""
        x = np.asarray(positions, np.float64)
        out = np.zeros_like(x)
        out[..., :self.dim] = self.cell.wrap(x[..., :self.dim])
        return out

    @property
    def profile_step(self) -> float:
        """The Gaussian step (bohr) of the profiling sweep's moves: r_s / 2."""
        return 0.5 * self.r_s

    @property
    def r_s(self) -> float:
        """The density parameter (bohr) of this cell and electron count."""
        if self.dim == 3:
            return (3 * self.volume / (4 * math.pi * self.n_particles)) ** (1 / 3)
        return math.sqrt(self.volume / (math.pi * self.n_particles))

def spin_counts(n_electrons: int, polarisation: float = 0.0) -> tuple[int, int]:
    """``(N_up, N_down)`` of ``n_electrons`` at spin polarisation ``zeta = (N_up - N_down)
    / N`` in [0, 1]; a :class:`FixedQMCError` naming ``system.polarisation`` if they are
    not integers."""
    up = n_electrons * (1 + polarisation) / 2
    if abs(up - round(up)) > 1e-9:
        raise FixedQMCError(
            f"system.polarisation = {polarisation!r} with system.electrons = {n_electrons} "
            f"gives N_up = N (1 + zeta) / 2 = {up:g} electrons, not an integer")
    up = int(round(up))
    return up, n_electrons - up
