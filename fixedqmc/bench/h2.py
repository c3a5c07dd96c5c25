"""``fixedqmc bench h2``: single-electron VMC of H2 lattices (seed 001), ours and PyQMC's.

The workload of seed 001's Algorithm 1: an ``n x n x n`` simple-cubic lattice of H2
molecules (STO-6G, bond 1.4 bohr, spacing 6 bohr; 2x2x2 = 8 H2 = 16 electrons by default,
4x4x4 = 64 H2 = 128 electrons with ``--lattice 2,4``), a Slater determinant per spin of
RHF orbitals (no Jastrow), 256 walkers, single-electron Metropolis moves.  One *sweep*
proposes one move of every electron of every walker: a Gaussian step of ``STEP`` bohr per
component, accepted with probability ``min(1, |psi'/psi|**2)`` (psi' = 0 is rejected).

Ours runs through the public plug-in path (:func:`build_mole`, :func:`mean_field`,
:class:`Molecule` and the system protocol: ``propose`` / ``accept`` per electron) at
``float64``, ``float32`` and ``fixed:40``.  The fixed-point formats come from a range
profile of the starting walkers (:class:`~fixedqmc.qmc.profile.RangeProfile`, one bit
of margin), as a run with ``fixed:40`` does; they are read at run time (one compilation
for every width) unless the system can compile them into its kernels (``specialise``),
which is then timed as well.

PyQMC, in the same run: the same PySCF ``Mole``, the same occupied orbitals (our cached
RHF coefficients handed to PyQMC's :class:`~pyqmc.wf.slater.Slater`), the same starting
walkers, step and acceptance rule, written with PyQMC's wave-function calls
(``testvalue`` and ``updateinternals``, the same work as ours: orbitals at the new
position, ratio, Sherman-Morrison update of the accepted walkers).  PyQMC's own
driver :func:`pyqmc.method.mc.vmc` (drift-diffusion moves: orbital gradients at the old and
the new position of every move) is timed as a second row.  Ratios are taken against the
``testvalue``/``updateinternals`` loop, the same algorithm as ours.

Each point runs whole sweeps until ``min_time`` seconds have passed (at least one, at most
``sweeps``), after a warm-up on two walkers (numba compilation, PySCF's first calls) that
is not timed.  ``evaluate`` is one full evaluation of every walker from its positions
(orbitals with derivatives, fresh inverses, local energy); PyQMC's peer is
``recompute`` plus its ``EnergyAccumulator``.  With two lattice sizes or more the cost per
sweep is fitted to ``N**p`` in the number of electrons.  Figures are printed, never
asserted.

*Rounds.*  Every point is timed ``rounds`` times (default :data:`ROUNDS`), a round timing
each of our precisions and then PyQMC, one after the other; each ratio is formed within a
round and reported as the median over the rounds with its smallest and largest value.  On
a shared 2-core host the speed of our two-thread kernels drifts by up to 1.6x over
seconds while one thread stays steady (docs/benchmarks.md), so one round can put ours in
a slow phase and PyQMC in a fast one; the spread shows how much that moved the ratio.
(Interleaving the two codes move by move was tried: each code then ran after the other's
thread pools and working set at every move, and ours became 10-20x slower.)

Threads: numba's (``NUMBA_NUM_THREADS``, all cores by default) for our kernels; PySCF's
OpenMP threads (AO evaluation) and NumPy's BLAS threads (all cores by default) for
PyQMC.  Both are printed.
"""

from __future__ import annotations

import inspect
import time
from contextlib import contextmanager
from pathlib import Path

import numpy as np
import pandas as pd

from fixedqmc.bench.machine import cpu_info, load_average, parallel_call_latency
from fixedqmc.qmc.system import commit_move

LATTICES = (2,)
WALKERS = 256
PRECISIONS = ("float64", "float32", "fixed:40")
#: Gaussian step per component (bohr) of a proposed single-electron move
STEP = 0.5
#: pyqmc.method.mc.vmc time step (bohr**2); its Gaussian spread is sqrt(TSTEP) = STEP
TSTEP = STEP ** 2
MAX_SWEEPS = 20
#: timed rounds per point (module docstring)
ROUNDS = 3
#: untimed float64 sweeps from the starting positions before anything is timed or profiled
EQUIL_SWEEPS = 5
DEFAULT_CACHE = Path("~/.cache/fixedqmc/scf")
SEED = 7


# ----------------------------------------------------------------------- molecule --
def lattice_molecule(n: int, cache_dir):
    """The PySCF ``Mole`` of the ``n x n x n`` H2 lattice, its RHF (cached in
    ``cache_dir``) and the seconds the mean field took (a cache hit takes milliseconds)."""
    from fixedqmc.systems.molecule.geometry import build_mole, h2_lattice
    from fixedqmc.systems.molecule.scf import mean_field

    mol = build_mole(h2_lattice(n))
    t0 = time.perf_counter()
    mf = mean_field(mol, "rhf", None if cache_dir is None else Path(cache_dir).expanduser())
    return mol, mf, time.perf_counter() - t0


def starting_positions(mol, mf, walkers: int, equil: int = EQUIL_SWEEPS,
                       seed: int = SEED) -> np.ndarray:
    """Starting walkers, the same for every code: electrons around their nuclei
    (:meth:`Molecule.initial_positions`), then ``equil`` float64 sweeps (untimed), so that
    the walkers sample |psi|**2 rather than sit near nodes, where the inverse Slater
    matrices are huge (a range profile of unequilibrated walkers can ask more integer bits
    than a word has)."""
    from fixedqmc.qmc.system import Walkers
    from fixedqmc.systems.molecule.system import Molecule

    system = Molecule(mol, mf.mo_up, mf.mo_down, "float64")
    rng = np.random.default_rng(seed)
    w = Walkers(system.initial_positions(walkers, rng), None)
    w.state = system.evaluate(w).state
    for _ in range(equil):
        ours_sweep(system, w, rng)
    return w.positions.copy()


def fixed_ranges(mol, mf, positions: np.ndarray) -> tuple[dict, dict]:
    """``{kernel: {variable: (lo, hi)}}`` of a float64 range profile of ``positions`` (one
    bit of margin), sizing width-only fixed specs such as ``fixed:40``, and the system's
    kernels."""
    from fixedqmc.qmc.profile import RangeProfile
    from fixedqmc.systems.molecule.system import Molecule

    system = Molecule(mol, mf.mo_up, mf.mo_down, "float64")
    return RangeProfile.from_system(system, [positions]).ranges(), system.kernels


def sized_spec(spec: str, kernels: dict, ranges: dict) -> tuple[str, list[str]]:
    """``spec`` with ``kernel=float64`` appended for every kernel whose profiled range does
    not fit its words (e.g. the inverse Slater matrices of 64 H2 reach 1e11: more integer
    bits than ``fixed:40`` has), and the reasons (empty when ``spec`` fits as it is)."""
    from fixedqmc.errors import FormatError
    from fixedqmc.numerics.kernel_set import KernelSet

    reasons: list[str] = []
    dropped: list[str] = []
    while True:
        full = spec + "".join(f",{k}=float64" for k in dropped)
        try:
            KernelSet(kernels, full, ranges=ranges)
            return full, reasons
        except FormatError as exc:
            kernel = str(exc).split(".", 1)[0]
            if kernel not in kernels or kernel in dropped:
                raise
            dropped.append(kernel)
            reasons.append(str(exc))


def can_specialise() -> bool:
    """Whether :class:`Molecule` takes ``specialise=`` (formats compiled into kernels)."""
    from fixedqmc.systems.molecule.system import Molecule

    return "specialise" in inspect.signature(Molecule.__init__).parameters


# ------------------------------------------------------------------------- timing --
def _timed_sweeps(sweep, min_time: float, max_sweeps: int) -> tuple[int, float, float]:
    """Run ``sweep()`` (returns its acceptance) until ``min_time`` s passed (>= 1 sweep,
    <= ``max_sweeps``); ``(sweeps, seconds, mean acceptance)``."""
    done, acc = 0, 0.0
    t0 = time.perf_counter()
    while done < max(1, max_sweeps) and (done == 0 or time.perf_counter() - t0 < min_time):
        acc += sweep()
        done += 1
    return done, time.perf_counter() - t0, acc / done


def _row(code, precision, n_e, walkers, sweeps, seconds, acceptance, eval_s) -> dict:
    return {"code": code, "precision": precision, "electrons": n_e, "walkers": walkers,
            "sweeps": sweeps, "s_per_sweep": seconds / sweeps,
            "walker_sweeps_per_s": walkers * sweeps / seconds,
            "moves_per_s": walkers * sweeps * n_e / seconds, "acceptance": acceptance,
            "evaluate_us_per_walker": eval_s / walkers * 1e6}


def ours_sweep(system, walkers, rng, step: float = STEP):
    """One Metropolis sweep of single-electron moves through the system protocol; returns
    the acceptance."""
    nw, n = walkers.positions.shape[:2]
    accepted = 0
    for i in range(n):
        new = walkers.positions[:, i] + rng.normal(0.0, step, (nw, 3))
        prop = system.propose(walkers, i, new, grad=False)  # Metropolis: no gradient
        with np.errstate(over="ignore", invalid="ignore"):
            ok = (prop.outside == 0) & (rng.random(nw) < np.exp(np.minimum(
                2.0 * prop.log_ratio, 0.0)))
        commit_move(system, walkers, i, ok, prop)
        accepted += int(ok.sum())
    return accepted / (n * nw)


def time_ours(mol, mf, positions: np.ndarray, precision: str, *, ranges=None,
              specialise: bool = False, min_time: float = 2.0, max_sweeps: int = MAX_SWEEPS,
              seed: int = SEED, system_out: list | None = None) -> dict:
    """Time our sweeps and one full evaluation at ``precision`` (module docstring)."""
    from fixedqmc.qmc.system import Walkers
    from fixedqmc.systems.molecule.system import Molecule

    kw = {"specialise": True} if specialise else {}
    system = Molecule(mol, mf.mo_up, mf.mo_down, precision, ranges=ranges, seed=seed, **kw)
    rng = np.random.default_rng(seed)
    n = system.n_particles
    # warm-up on two walkers: compiles every kernel this precision uses
    small = Walkers(positions[:2].copy(), None)
    small.state = system.evaluate(small).state
    ours_sweep(system, small, rng)
    system.recompute(small)

    t0 = time.perf_counter()
    ev = system.evaluate(Walkers(positions.copy(), None))
    eval_s = time.perf_counter() - t0
    walkers = Walkers(positions.copy(), ev.state)
    sweeps, seconds, acc = _timed_sweeps(lambda: ours_sweep(system, walkers, rng), min_time,
                                         max_sweeps)
    if system_out is not None:
        system_out.append((system, walkers, ev))
    label = precision if "fixed" not in precision else (
        precision + (" specialised" if specialise else " run-time formats"))
    return _row("fixedqmc", label, n, positions.shape[0], sweeps, seconds, acc, eval_s)


# ------------------------------------------------------------------------- PyQMC --
def pyqmc_available() -> str | None:
    """PyQMC's version, or None if it cannot be imported."""
    try:
        import pyqmc  # noqa: F401
        from pyqmc.wf.slater import Slater  # noqa: F401
    except Exception:
        return None
    from importlib import metadata
    try:
        return metadata.version("pyqmc")
    except metadata.PackageNotFoundError:  # pragma: no cover
        return "unknown version"


def pyqmc_wavefunction(mol, mf):
    """PyQMC's Slater determinant of our occupied orbitals (a PySCF UHF object carrying
    them: PyQMC reads ``mo_coeff`` and ``mo_occ`` only)."""
    from pyscf import scf
    from pyqmc.wf.slater import Slater

    up, down = mf.mo_up, mf.mo_down
    width = max(up.shape[1], down.shape[1])
    coeff = np.zeros((2, up.shape[0], width))
    occ = np.zeros((2, width))
    for s, c in enumerate((up, down)):
        coeff[s, :, :c.shape[1]] = c
        occ[s, :c.shape[1]] = 1.0
    if down.shape[1] < width:  # unused columns: any orbitals of the right shape
        coeff[1, :, down.shape[1]:] = up[:, down.shape[1]:width]
    carrier = scf.UHF(mol)
    carrier.mo_coeff, carrier.mo_occ, carrier.e_tot = coeff, occ, mf.e_tot
    return Slater(mol, carrier)


def pyqmc_sweep(wf, configs, rng, step: float = STEP) -> float:
    """One Metropolis sweep with PyQMC's ``testvalue`` and ``updateinternals``; returns the
    acceptance."""
    nw, n = configs.configs.shape[:2]
    accepted = 0
    for e in range(n):
        epos = configs.make_irreducible(e, configs.configs[:, e] + rng.normal(0.0, step,
                                                                              (nw, 3)))
        ratio, saved = wf.testvalue(e, epos)
        ok = rng.random(nw) < np.abs(ratio) ** 2
        configs.move(e, epos, ok)
        wf.updateinternals(e, epos, configs, mask=ok, saved_values=saved)
        accepted += int(ok.sum())
    return accepted / (n * nw)


def time_pyqmc(mol, mf, positions: np.ndarray, *, min_time: float = 2.0,
               max_sweeps: int = MAX_SWEEPS, seed: int = SEED, driver: bool = True,
               check: dict | None = None) -> list[dict]:
    """Rows for PyQMC's Metropolis loop and (``driver``) its ``vmc`` driver; ``check``
    receives ln|psi| and the local energy of the starting walkers."""
    import warnings

    from pyqmc.configurations.coord import OpenConfigs
    from pyqmc.method.mc import vmc
    from pyqmc.observables.accumulators import EnergyAccumulator

    wf = pyqmc_wavefunction(mol, mf)
    energy = EnergyAccumulator(mol)
    rng = np.random.default_rng(seed)
    nw, n = positions.shape[:2]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # PyQMC warns about walkers on a node
        small = OpenConfigs(positions[:2].copy())  # warm-up: first calls of PySCF/numpy
        wf.recompute(small)
        energy(small, wf)
        pyqmc_sweep(wf, small, rng)

        configs = OpenConfigs(positions.copy())
        t0 = time.perf_counter()
        sign, ln_psi = wf.recompute(configs)
        e_loc = energy(configs, wf)["total"]
        eval_s = time.perf_counter() - t0
        if check is not None:
            check.update(ln_psi=np.asarray(ln_psi), sign=np.asarray(sign),
                         local_energy=np.asarray(e_loc))
        sweeps, seconds, acc = _timed_sweeps(lambda: pyqmc_sweep(wf, configs, rng),
                                             min_time, max_sweeps)
        rows = [_row("pyqmc", "float64 testvalue/updateinternals", n, nw, sweeps, seconds,
                     acc, eval_s)]
        if driver:  # one vmc() call of k sweeps (it starts with one wf.recompute)
            k = int(np.clip(round(min_time / (seconds / sweeps) / 2.5), 1, max(1, max_sweeps)))
            np.random.seed(seed)
            t0 = time.perf_counter()
            out, _ = vmc(wf, OpenConfigs(positions.copy()), tstep=TSTEP, nblocks=1,
                         nsteps_per_block=k, accumulators={})
            seconds = time.perf_counter() - t0
            rows.append(_row("pyqmc", "float64 vmc() drift-diffusion", n, nw, k, seconds,
                             float(out["acceptance"][-1]), np.nan))
    return rows


# ---------------------------------------------------------------------- breakdown --
@contextmanager
def breakdown_timers(system):
    """Wall time of the compiled kernels (orbitals, ratio, Sherman-Morrison update,
    contractions) and of the host glue (encode, decode, contexts, reports) of ``system``'s
    calls, accumulated in the yielded dict; everything is restored afterwards."""
    from fixedqmc.systems import determinants as det
    from fixedqmc.systems import slater
    from fixedqmc.systems.molecule import kernels as K

    times: dict = {}

    def wrap(name, f):
        def timed(*args, **kwargs):
            t0 = time.perf_counter()
            try:
                return f(*args, **kwargs)
            finally:
                times[name] = times.get(name, 0.0) + time.perf_counter() - t0
        return timed

    patched = [(K, "orbital_kernel", "kernel: orbitals (distance, exp, contraction, MOs)"),
               (det, "ratio_kernel", "kernel: determinant ratio"),
               (det, "update_kernel", "kernel: Sherman-Morrison update"),
               (det, "contract_kernel", "kernel: determinant contractions (evaluate)"),
               (det, "fresh_inverse", "host: LU inverse (evaluate)"),
               (K, "coulomb_kernel", "kernel: Coulomb (evaluate)"),
               (slater, "kinetic_kernel", "kernel: kinetic (evaluate)")]
    saved = [(mod, attr, getattr(mod, attr)) for mod, attr, _ in patched]
    ks = system.ks
    glue = {"encode": "glue: encode inputs", "decode": "glue: decode outputs",
            "context": "glue: kernel contexts (seeds)", "report": "glue: overflow reports"}
    try:
        for mod, attr, name in patched:
            setattr(mod, attr, wrap(name, getattr(mod, attr)))
        for attr, name in glue.items():
            setattr(ks, attr, wrap(name, getattr(ks, attr)))
        yield times
    finally:
        for mod, attr, f in saved:
            setattr(mod, attr, f)
        for attr in glue:
            ks.__dict__.pop(attr, None)


def sweep_breakdown(system, walkers, seed: int = SEED) -> pd.DataFrame:
    """Where one of our sweeps spends its time: each kernel and each kind of host glue
    (seconds and share); ``other`` is the protocol's remaining Python/NumPy work
    (allocations, reshapes, masks, the acceptance test)."""
    rng = np.random.default_rng(seed)
    with breakdown_timers(system) as times:
        t0 = time.perf_counter()
        ours_sweep(system, walkers, rng)
        total = time.perf_counter() - t0
    rows = [{"part": k, "s_per_sweep": v} for k, v in sorted(times.items(), key=lambda x: -x[1])]
    rows.append({"part": "other (Python/NumPy in propose/accept, RNG, acceptance)",
                 "s_per_sweep": total - sum(times.values())})
    df = pd.DataFrame(rows)
    df["share"] = df.s_per_sweep / total
    return df


# --------------------------------------------------------------------------- run --
def run_h2(lattices=LATTICES, walkers: int = WALKERS, precisions=PRECISIONS,
           min_time: float = 2.0, max_sweeps: int = MAX_SWEEPS, cache_dir=DEFAULT_CACHE,
           pyqmc: bool = True, driver: bool = True, breakdown: bool = False,
           rounds: int = ROUNDS, log=lambda *a: print(*a, flush=True)) -> dict:
    """Every timing of the benchmark: ``{"rows": DataFrame, "checks": [...],
    "breakdowns": {(lattice, precision): DataFrame}, "scf": {...}}``; ``rows`` has a
    ``round`` column (module docstring)."""
    rows, checks, breakdowns, scf_info = [], [], {}, {}
    version = pyqmc_available() if pyqmc else None
    spec_ok = can_specialise()
    for n in lattices:
        if n >= 3:
            log(f"{n}x{n}x{n} lattice: RHF from the cache in {cache_dir}, or run now (about "
                f"1-8 minutes for 4x4x4 on 2 cores, once)")
        mol, mf, scf_s = lattice_molecule(n, cache_dir)
        n_h2, n_e = n ** 3, mol.nelectron
        scf_info[n] = scf_s
        log(f"{n}x{n}x{n} lattice: {n_h2} H2, {n_e} electrons, {mol.nao} AOs; RHF "
            f"{mf.e_tot:.6f} Ha ({scf_s:.2f} s{', from the cache' if scf_s < 1 else ''})")
        t0 = time.perf_counter()
        pos = starting_positions(mol, mf, walkers)
        log(f"  {EQUIL_SWEEPS} untimed float64 sweeps from the starting positions: "
            f"{time.perf_counter() - t0:.1f} s")
        ranges = kernels = None
        specs = []  # (requested, the spec timed: fixed ones sized to the profiled ranges)
        for requested in precisions:
            prec = requested
            if "fixed" in requested:
                if ranges is None:
                    ranges, kernels = fixed_ranges(mol, mf, pos)
                prec, reasons = sized_spec(requested, kernels, ranges)
                for why in reasons:
                    log(f"  {requested}: {why}; that kernel runs in float64 ({prec})")
            specs.append((requested, prec))
        for rnd in range(rounds):
            if rounds > 1:
                log(f"  round {rnd + 1} of {rounds}")
            for requested, prec in specs:
                fixed = "fixed" in requested
                variants = [False] + ([True] if fixed and spec_ok else [])
                for spec in variants:
                    sys_out: list = []
                    row = time_ours(mol, mf, pos, prec, ranges=ranges if fixed else None,
                                    specialise=spec, min_time=min_time,
                                    max_sweeps=max_sweeps, system_out=sys_out)
                    rows.append({"lattice": n, "H2": n_h2, "round": rnd,
                                 "requested": requested, **row})
                    log(f"  fixedqmc {row['precision']}: {row['walker_sweeps_per_s']:.4g} "
                        f"walker-sweeps/s ({row['sweeps']} sweeps)")
                    system, w, ev = sys_out[0]
                    if prec == "float64" and rnd == 0:
                        checks.append({"lattice": n, "ours_ln_psi": ev.ln_psi,
                                       "ours_local_energy": ev.local_energy})
                    if breakdown and rnd == 0:
                        breakdowns[(n, row["precision"])] = sweep_breakdown(system, w)
            if version is not None:
                chk: dict = {}
                for row in time_pyqmc(mol, mf, pos, min_time=min_time, max_sweeps=max_sweeps,
                                      driver=driver and rnd == 0, check=chk):
                    rows.append({"lattice": n, "H2": n_h2, "round": rnd,
                                 "requested": row["precision"], **row})
                    log(f"  pyqmc {row['precision']}: {row['walker_sweeps_per_s']:.4g} "
                        f"walker-sweeps/s ({row['sweeps']} sweeps)")
                for c in checks:
                    if c["lattice"] == n and rnd == 0:
                        c.update(pyqmc_ln_psi=chk["ln_psi"],
                                 pyqmc_local_energy=chk["local_energy"])
    return {"rows": pd.DataFrame(rows), "checks": checks, "breakdowns": breakdowns,
            "scf": scf_info, "pyqmc": version, "specialise": spec_ok}


def _round_ratios(g: pd.DataFrame) -> list[dict]:
    """The speed ratios (walker-sweeps/s) of one lattice and round."""
    out = []
    rate = dict(zip(g.code + " " + g.precision, g.walker_sweeps_per_s))
    ev = dict(zip(g.code + " " + g.precision, g.evaluate_us_per_walker))
    peer = rate.get("pyqmc float64 testvalue/updateinternals")
    peer_ev = ev.get("pyqmc float64 testvalue/updateinternals")
    f64 = rate.get("fixedqmc float64")
    f64_ev = ev.get("fixedqmc float64")
    for key, r in rate.items():
        if not key.startswith("fixedqmc"):
            continue
        prec = key[len("fixedqmc "):]
        if peer:
            out.append({"ratio": f"{prec} / PyQMC", "sweeps": r / peer,
                        "evaluate": peer_ev / ev[key]})
        if f64 and prec != "float64":
            out.append({"ratio": f"{prec} / float64", "sweeps": r / f64,
                        "evaluate": f64_ev / ev[key]})
    drv = rate.get("pyqmc float64 vmc() drift-diffusion")
    if peer and drv:
        out.append({"ratio": "PyQMC vmc() / PyQMC Metropolis loop", "sweeps": drv / peer,
                    "evaluate": np.nan})
    return out


def ratios(df: pd.DataFrame) -> pd.DataFrame:
    """Speed ratios per lattice, each formed within a round (module docstring): the median
    over the rounds (``sweeps``, ``evaluate``), the smallest and largest ``sweeps`` ratio
    and the number of rounds."""
    per_round = [{"lattice": n, **r} for (n, _), g in df.groupby(["lattice", "round"], sort=True)
                 for r in _round_ratios(g)]
    if not per_round:
        return pd.DataFrame()
    agg = pd.DataFrame(per_round).groupby(["lattice", "ratio"], sort=False)
    return agg.agg(sweeps=("sweeps", "median"), sweeps_min=("sweeps", "min"),
                   sweeps_max=("sweeps", "max"), evaluate=("evaluate", "median"),
                   rounds=("sweeps", "size")).reset_index()


def scaling(df: pd.DataFrame) -> list[tuple[str, float, int, int]]:
    """``(code precision, p, N_min, N_max)``: cost per sweep ~ N**p over the lattices (rows
    grouped by the requested precision and the specialise flag; a spec that needed a kernel
    in float64 on one lattice only is named with every form it took)."""
    out = []
    variant = df.precision.str.extract(r"( specialised| run-time formats)$")[0].fillna("")
    for key, g in df.groupby(df.code + " " + df.requested + variant, sort=False):
        if g.electrons.nunique() >= 2:
            p = np.polyfit(np.log(g.electrons), np.log(g.s_per_sweep), 1)[0]
            forms = list(dict.fromkeys(g.code + " " + g.precision))
            out.append((" / ".join(forms) if len(forms) > 1 else key, float(p),
                        int(g.electrons.min()), int(g.electrons.max())))
    return out


def main_h2(lattices=LATTICES, walkers: int = WALKERS, precisions=PRECISIONS,
            min_time: float = 2.0, max_sweeps: int = MAX_SWEEPS, cache_dir=DEFAULT_CACHE,
            pyqmc: bool = True, breakdown: bool = False, rounds: int = ROUNDS) -> int:
    from fixedqmc.input_checks import check_int, check_positive
    from fixedqmc.numerics.policy import parse_precision

    check_int("--walkers", walkers)
    check_int("--sweeps", max_sweeps)
    check_int("--rounds", rounds)
    check_positive("--min-time", min_time)
    for n in lattices:
        check_int("--lattice", n)
    for p in precisions:
        parse_precision(p)
    info = cpu_info()
    print(f"CPU: {info['model']} ({info['cores']} cores; LLVM target {info['llvm_cpu']}); "
          f"vector ISA: {info['isa']}")
    print(f"threads: numba {info['numba_threads']} (our kernels); PySCF OpenMP "
          f"{info['pyscf_threads']} and NumPy BLAS {info['blas_threads']} (PyQMC)")
    print(f"load average (1/5/15 min) at start: {load_average()}; one numba parallel call "
          f"(64 empty chunks) takes {parallel_call_latency() * 1e6:.3g} us (median): "
          f"well above ~10 us means the cores are shared and timings of small kernel "
          f"calls suffer")
    print(f"workload: VMC of H2 lattices (STO-6G, RHF determinants, no Jastrow), {walkers} "
          f"walkers, single-electron moves (Gaussian step {STEP} bohr, Metropolis); one "
          f"sweep = one proposed move per electron")
    version = pyqmc_available() if pyqmc else None
    if pyqmc and version is None:
        print("PyQMC is not installed: skipping the PyQMC peer (pip install "
              "'fixedqmc[bench]' to compare); timing fixedqmc only")
    elif not pyqmc:
        print("PyQMC peer skipped (--no-pyqmc)")
    else:
        print(f"PyQMC {version}: same Mole, orbitals, walkers, step and acceptance rule")
    res = run_h2(lattices, walkers, precisions, min_time, max_sweeps, cache_dir, pyqmc,
                 breakdown=breakdown, rounds=rounds)
    df = res["rows"]
    if not res["specialise"] and any("fixed" in p for p in precisions):
        print("fixed point: run-time formats only (Molecule has no specialise option yet, so "
              "formats compiled into the kernels cannot be timed)")
    for c in res["checks"]:
        if "pyqmc_ln_psi" in c:
            d_psi = np.max(np.abs(c["ours_ln_psi"] - c["pyqmc_ln_psi"]))
            e_ours, e_peer = c["ours_local_energy"], c["pyqmc_local_energy"]
            d_e = np.abs(e_ours - e_peer) / np.maximum(1.0, np.abs(e_peer))
            print(f"same wave function ({c['lattice']}^3 lattice, starting walkers, "
                  f"float64, ours vs PyQMC): max |d ln psi| = {d_psi:.2g}, max |d E_L| / "
                  f"max(1, |E_L|) = {d_e.max():.2g} (median {np.median(d_e):.2g}; walkers "
                  f"near a node amplify rounding)")
    cols = ["H2", "electrons", "round", "code", "precision", "sweeps", "s_per_sweep",
            "walker_sweeps_per_s", "moves_per_s", "acceptance", "evaluate_us_per_walker"]
    with pd.option_context("display.width", 220, "display.max_columns", 20,
                           "display.float_format", "{:.4g}".format):
        print("\nVMC sweeps (walker-sweeps/s = walkers x sweeps / s; moves/s = electron "
              "moves / s; evaluate = one full local-energy evaluation, us per walker)")
        print(df[cols].to_string(index=False))
        r = ratios(df)
        if len(r):
            print("\nratios measured in this run (speed: > 1 means the first is faster; each "
                  "formed within a round, the median over the rounds, with the smallest and "
                  "largest sweeps ratio)")
            print(r.to_string(index=False))
        for (n, prec), b in res["breakdowns"].items():
            print(f"\nwhere one sweep goes, fixedqmc {prec}, {n}x{n}x{n} lattice")
            print(b.to_string(index=False))
    print(f"load average at the end: {load_average()}")
    fits = scaling(df)
    if fits:
        for key, p, lo, hi in fits:
            print(f"{key}: cost per sweep grows as N^{p:.2f} over N = {lo}..{hi} electrons")
    else:
        print("cost vs electrons: one lattice size only; pass two or more (e.g. --lattice "
              "2,4) for the fitted exponent")
    return 0
