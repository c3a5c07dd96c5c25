"""The fixed-point ``ewald_recip`` kernel against an independent exact oracle.

The oracle re-does, on Python Fractions (``tests/reference.py``), the documented operation
sequence of the reciprocal-space kernel of :mod:`fixedqmc.systems.periodic.kernels` for a
tiny input (3 charges in a skewed cell, 3 G vectors, 2 walkers): per G the integer
coordinates ``gint`` (const), per charge ``nf = gint_k frac_k`` and the accumulator
``phase``, ``q`` (const), ``cos``/``sin`` = the kernel cosine of the 64-bit turn of the
phase (``reference.cos_turn64``; sine as the cosine a quarter turn earlier), ``qcos``,
``qsin`` into the accumulators ``sre``, ``sim``; then ``sq``, ``mag``, ``weight`` (const),
``wterm`` into ``sum``.  An accumulator rounds each term once into its variable, adds
exactly and rounds (overflow-handles) the total once.  Every word and every overflow count
must equal the compiled kernel's, bit for bit (narrow declared ranges force overflows).
"""

import numpy as np
import pytest

import reference as R
from fixedqmc.numerics import transcendental as T
from fixedqmc.numerics.kernel_set import step_seed
from fixedqmc.systems.periodic import kernels as K
from fixedqmc.systems.periodic.cell import Cell
from fixedqmc.systems.periodic.evaluator import EwaldEvaluator, pad3
from fixedqmc.systems.periodic.ewald import ewald_parameters

SKEWED = [[3.0, 0.0, 0.0], [1.0, 2.8, 0.0], [0.5, 0.7, 3.2]]
SIN_TABLE = T._SIN_TABLE.tolist()
TWO_PI_60 = int(T._TWO_PI_60)


class Ref(R.KernelOracle):
    """The oracle's arithmetic (:class:`reference.KernelOracle`) and this kernel's
    transcendental operation."""

    def cos_turns(self, x, v, quarter=0):
        fmt, rnd, ovf = self.mode[v]
        t = R.turn_of(x) - quarter * (1 << 62)
        raw, over = R.cos_turn64(t, SIN_TABLE, TWO_PI_60, fmt, rnd, ovf, self._bits(v))
        self._count(v, over)
        return R.value(raw, fmt)


def oracle_walker(ref, frac, gint, q, weight):
    """(sum, [(Re S, Im S) per G]) of one walker: frac (N, 3) Fractions."""
    wterms, s = [], []
    for g in range(len(gint)):
        n = [ref.r(int(gint[g][k]), "gint") for k in range(3)]
        cre, cim = [], []
        for j in range(len(q)):
            ph = ref.acc([ref.r(n[k] * frac[j][k], "nf") for k in range(3)], "phase")
            qj = ref.r(float(q[j]), "q")
            cre.append(ref.r(qj * ref.cos_turns(ph, "cos"), "qcos"))
            cim.append(ref.r(qj * ref.cos_turns(ph, "sin", quarter=1), "qsin"))
        re, im = ref.acc(cre, "sre"), ref.acc(cim, "sim")
        s.append((re, im))
        mag = ref.r(ref.r(re * re, "sq") + ref.r(im * im, "sq"), "mag")
        wterms.append(ref.r(ref.r(float(weight[g]), "weight") * mag, "wterm"))
    return ref.acc(wterms, "sum"), s


@pytest.mark.parametrize("spec, narrow", [
    ("fixed:24", False),
    ("fixed:20:half_even:wrap", True),
    pytest.param("fixed:28:stochastic:saturate", True, marks=pytest.mark.slow)])
def test_ewald_recip_is_bit_exact(spec, narrow):
    cell = Cell(SKEWED)
    q = np.array([1.0, -1.0, 2.0])
    params = ewald_parameters(cell, q, 1e-6)
    ranges = None
    if narrow:  # too narrow on purpose: mag and sum overflow for some G and walkers
        ranges = {"ewald_recip": {"mag": (0.0, 1.5), "sum": (0.0, 0.02)}}
    seed, step = 7, 3
    ev = EwaldEvaluator(cell, q, params, spec, ranges=ranges, seed=seed)
    ks = ev.ks
    x = np.random.default_rng(4).normal(scale=2.0, size=(2, 3, 3))
    gint = np.ascontiguousarray(pad3(params.gints[:3].astype(np.float64)))
    weight = np.ascontiguousarray(params.weights[:3])
    fw = ks.encode("ewald_recip", "frac", ev.fractional(x), step)
    cv = ks.context("ewald_recip", step)
    out = np.zeros(2, np.int64)
    out_s = np.zeros((2, 3, 2), np.int64)
    K.recip_kernel(cv, fw, gint, q, weight, out, out_s)
    ks.report("ewald_recip", cv)

    ref = Ref(ks["ewald_recip"], step_seed(seed, step))
    fmt = ks["ewald_recip"].format_of
    frac = [[[R.value(int(fw[w, j, k]), fmt("frac")) for k in range(3)] for j in range(3)]
            for w in range(2)]
    for w in range(2):
        ref.p = w
        total, s = oracle_walker(ref, frac[w], gint.tolist(), q, weight)
        assert R.value(int(out[w]), fmt("sum")) == total, w
        for g in range(3):
            assert R.value(int(out_s[w, g, 0]), fmt("sre")) == s[g][0], (w, g)
            assert R.value(int(out_s[w, g, 1]), fmt("sim")) == s[g][1], (w, g)
    got = {k: n for k, n in ev.log.events.items() if n and k.startswith("ewald_recip.")}
    assert got == ref.events, (got, ref.events)
    assert bool(ref.events) == narrow
