"""Ewald summation of point charges in a periodic cell, 3D and 2D: the float64 reference.

Seed 000, Sec. 2.2.  The electrostatic energy of charges ``q_i`` at ``r_i`` in a cell
(Eq. 2) is ``V = sum_{i<j} q_i q_j v_E(r_i - r_j) + 1/2 sum_j q_j**2 v_M``.  Here the
splitting parameter ``gamma`` (1/bohr) multiplies distances, ``erfc(gamma r)``: it is the
square root of the seed's ``gamma`` (``erfc(sqrt(gamma_seed) r)``).  With ``Omega`` the cell
volume (3D) or ``A`` its area (2D), ``S(G) = sum_j q_j exp(i G . r_j)`` and sums over
lattice vectors ``R`` and reciprocal lattice vectors ``G != 0``, Eq. 2-4 (3D) and Eq. 5-6
(2D, charges in the plane: ``z = 0``) regroup into five parts (hartree, bohr):

``real``
    ``sum_{i<j} q_i q_j sum_R erfc(gamma |r_ij - R|) / |r_ij - R|`` (the real-space series of
    Eq. 3 / Eq. 5), truncated at ``|r_ij - R| < real_cutoff``;
``images``
    ``1/2 sum_j q_j**2 sum_{R != 0} erfc(gamma R) / R`` (the real-space series of v_M, Eq. 4
    / Eq. 6: a particle and its own images; independent of the positions);
``recip``
    3D: ``(2 pi / Omega) sum_{G != 0} exp(-G**2 / 4 gamma**2) / G**2 |S(G)|**2``;
    2D: ``(pi / A) sum_{G != 0} erfc(G / 2 gamma) / G |S(G)|**2`` (the reciprocal series of
    Eq. 3-6 at ``z = 0``: ``e^{zG} erfc(G/2 gamma + z gamma) + e^{-zG} erfc(G/2 gamma - z
    gamma) = 2 erfc(G / 2 gamma)``), truncated at ``|G| <= recip_cutoff``;
``self``
    ``-gamma / sqrt(pi) sum_j q_j**2`` (the ``-2 sqrt(gamma_seed / pi)`` of Eq. 4 / Eq. 6);
``background``
    3D: ``-pi / (2 Omega gamma**2) (sum_j q_j)**2``; 2D: ``-sqrt(pi) / (A gamma) (sum_j
    q_j)**2`` (the constants ``-pi / (Omega gamma_seed)`` of Eq. 3-4 and ``-2 pi / A
    (gamma_seed pi)**-1/2`` of Eq. 5-6 summed over all pairs and the self terms).  It is the
    interaction with a uniform neutralising background (and the background's self energy)
    when the charges do not sum to zero: jellium, the electron gas; zero for a neutral set.

Each part depends on ``gamma``; their sum does not (to the truncation error).

**Choice of gamma and cut-offs** (:func:`ewald_parameters`).  Work balance: the real-space
sum costs ``~ N**2 (4 pi / 3) R_c**3 / Omega`` pair terms, the reciprocal one ``~ N (4 pi /
3) G_c**3 Omega / (2 pi)**3`` terms; with ``R_c = p / gamma`` and ``G_c = 2 p gamma`` they
take equal time for ``gamma = sqrt(pi) (c N / Omega**2)**(1/6)`` (3D), and for ``gamma =
sqrt(pi) (c N / A**2)**(1/4)`` (2D, discs instead of spheres), where ``c`` =
:data:`COST_RATIO` is the measured cost of a real-space term over a reciprocal one.  Truncation errors are estimated by the
continuum tails of the neglected terms (particles of density ``N / Omega``, |S(G)|**2 ~
sum q**2 beyond the cut-off):

* real, 3D: ``(sum |q|)**2 / (2 Omega) 4 pi int_{R_c}^inf r erfc(gamma r) dr``;
  2D: ``(sum |q|)**2 / (2 A) 2 pi int_{R_c}^inf erfc(gamma r) dr``;
* reciprocal, 3D: ``sum q**2 gamma / sqrt(pi) erfc(G_c / 2 gamma)``;
  2D: ``sum q**2 gamma ierfc(G_c / 2 gamma)``, ``ierfc(x) = e^{-x**2}/sqrt(pi) - x erfc(x)``.

``accuracy`` is relative to the energy scale ``E_s = sum q**2 / a`` (``a`` the
Wigner-Seitz radius of the N particles, ``(3 Omega / 4 pi N)**(1/3)`` or ``(A / pi
N)**(1/2)``): each cut-off is the smallest whose estimate is at most ``accuracy E_s / 2``.
The estimates at the chosen cut-offs are reported (``error_real``, ``error_recip``,
``relative_error``).
"""

from __future__ import annotations

import itertools
import math
from dataclasses import dataclass, field

import numpy as np
from scipy.optimize import brentq
from scipy.special import erfc

from fixedqmc.errors import FixedQMCError
from fixedqmc.input_checks import check_int
from fixedqmc.systems.periodic.cell import Cell

#: Allowed requested accuracies (relative to the energy scale E_s).
ACCURACY_RANGE = (1e-15, 1e-2)
#: Cost of one real-space term (the kernels' erfc form, per pair and image) over one
#: reciprocal term (two complex products, per particle and G vector), float64, measured on
#: the 3D (N = 54 .. 246) and 2D (N = 58, 114) electron gas: the balanced gamma at this
#: ratio was within 10 % of the fastest tried in each case, and 1.6-2x faster than equal
#: weights (docs/periodic.md).
COST_RATIO = 16.0
#: Most lattice images (real space) and G vectors (half set) a parameter set may need.
MAX_TERMS = 1_000_000
PARTS = ("real", "images", "recip", "self", "background")


def _ierfc(x):
    return np.exp(-x * x) / math.sqrt(math.pi) - x * erfc(x)


@dataclass(frozen=True)
class EwaldParameters:
    """The splitting and truncation of an Ewald sum in one cell (see the module docstring).

    ``gamma`` (1/bohr), ``real_cutoff`` (bohr), ``recip_cutoff`` (1/bohr); ``images`` (n_R,
    dim): lattice vectors with ``|R| <= real_cutoff + cell.reduced_radius`` (bohr, origin
    first), enough for any displacement reduced in the cell's reduced basis; ``gints``
    (n_G, dim) int64: integer coordinates of the G vectors in the reciprocal basis of the
    cell's *reduced* basis, one of each pair +-G (first nonzero coordinate positive), so
    ``G . r = 2 pi gints . f`` with ``f`` the reduced fractional coordinates; ``gvectors``
    (n_G, dim) 1/bohr; ``weights`` (n_G,) hartree: ``recip = sum_G weights |S(G)|**2`` over
    this half set; ``error_real``, ``error_recip`` (hartree) the truncation estimates,
    ``energy_scale`` ``E_s`` (hartree)."""

    cell: Cell = field(repr=False)
    gamma: float
    real_cutoff: float
    recip_cutoff: float
    accuracy: float
    images: np.ndarray = field(repr=False)
    gints: np.ndarray = field(repr=False)
    gvectors: np.ndarray = field(repr=False)
    weights: np.ndarray = field(repr=False)
    error_real: float
    error_recip: float
    energy_scale: float

    @property
    def relative_error(self) -> float:
        """Estimated truncation error relative to ``energy_scale``."""
        return (self.error_real + self.error_recip) / self.energy_scale

    @property
    def n_images(self) -> int:
        return int(self.images.shape[0])

    @property
    def n_gvectors(self) -> int:
        return int(self.gints.shape[0])


@dataclass
class EwaldParts:
    """The parts of an Ewald energy (hartree), arrays of shape (n_walkers,) or floats."""

    real: np.ndarray
    images: np.ndarray
    recip: np.ndarray
    self: np.ndarray
    background: np.ndarray

    @property
    def total(self):
        return self.real + self.images + self.recip + self.self + self.background

    def as_dict(self) -> dict:
        return {p: getattr(self, p) for p in PARTS} | {"total": self.total}


# ------------------------------------------------------------------ parameters --
def check_charges(charges, n: int | None = None) -> np.ndarray:
    q = np.asarray(charges, dtype=np.float64)
    if q.ndim != 1 or q.size == 0 or not np.all(np.isfinite(q)):
        raise FixedQMCError(f"charges must be a non-empty 1D array of finite numbers, got "
                            f"{np.asarray(charges).tolist()!r}")
    if n is not None and q.size != n:
        raise FixedQMCError(f"charges has {q.size} entries but the positions hold {n} "
                            "particles; give one charge per particle")
    return q


def _check_accuracy(accuracy) -> float:
    lo, hi = ACCURACY_RANGE
    ok = isinstance(accuracy, (int, float, np.floating)) and not isinstance(accuracy, bool)
    if not ok or not math.isfinite(accuracy) or not lo <= accuracy <= hi:
        raise FixedQMCError(f"accuracy = {accuracy!r} cannot be reached: allowed "
                            f"{lo:g} <= accuracy <= {hi:g} (relative to the energy scale; "
                            "float64 sums do not resolve less than 1e-15)")
    return float(accuracy)


def _check_optional(key: str, v):
    if v is None:
        return None
    ok = isinstance(v, (int, float, np.floating)) and not isinstance(v, bool)
    if not ok or not math.isfinite(v) or v <= 0:
        raise FixedQMCError(f"{key} must be a positive number, got {v!r}")
    return float(v)


def balanced_gamma(cell: Cell, n_particles: int) -> float:
    """The work-balancing gamma (1/bohr): ``sqrt(pi) (c N / Omega**2)**(1/6)`` (3D),
    ``sqrt(pi) (c N / A**2)**(1/4)`` (2D), ``c`` = :data:`COST_RATIO`: the gamma at which
    the real-space terms (``~ N**2 R_c**3``, ``R_c ~ 1/gamma``) and the reciprocal terms
    (``~ N G_c**3``, ``G_c ~ gamma``), each weighted by its cost, take equal time."""
    if cell.dim == 3:
        return math.sqrt(math.pi) * (COST_RATIO * n_particles / cell.volume ** 2) ** (1 / 6)
    return math.sqrt(math.pi) * (COST_RATIO * n_particles / cell.volume ** 2) ** 0.25


def real_tail(cell: Cell, gamma: float, cutoff: float, sum_abs_q: float) -> float:
    """Continuum estimate (hartree) of the neglected real-space terms beyond ``cutoff``."""
    x = gamma * cutoff
    if cell.dim == 3:
        integral = (-(cutoff ** 2) / 2 * erfc(x) + cutoff * math.exp(-x * x)
                    / (2 * gamma * math.sqrt(math.pi)) + erfc(x) / (4 * gamma ** 2))
        t = 4 * math.pi * max(integral, 0.0)
    else:
        t = 2 * math.pi * _ierfc(x) / gamma
    return sum_abs_q ** 2 / (2 * cell.volume) * t


def recip_tail(cell: Cell, gamma: float, cutoff: float, sum_q2: float) -> float:
    """Continuum estimate (hartree) of the neglected reciprocal terms beyond ``cutoff``."""
    y = cutoff / (2 * gamma)
    if cell.dim == 3:
        return sum_q2 * gamma / math.sqrt(math.pi) * erfc(y)
    return sum_q2 * gamma * _ierfc(y)


def _smallest(f, target: float, hi: float) -> float:
    """Smallest x in (0, hi] with the decreasing f(x) <= target (to 1e-12 relative)."""
    if f(hi) > target:
        return math.inf
    return brentq(lambda x: f(x) - target, 1e-9, hi, xtol=1e-14, rtol=1e-13) * (1 + 1e-12)


def _count_estimate(cell: Cell, real_cutoff: float, recip_cutoff: float):
    r = real_cutoff + cell.reduced_radius
    if cell.dim == 3:
        n_r = 4 * math.pi / 3 * r ** 3 / cell.volume
        n_g = 4 * math.pi / 3 * recip_cutoff ** 3 * cell.volume / (2 * math.pi) ** 3 / 2
    else:
        n_r = math.pi * r ** 2 / cell.volume
        n_g = math.pi * recip_cutoff ** 2 * cell.volume / (2 * math.pi) ** 2 / 2
    return n_r, n_g


def half_gvectors(cell: Cell, cutoff: float):
    """G vectors with ``0 < |G| <= cutoff``, one of each pair +-G: integer coordinates
    (n_G, dim) in the reciprocal basis of ``cell.reduced`` and the vectors (1/bohr),
    sorted by length."""
    brec = 2 * np.pi * np.linalg.inv(cell.reduced).T
    nmax = [int(math.floor(cutoff * np.linalg.norm(a) / (2 * math.pi))) + 1
            for a in cell.reduced]
    n = np.array(list(itertools.product(*(range(-m, m + 1) for m in nmax))), dtype=np.int64)
    first = np.array([next((c for c in row if c != 0), 0) for row in n])
    n = n[first > 0]
    g = n @ brec
    g2 = np.einsum("ij,ij->i", g, g)
    keep = g2 <= cutoff * cutoff
    order = np.argsort(g2[keep], kind="stable")
    return n[keep][order], g[keep][order]


def recip_weights(cell: Cell, gamma: float, gvectors: np.ndarray) -> np.ndarray:
    """Weights (hartree) of the half set: 3D ``(4 pi / Omega) exp(-G**2 / 4 gamma**2) /
    G**2``, 2D ``(2 pi / A) erfc(G / 2 gamma) / G`` (twice the full-set weight)."""
    g = np.linalg.norm(gvectors, axis=1)
    if cell.dim == 3:
        return 4 * np.pi / cell.volume * np.exp(-g * g / (4 * gamma ** 2)) / (g * g)
    return 2 * np.pi / cell.volume * erfc(g / (2 * gamma)) / g


def ewald_parameters(cell: Cell, charges, accuracy: float = 1e-12, *, gamma=None,
                     real_cutoff=None, recip_cutoff=None) -> EwaldParameters:
    """Ewald parameters for ``charges`` (N,) in ``cell`` at a requested ``accuracy``
    (relative to ``E_s = sum q**2 / a``; see the module docstring for the rule).

    ``gamma`` (1/bohr) defaults to the work-balancing value; ``real_cutoff`` (bohr) and
    ``recip_cutoff`` (1/bohr) default to the smallest meeting the accuracy.  A given cut-off
    too short for the accuracy at this gamma, an accuracy outside
    :data:`ACCURACY_RANGE`, or a gamma needing more than :data:`MAX_TERMS` images or G
    vectors raises :class:`FixedQMCError` naming the key."""
    q = check_charges(charges)
    accuracy = _check_accuracy(accuracy)
    gamma_in = _check_optional("gamma", gamma)
    rc_in = _check_optional("real_cutoff", real_cutoff)
    gc_in = _check_optional("recip_cutoff", recip_cutoff)
    n = q.size
    g = balanced_gamma(cell, n) if gamma_in is None else gamma_in
    if cell.dim == 3:
        a = (3 * cell.volume / (4 * math.pi * n)) ** (1 / 3)
    else:
        a = math.sqrt(cell.volume / (math.pi * n))
    sum_q2, sum_abs = float(np.sum(q * q)), float(np.sum(np.abs(q)))
    scale = sum_q2 / a
    target = accuracy * scale / 2

    def rt(rc):
        return real_tail(cell, g, rc, sum_abs)

    def gt(gc):
        return recip_tail(cell, g, gc, sum_q2)

    rc = _smallest(rt, target, 40.0 / g) if rc_in is None else rc_in
    gc = _smallest(gt, target, 80.0 * g) if gc_in is None else gc_in
    for key, val, tail, unit in (("real_cutoff", rc, rt, "bohr"),
                                 ("recip_cutoff", gc, gt, "1/bohr")):
        err = tail(val)
        if err > target * (1 + 1e-9):
            need = _smallest(tail, target, 1e3 * val)
            raise FixedQMCError(
                f"{key} = {val:.6g} {unit} cannot reach accuracy = {accuracy:g} with gamma = "
                f"{g:.6g} 1/bohr (estimated truncation error {err:.3g} hartree, allowed "
                f"{target:.3g}); allowed: {key} >= {need:.6g} {unit}")
    n_r, n_g = _count_estimate(cell, rc, gc)
    if n_r > MAX_TERMS or n_g > MAX_TERMS:
        which = "small" if n_r > MAX_TERMS else "large"
        raise FixedQMCError(
            f"gamma = {g:.6g} 1/bohr is too {which} for this cell at accuracy = {accuracy:g}: "
            f"it needs about {max(n_r, n_g):.3g} {'images' if n_r > MAX_TERMS else 'G vectors'}"
            f" (at most {MAX_TERMS}); the balanced value is {balanced_gamma(cell, n):.6g}")
    images = cell.lattice_points(rc + cell.reduced_radius)
    gints, gvec = half_gvectors(cell, gc)
    for arr in (images, gints, gvec):
        arr.setflags(write=False)
    w = recip_weights(cell, g, gvec)
    w.setflags(write=False)
    return EwaldParameters(cell, g, rc, gc, accuracy, images, gints, gvec, w, rt(rc), gt(gc),
                           scale)


def resolve_parameters(cell: Cell, charges, accuracy: float,
                       params: EwaldParameters | None) -> EwaldParameters:
    """The Ewald parameters of ``charges`` (N,) in ``cell``: ``params`` if given (they must
    have been made for this very ``cell``), else :func:`ewald_parameters` at ``accuracy``
    (relative to the energy scale).  Parameters of another cell raise
    :class:`FixedQMCError` naming ``params`` and what is allowed."""
    if params is None:
        return ewald_parameters(cell, charges, accuracy)
    if params.cell is not cell:
        raise FixedQMCError("params were made for another cell; build them with "
                            "ewald_parameters(cell, charges) for this cell, or leave "
                            "params=None to build them at the given accuracy")
    return params


# -------------------------------------------------------------------- energies --
def check_walkers(cell: Cell, positions) -> tuple[np.ndarray, bool]:
    x = np.asarray(positions, dtype=np.float64)
    single = x.ndim == 2
    if single:
        x = x[None]
    if x.ndim != 3 or x.shape[-1] != cell.dim or not np.all(np.isfinite(x)):
        raise FixedQMCError(f"positions must be finite, of shape (N, {cell.dim}) or "
                            f"(n_walkers, N, {cell.dim}) for a {cell.dim}D cell, got shape "
                            f"{x.shape}")
    return x, single


def screened(params: EwaldParameters, d: np.ndarray) -> np.ndarray:
    """``sum_R erfc(gamma |d - R|) / |d - R|`` over the images within the real-space
    cut-off, for displacements d (..., dim) no longer than ``cell.reduced_radius``."""
    e = d[..., None, :] - params.images
    r = np.linalg.norm(e, axis=-1)
    inside = r < params.real_cutoff
    rr = np.where(inside, r, 1.0)
    return np.where(inside, erfc(params.gamma * rr) / rr, 0.0).sum(axis=-1)


def _real(params: EwaldParameters, x: np.ndarray, q: np.ndarray) -> float:
    cell = params.cell
    total = 0.0
    for i in range(x.shape[0] - 1):
        d = cell.minimum_image(x[i] - x[i + 1:])
        total += q[i] * float(np.sum(q[i + 1:] * screened(params, d)))
    return total


def structure_factors(params: EwaldParameters, charges, positions) -> np.ndarray:
    """``S(G) = sum_j q_j exp(i G . r_j)`` (n_walkers, n_G) complex over the half set."""
    x, _ = check_walkers(params.cell, positions)
    q = check_charges(charges, x.shape[1])
    phase = np.einsum("gc,wjc->wgj", params.gvectors, x)
    return np.einsum("j,wgj->wg", q, np.exp(1j * phase))


def constant_parts(params: EwaldParameters, charges) -> dict:
    """The position-independent parts ``images``, ``self``, ``background`` (hartree)."""
    q = check_charges(charges)
    cell, g = params.cell, params.gamma
    rr = np.linalg.norm(params.images[1:], axis=1)
    rr = rr[rr < params.real_cutoff]
    images = 0.5 * float(np.sum(q * q)) * float(np.sum(erfc(g * rr) / rr))
    self_ = -g / math.sqrt(math.pi) * float(np.sum(q * q))
    if cell.dim == 3:
        bg = -math.pi / (2 * cell.volume * g * g) * float(np.sum(q)) ** 2
    else:
        bg = -math.sqrt(math.pi) / (cell.volume * g) * float(np.sum(q)) ** 2
    return {"images": images, "self": self_, "background": bg}


def ewald_energy(cell: Cell, charges, positions, params: EwaldParameters | None = None,
                 accuracy: float = 1e-12) -> EwaldParts:
    """The Ewald energy (hartree) of ``charges`` (N,) at ``positions`` (N, dim) or
    (n_walkers, N, dim) (bohr) in ``cell``, by parts (:class:`EwaldParts`: floats for one
    configuration, (n_walkers,) arrays otherwise).  ``params`` default to
    :func:`ewald_parameters` at ``accuracy`` (:func:`resolve_parameters`).  The float64
    reference: readable numpy."""
    x, single = check_walkers(cell, positions)
    q = check_charges(charges, x.shape[1])
    params = resolve_parameters(cell, q, accuracy, params)
    real = np.array([_real(params, xw, q) for xw in x])
    recip = np.einsum("g,wg->w", params.weights, np.abs(structure_factors(params, q, x)) ** 2)
    const = constant_parts(params, q)
    nw = x.shape[0]
    parts = EwaldParts(real, np.full(nw, const["images"]), recip, np.full(nw, const["self"]),
                       np.full(nw, const["background"]))
    if single:
        parts = EwaldParts(*(float(getattr(parts, p)[0]) for p in PARTS))
    return parts


def move_energy(params: EwaldParameters, charges, positions, structure, i: int, new):
    """Single-particle move: the change of the Ewald energy (hartree) when particle ``i``
    moves to ``new`` (n_walkers, dim), and the updated structure factors.

    ``positions`` (n_walkers, N, dim), ``structure`` (n_walkers, n_G) the current
    :func:`structure_factors`.  O(N n_R) real-space and O(n_G) reciprocal work: ``dE =
    q_i sum_{j != i} q_j [phi(r'_i - r_j) - phi(r_i - r_j)] + sum_G w_G (|S'|**2 - |S|**2)``
    with ``phi`` the screened image sum and ``S' = S + q_i (e^{iG.r'_i} - e^{iG.r_i})``;
    the other parts do not change.  Returns ``(dE (n_walkers,), S' (n_walkers, n_G))``."""
    cell = params.cell
    x, _ = check_walkers(cell, positions)
    q = check_charges(charges, x.shape[1])
    check_int("i", i, 0)
    if i >= x.shape[1]:
        raise FixedQMCError(f"i = {i} is not a particle index; allowed 0..{x.shape[1] - 1}")
    new = np.asarray(new, dtype=np.float64).reshape(x.shape[0], cell.dim)
    others = np.delete(np.arange(x.shape[1]), i)
    xo = x[:, others]
    d_new = cell.minimum_image(new[:, None, :] - xo)
    d_old = cell.minimum_image(x[:, i:i + 1, :] - xo)
    d_real = q[i] * np.einsum("j,wj->w", q[others],
                              screened(params, d_new) - screened(params, d_old))
    ds = q[i] * (np.exp(1j * new @ params.gvectors.T) - np.exp(1j * x[:, i] @ params.gvectors.T))
    s_new = structure + ds
    d_recip = (np.abs(s_new) ** 2 - np.abs(structure) ** 2) @ params.weights
    return d_real + d_recip, s_new
