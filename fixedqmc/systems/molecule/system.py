"""A Gaussian-basis molecule as a QMC system: Slater determinants of PySCF orbitals.

Hamiltonian (hartree atomic units, ``hbar**2 / 2m = 1/2``)::

    H = -1/2 sum_i lap_i - sum_{i,A} Z_A / r_iA + sum_{i<j} 1 / r_ij + sum_{A<B} Z_A Z_B / R_AB

Trial function (seed 001, Eq. 5-8): ``psi = det[phi_k(r_i)]_up det[phi_k(r_i)]_down`` of the
occupied molecular orbitals ``phi_k = sum_mu C[mu, k] chi_mu`` of a mean-field calculation,
the AOs ``chi_mu`` contracted Gaussians; optionally times ``exp(J)``, the electron-electron
Jastrow factor of :mod:`fixedqmc.systems.molecule.jastrow` (cusp conditions).  Without it
(the seed's case, the default) VMC samples ``|psi_HF|**2`` and its energy is the
mean-field energy.  Gaussians have no cusp at
the nuclei, so the local energy diverges like ``-Z / r`` there and its variance is large;
DMC keeps only the nodes of psi.

Every kernel of :mod:`fixedqmc.systems.molecule.kernels` and the ``determinant`` kernel of
:mod:`fixedqmc.systems.determinants` runs at its own precision (``distance``, ``exp``,
``contraction``, ``orbitals``, ``derivatives``, ``determinant``, ``coulomb``, ``energy``,
and ``jastrow`` when there is one).
Values pass between kernels as float64 (exact for words of at most 53 bits).

The system composes (:class:`fixedqmc.systems.slater.SlaterJastrow`, shared with the
electron gas) a :class:`~fixedqmc.systems.determinant_part.DeterminantPart` over its orbital
evaluator (:meth:`Molecule._orbitals`), the Jastrow part
:class:`~fixedqmc.systems.molecule.jastrow.PadeJastrow` when there is one, and the Coulomb
Hamiltonian (:meth:`Molecule._potential`).  Per-walker state: the determinant part's (per
spin ``s`` the inverse Slater matrix ``inv{s}`` in words of the determinant kernel, and
``ln_det``, ``sign`` of the product of determinants).
"""

from __future__ import annotations

import numpy as np

from fixedqmc.numerics import aligned, bound_words
from fixedqmc.numerics.kernel import N_CHUNKS, KernelSpec, Variable, symmetric_range as sym
from fixedqmc.numerics.kernel_set import KernelSet
from fixedqmc.qmc.system import Units
from fixedqmc.systems import determinants as det
from fixedqmc.systems.determinant_part import DeterminantPart
from fixedqmc.systems.molecule import jastrow as J
from fixedqmc.systems.molecule import kernels as K
from fixedqmc.systems.molecule.basis import GaussianBasis, basis_from_mole, evaluate_numpy
from fixedqmc.systems.slater import ENERGY_VARIABLES, SlaterJastrow

HARTREE_EV = 27.211386245988  # CODATA 2018
UNITS = Units("hartree", "bohr", {"millihartree": 1e3, "eV": HARTREE_EV,
                                  "kcal/mol": 627.5094740631})
ORBITAL_KERNELS = ("distance", "exp", "contraction", "orbitals", "derivatives")
#: Margin (bohr) around the nuclei of the declared coordinate range.
MARGIN = 10.0


def _spec(name, variables, ranges):
    return KernelSpec(name, tuple(Variable(v, *ranges[v], doc) for v, doc in variables))


class Molecule(SlaterJastrow):
    """A molecule with occupied MOs ``mo_up`` (n_ao, n_up), ``mo_down`` (n_ao, n_down) in
    the AO basis of ``mol`` (a PySCF ``Mole``); implements the system protocol
    (:mod:`fixedqmc.qmc.system`).  ``spread`` (bohr): the Gaussian spread of the starting
    electrons around their nuclei; ``jastrow_b`` (1/bohr): the range parameter b of the
    electron-electron Jastrow factor, None for none; ``specialise``: fixed-point kernels
    compiled for their formats (fastest to run, a compilation per set of formats) instead
    of reading them at run time (one compilation for every width; bit-identical)."""

    units = UNITS

    def __init__(self, mol, mo_up, mo_down, precision="float64", *, ranges=None, seed=0,
                 spread: float = 0.7, jastrow_b: float | None = None,
                 specialise: bool = False):
        self.mol = mol
        self.basis: GaussianBasis = basis_from_mole(mol)
        b = self.basis
        self.n = (int(mo_up.shape[1]), int(mo_down.shape[1]))
        self.n_particles = sum(self.n)
        self.spread = float(spread)
        #: per spin, MO coefficients over cartesian AOs (n_mo, n_cart), C-contiguous
        self.mo = [np.ascontiguousarray((b.cart2sph @ c).T) for c in (mo_up, mo_down)]
        #: the same transposed, (n_cart, n_mo): the orbital kernel streams one AO's row
        self._mo_rows = [np.ascontiguousarray(m.T) for m in self.mo]
        self.jastrow_b = None if jastrow_b is None else float(jastrow_b)
        self.kernels = declared_kernels(b, self.mo, self.n, self.jastrow_b)
        self.ks = KernelSet(self.kernels, precision, ranges=ranges, seed=seed,
                            runtime=not specialise)
        self.log = self.ks.log
        self._basis_args = _basis_args(b)
        self._scratch = aligned.Scratch()
        self._nn = self._nuclear_repulsion(self.ks)
        jastrows = () if jastrow_b is None else (J.PadeJastrow(self.n[0], self.jastrow_b),)
        super().__init__(DeterminantPart(self.n, self._orbitals), jastrows, self._potential)

    # -- kernels ------------------------------------------------------------------------
    def _nuclear_repulsion(self, ks):
        ctx = ks.context("coulomb", 0)
        w = K.nuclear_repulsion_kernel(ctx, self.basis.coords, self.basis.charges)
        ks.report("coulomb", ctx)
        return ks.decode("coulomb", "nn", np.array([w]))[0]

    def _orbitals(self, ks, pts, s: int, derivs: bool, step: int):
        """MO values (P, n_s) and, with ``derivs``, gradients and Laplacians (P, n_s, 4) of
        spin ``s`` at points ``pts`` (P, 3), float64."""
        pts = np.ascontiguousarray(pts, np.float64)
        P, n_cart, n_mo = pts.shape[0], self.basis.n_cart, self.mo[s].shape[0]
        ctxs = tuple(ks.context(k, step) for k in ORBITAL_KERNELS)
        da, dm, dg = (ks[k].dtype for k in ("contraction", "orbitals", "derivatives"))
        scratch = self._scratch.get(("orbitals", da, dm, dg), lambda: (  # per chunk
            aligned.empty((N_CHUNKS, n_cart), da), aligned.empty((N_CHUNKS, n_cart, 4), da),
            aligned.empty((N_CHUNKS, n_cart), dm), aligned.empty((N_CHUNKS, n_cart, 4), dg),
            aligned.empty((N_CHUNKS, n_cart), np.int64)))
        out_v = np.empty((P, n_mo), dm)  # the kernel writes every element
        out_d = np.empty((P, n_mo if derivs else 0, 4), dg)
        cm = self._coeff_words(ks, "orbitals", s, step)
        cg = (self._coeff_words(ks, "derivatives", s, step) if derivs
              else np.empty((0, n_mo), dg))  # not read without derivatives
        K.orbital_kernel(*ctxs, derivs, pts, ks.encode("distance", "x", pts, step),
                         self._basis_args, cm, cg, scratch, out_v, out_d)
        for k, ctx in zip(ORBITAL_KERNELS, ctxs):
            ks.report(k, ctx)
        vals = ks.decode("orbitals", "value", out_v)
        if not derivs:
            return vals, None
        d = ks.decode("derivatives", "grad", out_d)
        d[..., 3] = ks.decode("derivatives", "lap", out_d[..., 3])
        return vals, d

    def _coeff_words(self, ks, kernel: str, s: int, step: int) -> np.ndarray:
        """The transposed MO coefficients of spin ``s`` (n_cart, n_mo) as ``kernel.coeff``
        inputs.  Constants, so encoded once (an overflow of their format is logged once)
        unless they round stochastically (their bits then depend on the step) or ``ks`` is
        not the system's own kernel set (a profiling set records every input)."""
        kp = ks[kernel]
        if ks is not self.ks or (kp.kind == "formats"
                                 and kp.roundings[kp.spec.index("coeff")] == "stochastic"):
            return ks.encode(kernel, "coeff", self._mo_rows[s], step)
        cache = self.__dict__.setdefault("_coeff_cache", {})
        if (kernel, s) not in cache:  # aligned: the MO sums stream its rows
            cache[kernel, s] = aligned.copy(ks.encode(kernel, "coeff", self._mo_rows[s], step))
        return cache[kernel, s]

    # -- the protocol -------------------------------------------------------------------
    def initial_positions(self, n_walkers: int, rng: np.random.Generator) -> np.ndarray:
        """Electrons around the nuclei: spin-up electrons fill the atoms in turn (weighted
        by charge), spin-down ones likewise from the other end, with Gaussian noise."""
        order = np.repeat(np.arange(self.basis.n_atom), self.basis.charges.astype(int))
        if order.size == 0:
            order = np.arange(self.basis.n_atom)
        sites = np.concatenate([np.resize(order, self.n[0]), np.resize(order[::-1], self.n[1])])
        centre = self.basis.coords[sites]
        return centre + rng.normal(0.0, self.spread, (n_walkers, self.n_particles, 3))

    @staticmethod
    def wrap(positions: np.ndarray) -> np.ndarray:
        return positions  # open boundaries

    def _potential(self, ks, pos, step):
        """Coulomb energies by part (hartree)."""
        cv = ks.context("coulomb", step)
        out = np.zeros((pos.shape[0], 2), ks["coulomb"].dtype)
        K.coulomb_kernel(cv, ks.encode("coulomb", "x", pos, step), self.basis.coords,
                         self.basis.charges, out)
        ks.report("coulomb", cv)
        nn = self._nn if ks.trial is None else self._nuclear_repulsion(ks)
        return {"electron_electron": ks.decode("coulomb", "ee", out[:, 0]),
                "electron_nucleus": bound_words.negate(ks.decode("coulomb", "en", out[:, 1])),
                "nucleus_nucleus": np.full(pos.shape[0], nn)}

    def bound_evaluation(self, positions, *, step: int = 0):
        """Rigorous bounds on the errors of this molecule's precision at ``positions``
        beside the errors measured (:meth:`SlaterJastrow._bounds`; parts
        ``electron_electron``, ``electron_nucleus``, ``nucleus_nucleus`` and ``kinetic``,
        hartree)."""
        return self._bounds("molecule", positions, step)

    def profile(self, positions, *, step: int = 0) -> dict:
        """Ranges of every kernel variable in a float64 evaluation of ``positions`` and one
        Metropolis sweep of single-electron moves (0.3 bohr steps) from them
        (:meth:`SlaterJastrow._profile_sweep`)."""
        ks = self.ks.profiling()
        self._nuclear_repulsion(ks)
        return self._profile_sweep(ks, positions, self.profile_step, step)

    def _stored_arrays(self) -> list:
        """The MO coefficients of both spins, once as the values' and once as the
        derivatives' ``coeff`` (seed 001 names them, with the exponential's tables, as
        what filled its on-chip memory)."""
        entries = sum(m.size for m in self.mo)
        return [{"kernel": k, "array": "mo_coefficients", "entries": entries,
                 "variable": "coeff"} for k in ("orbitals", "derivatives")]

    #: The Gaussian step (bohr) of the profiling sweep's moves.
    profile_step = 0.3


# ---------------------------------------------------------------- declared ranges --
def _basis_args(b: GaussianBasis) -> tuple:
    atom_shell = np.searchsorted(b.shell_atom, np.arange(b.n_atom + 1)).astype(np.int64)
    if not np.all(np.diff(b.shell_atom) >= 0):
        raise ValueError("shells must be grouped by atom (PySCF's order)")
    min_exp = np.array([b.exps[b.shell_prim[s]:b.shell_prim[s + 1]].min()
                        for s in range(len(b.shell_l))])
    cut = np.array([K.CUT / min_exp[atom_shell[a]:atom_shell[a + 1]].min()
                    if atom_shell[a + 1] > atom_shell[a] else -1.0 for a in range(b.n_atom)])
    # each shell's primitives by ascending exponent: the kernel stops at the first one
    # beyond the cut-off
    order = np.concatenate([lo + np.argsort(b.exps[lo:hi], kind="stable") for lo, hi
                            in zip(b.shell_prim[:-1], b.shell_prim[1:])])
    return (b.coords, atom_shell, b.shell_l, b.shell_prim, b.shell_ao, b.powers,
            b.exps[order], b.coeffs[order], cut)


def declared_kernels(b: GaussianBasis, mo: list, n: tuple, jastrow_b: float | None = None
                     ) -> dict:
    """The kernels with declared ranges: analytic bounds from the basis (screening radius,
    exponents, coefficients) and sampled ones (AO/MO values and derivatives at points
    around the nuclei, times 4)."""
    r2_max = K.CUT / b.exps.min()
    d_max = np.sqrt(r2_max)
    l_max = int(b.shell_l.max())
    x_max = float(np.abs(b.coords).max()) + MARGIN
    a_max, c_max = b.exps.max(), np.abs(b.coeffs).max()
    rad = max(np.abs(b.coeffs[b.shell_prim[s]:b.shell_prim[s + 1]]).sum()
              for s in range(len(b.shell_l)))
    drad = 2 * max(np.abs(b.exps * b.coeffs)[b.shell_prim[s]:b.shell_prim[s + 1]].sum()
                   for s in range(len(b.shell_l)))
    ddrad = 4 * max(np.abs(b.exps ** 2 * b.coeffs)[b.shell_prim[s]:b.shell_prim[s + 1]].sum()
                    for s in range(len(b.shell_l)))
    pw = max(1.0, d_max ** l_max)
    rng = np.random.default_rng(0)
    pts = (b.coords[rng.integers(0, b.n_atom, 4000)]
           + rng.normal(0.0, 1.0, (4000, 3)) * rng.choice([0.1, 0.5, 2.0], (4000, 1)))
    v, g, lp = evaluate_numpy(b, pts)
    ao_max, dao_max = 4 * np.abs(v).max(), 4 * max(np.abs(g).max(), np.abs(lp).max())
    cm = max(np.abs(c).max(initial=0.0) for c in mo)
    mo_v = 4 * max(np.abs(v @ c.T).max(initial=0.0) for c in mo)
    mo_d = 4 * max(max(np.abs(np.einsum("pac,ka->pkc", g, c)).max(initial=0.0),
                       np.abs(lp @ c.T).max(initial=0.0)) for c in mo)
    term = cm * max(ao_max, dao_max)
    n_e, n_max = sum(n), max(max(n), 1)
    span = 2 * x_max
    ranges = {
        "distance": {"x": sym(x_max), "nucleus": sym(np.abs(b.coords).max()),
                     "d": sym(d_max), "d2": (0, r2_max), "r2": (0, 3 * r2_max)},
        "exp": {"r2": (0, r2_max), "neg_alpha": (-a_max, 0), "arg": (-K.CUT, 0),
                "value": (0, 1)},
        "contraction": {
            "d": sym(d_max), "r2": (0, r2_max), "value": (0, 1), "coeff": sym(c_max),
            "term": sym(c_max), "radial": sym(rad), "dcoeff": sym(2 * a_max * c_max),
            "dterm": sym(2 * a_max * c_max), "dradial": sym(drad),
            "ddcoeff": sym(4 * a_max ** 2 * c_max), "ddterm": sym(4 * a_max ** 2 * c_max),
            "ddradial": sym(ddrad), "int": (0, max(2 * l_max + 3, l_max * (l_max - 1))),
            "pow": sym(pw), "ang": sym(pw), "ao": sym(ao_max), "dang": sym(l_max * pw),
            "pd": sym(pw * d_max), "gterm": sym(dao_max), "grad": sym(dao_max),
            "lterm": sym(dao_max), "lap_p": sym(l_max * l_max * pw),
            "qa": sym((2 * l_max + 3) * drad), "qb": sym(r2_max * ddrad),
            "radlap": sym((2 * l_max + 3) * drad + r2_max * ddrad), "lap": sym(dao_max)},
        "orbitals": {"ao": sym(ao_max), "coeff": sym(cm), "term": sym(cm * ao_max),
                     "value": sym(mo_v)},
        "derivatives": {"dao": sym(dao_max), "coeff": sym(cm), "term": sym(term),
                        "grad": sym(mo_d), "lap": sym(mo_d)},
        "coulomb": {"x": sym(x_max), "nucleus": sym(np.abs(b.coords).max()),
                    "d": sym(span), "d2": (0, span ** 2), "r2": (0, 3 * span ** 2),
                    "inv_r": (0, 1e3), "charge": (0, b.charges.max() ** 2),
                    "q_inv_r": (0, 1e3 * b.charges.max()),
                    "ee": (0, 1e3 * n_e ** 2 / 2), "en": (0, 1e3 * n_e * b.charges.sum()),
                    "nn": (0, 1e3 * b.charges.sum() ** 2)},
        "energy": {"lap": sym(1e4), "grad": sym(1e3), "gsum": sym(3e3),
                   "gprod": sym(3e6), "lap_sum": sym(1e4 * n_e), "half": (-0.5, 0),
                   "kinetic": sym(5e3 * n_e)},
    }
    if jastrow_b is not None:  # pair distances above 1e-3 bohr
        r_max = np.sqrt(3) * span
        ranges["jastrow"] = {
            "x": sym(x_max), "d": sym(span), "d2": (0, span ** 2), "r2": (0, 3 * span ** 2),
            "inv_r": (0, 1e3), "r": (0, r_max), "b": (0, jastrow_b),
            "br": (0, jastrow_b * r_max), "den": (1, 1 + jastrow_b * r_max),
            "inv_den": (0, 1), "a": (0, 0.5), "ar": (0, 0.5 * r_max),
            "u": (0, 0.5 / jastrow_b), "sum": (0, 0.25 * n_e ** 2 / jastrow_b),
            "inv_den2": (0, 1), "du": (0, 0.5), "dur": (0, 5e2), "g": sym(5e2),
            "grad": sym(5e2 * n_e), "lterm": (0, 1e3), "lap": (0, 1e3 * n_e)}
    variables = {"distance": K.DISTANCE_VARIABLES, "exp": K.EXP_VARIABLES,
                 "jastrow": J.JASTROW_VARIABLES,
                 "contraction": K.CONTRACTION_VARIABLES, "orbitals": K.ORBITALS_VARIABLES,
                 "derivatives": K.DERIVATIVES_VARIABLES, "coulomb": K.COULOMB_VARIABLES,
                 "energy": ENERGY_VARIABLES}
    out = {k: _spec(k, variables[k], ranges[k]) for k in ranges}
    out["determinant"] = det.determinant_spec(det.determinant_ranges(mo_v, mo_d, 1e3, n_max))
    return out
