"""The two-body Jastrow factor through the one-source kernels, at any precision per kernel.

:class:`JastrowEvaluator` declares the kernels ``jastrow_u`` of
:mod:`fixedqmc.systems.periodic.jastrow_u_kernel` and ``jastrow_p`` of
:mod:`fixedqmc.systems.periodic.jastrow_p_kernel` (every variable with a range derived from
the parameters), resolves a precision spec over them (``jastrow_u=fixed:32,jastrow_p=float32``,
...) with a :class:`~fixedqmc.numerics.kernel_set.KernelSet`, encodes the walkers' reduced
fractional coordinates, runs the kernels and decodes J, grad_i J and lap_i J
(:class:`~fixedqmc.systems.periodic.jastrow.JastrowValues`) or the change of J for a
single-electron move.  Lengths in bohr, J dimensionless.
"""

from __future__ import annotations

import math

import numpy as np
from scipy.optimize import lsq_linear

from fixedqmc.errors import FixedQMCError
from fixedqmc.input_checks import check_int
from fixedqmc.numerics import bound_words
from fixedqmc.numerics.kernel import KernelSpec, Variable, symmetric_range as sym
from fixedqmc.numerics.kernel_set import KernelSet
from fixedqmc.systems.parts import PartMove, PartValues
from fixedqmc.systems.periodic import jastrow_u_kernel as K
from fixedqmc.systems.periodic import jastrow_p_kernel as PK
from fixedqmc.systems.periodic.evaluator import lattice3, pad3
from fixedqmc.systems.periodic.jastrow import JastrowParameters, JastrowValues, check_positions

#: Closest pair distance (bohr) the declared ranges allow for (1 / r up to 1e3).
R_MIN = 1e-3
KERNELS = ("jastrow_u", "jastrow_p")
#: Headroom on declared bounds of values formed from rounded operands.
MARGIN = 1.01


def candidate_images(params: JastrowParameters) -> np.ndarray:
    """The lattice vectors R (n_R, dim) (bohr) for which some displacement reduced in the
    reduced basis, ``d0 = t A'`` with ``t`` in [-1/2, 1/2]**dim, has ``|d0 - R| < L_u``: their
    distance from that parallelepiped (a bounded least-squares problem) is below L_u.  Any
    other image is at least L_u (to 1e-9 relative) from every reduced displacement, so its
    u and first C derivatives vanish there (a cubic cell with L_u at its largest keeps only
    R = 0: its face images touch the cut-off sphere but never enter it)."""
    cell, big_l = params.cell, params.cutoff
    red = cell.reduced
    pts = cell.lattice_points(cell.reduced_radius + big_l)
    keep = []
    for k, r in enumerate(pts):
        if not r.any():
            keep.append(k)
            continue
        sol = lsq_linear(red.T, r, bounds=(-0.5, 0.5), method="bvls")
        if float(np.linalg.norm(red.T @ sol.x - r)) < big_l * (1 - 1e-9):
            keep.append(k)
    return pts[keep]


def u_coefficients(params: JastrowParameters) -> np.ndarray:
    """(2, 3, N_u + 1): per spin pair the coefficients of ``Q(x) = sum_l beta_l x**l``,
    ``beta_l = alpha_l L_u**(l+C)``, of Q' and of Q'' in powers of ``x = r / L_u``."""
    n = params.n_u + 1
    l = np.arange(n)
    beta = params.alpha * params.cutoff ** (l + params.c)
    out = np.zeros((2, 3, n))
    out[:, 0] = beta
    out[:, 1, :n - 1] = (l * beta)[:, 1:]
    out[:, 2, :n - 2] = (l * (l - 1) * beta)[:, 2:]
    return out


def p_coefficients(params: JastrowParameters) -> tuple[np.ndarray, np.ndarray]:
    """``(gint (n_G, 3) int64, pcoef (n_G, 5))``: the half set's integer coordinates in the
    reduced reciprocal basis (``G . a'_k = 2 pi n_k``) and ``a_G, -a_G G (3), -a_G |G|**2``."""
    cell, g = params.cell, params.gvectors
    gint = np.rint(g @ cell.reduced.T / (2 * math.pi)).astype(np.int64)
    assert np.allclose(gint @ (2 * math.pi * np.linalg.inv(cell.reduced).T), g, atol=1e-9)
    a = params.a_of_g
    pcoef = np.zeros((g.shape[0], 5))
    pcoef[:, 0] = a
    pcoef[:, 1:1 + cell.dim] = -a[:, None] * g
    pcoef[:, 4] = -a * np.einsum("gc,gc->g", g, g)
    return np.ascontiguousarray(pad3(gint).astype(np.int64)), pcoef


def declared_ranges(params: JastrowParameters, images: np.ndarray) -> dict:
    """``{kernel: {variable: (lo, hi)}}``: ranges of every kernel variable (used to size
    width-only fixed formats ``fixed:W``; a range profile may replace them)."""
    cell, n, dim, c, big_l = params.cell, params.n_electrons, params.cell.dim, params.c, \
        params.cutoff
    lat = lattice3(cell.reduced)
    rho = cell.reduced_radius
    img_max = float(np.abs(images).max())
    de_max = rho + float(np.linalg.norm(images, axis=1).max())
    cf = np.abs(u_coefficients(params))
    b0, b1, b2 = (float(cf[:, k].sum(axis=1).max()) for k in range(3))
    dux = c * b0 + b1
    d2ux = c * (c - 1) * b0 + 2 * c * b1 + b2
    du, d2u = dux / big_l, d2ux / big_l ** 2
    dur = du / R_MIN
    lterm = d2u + (dim - 1) * dur
    u = {
        "frac": (0, 1), "dfrac": (-1, 1), "nint": (-1, 1), "dred": (-0.5, 0.5),
        "lattice": sym(np.abs(lat).max()), "dterm": sym(0.5 * np.abs(lat).max()),
        "d": sym(rho), "image": sym(max(img_max, 1e-3)), "de": sym(de_max),
        "de2": (0, de_max ** 2), "s": (0, 3 * de_max ** 2), "cut2": (0, big_l ** 2),
        "inv_r": (0, 1 / R_MIN), "r": (0, MARGIN * big_l), "inv_l": (0, 1 / big_l),
        "x": (0, 1), "one": (0, 1), "y": (-1, 0), "yp": (-1, 1),
        "coef": sym(cf[:, 0].max()), "qx": sym(b0), "q": sym(b0),
        "dcoef": sym(cf[:, 1].max()), "dqx": sym(b1), "dq": sym(b1),
        "d2coef": sym(cf[:, 2].max()), "d2qx": sym(b2), "d2q": sym(b2),
        "yq": sym(max(b0, b1, b2)), "int": (0, 2 * c), "kyq": sym(2 * c * max(b0, b1)),
        "dux": sym(MARGIN * dux), "d2ux": sym(MARGIN * d2ux), "u": sym(b0),
        "du": sym(MARGIN * du), "inv_l2": (0, 1 / big_l ** 2), "d2u": sym(MARGIN * d2u),
        "dur": sym(MARGIN * dur), "g": sym(MARGIN ** 2 * du),
        "grad": sym(MARGIN ** 2 * (n - 1) * du), "dim1": (0, dim - 1),
        "ddur": sym(MARGIN * (dim - 1) * dur), "lterm": sym(MARGIN * lterm),
        "lap": sym(MARGIN * (n - 1) * lterm), "sum": sym(n * (n - 1) / 2 * b0)}
    a = np.abs(params.a_of_g)
    g2 = np.einsum("gc,gc->g", params.gvectors, params.gvectors)
    amax = float(a.max()) if a.size else 1.0
    agmax = float((a * np.sqrt(g2)).max()) if a.size else 1.0
    ag2max = float((a * g2).max()) if a.size else 1.0
    # the p kernel (jastrow_p_kernel): |z_j| <= 1 up to its drift (MARGIN holds it), so
    # |S| <= N, |S|**2 <= N**2, |S|**2 - N in [-N, N**2 - N], |Re, Im(z conj S)| <= N and,
    # the self term removed (or cancelling exactly), |sum_{j != i} Re, Im(z_i conj z_j)|
    # <= N - 1; each derived bound carries one more MARGIN for its rounding
    m1 = max(n - 1, 1)
    sabs = MARGIN * n
    mag = MARGIN ** 2 * n * n
    p = {
        "frac": (0, 1), "cos": (-1, 1), "sin": (-1, 1), "pp": (-1, 1), "pw": (-1, 1),
        "zz": (-1, 1), "sre": sym(sabs), "sim": sym(sabs), "sq": (0, mag),
        "mag": (0, mag), "nel": (0, n), "pair": (-n, mag - n), "ahalf": sym(amax / 2),
        "pterm": sym(MARGIN * amax / 2 * max(mag - n, n)), "zs": sym(MARGIN * sabs),
        "cre": sym(MARGIN * sabs), "cim": sym(MARGIN ** 2 * m1),
        "cdiff": sym(MARGIN ** 2 * m1), "ag": sym(amax),
        "eterm": sym(MARGIN ** 3 * amax * m1), "agc": sym(agmax),
        "gterm": sym(MARGIN ** 3 * agmax * m1), "ag2": sym(ag2max),
        "lterm": sym(MARGIN ** 3 * ag2max * m1),
        "sum": sym(MARGIN ** 3 * n * m1 / 2 * max(float(a.sum()), amax)),
        "grad": sym(MARGIN ** 3 * m1 * max(float((a * np.sqrt(g2)).sum()), agmax)),
        "lap": sym(MARGIN ** 3 * m1 * max(float((a * g2).sum()), ag2max))}
    return {"jastrow_u": u, "jastrow_p": p}


def declared_kernels(params: JastrowParameters, images: np.ndarray) -> dict:
    """``{name: KernelSpec}`` of the two Jastrow kernels with their declared ranges."""
    ranges = declared_ranges(params, images)
    variables = {"jastrow_u": K.U_VARIABLES, "jastrow_p": PK.P_VARIABLES}
    return {k: KernelSpec(k, tuple(Variable(v, *ranges[k][v], doc) for v, doc in variables[k]))
            for k in KERNELS}


class JastrowEvaluator:
    """J = sum_{i<j} [u + p] of walkers in ``params.cell`` through the kernels.

    ``precision``: a spec over the kernels ``jastrow_u``, ``jastrow_p``; ``ranges``,
    ``seed``, ``specialise`` as for other systems' kernel sets (``specialise``: fixed formats
    compiled in instead of read at run time; bit-identical)."""

    def __init__(self, params: JastrowParameters, precision="float64", *, ranges=None,
                 seed: int = 0, specialise: bool = False):
        self.params = params
        cell = params.cell
        self.images = candidate_images(params)
        self.kernels = declared_kernels(params, self.images)
        self.ks = KernelSet(self.kernels, precision, ranges=ranges, seed=seed,
                            runtime=not specialise)
        self.log = self.ks.log
        self._lat = lattice3(cell.reduced)
        self._img = np.ascontiguousarray(pad3(self.images).T)  # (3, n_R)
        self._ucoef = np.ascontiguousarray(u_coefficients(params))
        c, big_l = params.c, params.cutoff
        self._upar = np.array([big_l ** 2, 1 / big_l, 1 / big_l ** 2, c, c * (c - 1), 2 * c,
                               cell.dim - 1, 1.0])
        self._gint, self._pcoef = p_coefficients(params)
        self._nmax = int(np.abs(self._gint).max()) if self._gint.size else 0

    def fractional(self, x) -> np.ndarray:
        """Reduced fractional coordinates in [0, 1) of positions (..., dim), padded to 3."""
        return pad3(self.params.cell.wrap_fractional(x, reduced=True))

    def _run(self, name, f, fnew, imove, step, ks):
        ks = self.ks if ks is None else ks
        nw, n = f.shape[0], f.shape[1]
        dt = ks[name].dtype
        out_sum = np.zeros((nw, 2), dt)
        out_grad = np.zeros((nw, n if imove < 0 else 1, 3), dt)
        out_lap = np.zeros((nw, n if imove < 0 else 1), dt)
        cv = ks.context(name, step)
        fw = ks.encode(name, "frac", f, step)
        fn = ks.encode(name, "frac", fnew, step)
        if name == "jastrow_u":
            lat, img, coef, par = ks.constants(name, self._lat, self._img, self._ucoef,
                                               self._upar)
            ks.launch(K.u_kernel, (cv, fw, fn, np.int64(imove), lat, img,
                                   tuple(coef[0].ravel()), tuple(coef[1].ravel()), par,
                                   np.int64(self.params.c), np.int64(self.params.n_up),
                                   out_sum, out_grad, out_lap), name)
        else:
            ks.launch(PK.p_kernel, (cv, fw, fn, np.int64(imove), self._gint,
                                    *ks.constants(name, self._pcoef), np.int64(self._nmax),
                                    self.params.cell.dim == 3, out_sum, out_grad, out_lap),
                      name)
        ks.report(name, cv)
        dim = self.params.cell.dim
        return (ks.decode(name, "sum", out_sum), ks.decode(name, "grad", out_grad)[..., :dim],
                ks.decode(name, "lap", out_lap))

    def evaluate(self, positions, step: int = 0, ks: KernelSet | None = None) -> JastrowValues:
        """J, grad_i J, lap_i J and their u and p parts of walkers ``positions``
        (n_w, N, dim) (bohr)."""
        (us, ug, ul), (ps, pg, pl) = self.terms(KERNELS, positions, step, ks)
        return JastrowValues(us, ug, ul, ps, pg, pl)

    def terms(self, names, positions, step: int = 0, ks: KernelSet | None = None) -> list:
        """``[(J, grad_i J, lap_i J)]`` of each term in ``names`` (of ``jastrow_u``,
        ``jastrow_p``): (n_w,), (n_w, N, dim), (n_w, N), from one reduction of the
        positions."""
        x, _ = check_positions(self.params, positions)
        f = self.fractional(x)
        fnew = np.zeros((f.shape[0], 3))
        out = []
        for name in names:
            s, g, lap = self._run(name, f, fnew, -1, step, ks)
            out.append((s[:, 0], g, lap))
        return out

    def move(self, positions, i: int, new, step: int = 0, ks: KernelSet | None = None,
             names=KERNELS) -> tuple[np.ndarray, np.ndarray]:
        """Electron i of each walker moved to ``new`` (n_w, dim): ``(J(new) - J(old) (n_w,),
        grad_i J at new (n_w, dim))`` of the terms ``names`` (default both) in O(N n_G) work
        per walker."""
        x, _ = check_positions(self.params, positions)
        check_int("electron index i", i, 0)
        if i >= self.params.n_electrons:
            raise FixedQMCError(f"electron index i = {i} must be below N = "
                                f"{self.params.n_electrons}")
        new = np.asarray(new, np.float64)
        if new.shape != (x.shape[0], self.params.cell.dim) or not np.all(np.isfinite(new)):
            raise FixedQMCError(f"new positions must be finite, of shape ({x.shape[0]}, "
                                f"{self.params.cell.dim}), got shape {new.shape}")
        f = self.fractional(x)
        fnew = np.ascontiguousarray(self.fractional(new))
        delta = np.zeros(x.shape[0])
        grad = np.zeros((x.shape[0], self.params.cell.dim))
        for name in names:
            s, g, _ = self._run(name, f, fnew, i, step, ks)
            delta += s[:, 1] - s[:, 0]
            grad += g[:, 0]
        return delta, grad

    def parts(self) -> tuple:
        """The factor ``exp(u + p)`` as one Jastrow part (:class:`JastrowTerms`: both terms
        from one reduction of the positions per call)."""
        return (JastrowTerms(self),)

    def formats(self) -> dict:
        return self.ks.formats()


class JastrowTerms:
    """Terms ``names`` of :class:`JastrowEvaluator` (default both, the whole factor; one of
    them to check it alone) as a Jastrow part (:mod:`fixedqmc.systems.parts`) of a system
    whose positions are (n_w, N, 3) bohr (2D cells: the z components are ignored, the
    gradients' are zero): ``exp(J)``, J the terms' sum over pairs, ``laplacian = "log"``;
    no per-walker state."""

    laplacian = "log"

    def __init__(self, evaluator: JastrowEvaluator, names=KERNELS):
        bad = [n for n in names if n not in KERNELS]
        if bad or not names:
            raise FixedQMCError(f"Jastrow terms {list(names)!r}: allowed {', '.join(KERNELS)}")
        self.evaluator, self.names = evaluator, tuple(names)
        self.dim = evaluator.params.cell.dim

    def evaluate(self, ks, pos, step: int, state=None) -> PartValues:
        terms = self.evaluator.terms(self.names, pos[..., :self.dim], step, ks)
        j, g, lap = (bound_words.add(*t) for t in zip(*terms))  # the terms summed in order
        return PartValues(j, None, pad3(g), lap)

    def propose(self, ks, pos, state, i: int, new, step: int, grad: bool = True) -> PartMove:
        dj, g = self.evaluator.move(pos[..., :self.dim], i, new[:, :self.dim], step, ks,
                                    self.names)
        return PartMove(dj, None, pad3(g) if grad else None)

    def accept(self, ks, state, i: int, mask, move: PartMove) -> None:
        """Nothing to update: the terms keep no state."""

    def recompute(self, ks, pos, step: int, state=None) -> tuple[dict, dict]:
        return {}, {}
