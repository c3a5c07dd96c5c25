"""The two-body Jastrow terms of periodic systems, float64 reference (seed 000, Sec. 2.3).

The trial function is ``psi = exp(J) S`` (seed Eq. 1) with the homogeneous two-body part of
Eq. 7, ``J = sum_{i<j} [u(r_ij) + p(r_ij)]`` (dimensionless; lengths in bohr):

* ``u(r) = (r - L_u)**C Theta(L_u - r) sum_{l=0}^{N_u} alpha_l r**l`` (Eq. 8), with one set
  of ``alpha`` for parallel and one for antiparallel spin pairs, ``r`` the minimum-image
  distance (:meth:`Cell.minimum_image`), ``C`` in {2, 3}, ``N_u <= 12`` and
  ``L_u <= Cell.inscribed_radius`` (half the shortest lattice vector, so at most one image
  of a pair lies within ``L_u``);
* ``p(r) = sum_{m=1}^{N_p} a_m sum_{G in star_m^+} cos(G . r)`` (Eq. 9): ``star_m`` is the
  m-th shell of nonzero reciprocal-lattice vectors of equal length, ``+`` keeps one of each
  ``+-G`` pair; one set of ``a_m`` for all spin pairs (as in the seed).

**Kato cusp and alpha_1.**  With ``psi = exp(J) S`` the electron-electron cusp conditions
are ``du/dr(0) = Gamma`` with, in 3D, ``Gamma = 1/2`` (antiparallel) and ``1/4`` (parallel),
and in 2D ``Gamma = 1`` and ``1/3`` (in d dimensions ``1/(d-1)`` and ``1/(d+1)``: the
parallel pair's determinant vanishes linearly, which raises the angular momentum of the
pair by one); ``p`` is even and smooth, so ``grad p(0) = 0`` and it does not change the
cusp.  From Eq. 8, ``u'(0) = C (-L)**(C-1) alpha_0 + (-L)**C alpha_1``, so::

    alpha_1 = Gamma / (-L_u)**C + C alpha_0 / L_u.

**Behaviour at L_u.**  The factor ``(r - L_u)**C`` makes u and its derivatives of orders
``0 .. C-1`` vanish at ``L_u`` (continuous with the zero beyond); the derivative of order
``C`` jumps from ``C! sum_l alpha_l L_u**l`` to 0.  So ``C = 2`` gives a continuous gradient
and a discontinuous Laplacian, ``C = 3`` a continuous Laplacian (the seed: "C is the number
of derivatives of u that are well-defined at L_u", counting the one-sided C-th).

Derivatives per electron, ``d_ij = r_i - r_j`` (minimum image for u)::

    grad_i J = sum_{j != i} [u'(r) d/r - sum_G a_G G sin(G . d)]
    lap_i J  = sum_{j != i} [u''(r) + (dim - 1) u'(r)/r - sum_G a_G |G|**2 cos(G . d)]

The reference evaluates ``cos(G . d)`` directly (``np.cos``), not by the power
construction of Eq. 10 that the kernels use, so it checks that construction too.

Bad input raises :class:`~fixedqmc.errors.FixedQMCError` naming the key (``jastrow.cutoff``,
``jastrow.C``, ``jastrow.alpha_parallel``, ``jastrow.alpha_antiparallel``,
``jastrow.p_coefficients``, ``jastrow.n_up``, ...) and what is allowed.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, replace

import numpy as np

from fixedqmc.errors import FixedQMCError
from fixedqmc.input_checks import check_int
from fixedqmc.systems.periodic.cell import Cell

#: Largest expansion order N_u of Eq. 8 (the seed: typically 8-12).
MAX_NU = 12
#: Largest number of stars N_p of Eq. 9 (the seed: typically 3-15).
MAX_STARS = 30
#: Allowed powers C of Eq. 8.
C_VALUES = (2, 3)
#: Walkers per chunk of :func:`linear_basis`.
BASIS_CHUNK = 128
#: Relative tolerance grouping reciprocal vectors of equal length into a star.
STAR_RTOL = 1e-8


def kato_gamma(dim: int, parallel: bool) -> float:
    """The electron-electron cusp ``du/dr(0)`` for ``psi = exp(J) S``: 1/(d+1) for parallel,
    1/(d-1) for antiparallel spins (3D: 1/4, 1/2; 2D: 1/3, 1)."""
    return 1.0 / (dim + 1) if parallel else 1.0 / (dim - 1)


def cusp_alpha1(alpha0: float, cutoff: float, c: int, gamma: float) -> float:
    """``alpha_1 = Gamma / (-L)**C + C alpha_0 / L``: the coefficient that makes
    ``u'(0) = Gamma`` (Eq. 8)."""
    return gamma / (-cutoff) ** c + c * alpha0 / cutoff


def cusp_only_alpha0(cutoff: float, c: int, gamma: float) -> float:
    """The ``alpha_0`` that makes ``alpha_1 = 0``: ``u = alpha_0 (r - L)**C`` alone, which
    rises monotonically from ``u(0) = -Gamma L / C`` to 0 at ``L`` with the cusp
    ``u'(0) = Gamma`` (the cusp term without free parameters: a sensible start)."""
    return -gamma * cutoff / (c * (-cutoff) ** c)


@dataclass(frozen=True)
class JastrowParameters:
    """u and p parameters of one cell.

    ``alpha`` (2, N_u + 1): rows parallel (0) and antiparallel (1) spin pairs, alpha_1
    already set by the cusp; ``gvectors`` (n_G, dim) the half set of the first N_p stars
    (1/bohr), ``star`` (n_G,) their star index (0-based), ``a`` (N_p,) the star
    coefficients; ``n_up`` of ``n_electrons`` are spin up (the first ones)."""

    cell: Cell
    n_electrons: int
    n_up: int
    cutoff: float
    c: int
    alpha: np.ndarray
    a: np.ndarray
    gvectors: np.ndarray
    star: np.ndarray

    @property
    def n_u(self) -> int:
        return self.alpha.shape[1] - 1

    @property
    def n_p(self) -> int:
        return self.a.size

    @property
    def a_of_g(self) -> np.ndarray:
        """The coefficient of each G vector, (n_G,)."""
        return self.a[self.star]

    def spin_index(self) -> np.ndarray:
        """(N, N) 0 for parallel, 1 for antiparallel pairs."""
        up = np.arange(self.n_electrons) < self.n_up
        return (up[:, None] != up[None, :]).astype(np.int64)


def _float_list(key: str, v, lo: int, hi: int) -> np.ndarray:
    try:
        a = np.array(v, dtype=np.float64)
    except (TypeError, ValueError):
        a = None
    if a is None or a.ndim != 1 or not lo <= a.size <= hi or not np.all(np.isfinite(a)):
        raise FixedQMCError(f"{key} must be a list of {lo} to {hi} finite numbers, got {v!r}")
    return a


def stars(cell: Cell, n_stars: int) -> tuple[np.ndarray, np.ndarray]:
    """The half set of the first ``n_stars`` stars of nonzero reciprocal-lattice vectors:
    ``(G (n_G, dim) 1/bohr, star index (n_G,))``, sorted by length; of each ``+-G`` pair the
    one whose first nonzero cartesian component is positive."""
    if n_stars == 0:
        return np.zeros((0, cell.dim)), np.zeros(0, np.int64)
    bmin = float(np.linalg.norm(cell.reciprocal, axis=1).min())
    radius = 2.0 * bmin
    while True:
        g = cell.lattice_points(radius, basis=cell.reciprocal)[1:]
        length = np.linalg.norm(g, axis=1)
        shells = [length[0]]
        for x in length[1:]:
            if x > shells[-1] * (1 + STAR_RTOL):
                shells.append(x)
        if len(shells) > n_stars:  # the first n_stars shells are complete within radius
            break
        radius *= 1.5
    star = np.searchsorted(np.array(shells) * (1 + STAR_RTOL), length)
    tol = 1e-10 * length[:, None]
    sign = np.where(np.abs(g) > tol, np.sign(g), 0.0)
    first = sign[np.arange(len(g)), np.argmax(sign != 0, axis=1)]
    keep = (star < n_stars) & (first > 0)
    return g[keep], star[keep].astype(np.int64)


def jastrow_parameters(cell: Cell, n_electrons: int, n_up: int | None = None, *,
                       cutoff: float | None = None, c: int = 3,
                       alpha_parallel=(0.0,), alpha_antiparallel=(0.0,),
                       p_coefficients=()) -> JastrowParameters:
    """Checked parameters.  ``cutoff`` L_u (bohr; default ``cell.inscribed_radius``, the
    seed's choice); ``c`` = C; ``alpha_parallel``, ``alpha_antiparallel``: the optimizable
    ``[alpha_0, alpha_2, ..., alpha_{N_u}]`` (N_u entries: alpha_1 is set by the cusp), the
    same N_u for both; ``p_coefficients``: ``[a_1, ..., a_{N_p}]``."""
    check_int("jastrow.n_electrons", n_electrons, 2)
    n_up = (n_electrons + 1) // 2 if n_up is None else n_up
    check_int("jastrow.n_up", n_up, 0)
    if n_up > n_electrons:
        raise FixedQMCError(f"jastrow.n_up = {n_up} exceeds n_electrons = {n_electrons}; "
                            f"allowed 0 <= n_up <= {n_electrons}")
    if isinstance(c, bool) or c not in C_VALUES:
        raise FixedQMCError(f"jastrow.C = {c!r} is not allowed; choose 2 (continuous "
                            "gradient) or 3 (continuous Laplacian)")
    limit = cell.inscribed_radius
    cutoff = limit if cutoff is None else cutoff
    ok = isinstance(cutoff, (int, float, np.floating)) and not isinstance(cutoff, bool)
    if not ok or not math.isfinite(cutoff) or not 0 < cutoff <= limit * (1 + 1e-12):
        raise FixedQMCError(f"jastrow.cutoff = {cutoff!r} is not allowed: L_u must satisfy "
                            f"0 < L_u <= {limit:.10g} bohr, half the shortest lattice vector "
                            "of the cell (the inscribed radius of its Wigner-Seitz cell)")
    cutoff = float(min(cutoff, limit))
    rows = []
    for key, parallel, v in (("jastrow.alpha_parallel", True, alpha_parallel),
                             ("jastrow.alpha_antiparallel", False, alpha_antiparallel)):
        opt = _float_list(key, v, 1, MAX_NU)
        alpha = np.zeros(opt.size + 1)
        alpha[0] = opt[0]
        alpha[2:] = opt[1:]
        alpha[1] = cusp_alpha1(alpha[0], cutoff, c, kato_gamma(cell.dim, parallel))
        rows.append(alpha)
    if rows[0].size != rows[1].size:
        raise FixedQMCError(
            f"jastrow.alpha_parallel has {rows[0].size - 1} and jastrow.alpha_antiparallel "
            f"{rows[1].size - 1} entries; give both the same N_u ([alpha_0, alpha_2, ..., "
            f"alpha_N_u], 1 <= N_u <= {MAX_NU})")
    a = _float_list("jastrow.p_coefficients", list(p_coefficients), 0, MAX_STARS)
    g, star = stars(cell, a.size)
    for arr in (rows[0], rows[1], a, g, star):
        arr.setflags(write=False)
    return JastrowParameters(cell, int(n_electrons), int(n_up), cutoff, int(c),
                             np.array(rows), a, g, star)


# ----------------------------------------------------------------------- u and p --
def u_terms(params: JastrowParameters, r, spin) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """``(u, u', u'')`` (1/bohr, 1/bohr**2 for the derivatives) at distances r (bohr) for
    spin-pair rows ``spin`` (0 parallel, 1 antiparallel; broadcast with r); zero for
    ``r >= L_u``."""
    r = np.asarray(r, np.float64)
    alpha = params.alpha[np.asarray(spin)]  # (..., N_u + 1)
    c, big_l = params.c, params.cutoff
    poly = np.zeros(np.broadcast(r, alpha[..., 0]).shape)
    dpoly, d2poly = np.zeros_like(poly), np.zeros_like(poly)
    for l in range(params.n_u, -1, -1):
        d2poly = d2poly * r + 2 * dpoly
        dpoly = dpoly * r + poly
        poly = poly * r + alpha[..., l]
    y = r - big_l
    inside = r < big_l
    u = np.where(inside, y ** c * poly, 0.0)
    du = np.where(inside, c * y ** (c - 1) * poly + y ** c * dpoly, 0.0)
    d2u = np.where(inside, c * (c - 1) * y ** (c - 2) * poly + 2 * c * y ** (c - 1) * dpoly
                   + y ** c * d2poly, 0.0)
    return u, du, d2u


def p_terms(params: JastrowParameters, d) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """``(p, grad p (..., dim), lap p)`` at displacements d (..., dim) (bohr), Eq. 9."""
    d = np.asarray(d, np.float64)
    g, a = params.gvectors, params.a_of_g
    phase = d @ g.T  # (..., n_G)
    cos, sin = np.cos(phase), np.sin(phase)
    p = cos @ a
    grad = -(sin * a) @ g
    lap = -cos @ (a * np.einsum("gc,gc->g", g, g))
    return p, grad, lap


def check_positions(params: JastrowParameters, positions) -> tuple[np.ndarray, bool]:
    x = np.asarray(positions, dtype=np.float64)
    single = x.ndim == 2
    if single:
        x = x[None]
    n, dim = params.n_electrons, params.cell.dim
    if x.ndim != 3 or x.shape[1:] != (n, dim) or not np.all(np.isfinite(x)):
        raise FixedQMCError(f"positions must be finite, of shape ({n}, {dim}) or (n_walkers, "
                            f"{n}, {dim}), got shape {x.shape}")
    return x, single


@dataclass(frozen=True)
class JastrowValues:
    """``value`` (n_w,) J, ``grad`` (n_w, N, dim) grad_i J (1/bohr), ``lap`` (n_w, N)
    lap_i J (1/bohr**2), and the u and p parts of each (``u_value``, ``p_value``, ...)."""

    u_value: np.ndarray
    u_grad: np.ndarray
    u_lap: np.ndarray
    p_value: np.ndarray
    p_grad: np.ndarray
    p_lap: np.ndarray

    @property
    def value(self):
        return self.u_value + self.p_value

    @property
    def grad(self):
        return self.u_grad + self.p_grad

    @property
    def lap(self):
        return self.u_lap + self.p_lap


def _geometry(params: JastrowParameters, x: np.ndarray):
    """Per walker and pair (i, j): d_ij = r_i - r_j, its minimum image, the distance (L_u on
    the diagonal) and the distance safe to divide by."""
    d = x[:, :, None, :] - x[:, None, :, :]  # (n_w, N, N, dim)
    dm = params.cell.minimum_image(d)
    r = np.linalg.norm(dm, axis=-1)
    off = ~np.eye(params.n_electrons, dtype=bool)
    return d, dm, np.where(off, r, params.cutoff), np.where(off & (r > 0), r, 1.0), off


def _values(params: JastrowParameters, geometry) -> JastrowValues:
    """J, grad_i J and lap_i J of pairs of known geometry (:func:`_geometry`)."""
    d, dm, r, rr, off = geometry
    u, du, d2u = u_terms(params, r, params.spin_index())
    p, pg, pl = p_terms(params, d)
    p, pg, pl = p * off, pg * off[..., None], pl * off
    u_grad = np.einsum("wij,wijc->wic", du / rr, dm)
    u_lap = np.sum(d2u + (params.cell.dim - 1) * du / rr, axis=2)
    return JastrowValues(0.5 * u.sum(axis=(1, 2)), u_grad, u_lap,
                         0.5 * p.sum(axis=(1, 2)), pg.sum(axis=2), pl.sum(axis=2))


def evaluate(params: JastrowParameters, positions) -> JastrowValues:
    """J, grad_i J and lap_i J (:class:`JastrowValues`) of walkers ``positions``
    (n_w, N, dim) or (N, dim) (bohr); O(N**2 n_G) per walker."""
    x, _ = check_positions(params, positions)
    return _values(params, _geometry(params, x))


def electron_terms(params: JastrowParameters, positions, i: int, new=None):
    """``(sum_{j != i} [u + p](r_i - r_j) (n_w,), grad_i J (n_w, dim))`` with electron i of
    walkers ``positions`` (n_w, N, dim) at its own place or at ``new`` (n_w, dim)."""
    x, _ = check_positions(params, positions)
    check_int("electron index i", i, 0)
    if i >= params.n_electrons:
        raise FixedQMCError(f"electron index i = {i} must be below N = {params.n_electrons}")
    ri = x[:, i] if new is None else np.asarray(new, np.float64).reshape(x.shape[0], -1)
    others = np.delete(np.arange(params.n_electrons), i)
    d = ri[:, None, :] - x[:, others]  # (n_w, N-1, dim)
    dm = params.cell.minimum_image(d)
    r = np.linalg.norm(dm, axis=-1)
    spin = params.spin_index()[i, others]
    u, du, _ = u_terms(params, r, spin)
    rr = np.where(r > 0, r, 1.0)
    p, pg, _ = p_terms(params, d)
    value = u.sum(axis=1) + p.sum(axis=1)
    grad = np.einsum("wj,wjc->wc", du / rr, dm) + pg.sum(axis=1)
    return value, grad


def move(params: JastrowParameters, positions, i: int, new) -> tuple[np.ndarray, np.ndarray]:
    """Electron i of each walker moved to ``new`` (n_w, dim): ``(J(new) - J(old) (n_w,),
    grad_i J at new (n_w, dim))``, O(N n_G) per walker."""
    old, _ = electron_terms(params, positions, i)
    new_value, grad = electron_terms(params, positions, i, new)
    return new_value - old, grad


# ------------------------------------------------------------ linear parameters --
def parameter_names(params: JastrowParameters) -> list[str]:
    """Names of the optimisable parameters, in the order of :func:`parameter_vector`: the
    input keys' list entries ``jastrow.alpha_parallel[k]``, ``jastrow.alpha_antiparallel[k]``
    (k = 0 is alpha_0, k >= 1 is alpha_{k+1}) and ``jastrow.p_coefficients[m]``."""
    return ([f"jastrow.{key}[{k}]" for key in ("alpha_parallel", "alpha_antiparallel")
             for k in range(params.n_u)] + [f"jastrow.p_coefficients[{m}]"
                                            for m in range(params.n_p)])


def parameter_vector(params: JastrowParameters) -> np.ndarray:
    """The optimisable parameters c (K,), K = 2 N_u + N_p: per spin row ``[alpha_0,
    alpha_2, ..., alpha_N_u]`` (alpha_1 follows from the Kato cusp), then ``a_1 .. a_N_p``."""
    rows = [np.r_[params.alpha[s, 0], params.alpha[s, 2:]] for s in (0, 1)]
    return np.concatenate(rows + [params.a])


def parameter_lists(params: JastrowParameters, c) -> dict:
    """The input keys (``[jastrow]`` section) that give parameter vector ``c`` (K,)."""
    c = np.asarray(c, np.float64)
    nu = params.n_u
    if c.shape != (2 * nu + params.n_p,) or not np.all(np.isfinite(c)):
        raise FixedQMCError(f"a Jastrow parameter vector must hold {2 * nu + params.n_p} "
                            f"finite numbers (2 N_u + N_p), got shape {c.shape}")
    return {"alpha_parallel": c[:nu].tolist(), "alpha_antiparallel": c[nu:2 * nu].tolist(),
            "p_coefficients": c[2 * nu:].tolist()}


def linear_basis(params: JastrowParameters, positions
                 ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """J is linear in the parameters c of :func:`parameter_vector` (Eq. 8 and 9, with
    alpha_1 = Gamma / (-L)**C + C alpha_0 / L affine in alpha_0), ``J(c) = J_cusp + c .
    phi``; returns ``phi = dJ/dc`` (n_w, K), its gradients ``grad_i phi_k`` (n_w, K, N, dim)
    (1/bohr) and Laplacians ``sum_i lap_i phi_k`` (n_w, K) (1/bohr**2) of walkers
    ``positions`` (n_w, N, dim) (bohr).  The basis functions of a spin row are
    ``(r - L)**C (1 + C r / L)`` (alpha_0) and ``(r - L)**C r**l`` (alpha_l, l >= 2); of
    star m, ``sum_{G in star_m^+} cos(G . r)``.  Each is a J of other parameters, computed
    by the float64 reference on the pair geometry shared by all of them."""
    x, _ = check_positions(params, positions)
    nu, dim = params.n_u, params.cell.dim
    empty = dict(a=np.zeros(0), gvectors=np.zeros((0, dim)), star=np.zeros(0, np.int64))
    variants = []
    for s in (0, 1):
        for k in range(nu):
            alpha = np.zeros((2, nu + 1))
            if k == 0:
                alpha[s, :2] = 1.0, params.c / params.cutoff
            else:
                alpha[s, k + 1] = 1.0
            variants.append(replace(params, alpha=alpha, **empty))
    for m in range(params.n_p):
        sel = params.star == m
        variants.append(replace(params, alpha=np.zeros((2, nu + 1)), a=np.ones(1),
                                gvectors=params.gvectors[sel], star=np.zeros(sel.sum(), np.int64)))
    phi = np.zeros((x.shape[0], len(variants)))
    grad = np.zeros((x.shape[0], len(variants), params.n_electrons, dim))
    lap = np.zeros_like(phi)
    for lo in range(0, x.shape[0], BASIS_CHUNK):  # bounded (chunk, N, N, dim) temporaries
        w = slice(lo, lo + BASIS_CHUNK)
        geometry = _geometry(params, x[w])
        for k, v in enumerate(variants):
            jv = _values(v, geometry)
            phi[w, k], grad[w, k], lap[w, k] = jv.value, jv.grad, jv.lap.sum(axis=1)
    return phi, grad, lap
