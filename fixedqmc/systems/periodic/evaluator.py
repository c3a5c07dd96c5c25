"""The Ewald energy through the one-source kernels, at any precision per kernel.

:class:`EwaldEvaluator` declares the kernels ``ewald_real`` and ``ewald_recip`` of
:mod:`fixedqmc.systems.periodic.kernels` (every variable with a range), resolves a
precision spec over them (``ewald_real=fixed:40,ewald_recip=float32``, ...) with a
:class:`~fixedqmc.numerics.kernel_set.KernelSet`, encodes the walkers' reduced fractional
coordinates, runs the kernels, decodes their sums and adds the position-independent parts
(``images``, ``self``, ``background``, float64) of :mod:`fixedqmc.systems.periodic.ewald`.
Energies in hartree, positions in bohr.
"""

from __future__ import annotations

import math

import numpy as np

from fixedqmc.numerics.kernel import KernelSpec, Variable, symmetric_range as sym
from fixedqmc.numerics.kernel_set import KernelSet
from fixedqmc.systems.periodic import erfc_form as F
from fixedqmc.systems.periodic import kernels as K
from fixedqmc.systems.periodic.cell import Cell
from fixedqmc.systems.periodic.halo import halo_geometry
from fixedqmc.systems.periodic.ewald import (EwaldParameters, EwaldParts, check_charges, check_walkers,
                                             constant_parts, resolve_parameters)
from fixedqmc.errors import FixedQMCError

#: Closest pair distance (bohr) the declared ranges allow for (1 / r up to 1e3).
R_MIN = 1e-3


def pad3(a: np.ndarray) -> np.ndarray:
    """(..., dim) -> (..., 3), zeros appended (2D cells); always a new writable C array (a
    read-only kernel argument would be another compiled type); float64, or complex128 for
    a bound run's words (:mod:`~fixedqmc.numerics.bound_words`)."""
    a = np.asarray(a, np.complex128 if np.iscomplexobj(a) else np.float64)
    if a.shape[-1] == 3:
        return np.array(a, order="C")
    out = np.zeros(a.shape[:-1] + (3,), a.dtype)
    out[..., :a.shape[-1]] = a
    return out


def lattice3(lattice: np.ndarray) -> np.ndarray:
    """A (dim, dim) lattice (rows) as the (3, 3) array the kernels read: a 2D cell gets a
    zero third row and column (the kernels index all three rows, with the third fractional
    coordinate zero)."""
    out = np.zeros((3, 3))
    lat = np.asarray(lattice, np.float64)
    out[:lat.shape[0], :lat.shape[1]] = lat
    return out


def real_ranges(params: EwaldParameters, charges, lat: np.ndarray | None = None,
                height: float = 0.0) -> dict:
    """``{variable: (lo, hi)}`` of the ``ewald_real`` kernel: ``lat`` the (3, 3) lattice the
    kernel reads (default :func:`lattice3` of the reduced cell), ``height`` the largest
    height difference of two charges off a 2D plane (bohr; 0 in 3D and in the plane)."""
    cell, q = params.cell, np.asarray(charges, np.float64)
    lat = lattice3(cell.reduced) if lat is None else lat
    halo = halo_geometry(cell.reduced, params.real_cutoff, q.size)
    absl = np.abs(lat)
    pos_max = float(absl.sum(axis=0).max())               # |pos_c| <= sum_k |lattice[k, c]|
    img_max = float((halo.shifts[:, None] * absl).sum(axis=0).max())
    # a tested entry's fractional coordinates differ from those of pos_i by at most 1/nb +
    # reach per periodic axis; off the plane, by the height difference
    span = np.where(halo.shifts > 0, 1 / halo.boxes + halo.reach, 0.0)
    de_max = max(float((span[:, None] * absl).sum(axis=0).max()), height)
    qmax, qabs = float(np.abs(q).max()), float(np.abs(q).sum())
    g = params.gamma
    if cell.dim == 3:
        a = (3 * cell.volume / (4 * math.pi * q.size)) ** (1 / 3)
        mean = math.pi / (cell.volume * g * g)
    else:
        a = math.sqrt(cell.volume / (math.pi * q.size))
        mean = 2 * math.sqrt(math.pi) / (cell.volume * g)
    coef_abs = float(np.abs(F.COEFFICIENTS).sum())
    x_max = g * params.real_cutoff
    return {
        "frac": (0, 1), "lattice": sym(absl.max()), "pterm": sym(absl.max()),
        "pos": sym(pos_max), "image": sym(img_max), "ipos": sym(pos_max + img_max),
        "de": sym(de_max), "de2": (0, de_max ** 2),
        "s": (0, 3 * de_max ** 2), "cut2": (0, params.real_cutoff ** 2),
        "inv_r": (0, 1 / R_MIN), "r": (0, params.real_cutoff), "gamma": (0, g),
        "x": (0, x_max), "p": (0, F.P), "px": (0, F.P * x_max), "one": (0, 1),
        "den": (0, 1 + F.P * x_max), "t": (0, 1), "ta": (0, F.T_A), "tat": (0, F.T_A),
        "tb": sym(F.T_B), "u": (-1, 1), "coef": sym(np.abs(F.COEFFICIENTS).max()),
        "hu": sym(coef_abs), "h": sym(coef_abs), "neg_g2": (-g * g, 0),
        "arg": (-x_max ** 2, 0), "gauss": (0, 1), "erfc": (0, 1), "phi": (0, 1 / R_MIN),
        "qq": sym(qmax ** 2), "term": sym(qmax ** 2 / R_MIN),
        "sum": sym(qabs ** 2 * (mean + 10 / a))}


def declared_ranges(params: EwaldParameters, charges) -> dict:
    """``{kernel: {variable: (lo, hi)}}``: ranges of every kernel variable (used to size
    width-only fixed formats ``fixed:W``; a range profile may replace them)."""
    q = np.asarray(charges, np.float64)
    qmax, qabs = float(np.abs(q).max()), float(np.abs(q).sum())
    wmax = float(params.weights.max())
    recip = {
        "frac": (0, 1), "cos": (-1, 1), "sin": (-1, 1), "pp": (-1, 1),
        "pw": (-1, 1), "zz": (-1, 1), "q": sym(qmax), "qcos": sym(qmax),
        "qsin": sym(qmax), "sre": sym(qabs), "sim": sym(qabs), "sq": (0, qabs ** 2),
        "mag": (0, qabs ** 2), "weight": (0, wmax), "wterm": (0, wmax * qabs ** 2),
        "sum": (0, float(params.weights.sum()) * qabs ** 2)}
    return {"ewald_real": real_ranges(params, q), "ewald_recip": recip}


def kernel_specs(ranges: dict, variables: dict) -> dict:
    """``{name: KernelSpec}`` of kernels with ``variables`` ``{name: ((variable, doc),
    ...)}`` and ``ranges`` ``{name: {variable: (lo, hi)}}``."""
    return {k: KernelSpec(k, tuple(Variable(v, *ranges[k][v], doc) for v, doc in variables[k]))
            for k in variables}


def declared_kernels(params: EwaldParameters, charges) -> dict:
    """``{name: KernelSpec}`` of the two Ewald kernels with their declared ranges."""
    return kernel_specs(declared_ranges(params, charges),
                        {"ewald_real": K.REAL_VARIABLES, "ewald_recip": K.RECIP_VARIABLES})


class EwaldEvaluator:
    """Ewald energies of walkers of ``charges`` (N,) in ``cell`` through the kernels.

    ``params``: :class:`EwaldParameters` made for this ``cell`` (default
    :func:`~fixedqmc.systems.periodic.ewald.ewald_parameters` at ``accuracy``; see
    :func:`~fixedqmc.systems.periodic.ewald.resolve_parameters`); ``precision``: a spec
    over the kernels ``ewald_real``, ``ewald_recip``; ``ranges``, ``seed``, ``specialise``
    as for other systems' kernel sets (``specialise``: fixed formats compiled in instead of
    read at run time; bit-identical)."""

    def __init__(self, cell: Cell, charges, params: EwaldParameters | None = None,
                 precision="float64", *, accuracy: float = 1e-12, ranges=None, seed: int = 0,
                 specialise: bool = False):
        self.cell = cell
        self.charges = check_charges(charges)
        self.params = resolve_parameters(cell, self.charges, accuracy, params)
        if self.params.gamma * self.params.real_cutoff > F.X_MAX:
            raise FixedQMCError(
                f"gamma * real_cutoff = {self.params.gamma * self.params.real_cutoff:.4g} "
                f"exceeds {F.X_MAX}, the range of the kernels' erfc form; lower real_cutoff "
                "or the accuracy")
        self._lat = self._lattice()
        self.kernels = self._declare()
        self.ks = KernelSet(self.kernels, precision, ranges=ranges, seed=seed,
                            runtime=not specialise)
        self.log = self.ks.log
        self.halo = halo_geometry(cell.reduced, self.params.real_cutoff, self.charges.size)
        self._gint = pad3(self.params.gints).astype(np.int64)
        self._nmax = int(np.abs(self._gint).max(initial=0))
        self._weights = np.ascontiguousarray(self.params.weights, np.float64)
        p = self.params
        self._par = np.array([p.real_cutoff ** 2, p.gamma, F.P, 1.0, F.T_A, F.T_B,
                              -p.gamma ** 2])
        self._coef = np.ascontiguousarray(F.COEFFICIENTS)
        self.constants = constant_parts(p, self.charges)

    def _lattice(self) -> np.ndarray:
        """The (3, 3) lattice the real-space kernel reads."""
        return lattice3(self.cell.reduced)

    def _declare(self) -> dict:
        """``{name: KernelSpec}`` of the evaluator's kernels."""
        return declared_kernels(self.params, self.charges)

    def fractional(self, positions) -> np.ndarray:
        """Reduced fractional coordinates in [0, 1), (n_w, N, 3) (2D: third column 0)."""
        x, _ = check_walkers(self.cell, positions)
        check_charges(self.charges, x.shape[1])
        return pad3(self.cell.wrap_fractional(x, reduced=True))

    def real(self, positions, step: int = 0, ks: KernelSet | None = None) -> np.ndarray:
        """The real-space pair sum (n_w,) (hartree) by the ``ewald_real`` kernel."""
        ks = self.ks if ks is None else ks
        f = self.fractional(positions)
        cv = ks.context("ewald_real", step)
        out = np.zeros(f.shape[0], ks["ewald_real"].dtype)
        lat, q, par, coef = ks.constants("ewald_real", self._lat, self.charges, self._par,
                                         self._coef)
        h = self.halo
        args = (cv, ks.encode("ewald_real", "frac", f, step), f, lat, h.boxes, h.reach,
                h.shifts, h.ball, np.int64(f.shape[1] * h.per_charge), q, par, coef, out)
        ks.launch(K.real_kernel, args, "ewald_real")
        ks.report("ewald_real", cv)
        return ks.decode("ewald_real", "sum", out)

    def recip(self, positions, step: int = 0, ks: KernelSet | None = None):
        """The reciprocal-space sum (n_w,) (hartree) and S(G) (n_w, n_G) complex by the
        ``ewald_recip`` kernel."""
        ks = self.ks if ks is None else ks
        f = self.fractional(positions)
        cv = ks.context("ewald_recip", step)
        dt = ks["ewald_recip"].dtype
        out = np.zeros(f.shape[0], dt)
        out_s = np.zeros((f.shape[0], self._gint.shape[0], 2), dt)
        q, weights = ks.constants("ewald_recip", self.charges, self._weights)
        args = (cv, ks.encode("ewald_recip", "frac", f, step), self._gint, q, weights,
                np.int64(self._nmax), self.cell.dim == 3, out, out_s)
        ks.launch(K.recip_kernel, args, "ewald_recip")
        ks.report("ewald_recip", cv)
        s = ks.decode("ewald_recip", "sre", out_s[..., 0]) + 1j * ks.decode(
            "ewald_recip", "sim", out_s[..., 1])
        return ks.decode("ewald_recip", "sum", out), s

    def energy(self, positions, step: int = 0) -> EwaldParts:
        """The Ewald energy by parts (:class:`EwaldParts` of (n_w,) arrays, hartree) of
        walkers ``positions`` (n_w, N, dim) (bohr)."""
        real = self.real(positions, step)
        recip, _ = self.recip(positions, step)
        nw = real.shape[0]
        c = self.constants
        return EwaldParts(real, np.full(nw, c["images"]), recip, np.full(nw, c["self"]),
                          np.full(nw, c["background"]))

    def formats(self) -> dict:
        return self.ks.formats()
