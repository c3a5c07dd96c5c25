"""A bosonic helium cluster as a QMC system: tables, kernel precisions and evaluation.

:class:`HeliumCluster` bundles the Hamiltonian (``N`` atoms, a pair potential, Eq. 8-9 of
HAQMC, seed 002) and the pair-product trial function (Eq. 11-17) with the compiled kernels
of :mod:`fixedqmc.systems.helium.kernels`, and implements the system protocol
(:mod:`fixedqmc.qmc.system`): drivers call :meth:`HeliumCluster.evaluate`,
:meth:`~HeliumCluster.propose` (single-atom moves through :meth:`atom_move`),
:meth:`~HeliumCluster.accept` and :meth:`~HeliumCluster.wrap` (centre of mass); they never
see a precision.  psi > 0 (bosons): the sign is always +1 and there is no per-walker state.

Units: positions in angstrom, energies in kelvin, ``hbar2_2m`` in K A**2.

Pair functions come from two-region tables of the squared distance (:mod:`fixedqmc.tables`)
over ``[r_min**2, r_max**2]`` (:class:`TableSettings`):

========== ============================== ==================
table      function                       sigma rule
========== ============================== ==================
potential  V(r) (K)                       zero of V
T2         T2(r) (ln of the pair factor)  maximum of T2
G          T2'(r) / r (1/A**2)            sign change
L          T2''(r) + 2 T2'(r) / r (1/A**2) sign change
========== ============================== ==================

``r_max`` is also the support of the trial function: a configuration with a pair farther
apart than ``r_max`` has psi = 0 (its moves are rejected), so choose it beyond the cluster's
extent.  Pairs closer than ``r_min`` use the table's value at ``r_min`` (psi**2 there is
below exp(-2 * 118.8 / r_min**5) for the default parameters: 1e-14 at 1.5 A).

Declared variable ranges (used by width-only specs such as ``fixed:32`` when no profile is
given): per-pair values over the whole table; sums over pairs assume no pair closer than
the core radius (where psi**2 < exp(-40), :meth:`HeliumCluster.core_radius`) and, for the
short-range sums (V, L, grad), at most ``NEIGHBOURS`` = 16 close pairs per atom; the sum of
T2 counts every pair.  Values outside a declared range saturate and are counted.  A range
profile (``ranges=``, :mod:`fixedqmc.qmc.profile`) gives far tighter formats.
"""

from __future__ import annotations

import copy
import math
from dataclasses import dataclass

import numpy as np

from fixedqmc.errors import FixedQMCError
from fixedqmc.numerics.bound_run import KernelBound, linear_bound, system_bound
from fixedqmc.numerics.kernel import (KernelPrecision, KernelSpec, Variable,
                                      shared_context_kind)
from fixedqmc.numerics.kernel_set import (formats_of, host_stats, merge_counts, merge_stats,
                                          step_seed)
from fixedqmc.numerics.overflow import OverflowLog
from fixedqmc.numerics.policy import parse_precision
from fixedqmc.numerics.vectorise import vectorised
from fixedqmc.qmc.system import Evaluation, Proposal, Units
from fixedqmc.systems.helium.walkers import centre, initial_walkers
from fixedqmc.systems.helium import kernels as K
from fixedqmc.systems.helium.constants import HARTREE_K, HBAR2_2M
from fixedqmc.systems.helium.potentials import get_potential
from fixedqmc.systems.helium.trial import (DEFAULT_PAIR_PARAMS, PairProductParams, dt2,
                                           pair_laplacian_term, t2)
from fixedqmc.tables.evaluate import table_ranges
from fixedqmc.tables.lookup import coefficient_rows
from fixedqmc.tables.two_region import TwoRegionTable, build_table

KERNEL_NAMES = ("distance", "potential", "wavefunction", "kinetic")
SOURCES = ("table", "analytic")
_PAD = 2.0 ** -20
#: T2 below which a pair is "inside the core" for declared ranges (psi**2 < exp(-40))
T2_CORE = -20.0
#: pairs per atom assumed for the declared ranges of short-range sums (V, L, grad)
NEIGHBOURS = 16


@dataclass(frozen=True)
class TableSettings:
    """Range and layout of the pair-function tables (A; HAQMC layout by default)."""

    r_min: float = 1.4
    r_max: float = 100.0
    n1: int = 256
    n_seg: int = 21
    n_bin: int = 64
    coef_format: str | None = None

    def __post_init__(self):
        if not (math.isfinite(self.r_min) and math.isfinite(self.r_max)
                and 0 < self.r_min < self.r_max):
            raise FixedQMCError(f"tables: need 0 < r_min < r_max (A), got r_min={self.r_min!r}, "
                                f"r_max={self.r_max!r}")


#: kelvin, angstrom; results can also be shown in mK, hartree and microhartree
UNITS = Units("K", "A", {"mK": 1e3, "hartree": 1.0 / HARTREE_K,
                         "microhartree": 1e6 / HARTREE_K})


@dataclass(frozen=True)
class StartSettings:
    """Starting configurations (:func:`fixedqmc.systems.helium.walkers.initial_walkers`)."""

    geometry: str = "lattice"
    spacing: float = 4.2334
    jitter: float = 0.1


def _pad(lo: float, hi: float) -> tuple[float, float]:
    lo, hi = float(lo), float(hi)
    m = max(abs(lo), abs(hi)) * _PAD
    return (lo - m if lo < 0 else lo), (hi + m if hi > 0 else hi)


def _sum_range(lo: float, hi: float, n: int) -> tuple[float, float]:
    return _pad(n * min(lo, 0.0), n * max(hi, 0.0))


def table_variable_ranges(table: TwoRegionTable, prefix: str = "") -> dict:
    """Ranges of the lookup variables of :mod:`kernels` for one table."""
    ranges = dict(table_ranges(table))
    off, scale = np.array(table.offset), np.array(table.scale)
    y_lo, y_hi = ranges["y"]
    ys = np.array([scale * y_lo, scale * y_hi])
    f = ys + off
    ranges.update(scale=_pad(scale.min(), scale.max()), off=_pad(off.min(), off.max()),
                  ys=_pad(ys.min(), ys.max()), f=_pad(f.min(), f.max()))
    return {prefix + k: v for k, v in ranges.items()}


class HeliumCluster:
    """He_N with a pair potential and a pair-product trial function (module docstring).

    Parameters
    ----------
    n_atoms : int
        N >= 2.
    potential : str or callable
        A registered potential name (``"SAPT2"``, ``"HFD-B"``, ``"LM2M2"``, ...) or a
        vectorised ``V(r)`` (r in A, V in K).
    params : PairProductParams
        Trial-function parameters (must be normalisable for a cluster).
    precision : str or PrecisionPolicy
        Precision spec over the kernels ``distance``, ``potential``, ``wavefunction``,
        ``kinetic``.
    sources : dict, optional
        Kernel -> ``"table"`` (default) or ``"analytic"`` for ``potential``,
        ``wavefunction`` and ``kinetic`` (analytic needs a float precision and a built-in
        potential).
    tables : TableSettings
    hbar2_2m : float
        hbar**2 / 2m in K A**2.
    ranges : dict, optional
        ``{kernel: {variable: (lo, hi)}}`` from a range profile, sizing width-only specs.
    seed : int
        Seed of stochastic rounding.
    specialise : bool
        Compile fixed formats into the kernels (fastest, but one compilation of a minute or
        more per set of formats).  Otherwise (default) a precision with any fixed kernel runs
        the run-time-format kernel, one compilation for every width and every mix of fixed
        and float64 kernels, and a precision with float formats only the float-format
        kernel, one compilation for every format and every mix of float-format and float64
        kernels (:func:`~fixedqmc.numerics.kernel_spec.shared_context_kind`; float32 or
        analytic kernels use the typed kernels).  Results are bit-identical either way.
    """

    kernel_names = KERNEL_NAMES
    units = UNITS

    def __init__(self, n_atoms: int, potential="SAPT2", params: PairProductParams = DEFAULT_PAIR_PARAMS,
                 precision="float64", *, sources: dict | None = None,
                 tables: TableSettings = TableSettings(), hbar2_2m: float = HBAR2_2M,
                 ranges: dict | None = None, seed: int = 0, specialise: bool = False,
                 start: StartSettings = StartSettings()):
        if isinstance(n_atoms, bool) or not isinstance(n_atoms, (int, np.integer)) or n_atoms < 2:
            raise FixedQMCError(f"n_atoms must be an integer >= 2, got {n_atoms!r}")
        if not isinstance(params, PairProductParams):
            raise FixedQMCError(f"params must be PairProductParams, got {type(params).__name__}")
        params.check_normalisable()
        if not (math.isfinite(hbar2_2m) and hbar2_2m > 0):
            raise FixedQMCError(f"hbar2_2m must be a positive number (K A^2), got {hbar2_2m!r}")
        self.n_atoms = int(n_atoms)
        self.start = start
        self.potential_name = potential if isinstance(potential, str) else getattr(
            potential, "__name__", "user potential")
        self.potential_spec = potential
        self.potential_fn = get_potential(potential) if isinstance(potential, str) else potential
        if not callable(self.potential_fn):
            raise FixedQMCError(f"potential must be a name or a callable V(r), got {potential!r}")
        self.params = params
        self.settings = tables
        self.hbar2_2m = float(hbar2_2m)
        self.seed = int(seed)
        self.specialise = bool(specialise)
        self.sources = self._check_sources(sources or {})
        self.policy = parse_precision(precision)
        self.tables = self._build_tables()
        self.specs = self._specs()
        self.policy.check_kernels({k: s.names for k, s in self.specs.items()})
        ranges = ranges or {}
        self.precisions: dict[str, KernelPrecision] = {
            k: spec.resolve(self.policy, ranges.get(k)) for k, spec in self.specs.items()}
        for k, src in self.sources.items():
            if src == "analytic" and self.precisions[k].kind == "formats":
                raise FixedQMCError(f"kernel {k!r}: analytic evaluation runs in float64 or "
                                    "float32 only; use source 'table' for fixed point")
        # one context kind for the fused kernel: one compilation for every width (or float
        # format) and every choice of which kernels are float64
        self.runtime = (not self.specialise
                        and all(kp.kind != "float32" for kp in self.precisions.values())
                        and all(src == "table" for src in self.sources.values())
                        and any(kp.kind == "formats" for kp in self.precisions.values()))
        if self.runtime:
            self.precisions = shared_context_kind(self.precisions)
        self.log = OverflowLog()
        self._sources = self._kernel_sources()
        self._compiled = False

    # -- set-up -----------------------------------------------------------------------
    @staticmethod
    def _check_sources(sources: dict) -> dict:
        out = {"potential": "table", "wavefunction": "table", "kinetic": "table"}
        for k, v in sources.items():
            if k not in out:
                raise FixedQMCError(f"sources: unknown kernel {k!r}; allowed: {', '.join(out)}")
            if v not in SOURCES:
                raise FixedQMCError(f"sources.{k}: {v!r} is not one of {', '.join(SOURCES)}")
            out[k] = v
        return out

    def _build_tables(self) -> dict:
        st, p = self.settings, self.params
        s_min, s_max = st.r_min ** 2, st.r_max ** 2
        functions = {
            "potential": (self.potential_fn, "zero"),
            "T2": (lambda r: t2(r, p), "max"),
            "G": (lambda r: dt2(r, p) / r, "sign_change"),
            "L": (lambda r: pair_laplacian_term(r, p), "sign_change"),
        }
        out = {}
        for name, (fn, rule) in functions.items():
            try:
                out[name] = build_table(fn, s_min, s_max, rule, st.n1, st.n_seg, st.n_bin,
                                        coef_format=st.coef_format, name=name)
            except FixedQMCError:  # no zero / maximum / sign change in range: split in the middle
                out[name] = build_table(fn, s_min, s_max, math.sqrt(s_min * s_max), st.n1,
                                        st.n_seg, st.n_bin, coef_format=st.coef_format,
                                        name=name)
        return out

    def core_radius(self) -> float:
        """r_core (A): the distance below which psi**2 of a pair is below exp(2 T2_CORE)
        (T2(r) < T2_CORE): sampled configurations essentially never have a pair closer."""
        r = np.geomspace(self.settings.r_min, self.settings.r_max, 8192)
        inside = np.flatnonzero(t2(r, self.params) >= T2_CORE)
        return float(r[inside[0]]) if inside.size else self.settings.r_min

    def _specs(self) -> dict:
        n, st, tab = self.n_atoms, self.settings, self.tables
        pairs = n * (n - 1) // 2
        near = min(pairs, NEIGHBOURS * n // 2)  # short-range pairs: bounded per atom
        xm = st.r_max
        dist = {"x": (-xm, xm), "dx": (-2 * xm, 2 * xm), "dx2": (0.0, 4 * xm * xm),
                "s": (0.0, 12 * xm * xm)}
        r = np.geomspace(self.core_radius(), st.r_max, 4096)

        def span(values):
            return float(np.min(values)), float(np.max(values))

        pot = table_variable_ranges(tab["potential"])
        pot["sum"] = _sum_range(*span(self.potential_fn(r)), near)
        wf = table_variable_ranges(tab["T2"])
        wf["sum"] = _sum_range(*span(t2(r, self.params)), pairs)
        wf["s_max"] = _pad(0.0, tab["T2"].s_max)
        kin = {**table_variable_ranges(tab["G"], "g_"), **table_variable_ranges(tab["L"], "l_")}
        gdx = float(np.max(np.abs(dt2(r, self.params))))
        grad = min(n - 1, NEIGHBOURS) * gdx
        kin.update(dx=dist["dx"], gdx=_pad(-gdx, gdx), grad=_pad(-grad, grad),
                   grad2=_pad(0.0, grad * grad), grad2_sum=_pad(0.0, 3 * n * grad * grad),
                   lap_sum=_sum_range(*span(pair_laplacian_term(r, self.params)), near))
        declared = {"distance": (K.DISTANCE_VARIABLES, dist),
                    "potential": (K.POTENTIAL_VARIABLES, pot),
                    "wavefunction": (K.WAVEFUNCTION_VARIABLES, wf),
                    "kinetic": (K.KINETIC_VARIABLES, kin)}
        return {name: KernelSpec(name, tuple(Variable(v, *rng[v]) for v in names))
                for name, (names, rng) in declared.items()}

    @staticmethod
    def _table_inputs(table: TwoRegionTable) -> dict:
        """The kernel inputs of one table, float64: coefficients per bin (regions I then
        II), the region starts, inverse widths, offsets and scales."""
        w = (table.sigma - table.s_min, table.s_max - table.sigma)
        out = {k: np.concatenate([getattr(table, k + "1"), getattr(table, k + "2")])
               for k in "abc"}
        out.update(s=np.array([table.s_min, table.sigma]), inv=np.array([1 / w[0], 1 / w[1]]),
                   off=np.asarray(table.offset, np.float64),
                   scale=np.asarray(table.scale, np.float64))
        return out

    #: (kernel, table, variable prefix) of the four pair functions
    TABLE_USES = (("potential", "potential", ""), ("wavefunction", "T2", ""),
                  ("kinetic", "G", "g_"), ("kinetic", "L", "l_"))

    def _table_source(self, kernel: str, table: TwoRegionTable, prefix: str = ""):
        kp = self.precisions[kernel]
        x = {k: kp.encode(prefix + k, v, self.seed) for k, v in self._table_inputs(table).items()}
        bits = (int(table.n1).bit_length() - 1, int(table.n_seg), int(table.n_bin).bit_length() - 1)
        abc = coefficient_rows(x["a"], x["b"], x["c"])  # one row per bin: a, b, c, pad
        return (x["s"], x["inv"], abc, *(np.int64(b) for b in bits), x["off"], x["scale"])

    def profile(self, positions, *, step: int = 0) -> dict:
        """Range statistics of every kernel variable on configurations ``positions``:
        ``{kernel: {variable: (min, max, max |x|, min nonzero |x|)}}``, from a float64
        evaluation that records each operation's results (table kernels, kinetic term
        included).  Kernel inputs are measured on the host: positions ``x`` on
        ``positions``, table constants and coefficients on the tables' own values; a variable
        that is both (the table's region starts are loaded into ``s``) covers both."""
        pos = self.check_positions(positions)
        clone = self._profiling_clone()
        clone.evaluate(pos, step=step)
        inputs = {("distance", "x"): pos, ("wavefunction", "s_max"): [self.tables["T2"].s_max]}
        for kernel, table, prefix in self.TABLE_USES:
            for v, values in self._table_inputs(self.tables[table]).items():
                inputs[kernel, prefix + v] = values
        out = {}
        for (k, kp), ctx in zip(clone.precisions.items(), clone.last_contexts):
            stats = kp.profile(ctx)
            for v in kp.spec.variables:
                if (k, v.name) in inputs:
                    stats[v.name] = merge_stats(stats.get(v.name), host_stats(inputs[k, v.name]))
            out[k] = stats
        return out

    def _profiling_clone(self) -> "HeliumCluster":
        """This cluster with every kernel profiling in float64, from tables."""
        clone = copy.copy(self)
        clone.specialise = False
        clone.sources = {k: "table" for k in self.sources}
        clone.precisions = {k: spec.resolve("float64").profiling()
                            for k, spec in self.specs.items()}
        clone.log = OverflowLog()
        clone._sources = clone._kernel_sources()
        clone.runtime, clone._compiled = True, False
        return clone

    def operation_counts(self, positions, *, step: int = 0) -> dict:
        """The operations of a float64 evaluation of ``positions`` (potential, kinetic
        term, wave function, from tables) and of one move of each atom of each walker (a
        Gaussian step of 0.1 A per component: the proposal's kernels; acceptance runs
        none): ``{"evaluation": (walkers, {kernel: rows}), "move": (moves, {kernel:
        rows}), "arrays": [...]}`` (rows of
        :meth:`~fixedqmc.numerics.kernel_spec.KernelPrecision.counts`, summed;
        :func:`fixedqmc.qmc.counts.count_operations` divides; the arrays: the four tables'
        coefficients a, b, c, ``n1 + n2`` entries each)."""
        pos = self.check_positions(positions)
        clone = self._profiling_clone()
        clone.evaluate(pos, step=step)
        evaluation = {k: clone.precisions[k].counts(c)
                      for k, c in zip(KERNEL_NAMES, clone.last_contexts)}
        rng = np.random.default_rng(step)
        moves = {k: [] for k in KERNEL_NAMES}
        for i in range(self.n_atoms):
            clone.atom_move(pos, i, pos[:, i] + rng.normal(0.0, 0.1, pos[:, i].shape),
                            step=step)
            for k, c in zip(KERNEL_NAMES, clone.last_contexts):
                moves[k] = merge_counts(moves[k], clone.precisions[k].counts(c))
        arrays = [{"kernel": kernel, "array": f"{table}.{c}",
                   "entries": int(self.tables[table].n1 + self.tables[table].n2),
                   "variable": prefix + c}
                  for kernel, table, prefix in self.TABLE_USES for c in "abc"]
        return {"evaluation": (pos.shape[0], evaluation),
                "move": (pos.shape[0] * self.n_atoms, moves), "arrays": arrays}

    def _analytic_source(self, kernel: str, table: str) -> tuple:
        """``(function, coefficients)`` of the compiled analytic form, in the kernel's type."""
        from fixedqmc.systems.helium import analytic as A
        dtype = self.precisions[kernel].dtype
        if table == "potential":
            if not isinstance(self.potential_spec, str):
                raise FixedQMCError("kernels.potential = 'analytic' needs a built-in potential "
                                    "name; a user function is evaluated from tables")
            return A.get_analytic_potential(self.potential_spec), np.zeros(1, dtype)
        fn = {"T2": A.t2_s, "G": A.g_s, "L": A.l_s}[table]
        return fn, A.pair_coefficients(self.params, dtype)

    def _kernel_sources(self) -> tuple:
        tab = self.tables
        out = []
        for kernel, table, prefix in self.TABLE_USES:
            if self.sources[kernel] == "analytic":
                out.append(self._analytic_source(kernel, table))
            else:
                out.append(self._table_source(kernel, tab[table], prefix))
        s_max = self.precisions["wavefunction"].encode(
            "s_max", np.array(tab["T2"].s_max), self.seed)
        return (*out, s_max.ravel()[0])

    # -- evaluation -------------------------------------------------------------------
    def check_positions(self, positions) -> np.ndarray:
        """Positions as a float64 (n_w, N, 3) array; raise on a wrong shape or NaN."""
        pos = np.asarray(positions, np.float64)
        if pos.ndim != 3 or pos.shape[1:] != (self.n_atoms, 3):
            raise FixedQMCError(f"positions must have shape (n_walkers, {self.n_atoms}, 3), "
                                f"got {pos.shape}")
        if not np.isfinite(pos).all():
            w, i, c = np.argwhere(~np.isfinite(pos))[0]
            raise FixedQMCError(f"positions[{w}, {i}, {c}] is {pos[w, i, c]!r}; configurations "
                                "must be finite")
        return pos

    # -- the system protocol (fixedqmc.qmc.system) ---------------------------------------
    @property
    def n_particles(self) -> int:
        return self.n_atoms

    @property
    def kernels(self) -> dict:
        return self.specs

    def initial_positions(self, n_walkers: int, rng: np.random.Generator) -> np.ndarray:
        """Starting configurations (A) after :attr:`start` (lattice or random cluster)."""
        st = self.start
        return initial_walkers(n_walkers, self.n_atoms, rng, geometry=st.geometry,
                               spacing=st.spacing, jitter=st.jitter)

    @staticmethod
    def wrap(positions: np.ndarray) -> np.ndarray:
        """Centre each walker on its centre of mass (H and psi are translation invariant;
        fixed-point position formats then need only the cluster's extent)."""
        return centre(positions)

    def propose(self, walkers, i: int, new, *, step: int = 0, grad: bool = True
                ) -> Proposal:
        """Move atom ``i`` to ``new`` (n_w, 3): ln|psi'/psi| from the wave-function kernel
        (O(N) per walker).  psi > 0 (bosons): sign +1; no gradient at the new position."""
        new = np.asarray(new, np.float64).reshape(-1, 3)
        delta, outside = self.atom_move(walkers.positions, i, new, step=step)
        return Proposal(new, delta, np.ones_like(delta), None, outside)

    @staticmethod
    def accept(walkers, i: int, mask, proposal: Proposal) -> None:
        """Nothing to update: no per-walker state (the caller moves the positions)."""

    @staticmethod
    def recompute(walkers, *, step: int = 0) -> dict:
        """Nothing is updated incrementally: every evaluation is a full one."""
        return {}

    def _contexts(self, seed: int) -> tuple:
        return tuple(self.precisions[k].context(seed) for k in KERNEL_NAMES)

    def _cluster_outputs(self, pos: np.ndarray, potential: bool, kinetic: bool,
                         step: int, log: OverflowLog) -> dict:
        """Run the cluster kernel on positions (n_w, N, 3) and return its raw outputs
        ``{"potential.sum", "wavefunction.sum", "kinetic.lap_sum", "kinetic.grad2_sum",
        "kinetic.grad", "outside"}`` in the kernels' number types (the positions'
        conversion events in ``log``; the kernels' own are reported by the caller from
        :attr:`last_contexts`)."""
        kp = self.precisions
        nw, n = pos.shape[:2]
        seed = step_seed(self.seed, step)
        ctx = self._contexts(seed)
        self.last_contexts = ctx
        # by coordinate, (n_w, 3, N): the pair loop reads consecutive atoms j
        x = np.ascontiguousarray(kp["distance"].encode("x", pos, seed, log).transpose(0, 2, 1))
        out = {"potential.sum": np.zeros(nw, kp["potential"].dtype),
               "wavefunction.sum": np.zeros(nw, kp["wavefunction"].dtype),
               "outside": np.zeros(nw, np.int64),
               "kinetic.lap_sum": np.zeros(nw, kp["kinetic"].dtype),
               "kinetic.grad2_sum": np.zeros(nw, kp["kinetic"].dtype),
               "kinetic.grad": np.zeros((nw, n, 3) if kinetic else (nw, 0, 3),
                                        kp["kinetic"].dtype)}
        flags = np.array([int(potential), int(kinetic)], np.int64)
        args = (*ctx, flags, x, *self._sources, *out.values())
        if not (self._compiled or self.runtime):  # types are fixed per instance: once
            vectorised(K.cluster_kernel, *args)  # (run-time formats cannot vectorise)
            self._compiled = True
        K.cluster_kernel(*args)
        return out

    def _kinetic(self, lap: np.ndarray, g2: np.ndarray) -> np.ndarray:
        """The kinetic part -D (2 lap_sum + grad2_sum) (K) from the kinetic kernel's sums
        (``sum_i lap_i ln psi`` = 2 lap_sum, ``sum_i |grad_i ln psi|**2`` = grad2_sum)."""
        return -self.hbar2_2m * (2.0 * lap + g2)

    def evaluate(self, walkers, *, potential: bool = True, kinetic: bool = True,
                 step: int = 0) -> Evaluation:
        """ln psi, the parts ``potential`` and ``kinetic`` of the local energy (K; NaN when
        not computed) and grad ln psi (1/A) of every walker, for :class:`Walkers` or a
        (n_w, N, 3) position array; ``outside`` counts pairs beyond the trial function's
        support.  ``step`` selects the stochastic-rounding stream (the MC step index)."""
        pos = self.check_positions(getattr(walkers, "positions", walkers))
        kp = self.precisions
        out = self._cluster_outputs(pos, potential, kinetic, step, self.log)
        for name, c in zip(KERNEL_NAMES, self.last_contexts):
            kp[name].report(c, self.log)
        nan = np.full(pos.shape[0], np.nan)
        v = kp["potential"].decode("sum", out["potential.sum"]) if potential else nan
        if kinetic:
            kin = self._kinetic(kp["kinetic"].decode("lap_sum", out["kinetic.lap_sum"]),
                                kp["kinetic"].decode("grad2_sum", out["kinetic.grad2_sum"]))
            grad = kp["kinetic"].decode("grad", out["kinetic.grad"])
        else:
            kin, grad = nan, None
        ln_psi = kp["wavefunction"].decode("sum", out["wavefunction.sum"])
        return Evaluation(ln_psi, np.ones_like(ln_psi), grad, {"potential": v, "kinetic": kin},
                          out["outside"], {})

    def bound_evaluation(self, positions, *, step: int = 0) -> KernelBound:
        """Rigorous bounds on the errors of this cluster's precision (the trial) on
        ``positions`` (n_w, N, 3), beside the errors measured
        (:func:`fixedqmc.qmc.bounds.bound`): the cluster kernel runs at the trial
        precision and in the bound context (:mod:`~fixedqmc.numerics.kernel_bound`) on
        the same positions.  Quantities (arrays per walker; ``kinetic.grad`` (n_w, N, 3)):
        the kernel outputs ``potential.sum`` (= the part ``potential``, K),
        ``wavefunction.sum`` (ln psi), ``kinetic.lap_sum``, ``kinetic.grad2_sum`` and
        ``kinetic.grad`` (1/A), the part ``kinetic`` = -D (2 lap_sum + grad2_sum) (K),
        ``local_energy`` = potential + kinetic (K), the host combinations bounded by
        :func:`~fixedqmc.numerics.bound_run.linear_bound`, and ``ln_psi`` (=
        ``wavefunction.sum``).  The trial's ``local_energy`` and ``ln_psi`` are bit for bit
        those of :meth:`evaluate` at the same ``step``, and its overflow events (the
        result's ``log``) those that call would log."""
        if any(src != "table" for src in self.sources.values()):
            raise FixedQMCError("a helium cluster is bounded with every kernel's source "
                                f"'table'; got sources {self.sources}")
        pos = self.check_positions(positions)
        bounded = copy.copy(self)
        bounded.precisions = {k: kp.bounding() for k, kp in self.precisions.items()}
        bounded.runtime, bounded._compiled = False, True  # (bound contexts do not vectorise)
        bounded.log = OverflowLog()
        bounded._sources = bounded._kernel_sources()
        raw = bounded._cluster_outputs(pos, True, True, step, bounded.log)
        contexts = bounded.last_contexts
        log = OverflowLog()  # the trial's events of this call (the system's log untouched)
        trial_raw = self._cluster_outputs(pos, True, True, step, log)
        for name, c in zip(KERNEL_NAMES, self.last_contexts):
            self.precisions[name].report(c, log)
        value, bound, trial = {}, {}, {}
        for key, words in raw.items():
            if key == "outside":
                continue
            kernel, variable = key.split(".")
            kb = bounded.precisions[kernel]
            value[key], bound[key] = kb.decode(variable, words), kb.bounds(variable, words)
            trial[key] = self.precisions[kernel].decode(variable, trial_raw[key])
        value["kinetic"], bound["kinetic"] = linear_bound(
            [(-2.0 * self.hbar2_2m, value["kinetic.lap_sum"], bound["kinetic.lap_sum"]),
             (-self.hbar2_2m, value["kinetic.grad2_sum"], bound["kinetic.grad2_sum"])])
        trial["kinetic"] = self._kinetic(trial["kinetic.lap_sum"], trial["kinetic.grad2_sum"])
        for d in (value, bound, trial):
            d["potential"], d["ln_psi"] = d["potential.sum"], d["wavefunction.sum"]
        value["local_energy"], bound["local_energy"] = linear_bound(
            [(1.0, value[p], bound[p]) for p in ("potential", "kinetic")])
        trial["local_energy"] = trial["potential"] + trial["kinetic"]
        unbounded = {f"{k}.{v}": c for k, ctx in zip(KERNEL_NAMES, contexts)
                     for v, c in bounded.precisions[k].report(ctx).items()}
        ambiguous = sum(bounded.precisions[k].ambiguous(ctx)
                        for k, ctx in zip(KERNEL_NAMES, contexts))
        return system_bound("helium", str(self.policy), value, bound, trial, unbounded,
                            ambiguous, log)

    def atom_move(self, positions, atom: int, new, *, step: int = 0):
        """``(delta ln psi, outside)`` for moving atom ``atom`` of every walker to ``new``
        (n_w, 3): ln psi(R') - ln psi(R) and the new pairs beyond the support."""
        pos = self.check_positions(positions)
        new = np.asarray(new, np.float64).reshape(pos.shape[0], 3)
        kp = self.precisions
        seed = step_seed(self.seed, step)
        ctx = self._contexts(seed)
        self.last_contexts = ctx
        x = kp["distance"].encode("x", pos, seed, self.log)
        xn = kp["distance"].encode("x", new, seed, self.log)
        nw = pos.shape[0]
        old = np.zeros(nw, kp["wavefunction"].dtype)
        nv = np.zeros(nw, kp["wavefunction"].dtype)
        outside = np.zeros(nw, np.int64)
        K.atom_kernel(ctx[0], ctx[2], x, np.int64(atom), xn, self._sources[1], self._sources[4],
                      old, nv, outside)
        kp["distance"].report(ctx[0], self.log)
        kp["wavefunction"].report(ctx[2], self.log)
        dec = kp["wavefunction"].decode
        return dec("sum", nv) - dec("sum", old), outside

    def formats(self) -> dict:
        """``{"kernel.variable": format or float type}`` of every variable."""
        return formats_of(self.precisions)
