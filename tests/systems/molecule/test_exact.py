"""The molecule's fixed-point orbital pipeline against an independent exact oracle.

The oracle re-does, on Python Fractions (``tests/reference.py``), the documented operation
sequence of :mod:`fixedqmc.systems.molecule.kernels` for s shells (H2 in STO-6G): the
distance kernel (``d = x - A``, ``d2``, the accumulator ``r2``), for each primitive the exp
kernel (``arg = neg_alpha r2``, the LUT exponential of ``reference.lut_exp``), the
contraction (terms and the accumulators R, 2R', 4R''; AO value, gradient, Laplacian with
``Q = 3 (2R') + r2 (4R'')``), the MO and derivative accumulators; every ``convert`` rounds
once into the receiving variable; screening on the float64 positions.  Every value and
overflow count must equal the compiled kernel's, bit for bit.
"""

from fractions import Fraction

import numpy as np
import pytest
from numba import njit

import reference as R
from fixedqmc.numerics import transcendental as T
from fixedqmc.numerics.kernel import KernelSpec, Variable, acc_array, at, chunk, quiet
from fixedqmc.numerics.kernel_set import KernelSet, step_seed
from fixedqmc.systems.molecule import kernels as K
from fixedqmc.systems.molecule.geometry import build_mole
from fixedqmc.systems.molecule.scf import mean_field
from fixedqmc.systems.molecule.system import ORBITAL_KERNELS, Molecule

# One worker runs this module and test_system.py (make test: --dist loadgroup): both
# compile the molecule's fixed-point kernels.
pytestmark = pytest.mark.xdist_group("molecule_system")

_RAW = T._EXP_TABLES.tolist()
EXP_TABLES = (_RAW[:4096], _RAW[4096:6144], _RAW[6144:])
LN2 = int(np.uint64(T._LN2_WORD.view(np.uint64)))


class Ref(R.KernelOracle):
    """The oracle's arithmetic (:class:`reference.KernelOracle`) and this kernel's
    transcendental operation."""

    def exp(self, x, v):
        fmt, rnd, ovf = self.mode[v]
        raw, over = R.lut_exp(x, EXP_TABLES, T._LOG2E_RAW, LN2, fmt, rnd, ovf, self._bits(v))
        self._count(v, over)
        return R.value(raw, fmt)


def oracle_point(refs, basis, pf, x, cm, cg):
    """MO values (n_mo,) and derivatives (n_mo, 4) at one point, s shells only."""
    rd, rx, ra, rm, rg = refs
    aos, daos = [], []
    for a, A in enumerate(basis.coords):
        r2f = float(np.sum((pf - A) ** 2))
        shells = [s for s in range(len(basis.shell_l)) if basis.shell_atom[s] == a]
        cut = K.CUT / min(basis.exps[basis.shell_prim[s]:basis.shell_prim[s + 1]].min()
                          for s in shells)
        if r2f > cut:
            continue
        d = [rd.r(x[c] - rd.r(A[c], "nucleus"), "d") for c in range(3)]
        r2 = rd.acc([rd.r(dc * dc, "d2") for dc in d], "r2")
        r2x, r2a = rx.r(r2, "r2"), ra.r(r2, "r2")
        dc = [ra.r(t, "d") for t in d]
        for s in shells:
            R_, dR, ddR, used = [], [], [], False
            for p in range(basis.shell_prim[s], basis.shell_prim[s + 1]):
                al, c = float(basis.exps[p]), float(basis.coeffs[p])
                if al * r2f > K.CUT:
                    continue
                used = True
                ev = rx.exp(rx.r(rx.r(-al, "neg_alpha") * r2x, "arg"), "value")
                v = ra.r(ev, "value")
                R_.append(ra.r(ra.r(c, "coeff") * v, "term"))
                dR.append(ra.r(ra.r(-2.0 * al * c, "dcoeff") * v, "dterm"))
                ddR.append(ra.r(ra.r(4.0 * al * al * c, "ddcoeff") * v, "ddterm"))
            if not used:
                continue
            Rv, dRv, ddRv = ra.acc(R_, "radial"), ra.acc(dR, "dradial"), ra.acc(ddR, "ddradial")
            pw = ra.r(1, "pow")
            P = ra.r(ra.r(pw * pw, "ang") * pw, "ang")
            ao = ra.r(P * Rv, "ao")
            grad = [ra.acc([ra.r(ra.r(P * dc[c], "pd") * dRv, "gterm")], "grad")
                    for c in range(3)]
            Q = ra.r(ra.r(ra.r(3, "int") * dRv, "qa") + ra.r(r2a * ddRv, "qb"), "radlap")
            lap = ra.acc([ra.r(Rv * ra.acc([], "lap_p"), "lterm"), ra.r(P * Q, "lterm")],
                         "lap")
            aos.append((basis.shell_ao[s], ao))
            daos.append(grad + [lap])
    aom = [rm.r(ao, "ao") for _, ao in aos]
    daom = [[rg.r(t, "dao") for t in d] for d in daos]
    idx = [i for i, _ in aos]
    vals, ders = [], []
    for k in range(cm.shape[0]):
        vals.append(rm.acc([rm.r(cm[k, i] * a, "term") for i, a in zip(idx, aom)], "value"))
        ders.append([rg.acc([rg.r(cg[k, i] * d[c], "term") for i, d in zip(idx, daom)],
                            "grad" if c < 3 else "lap") for c in range(4)])
    return vals, ders


@pytest.mark.parametrize("spec", [
    pytest.param("fixed:28:stochastic:wrap", marks=pytest.mark.heavy),
    pytest.param("fixed:34", marks=pytest.mark.slow),
    pytest.param("fixed:30:floor", marks=pytest.mark.slow)])
def test_orbital_pipeline_is_bit_exact(spec):
    mol = build_mole("H 0 0 0; H 0 0 1.4", basis="sto-6g")
    mf = mean_field(mol, "rhf")
    m64 = Molecule(mol, mf.mo_up, mf.mo_down)
    pts = np.random.default_rng(5).normal(size=(6, 3)) * 1.2 + [0, 0, 0.7]
    pts[5] = [0.0, 0.0, 30.0]  # far away: every primitive screened out
    prof = m64.profile(m64.initial_positions(20, np.random.default_rng(1)))
    ranges = {k: {v: st[:2] for v, st in d.items()} for k, d in prof.items()}
    ranges["distance"]["x"] = (-31.0, 31.0)  # the far point is an input, not an overflow
    seed, step = 7, 3
    m = Molecule(mol, mf.mo_up, mf.mo_down, spec, ranges=ranges, seed=seed)
    vals, ders = m._orbitals(m.ks, pts, 0, True, step)
    s = step_seed(seed, step)
    refs = [Ref(m.ks[k], s) for k in ORBITAL_KERNELS]
    enc = lambda k, v, a: m.ks.decode(k, v, m.ks.encode(k, v, a, step))  # noqa: E731
    x = enc("distance", "x", pts)
    cm, cg = enc("orbitals", "coeff", m.mo[0]), enc("derivatives", "coeff", m.mo[0])
    to_q = lambda a: np.vectorize(Fraction, otypes=[object])(a)  # noqa: E731
    for p in range(len(pts)):
        for ref in refs:
            ref.p = p
        v, d = oracle_point(refs, m.basis, pts[p], to_q(x[p]), to_q(cm), to_q(cg))
        assert [Fraction(t) for t in vals[p]] == v, p
        assert [[Fraction(t) for t in row] for row in ders[p]] == d, p
    expect = {}
    for ref in refs:
        expect.update(ref.events)
    got = {k: n for k, n in m.log.events.items() if n and k.split(".")[0] in ORBITAL_KERNELS}
    assert got == expect


@njit
def _mo_stage(ca, cm_ctx, cg_ctx, n_active, active, ao, dao, cm, cg, out_v, out_d):
    """The MO stage of the orbital kernel (:func:`kernels._point_mos`) at one point."""
    ea, em, eg = at(chunk(ca, 0), 0), at(chunk(cm_ctx, 0), 0), at(chunk(cg_ctx, 0), 0)
    n_mo = cm.shape[1]
    K._point_mos(ea, em, eg, True, n_active, active, ao, dao, cm, cg,
                 np.empty(cm.shape[0], cm.dtype), np.empty((cg.shape[0], 4), cg.dtype),
                 acc_array(em, n_mo, K.M_VALUE), acc_array(eg, 4 * n_mo, K.G_GRAD),
                 acc_array(quiet(em), n_mo, K.M_VALUE),
                 acc_array(quiet(eg), 4 * n_mo, K.G_GRAD), out_v, out_d)


@pytest.mark.heavy
def test_mo_sums_with_formats_compiled_in_equal_run_time_formats():
    """With formats compiled in, the MO values and derivatives run a quiet pass first (40-bit
    words: split products) and recount where it overflowed: the same words and events as
    run-time formats (checked against the exact oracle above).  The value ranges are
    narrow, so some sums overflow."""
    rng = np.random.default_rng(3)
    n_cart, n_mo, n_act = 12, 5, 9
    narrow = {("orbitals", "value"), ("derivatives", "grad"), ("derivatives", "lap")}
    specs = {name: KernelSpec(name, tuple(
        Variable(v, -0.25, 0.25) if (name, v) in narrow else Variable(v, -8.0, 8.0)
        for v, _ in variables)) for name, variables in (
            ("contraction", K.CONTRACTION_VARIABLES), ("orbitals", K.ORBITALS_VARIABLES),
            ("derivatives", K.DERIVATIVES_VARIABLES))}
    ao, dao = rng.uniform(-1, 1, n_cart), rng.uniform(-1, 1, (n_cart, 4))
    coeff = rng.uniform(-0.5, 0.5, (n_cart, n_mo))
    active = rng.permutation(n_cart)[:n_act].astype(np.int64)
    results = []
    for runtime in (True, False):
        ks = KernelSet(specs, "fixed:40:stochastic", seed=4, runtime=runtime)
        ctxs = [ks.context(k, 2) for k in ("contraction", "orbitals", "derivatives")]
        daw = ks.encode("contraction", "grad", dao, 2)
        daw[:, 3] = ks.encode("contraction", "lap", dao[:, 3], 2)
        out_v = np.zeros(n_mo, np.int64)
        out_d = np.zeros((n_mo, 4), np.int64)
        _mo_stage(*ctxs, n_act, active, ks.encode("contraction", "ao", ao, 2), daw,
                  ks.encode("orbitals", "coeff", coeff, 2),
                  ks.encode("derivatives", "coeff", coeff, 2), out_v, out_d)
        events = {k: ks.report(k, c) for k, c in zip(("orbitals", "derivatives"), ctxs[1:])}
        results.append((out_v, out_d, events))
    (v0, d0, e0), (v1, d1, e1) = results
    assert np.array_equal(v0, v1) and np.array_equal(d0, d1)
    assert e0 == e1, (e0, e1)
    assert e0["orbitals"]["value"] > 0 and e0["derivatives"]["grad"] > 0, e0
