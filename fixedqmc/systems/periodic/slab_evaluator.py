"""The Ewald energy of charges off a 2D-periodic plane (a slab) through the one-source kernels,
at any precision per kernel (seed 000, Eq. 2, 5-6 with the heights kept).

:class:`SlabEwaldEvaluator` runs two named kernels, each with its own precision:

``ewald_real``
    the real-space kernel of :mod:`fixedqmc.systems.periodic.kernels`: the height is its
    third coordinate.  The lattice it reads gets the third row ``(0, 0, L_z)`` and the third
    fractional coordinate is ``(z - z_lo) / L_z`` with ``L_z = 5/2 max(z_hi - z_lo, 1
    bohr)``; the height axis is not periodic (one box of the halo, no shifts), so the
    kernel's ``s`` is ``|rho_ij - R|**2 + z_ij**2``.  The halo is that of the in-plane cell
    (every image with ``s < R_c**2`` has ``|rho_ij - R| < R_c``).
``slab_recip``
    :mod:`fixedqmc.systems.periodic.slab_kernels`: the cross pairs of the reciprocal sum
    (``F(G, z_ij)``, Eq. 5) and the height part of the G = 0 term.

The position-independent parts (``images``, ``self``, the in-plane ``background`` and the
i = j terms ``sum_G w_G sum_j q_j**2`` of the reciprocal sum) are float64, as for
:class:`~fixedqmc.systems.periodic.evaluator.EwaldEvaluator`.  The parts are those of
:func:`~fixedqmc.systems.periodic.ewald_slab.slab_ewald_energy`, the float64 reference.
Energies in hartree, positions in bohr.
"""

from __future__ import annotations

import math

import numpy as np

from fixedqmc.errors import FixedQMCError
from fixedqmc.numerics.kernel import symmetric_range as sym
from fixedqmc.numerics.kernel_set import KernelSet
from fixedqmc.systems.periodic import kernels as K
from fixedqmc.systems.periodic import slab_kernels as SK
from fixedqmc.systems.periodic.cell import Cell
from fixedqmc.systems.periodic.erfc_form import WIDE_FORM
from fixedqmc.systems.periodic.evaluator import (EwaldEvaluator, kernel_specs, lattice3,
                                                 real_ranges)
from fixedqmc.systems.periodic.ewald import EwaldParameters, EwaldParts, check_charges
from fixedqmc.systems.periodic.ewald_slab import check_slab_cell, check_slab_walkers

#: L_z over the declared height span (> 2: height differences stay below half a turn).
HEIGHT_AXIS = 2.5
#: Smallest height span (bohr) the formats are declared for (charges all in one plane).
MIN_SPAN = 1.0


def _check_heights(heights) -> tuple[float, float]:
    try:
        lo, hi = (float(h) for h in heights)
    except (TypeError, ValueError):
        raise FixedQMCError(f"heights must be a pair (z_lo, z_hi) of numbers (bohr): the "
                            f"band of heights the charges stay in; got {heights!r}") from None
    if not (math.isfinite(lo) and math.isfinite(hi) and lo <= hi):
        raise FixedQMCError(f"heights must be finite with z_lo <= z_hi (bohr), got "
                            f"({lo}, {hi})")
    return lo, hi


def shells(params: EwaldParameters) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The half set of G vectors grouped by length: ``(gint, start, shell)``, ``gint``
    (n_G, 2) int64 integer coordinates in shell order, shell s holding rows ``start[s]:
    start[s + 1]``, ``shell`` (n_shells, 4) ``(a, -a**2, -G, (2 pi / A) / G)`` with ``a = G
    / 2 gamma`` (G in 1/bohr: lengths equal to 1e-12 relative share a shell)."""
    gabs = np.linalg.norm(params.gvectors, axis=1)
    order = np.argsort(gabs, kind="stable")
    g = gabs[order]
    new = np.concatenate([[True], np.diff(g) > 1e-12 * g[1:]])
    first = np.flatnonzero(new)
    start = np.append(first, g.size).astype(np.int64)
    gs = g[first]
    a = gs / (2 * params.gamma)
    shell = np.stack([a, -a * a, -gs, 2 * np.pi / params.cell.volume / gs], axis=1)
    return np.ascontiguousarray(params.gints[order], np.int64), start, shell


class SlabEwaldEvaluator(EwaldEvaluator):
    """Ewald energies of walkers of ``charges`` (N,) at heights within ``heights`` = (z_lo,
    z_hi) (bohr) off the plane of a 2D ``cell``, through the kernels (module docstring).

    ``params``, ``precision`` (a spec over ``ewald_real`` and ``slab_recip``), ``accuracy``,
    ``ranges``, ``seed``, ``specialise`` as for
    :class:`~fixedqmc.systems.periodic.evaluator.EwaldEvaluator`.  The declared ranges (so
    the widths of ``fixed:W`` formats) follow from the height band; positions outside it
    raise :class:`FixedQMCError`."""

    def __init__(self, cell: Cell, charges, heights, params: EwaldParameters | None = None,
                 precision="float64", *, accuracy: float = 1e-12, ranges=None, seed: int = 0,
                 specialise: bool = False):
        self.heights = _check_heights(heights)
        self._span = max(self.heights[1] - self.heights[0], MIN_SPAN)
        self._lz = HEIGHT_AXIS * self._span
        super().__init__(check_slab_cell(cell), charges, params, precision, accuracy=accuracy,
                         ranges=ranges, seed=seed, specialise=specialise)
        p = self.params
        self._sgint, self._start, self._shell = shells(p)
        self._snmax = int(np.abs(self._sgint).max(initial=0))
        self._spar = np.array([self._lz, p.gamma, WIDE_FORM.x_max, WIDE_FORM.p, 1.0,
                               WIDE_FORM.t_a, WIDE_FORM.t_b, 2.0,
                               1 / (p.gamma * math.sqrt(math.pi)), -2 * np.pi / cell.volume])
        self._scoef = np.ascontiguousarray(WIDE_FORM.coefficients)
        self._self_recip = float(np.sum(p.weights)) * float(np.sum(self.charges ** 2))
        self._pairs = np.ascontiguousarray(np.triu_indices(self.charges.size, 1), np.int64)

    def _lattice(self) -> np.ndarray:
        lat = lattice3(self.cell.reduced)
        lat[2, 2] = self._lz
        return lat

    def _declare(self) -> dict:
        ranges = {"ewald_real": real_ranges(self.params, self.charges, self._lat, self._span),
                  "slab_recip": self._slab_ranges()}
        return kernel_specs(ranges, {"ewald_real": K.REAL_VARIABLES,
                                     "slab_recip": SK.SLAB_RECIP_VARIABLES})

    def _slab_ranges(self) -> dict:
        p, q = self.params, self.charges
        span, g = self._span, p.gamma
        qmax, qabs = float(np.abs(q).max()), float(np.abs(q).sum())
        _, start, shell = shells(p)
        counts = np.diff(start)
        tz, a_max, g_max = g * span, float(shell[:, 0].max()), float(-shell[:, 2].min())
        fw = 2 * shell[:, 3]                            # bound on (2 pi / A) F / G per shell
        pair = float(np.sum(fw * counts))
        c0 = 1 / (g * math.sqrt(math.pi))
        hz = max(span, c0)
        w0 = 2 * math.pi / self.cell.volume
        f = WIDE_FORM
        coef_abs = float(np.abs(f.coefficients).sum())
        return {
            "cos": (-1, 1), "sin": (-1, 1), "pp": (-1, 1), "pw": (-1, 1), "zz": (-1, 1),
            "frac": (0, 1), "lz": (0, self._lz), "dfz": (-0.5, 0.5), "dz": sym(span),
            "absz": (0, span), "gamma": (0, g), "tz": (0, tz), "tz2": (0, tz * tz),
            "a": (0, a_max), "apt": (0, a_max + tz), "amt": sym(max(a_max, tz)),
            "absd": (0, max(a_max, tz)), "xmax": (0, f.x_max), "x": (0, f.x_max),
            "p": (0, f.p), "px": (0, f.p * f.x_max), "one": (0, 1),
            "den": (0, 1 + f.p * f.x_max), "t": (0, 1), "ta": (0, f.t_a), "tat": (0, f.t_a),
            "tb": sym(f.t_b), "u": (-1, 1), "coef": sym(np.abs(f.coefficients).max()),
            "hu": sym(coef_abs), "h": sym(coef_abs), "hs": sym(2 * coef_abs),
            "neg_a2": (-a_max ** 2, 0), "darg": (-(a_max ** 2 + tz * tz), 0), "damp": (0, 1),
            # f also holds f + eg2 where a >= tz (formed, then not selected): up to 4
            "f": sym(2 * coef_abs + 2), "neg_g": (-g_max, 0), "garg": (-g_max * span, 0),
            "eg": (0, 1), "two": (0, 2), "eg2": (0, 2), "cp": (-1, 1), "cc": (-1, 1),
            "csum": sym(counts.max()), "wg": (0, float(shell[:, 3].max())),
            "fw": sym(fw.max()), "fterm": sym(float(np.max(fw * counts))),
            "pair": sym(pair), "qq": sym(qmax ** 2), "term": sym(qmax ** 2 * pair),
            "sum": sym(qabs ** 2 / 2 * pair), "narg": (-tz * tz, 0), "gz": (0, 1),
            "erfcz": (0, 1), "erfz": sym(1), "zerf": sym(span), "gm1": (-1, 0),
            "c0": (0, c0), "hg": (-c0, 0), "hz": sym(hz), "hterm": sym(qmax ** 2 * hz),
            "hsum": sym(qabs ** 2 / 2 * hz), "neg_w0": (-w0, 0),
            "height": sym(w0 * qabs ** 2 / 2 * hz)}

    def fractional(self, positions) -> np.ndarray:
        """(n_w, N, 3): the in-plane reduced fractional coordinates in [0, 1), then ``(z -
        z_lo) / L_z`` in [0, 1/2)."""
        x, _ = check_slab_walkers(positions)
        check_charges(self.charges, x.shape[1])
        lo, hi = self.heights
        z = x[..., 2]
        if np.any(z < lo) or np.any(z > hi):
            raise FixedQMCError(f"positions: heights from {z.min():.6g} to {z.max():.6g} bohr "
                                f"leave the band heights = ({lo:.6g}, {hi:.6g}) this "
                                "evaluator was declared for; make one with a wider band")
        f = np.empty(x.shape)
        f[..., :2] = self.cell.wrap_fractional(x[..., :2], reduced=True)
        f[..., 2] = (z - lo) / self._lz
        return f

    def recip(self, positions, step: int = 0, ks: KernelSet | None = None):
        """``(pairs, height)``, each (n_w,) (hartree): the cross pairs of the reciprocal sum
        and the height part of the background, by the ``slab_recip`` kernel."""
        ks = self.ks if ks is None else ks
        f = self.fractional(positions)
        cv = ks.context("slab_recip", step)
        out = np.zeros((f.shape[0], 2), ks["slab_recip"].dtype)
        shell, q, par, coef = ks.constants("slab_recip", self._shell, self.charges,
                                           self._spar, self._scoef)
        args = (cv, ks.encode("slab_recip", "frac", f, step), self._pairs, self._sgint,
                self._start, shell, q, par, coef, np.int64(self._snmax), out)
        ks.launch(SK.slab_recip_kernel, args, "slab_recip")
        ks.report("slab_recip", cv)
        return (ks.decode("slab_recip", "sum", out[:, 0]),
                ks.decode("slab_recip", "height", out[:, 1]))

    def energy(self, positions, step: int = 0) -> EwaldParts:
        """The Ewald energy by parts (:class:`EwaldParts` of (n_w,) arrays, hartree) of
        walkers ``positions`` (n_w, N, 3) (bohr; x, y in the cell's frame, z the height)."""
        real = self.real(positions, step)
        pairs, height = self.recip(positions, step)
        nw = real.shape[0]
        c = self.constants
        return EwaldParts(real, np.full(nw, c["images"]), self._self_recip + pairs,
                          np.full(nw, c["self"]), c["background"] + height)
