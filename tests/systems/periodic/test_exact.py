"""The fixed-point periodic kernels against independent exact oracles.

Each oracle re-does, on Python Fractions (``tests/reference.py``), the documented operation
sequence of one compiled kernel for a tiny input in a skewed cell, rounding every operation
once into its variable (with that variable's rounding, stochastic bits from (seed, walker,
variable), and overflow mode); an accumulator rounds each term once into its variable, adds
exactly and rounds (overflow-handles) the total once; every constant is the float64 value
rounded once, as often as the kernel forms it.  Every output word and every per-variable
overflow count must equal the compiled kernel's, bit for bit (narrow declared ranges and
narrower words force overflow events, saturated or wrapped).

``ewald_recip`` (:mod:`fixedqmc.systems.periodic.kernels`; 3 charges, 3 G vectors, 2
walkers)
    per charge and axis the phasor powers of :mod:`fixedqmc.systems.periodic.phasors`
    (``cos``/``sin`` = the kernel cosine of the 64-bit turn of the coordinate,
    ``reference.cos_turn64``, sine as the cosine a quarter turn earlier; powers by complex
    products ``pp`` into ``pw``, negative powers as conjugates); per G the product of the
    three powers (``pp``, ``zz``), ``q`` (const), ``qcos``, ``qsin`` into the accumulators
    ``sre``, ``sim``; then ``sq``, ``mag``, ``weight`` (const), ``wterm`` into ``sum``.
The pair geometry (:mod:`fixedqmc.systems.periodic.pair_geometry`, shared by ``ewald_real``
and ``jastrow_u``)
    ``dfrac = f_i - f_j``, ``nint`` = dfrac rounded to an integer with nint's own rounding
    mode (``reference.to_int``), ``dred = dfrac - nint``, per component ``c`` the
    accumulator ``d`` of ``dterm = dred_k lattice[k, c]`` (const); per image ``R``: ``de =
    d - image``, the accumulator ``s`` of ``de2 = de**2``, the exact test ``s < cut2``.
``ewald_real`` (3 charges, 2 walkers, every image of the Ewald parameters)
    per pair ``qq`` (const ``q_i q_j``); per image inside the cut-off the erfc form
    (:mod:`~fixedqmc.systems.periodic.erfc_form`): ``inv_r`` = 1/sqrt(s) correctly rounded
    (``reference.rsqrt``), ``r = s inv_r``, ``x = gamma r``, ``px = P x``, ``den = one +
    px``, ``t = 1/den`` correctly rounded (``reference.div``), ``tat = T_A t``, ``u = tat +
    T_B``, the Horner sum ``h`` (products ``hu``, coefficients ``coef``), ``arg = neg_g2
    s``, ``gauss`` = the LUT exponential (``reference.lut_exp``), ``erfc = gauss h``, ``phi
    = erfc inv_r``, ``term = qq phi`` into the accumulator ``sum``.
``jastrow_u`` (:mod:`fixedqmc.systems.periodic.jastrow_u_kernel`; 4 electrons, 2 up, 2
walkers, 3D and 2D, C = 3 and 2)
    per electron i the pair geometry for every electron j (i too), per candidate image the
    ``de`` and ``s`` of every j (the nearest image kept: selection is exact); per j != i
    inside ``cut2``: ``inv_r``, ``r``, ``x = r inv_l``, ``y = x - one``, the powers ``yp`` (from
    the const 1, C - 2 products, then y**(C-1), y**C), the three Horner sums ``q``, ``dq``,
    ``d2q`` (products ``qx``, ``dqx``, ``d2qx``, coefficients ``coef``, ``dcoef``,
    ``d2coef``, the parallel and the antiparallel one both formed), ``u = y**C q``, ``dux = kyq + yq``, ``d2ux = (kyq + kyq) + yq`` (``yq``
    a power of y times a Horner sum, ``kyq = int yq``, consts ``int``), ``du = dux inv_l``,
    ``d2u = d2ux inv_l2``, ``dur = du inv_r``, ``lterm = d2u + dim1 dur`` (``ddur``); ``g =
    dur de_c`` into the accumulators ``grad``, ``lterm`` into ``lap``, ``u`` into ``sum`` (full
    evaluation: one accumulator over every pair i < j, a const 0 of ``u`` per electron
    added for its partners j < i; a move of electron i: one for the
    old and one for the new place, over j != i, each with its own grad and lap sums).
``jastrow_p`` (:mod:`fixedqmc.systems.periodic.jastrow_p_kernel`; same electrons and cells,
G vectors up to nmax = 2)
    per electron and axis the phasor powers of its coordinate (as for ``ewald_recip``; 2D:
    two axes), per G ``zz`` = the products (``pp``) of the powers of the two (2D) or three
    (3D) axes.  Full evaluation: per G the accumulators ``sre``, ``sim`` of ``Re z_j``,
    ``Im z_j`` over all electrons, ``sq``, ``mag``, ``pair = mag - nel`` (``nel`` the const
    N, once per walker), ``pterm = ahalf pair`` (const ``ahalf = a_G / 2``) into ``sum``;
    then per electron i and G, from the same ``z_i`` words and S: ``cim = zs - zs`` (``Im
    z Re S``, ``Re z Im S``), ``cre = zs + zs`` of S and of z_i itself (the self term
    ``|z_i|**2``), ``cdiff = cre - cre``, ``gterm = agc cim`` into ``grad`` (3
    components), ``lterm = ag2 cdiff`` into ``lap``.  A move of electron i: the powers of
    the new place too; per G ``zz`` of every electron, the accumulators ``sre``, ``sim``
    with z_i's terms replaced by the const 0 of ``zz`` (once per walker), z_i's words
    (computed once) and ``z_i'``, ``eterm = ag cre`` (const ``ag`` once per G) into the old
    and the new ``sum``, ``cim`` at the new place, ``gterm = agc cim`` into ``grad``.

The oracles call no function of the package for the arithmetic: they use only the kernels'
data (the sine table, the exponential tables, 2 pi and log2 e as words) and the host
drivers' inputs (encoded coordinates, lattice, images, coefficients).  The kernels run with
run-time formats (the host drivers' default; ``jastrow_p`` also once with formats compiled
in), at 32 bits, at 64 bits (where the table exponential and cosine differ from correctly
rounded ones in the last bits, so the oracle must follow their data paths) and at narrower
words with narrowed ranges, in every rounding mode (stochastic included, and per-variable
modes such as a floor or stochastic ``nint``) and both overflow modes; the Jastrow kernels
both in a full evaluation and a move.
"""

import itertools
import math
from fractions import Fraction

import numpy as np
import pytest

import reference as R
from fixedqmc.numerics import transcendental as T
from fixedqmc.numerics.kernel_set import step_seed
from fixedqmc.systems.periodic import erfc_form as F
from fixedqmc.systems.periodic import jastrow as J
from fixedqmc.systems.periodic import jastrow_u_kernel as JK
from fixedqmc.systems.periodic import jastrow_p_kernel as PK
from fixedqmc.systems.periodic import kernels as K
from fixedqmc.systems.periodic.cell import Cell
from fixedqmc.systems.periodic.evaluator import EwaldEvaluator, pad3
from fixedqmc.systems.periodic.halo import SLACK
from fixedqmc.systems.periodic.ewald import COST_RATIO, balanced_gamma, ewald_parameters
from fixedqmc.systems.periodic.jastrow_eval import JastrowEvaluator
from fixedqmc.systems.periodic import slab_kernels as SK
from fixedqmc.systems.periodic.slab_evaluator import SlabEwaldEvaluator

# The gas kernels compiled at fixed point against integer references: minutes cold.
pytestmark = pytest.mark.heavy

SKEWED = [[3.0, 0.0, 0.0], [1.0, 2.8, 0.0], [0.5, 0.7, 3.2]]
SKEWED_2D = [[3.0, 0.0], [1.3, 2.6]]
SIN_TABLE = T._SIN_TABLE.tolist()
TWO_PI_60 = int(T._TWO_PI_60)
_RAW = T._EXP_TABLES.tolist()
EXP_TABLES = (_RAW[:4096], _RAW[4096:6144], _RAW[6144:])
LN2 = int(np.uint64(T._LN2_WORD.view(np.uint64)))


class Ref(R.KernelOracle):
    """The oracle's arithmetic (:class:`reference.KernelOracle`) and the periodic kernels'
    other operations, each rounded once into its variable v (events counted)."""

    def _op(self, fn, v, *args):
        fmt, rnd, ovf = self.mode[v]
        raw, over = fn(*args, fmt, rnd, ovf, self._bits(v))
        self._count(v, over)
        return R.value(raw, fmt)

    def cos_turns(self, x, v, quarter=0):
        """cos(2 pi x) (quarter=1: sin) by the kernel's table cosine of the 64-bit turn."""
        t = R.turn_of(x) - quarter * (1 << 62)
        return self._op(R.cos_turn64, v, t, SIN_TABLE, TWO_PI_60)

    def round_int(self, x, v):
        """x rounded to an integer with v's own rounding mode, stored in v."""
        return self._op(R.to_int, v, x, self.mode[v][1])

    def rsqrt(self, x, v):
        return self._op(R.rsqrt, v, x)

    def recip(self, x, v):
        return self._op(R.div, v, Fraction(1), x)

    def exp(self, x, v):
        return self._op(R.lut_exp, v, x, EXP_TABLES, T._LOG2E_RAW, LN2)


def words(kp, name, raw):
    """Exact values of a kernel's int64 output words of variable ``name`` (nested lists)."""
    fmt = kp.format_of(name)
    return np.vectorize(lambda r: R.value(int(r), fmt), otypes=[object])(raw).tolist()


def reported(name, counts):
    """``{kernel.variable: n}`` of one call's nonzero overflow counts."""
    return {f"{name}.{v}": n for v, n in counts.items() if n}


# ------------------------------------------------------------------- phasors --
def oracle_powers(ref, df, nmax):
    """{m: (Re, Im) of e^{2 pi i m df}}, m = -nmax..nmax, as the kernel buffers them."""
    c = ref.cos_turns(df, "cos")
    s = ref.cos_turns(df, "sin", quarter=1)
    zero, re, im = ref.r(0.0, "pw"), ref.r(1.0, "pw"), ref.r(0.0, "pw")
    buf = {0: (re, im)}
    for m in range(1, nmax + 1):
        re, im = (ref.r(ref.r(re * c, "pp") - ref.r(im * s, "pp"), "pw"),
                  ref.r(ref.r(re * s, "pp") + ref.r(im * c, "pp"), "pw"))
        buf[m] = (re, im)
        buf[-m] = (re, ref.r(zero - im, "pw"))
    return buf


def oracle_times(ref, a, b):
    """The complex product a b of (Re, Im) pairs: products pp, components zz."""
    return (ref.r(ref.r(a[0] * b[0], "pp") - ref.r(a[1] * b[1], "pp"), "zz"),
            ref.r(ref.r(a[0] * b[1], "pp") + ref.r(a[1] * b[0], "pp"), "zz"))



# --------------------------------------------------------------- ewald_recip --
def oracle_recip_walker(ref, frac, gint, q, weight, nmax):
    """(sum, [(Re S, Im S) per G]) of one walker: frac (N, 3) Fractions."""
    bufs = [[oracle_powers(ref, frac[j][k], nmax) for k in range(3)] for j in range(len(q))]
    wterms, s = [], []
    for g, n in enumerate(gint):
        cre, cim = [], []
        for j in range(len(q)):
            z = oracle_times(ref, bufs[j][0][n[0]], bufs[j][1][n[1]])
            z = oracle_times(ref, z, bufs[j][2][n[2]])
            qj = ref.r(float(q[j]), "q")
            cre.append(ref.r(qj * z[0], "qcos"))
            cim.append(ref.r(qj * z[1], "qsin"))
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
    gint = np.ascontiguousarray(pad3(params.gints[:3]).astype(np.int64))
    nmax = int(np.abs(gint).max())
    weight = np.ascontiguousarray(params.weights[:3])
    fw = ks.encode("ewald_recip", "frac", ev.fractional(x), step)
    cv = ks.context("ewald_recip", step)
    out = np.zeros(2, np.int64)
    out_s = np.zeros((2, 3, 2), np.int64)
    K.recip_kernel(cv, fw, gint, q, weight, np.int64(nmax), True, out, out_s)
    ks.report("ewald_recip", cv)

    ref = Ref(ks["ewald_recip"], step_seed(seed, step))
    fmt = ks["ewald_recip"].format_of
    frac = [[[R.value(int(fw[w, j, k]), fmt("frac")) for k in range(3)] for j in range(3)]
            for w in range(2)]
    for w in range(2):
        ref.p = w
        total, s = oracle_recip_walker(ref, frac[w], gint.tolist(), q, weight, nmax)
        assert R.value(int(out[w]), fmt("sum")) == total, w
        for g in range(3):
            assert R.value(int(out_s[w, g, 0]), fmt("sre")) == s[g][0], (w, g)
            assert R.value(int(out_s[w, g, 1]), fmt("sim")) == s[g][1], (w, g)
    got = {k: n for k, n in ev.log.events.items() if n and k.startswith("ewald_recip.")}
    assert got == ref.events, (got, ref.events)
    assert bool(ref.events) == narrow


# ------------------------------------------------------------- pair geometry --
def oracle_displacement(ref, fi, fj, lat):
    """The reduced displacement d (3 values) of fractional coordinates fi, fj (Fractions);
    ``lat`` (3, 3) float rows."""
    red = []
    for k in range(3):
        df = ref.r(fi[k] - fj[k], "dfrac")
        red.append(ref.r(df - ref.round_int(df, "nint"), "dred"))
    return [ref.acc([ref.r(red[k] * ref.r(float(lat[k][c]), "lattice"), "dterm")
                     for k in range(3)], "d") for c in range(3)]


def oracle_image(ref, d, image):
    """(de (3 values), s) of displacement d and the image vector (floats)."""
    de = [ref.r(d[c] - ref.r(float(image[c]), "image"), "de") for c in range(3)]
    return de, ref.acc([ref.r(t * t, "de2") for t in de], "s")


# ---------------------------------------------------------------- ewald_real --
def oracle_erfcx(ref, x, p, one, ta, tb, coef):
    """The erfcx form at x (``den``, ``t``, ``u``, the Horner sum ``h``); constants floats."""
    den = ref.r(ref.r(float(one), "one") + ref.r(ref.r(float(p), "p") * x, "px"), "den")
    t = ref.recip(den, "t")
    u = ref.r(ref.r(ref.r(float(ta), "ta") * t, "tat") + ref.r(float(tb), "tb"), "u")
    h = ref.r(float(coef[-1]), "h")
    for k in range(len(coef) - 2, -1, -1):
        h = ref.r(ref.r(h * u, "hu") + ref.r(float(coef[k]), "coef"), "h")
    return h


def oracle_screened(ref, s, par, coef):
    """erfc(gamma r) / r (``phi``) at s = r**2 by the erfc form."""
    inv_r = ref.rsqrt(s, "inv_r")
    x = ref.r(ref.r(float(par[1]), "gamma") * ref.r(s * inv_r, "r"), "x")
    h = oracle_erfcx(ref, x, par[2], par[3], par[4], par[5], coef)
    gauss = ref.exp(ref.r(ref.r(float(par[6]), "neg_g2") * s, "arg"), "gauss")
    return ref.r(ref.r(gauss * h, "erfc") * inv_r, "phi")


def oracle_box_range(g, reach, nb):
    """The boxes within reach of fractional coordinate g (as ``halo.box_range``)."""
    return (max(0, math.floor((g - reach) * nb)), min(nb - 1, math.floor((g + reach) * nb)))


def oracle_box_gap(g, b, nb):
    """The squared gap of g from box b beyond the slack (as ``halo.box_gap``)."""
    t = max(0.0, max(b / nb - g, g - (b + 1) / nb) - SLACK)
    return t * t


def oracle_real_walker(ref, frac, fb, lat, halo, q, par, coef):
    """(sum, number of images inside the cut-off) of one walker in the kernel's order: the
    positions, the images of the halo (per charge and shift, in the box ranges the float64
    coordinates fb give), per electron the tests of its box's entries with j > i, then the
    kept terms."""
    n, nb, reach, shifts = len(q), halo.boxes.tolist(), halo.reach.tolist(), halo.shifts
    pos = [[ref.acc([ref.r(frac[j][k] * ref.r(float(lat[k][c]), "lattice"), "pterm")
                     for k in range(3)], "pos") for c in range(3)] for j in range(n)]
    boxes = {}
    for j in range(n):
        for shift in itertools.product(*(range(-m, m + 1) for m in shifts)):
            spans = [oracle_box_range(fb[j][k] + shift[k], reach[k], nb[k]) for k in range(3)]
            if any(lo > hi for lo, hi in spans):
                continue
            ipos = []
            for c in range(3):
                rc = shift[0] * lat[0][c] + shift[1] * lat[1][c] + shift[2] * lat[2][c]
                ipos.append(ref.r(pos[j][c] + ref.r(rc, "image"), "ipos"))
            for b in itertools.product(*(range(lo, hi + 1) for lo, hi in spans)):
                gaps = [oracle_box_gap(fb[j][k] + shift[k], b[k], nb[k]) for k in range(3)]
                if gaps[0] + gaps[1] + gaps[2] < halo.ball:
                    boxes.setdefault((b[0] * nb[1] + b[1]) * nb[2] + b[2], []).append((j, ipos))
    cut2 = ref.r(float(par[0]), "cut2")
    terms = []
    for i in range(n):
        b = 0
        for k in range(3):
            b = b * nb[k] + min(int(fb[i][k] * nb[k]), nb[k] - 1)
        inside = []
        for j, ipos in boxes.get(b, []):
            if j > i:
                de = [ref.r(ipos[c] - pos[i][c], "de") for c in range(3)]
                s2 = ref.acc([ref.r(t * t, "de2") for t in de], "s")
                if s2 < cut2:
                    inside.append((j, s2))
        for j, s2 in inside:
            phi = oracle_screened(ref, s2, par, coef)
            terms.append(ref.r(ref.r(float(q[i] * q[j]), "qq") * phi, "term"))
    return ref.acc(terms, "sum"), len(terms)


def check_real_kernel(ev, x, seed, step, min_inside):
    """Run ``ewald_real`` of evaluator ``ev`` on walkers ``x`` (2 walkers) and its oracle;
    assert every output word and the overflow counts equal; returns the events."""
    ks, kp, h = ev.ks, ev.ks["ewald_real"], ev.halo
    fb = ev.fractional(x)
    fw = ks.encode("ewald_real", "frac", fb, step)
    cv = ks.context("ewald_real", step)
    out = np.zeros(2, np.int64)
    K.real_kernel(cv, fw, fb, ev._lat, h.boxes, h.reach, h.shifts, h.ball,
                  np.int64(fb.shape[1] * h.per_charge), ev.charges, ev._par, ev._coef, out)
    got = reported("ewald_real", ks.report("ewald_real", cv))

    ref = Ref(kp, step_seed(seed, step))
    frac = words(kp, "frac", fw)
    for w in range(2):
        ref.p = w
        total, n_in = oracle_real_walker(ref, frac[w], fb[w].tolist(), ev._lat.tolist(), h,
                                         ev.charges, ev._par, F.COEFFICIENTS.tolist())
        assert n_in >= min_inside, n_in  # images of pairs inside the cut-off
        assert R.value(int(out[w]), kp.format_of("sum")) == total, w
    assert got == ref.events, (got, ref.events)
    return ref.events


#: Too narrow on purpose: phi and term overflow for pairs closer than about 1.8 bohr, the
#: sum's terms and total overflow, the closest pair overflows inv_r, close pairs gauss.
REAL_NARROW = {"phi": (0.0, 0.06), "term": (-0.1, 0.1), "sum": (-0.01, 0.01),
               "inv_r": (0.0, 1.9), "gauss": (0.0, 0.4)}
REAL_ALL = {"phi", "sum", "inv_r", "gauss"}
#: Per-variable modes: the images' coordinates rounded down (floor), t toward zero, the rest
#: half up; de narrowed to +-2 bohr, so the farther entries saturate.
PER_VARIABLE = ("fixed:28:half_up:saturate,ewald_real.ipos=fixed:28:floor,"
                "ewald_real.t=fixed:28:zero")


@pytest.mark.parametrize("spec, ranges, expect", [
    ("fixed:32", None, set()),
    ("fixed:64", None, set()),
    ("fixed:26:half_even:wrap", REAL_NARROW, REAL_ALL),
    ("fixed:30:stochastic:saturate", REAL_NARROW, REAL_ALL),
    (PER_VARIABLE, {"phi": (0.0, 0.06), "de": (-2.0, 2.0)}, {"de", "phi"})])
def test_ewald_real_is_bit_exact(spec, ranges, expect):
    cell = Cell(SKEWED)
    q = np.array([1.0, -1.0, 2.0])
    # the gamma of equal weights: a small one, so that many images lie inside the cut-off
    gamma = balanced_gamma(cell, 3) / COST_RATIO ** (1 / 6)
    params = ewald_parameters(cell, q, 1e-6, gamma=gamma)
    seed, step = 11, 5
    ev = EwaldEvaluator(cell, q, params, spec, ranges={"ewald_real": ranges or {}},
                        seed=seed)
    x = np.random.default_rng(8).normal(scale=2.0, size=(2, 3, 3))
    x[1, 2] = x[1, 0] + [0.3, -0.2, 0.25]  # a close pair: large phi and term
    events = check_real_kernel(ev, x, seed, step, min_inside=21)  # many images of each pair
    assert {f"ewald_real.{v}" for v in expect} <= set(events), events
    assert bool(events) == bool(expect)


# ------------------------------------------------------ slab: ewald_real, slab_recip --
def slab_evaluator(spec, ranges, seed, gamma=None):
    """A slab evaluator of 3 charges in the skewed 2D cell, heights in [-6, 6] bohr (gamma
    |z| up to 15: erfcx arguments past x_max, pairs with a < gamma |z| and a >= gamma |z|),
    and 2 walkers."""
    cell = Cell(SKEWED_2D)
    q = np.array([1.0, -1.0, 2.0])
    params = ewald_parameters(cell, q, 1e-6, gamma=gamma)
    ev = SlabEwaldEvaluator(cell, q, (-6.0, 6.0), params, spec, ranges=ranges, seed=seed)
    rng = np.random.default_rng(9)
    x = np.concatenate([rng.normal(scale=2.0, size=(2, 3, 2)),
                        rng.uniform(-6.0, 6.0, size=(2, 3, 1))], axis=-1)
    x[1, 2] = x[1, 0] + [0.3, -0.2, 0.25]  # a close pair
    return ev, x


@pytest.mark.parametrize("spec, ranges, expect", [
    ("fixed:32", None, set()),
    ("fixed:26:half_even:wrap", REAL_NARROW, {"phi", "sum", "inv_r"})])
def test_ewald_real_with_heights_is_bit_exact(spec, ranges, expect):
    seed, step = 13, 2
    # a small gamma (long cut-off) and heights in [-1.5, 1.5]: images of pairs at
    # different heights inside the cut-off
    ev, x = slab_evaluator(spec, {"ewald_real": ranges or {}}, seed,
                           balanced_gamma(Cell(SKEWED_2D), 3) / COST_RATIO ** (1 / 6))
    x[..., 2] *= 0.25
    events = check_real_kernel(ev, x, seed, step, min_inside=3)
    assert {f"ewald_real.{v}" for v in expect} <= set(events), events
    assert bool(events) == bool(expect)


def oracle_wide(ref, y, par, coef):
    """erfcx of the wide form at ``x = min(y, x_max)``."""
    x = ref.r(min(y, ref.r(float(par[2]), "xmax")), "x")
    return oracle_erfcx(ref, x, par[3], par[4], par[5], par[6], coef)


def oracle_factor(ref, tz, tz2, absz, sh, par, coef):
    """F(G, z) (``f``) of one shell by the stable form, without a branch as the kernel
    (both sums ``hs`` and the ``eg2`` term formed, so their events count); returns (f, a <
    gamma |z|)."""
    a = ref.r(float(sh[0]), "a")
    amt = ref.r(a - tz, "amt")
    h1 = oracle_wide(ref, ref.r(a + tz, "apt"), par, coef)
    h2 = oracle_wide(ref, ref.r(abs(amt), "absd"), par, coef)
    below = amt < ref.r(0.0, "amt")
    hs = [ref.r(h1 - h2, "hs"), ref.r(h1 + h2, "hs")]  # both formed, one selected
    damp = ref.exp(ref.r(ref.r(float(sh[1]), "neg_a2") - tz2, "darg"), "damp")
    f = ref.r(damp * hs[0 if below else 1], "f")
    eg = ref.exp(ref.r(ref.r(float(sh[2]), "neg_g") * absz, "garg"), "eg")
    f_eg = ref.r(f + ref.r(ref.r(float(par[7]), "two") * eg, "eg2"), "f")
    return (f_eg if below else f), below


def oracle_height(ref, tz, tz2, absz, par, coef):
    """h(z) - h(0) (``hz``) of one pair."""
    gz = ref.exp(ref.r(ref.r(0.0, "tz2") - tz2, "narg"), "gz")
    one = ref.r(float(par[4]), "one")
    erfz = ref.r(one - ref.r(gz * oracle_wide(ref, tz, par, coef), "erfcz"), "erfz")
    hg = ref.r(ref.r(float(par[8]), "c0") * ref.r(gz - ref.r(float(par[4]), "one"), "gm1"),
               "hg")
    return ref.r(ref.r(absz * erfz, "zerf") + hg, "hz")


def oracle_slab_walker(ref, frac, gint, start, shell, q, par, coef, nmax):
    """(sum, height, {a < gamma |z|: count}) of one walker: frac (N, 3) Fractions."""
    n = len(q)
    bufs = [[oracle_powers(ref, frac[j][k], nmax) for k in range(2)] for j in range(n)]
    z = [[oracle_times(ref, bufs[j][0][g[0]], bufs[j][1][g[1]]) for j in range(n)]
         for g in gint]
    lz, gamma = ref.r(float(par[0]), "lz"), ref.r(float(par[1]), "gamma")
    terms, hterms, forms = [], [], {False: 0, True: 0}
    for i in range(n):
        for j in range(i + 1, n):
            dz = ref.r(ref.r(frac[i][2] - frac[j][2], "dfz") * lz, "dz")
            absz = ref.r(abs(dz), "absz")
            tz = ref.r(gamma * absz, "tz")
            tz2 = ref.r(tz * tz, "tz2")
            qq = ref.r(float(q[i] * q[j]), "qq")
            fterms = []
            for s in range(len(shell)):
                f, below = oracle_factor(ref, tz, tz2, absz, shell[s], par, coef)
                forms[below] += 1
                cc = [ref.r(ref.r(z[g][i][0] * z[g][j][0], "cp")
                            + ref.r(z[g][i][1] * z[g][j][1], "cp"), "cc")
                      for g in range(start[s], start[s + 1])]
                fw = ref.r(ref.r(float(shell[s][3]), "wg") * f, "fw")
                fterms.append(ref.r(fw * ref.acc(cc, "csum"), "fterm"))
            terms.append(ref.r(qq * ref.acc(fterms, "pair"), "term"))
            hterms.append(ref.r(qq * oracle_height(ref, tz, tz2, absz, par, coef), "hterm"))
    height = ref.r(ref.r(float(par[9]), "neg_w0") * ref.acc(hterms, "hsum"), "height")
    return ref.acc(terms, "sum"), height, forms


#: Too narrow on purpose: the pair sums, the height sum and the largest F overflow.
SLAB_NARROW = {"f": (-1.0, 1.0), "pair": (-0.05, 0.05), "sum": (-0.05, 0.05),
               "hsum": (-1.0, 1.0)}


@pytest.mark.parametrize("spec, ranges", [
    ("fixed:32", None),
    ("fixed:24:half_even:wrap", SLAB_NARROW),
    ("fixed:30:stochastic:saturate", SLAB_NARROW)])
def test_slab_recip_is_bit_exact(spec, ranges):
    seed, step = 17, 4
    ev, x = slab_evaluator(spec, {"slab_recip": ranges or {}}, seed)
    ks, kp = ev.ks, ev.ks["slab_recip"]
    n_s = 3  # the first three shells
    start = np.ascontiguousarray(ev._start[:n_s + 1])
    gint = np.ascontiguousarray(ev._sgint[:start[-1]])
    shell = np.ascontiguousarray(ev._shell[:n_s])
    nmax = int(np.abs(gint).max())
    fw = ks.encode("slab_recip", "frac", ev.fractional(x), step)
    cv = ks.context("slab_recip", step)
    out = np.zeros((2, 2), np.int64)
    SK.slab_recip_kernel(cv, fw, ev._pairs, gint, start, shell, ev.charges, ev._spar,
                         ev._scoef, np.int64(nmax), out)
    got = reported("slab_recip", ks.report("slab_recip", cv))

    ref = Ref(kp, step_seed(seed, step))
    frac = words(kp, "frac", fw)
    forms = {False: 0, True: 0}
    for w in range(2):
        ref.p = w
        total, height, f = oracle_slab_walker(ref, frac[w], gint.tolist(), start.tolist(),
                                              shell.tolist(), ev.charges, ev._spar,
                                              ev._scoef.tolist(), nmax)
        forms = {k: forms[k] + f[k] for k in forms}
        assert R.value(int(out[w, 0]), kp.format_of("sum")) == total, w
        assert R.value(int(out[w, 1]), kp.format_of("height")) == height, w
    assert forms[False] > 0 and forms[True] > 0, forms  # both forms of F
    assert got == ref.events, (got, ref.events)
    assert bool(ref.events) == bool(ranges), ref.events


# ----------------------------------------------------------------- jastrow_u --
def make_params(lattice, c=3, n_p=0, seed=0):
    """4 electrons (2 up), random coefficients of natural size (beta_l ~ 0.3)."""
    cell = Cell(lattice)
    rng = np.random.default_rng(seed)
    big_l = cell.inscribed_radius
    powers = np.r_[0, 2:7] + c

    def alpha():
        return list(rng.normal(size=6) * 0.3 / big_l ** powers)
    return J.jastrow_parameters(cell, 4, 2, c=c, alpha_parallel=alpha(),
                                alpha_antiparallel=alpha(),
                                p_coefficients=list(rng.normal(size=n_p) * 0.05))


def jastrow_walkers(params):
    """(positions (2, 4, dim), new positions of electron 1 (2, dim)): each walker has a
    parallel pair (0, 1) and an antiparallel pair (0, 2, across a cell face) within L_u."""
    cell, dim = params.cell, params.cell.dim
    rng = np.random.default_rng(3)
    x = rng.normal(scale=2.0, size=(2, 4, dim))
    a = np.asarray(cell.lattice)
    off = rng.normal(size=(2, 3, dim))
    off *= params.cutoff / np.linalg.norm(off, axis=2, keepdims=True)
    off *= np.array([0.35, 0.7])[:, None, None]
    x[:, 1] = x[:, 0] + off[:, 0]
    x[:, 2] = x[:, 0] + a[0] - a[1] + off[:, 1]
    new = x[:, 3] + off[:, 2]  # electron 1 moves next to electron 3 (antiparallel)
    return x, new


#: Each Jastrow kernel called as ``JastrowEvaluator._run`` calls it (words in and out).
KERNEL_CALLS = {
    "jastrow_u": lambda ev, cv, fw, fn, imove, outs: JK.u_kernel(
        cv, fw, fn, np.int64(imove), ev._lat, ev._img, tuple(ev._ucoef[0].ravel()),
        tuple(ev._ucoef[1].ravel()), ev._upar, np.int64(ev.params.c),
        np.int64(ev.params.n_up), *outs),
    "jastrow_p": lambda ev, cv, fw, fn, imove, outs: PK.p_kernel(
        cv, fw, fn, np.int64(imove), ev._gint, ev._pcoef, np.int64(ev._nmax),
        ev.params.cell.dim == 3, *outs)}


def run_jastrow(ev, name, x, new, imove, step):
    """The compiled Jastrow kernel ``name`` on positions x, the move of electron ``imove``
    to ``new`` (imove < 0: the full evaluation): (fractional words, new words, out_sum,
    out_grad, out_lap, the call's reported events)."""
    ks = ev.ks
    fw = ks.encode(name, "frac", ev.fractional(x), step)
    fn = ks.encode(name, "frac", np.ascontiguousarray(ev.fractional(new)), step)
    nw, n = fw.shape[:2]
    outs = (np.zeros((nw, 2), np.int64), np.zeros((nw, n if imove < 0 else 1, 3), np.int64),
            np.zeros((nw, n if imove < 0 else 1), np.int64))
    cv = ks.context(name, step)
    KERNEL_CALLS[name](ev, cv, fw, fn, imove, outs)
    return (fw, fn, *outs, reported(name, ks.report(name, cv)))


def check_jastrow_kernel(ev, name, params, step, seed, full, move) -> dict:
    """Run Jastrow kernel ``name`` of evaluator ``ev`` on :func:`jastrow_walkers` (full
    evaluation, then a move of electron 1) and compare every word and the overflow counts
    with the oracles ``full(ref, f) -> (sum, grad, lap)`` and ``move(ref, f, i, fnew) ->
    (old sum, new sum, grad)``; returns the events of both calls."""
    kp = ev.ks[name]
    x, new = jastrow_walkers(params)
    events = {}
    for imove in (-1, 1):
        fw, fn, out_sum, out_grad, out_lap, got = run_jastrow(ev, name, x, new, imove, step)
        ref = Ref(kp, step_seed(seed, step))
        f, fnew = words(kp, "frac", fw), words(kp, "frac", fn)
        sums, grads, laps = (words(kp, "sum", out_sum), words(kp, "grad", out_grad),
                             words(kp, "lap", out_lap))
        for w in range(2):
            ref.p = w
            if imove < 0:
                total, g, lp = full(ref, f[w])
                assert sums[w] == [total, 0], w
                assert grads[w] == g, w
                assert laps[w] == lp, w
            else:
                old, nsum, g = move(ref, f[w], imove, fnew[w])
                assert sums[w] == [old, nsum], w
                assert grads[w] == [g], w
                assert laps[w] == [0], w
        assert got == ref.events, (imove, got, ref.events)
        for k, n in ref.events.items():
            events[k] = events.get(k, 0) + n
    return events


def oracle_u_pair(ref, s, parallel, coef, par, cpow):
    """(u, u'/r, u'' + (dim-1) u'/r) at s = r**2; ``coef`` (2, 3, N_u + 1) floats, both spin
    kinds' coefficients formed and the pair's (``parallel``) selected."""
    def cf(d, k, v):
        both = [ref.r(float(coef[kind][d][k]), v) for kind in (0, 1)]
        return both[0] if parallel else both[1]
    inv_r = ref.rsqrt(s, "inv_r")
    x = ref.r(ref.r(s * inv_r, "r") * ref.r(float(par[1]), "inv_l"), "x")
    y = ref.r(x - ref.r(float(par[7]), "one"), "y")
    yc2 = ref.r(1.0, "yp")
    for _ in range(cpow - 2):
        yc2 = ref.r(yc2 * y, "yp")
    yc1 = ref.r(yc2 * y, "yp")
    yc = ref.r(yc1 * y, "yp")
    n = len(coef[0][0])
    q, dq, d2q = cf(0, n - 1, "q"), cf(1, n - 1, "dq"), cf(2, n - 1, "d2q")
    for k in range(n - 2, -1, -1):
        q = ref.r(ref.r(q * x, "qx") + cf(0, k, "coef"), "q")
        dq = ref.r(ref.r(dq * x, "dqx") + cf(1, k, "dcoef"), "dq")
        d2q = ref.r(ref.r(d2q * x, "d2qx") + cf(2, k, "d2coef"), "d2q")

    def kyq(p, a, b):  # int_p (a b)
        return ref.r(ref.r(float(par[p]), "int") * ref.r(a * b, "yq"), "kyq")
    u = ref.r(yc * q, "u")
    dux = ref.r(kyq(3, yc1, q) + ref.r(yc * dq, "yq"), "dux")
    d2ux = ref.r(ref.r(kyq(4, yc2, q) + kyq(5, yc1, dq), "d2ux") + ref.r(yc * d2q, "yq"),
                 "d2ux")
    du = ref.r(dux * ref.r(float(par[1]), "inv_l"), "du")
    d2u = ref.r(d2ux * ref.r(float(par[2]), "inv_l2"), "d2u")
    dur = ref.r(du * inv_r, "dur")
    lterm = ref.r(d2u + ref.r(ref.r(float(par[6]), "dim1") * dur, "ddur"), "lterm")
    return u, dur, lterm


def oracle_u_electron(ref, f, i, fi, lat, img, coef, par, cpow, n_up, half, spins):
    """Electron i at fi: (its u terms for the sum (j < i add the const 0 of u if half),
    grad (3), lap); counts the in-cut pairs per spin kind in ``spins``.  The kernel's
    order: every partner's displacement (i itself too), per image every partner's ``de``
    and ``s`` (the nearest kept), then the partners j != i inside the cut-off."""
    terms, g, lt = [], ([], [], []), []
    ds = [oracle_displacement(ref, fi, f[j], lat) for j in range(len(f))]
    near = [None] * len(f)
    for m in range(len(img)):
        for j in range(len(f)):
            de, s = oracle_image(ref, ds[j], img[m])
            if near[j] is None or s < near[j][1]:
                near[j] = de, s
    cut2 = ref.r(float(par[0]), "cut2")
    zero = ref.r(0.0, "u")
    for j in range(len(f)):
        de, s = near[j]
        if j == i or not s < cut2:
            continue
        parallel = (j < n_up) == (i < n_up)
        spins[parallel] += 1
        u, dur, lterm = oracle_u_pair(ref, s, parallel, coef, par, cpow)
        terms.append(u if j > i or not half else zero)
        for c in range(3):
            g[c].append(ref.r(dur * de[c], "g"))
        lt.append(lterm)
    return terms, [ref.acc(t, "grad") for t in g], ref.acc(lt, "lap")


#: Too narrow on purpose: u'/r, its (dim - 1) multiple, the gradient and Laplacian sums
#: and J overflow.
U_NARROW = {"dur": (-0.45, 0.45), "ddur": (-0.45, 0.45), "grad": (-0.2, 0.2),
            "lap": (-0.9, 0.9), "sum": (-0.05, 0.05)}
#: The powers of y too narrow (its const 1 overflows: u and its derivatives collapse).
U_YP = {"yp": (-0.4, 0.4), "sum": (-0.05, 0.05)}
U_ALL = {"dur", "ddur", "grad", "lap", "sum"}


@pytest.mark.parametrize("lattice, c, spec, ranges, expect", [
    (SKEWED, 3, "fixed:32", None, set()),
    (SKEWED, 3, "fixed:64", None, set()),
    (SKEWED, 3, "fixed:26:half_even:wrap", U_NARROW, U_ALL - {"grad"}),
    (SKEWED, 2, "fixed:30:stochastic:saturate", U_NARROW, U_ALL),
    (SKEWED, 3, "fixed:30:half_away:saturate", U_YP, {"yp"}),
    (SKEWED_2D, 3, "fixed:32", None, set()),
    (SKEWED_2D, 2, "fixed:28:half_up:wrap,jastrow_u.nint=fixed:28:stochastic", U_NARROW,
     U_ALL - {"ddur"})])
def test_jastrow_u_is_bit_exact(lattice, c, spec, ranges, expect):
    params = make_params(lattice, c=c)
    seed, step = 13, 2
    ev = JastrowEvaluator(params, spec, ranges={"jastrow_u": ranges or {}}, seed=seed)
    lat, img, coef, par = (ev._lat.tolist(), ev._img.T.tolist(), ev._ucoef.tolist(),
                           ev._upar.tolist())
    spins = [0, 0]

    def electron(ref, f, i, pos, full):
        return oracle_u_electron(ref, f, i, pos, lat, img, coef, par, params.c, params.n_up,
                                 full, spins)

    def full(ref, f):
        terms, grads, laps = [], [], []
        for i in range(params.n_electrons):
            t, g, lp = electron(ref, f, i, f[i], True)
            terms += t
            grads.append(g)
            laps.append(lp)
        return ref.acc(terms, "sum"), grads, laps

    def move(ref, f, i, fnew):
        old = electron(ref, f, i, f[i], False)[0]
        t, g, _ = electron(ref, f, i, fnew, False)
        return ref.acc(old, "sum"), ref.acc(t, "sum"), g
    events = check_jastrow_kernel(ev, "jastrow_u", params, step, seed, full, move)
    assert min(spins) >= 4, spins  # both spin kinds inside L_u in every call
    assert {f"jastrow_u.{v}" for v in expect} <= set(events), events
    assert bool(events) == bool(expect)


# ----------------------------------------------------------------- jastrow_p --
def oracle_z(ref, bufs, n, three):
    """z(G) of reduced integer coordinates n from one electron's powers (per axis)."""
    z = oracle_times(ref, bufs[0][n[0]], bufs[1][n[1]])
    return oracle_times(ref, z, bufs[2][n[2]]) if three else z


def oracle_re_conj(ref, z, s):
    """Re(z conj s): products zs, sum cre."""
    return ref.r(ref.r(z[0] * s[0], "zs") + ref.r(z[1] * s[1], "zs"), "cre")


def oracle_im_conj(ref, z, s):
    """Im(z conj s): products zs, difference cim."""
    return ref.r(ref.r(z[1] * s[0], "zs") - ref.r(z[0] * s[1], "zs"), "cim")


def oracle_p_full(ref, f, gint, pcoef, nmax, three):
    """(J_p, [grad_i (3)], [lap_i]) of one walker: f (N, 3) Fractions."""
    axes = 3 if three else 2
    bufs = [[oracle_powers(ref, f[j][k], nmax) for k in range(axes)] for j in range(len(f))]
    nel = ref.r(len(f), "nel")
    zs, s, pterms = [], [], []
    for n, a in zip(gint, pcoef):
        z = [oracle_z(ref, bufs[j], n, three) for j in range(len(f))]
        re, im = ref.acc([t[0] for t in z], "sre"), ref.acc([t[1] for t in z], "sim")
        mag = ref.r(ref.r(re * re, "sq") + ref.r(im * im, "sq"), "mag")
        pair = ref.r(mag - nel, "pair")
        pterms.append(ref.r(ref.r(float(a[0]) * 0.5, "ahalf") * pair, "pterm"))
        zs.append(z)
        s.append((re, im))
    grads, laps = [], []
    for i in range(len(f)):
        g, lt = ([], [], []), []
        for k, a in enumerate(pcoef):
            z = zs[k][i]
            cim = oracle_im_conj(ref, z, s[k])
            cdiff = ref.r(oracle_re_conj(ref, z, s[k]) - oracle_re_conj(ref, z, z), "cdiff")
            for c in range(3):
                g[c].append(ref.r(ref.r(float(a[1 + c]), "agc") * cim, "gterm"))
            lt.append(ref.r(ref.r(float(a[4]), "ag2") * cdiff, "lterm"))
        grads.append([ref.acc(t, "grad") for t in g])
        laps.append(ref.acc(lt, "lap"))
    return ref.acc(pterms, "sum"), grads, laps


def oracle_p_move(ref, f, i, fnew, gint, pcoef, nmax, three):
    """(old sum, new sum, grad (3)) of one walker's move of electron i to fnew."""
    axes = 3 if three else 2
    bufs = [[oracle_powers(ref, f[j][k], nmax) for k in range(axes)] for j in range(len(f))]
    nbuf = [oracle_powers(ref, fnew[k], nmax) for k in range(axes)]
    zero = ref.r(0.0, "zz")  # z_i's place in the sums
    old, new, g = [], [], ([], [], [])
    for n, a in zip(gint, pcoef):
        z = [oracle_z(ref, bufs[j], n, three) for j in range(len(f))]
        s = tuple(ref.acc([zero if j == i else t[c] for j, t in enumerate(z)], v)
                  for c, v in ((0, "sre"), (1, "sim")))
        ag = ref.r(float(a[0]), "ag")
        old.append(ref.r(ag * oracle_re_conj(ref, z[i], s), "eterm"))
        znew = oracle_z(ref, nbuf, n, three)
        new.append(ref.r(ag * oracle_re_conj(ref, znew, s), "eterm"))
        cim = oracle_im_conj(ref, znew, s)
        for c in range(3):
            g[c].append(ref.r(ref.r(float(a[1 + c]), "agc") * cim, "gterm"))
    return ref.acc(old, "sum"), ref.acc(new, "sum"), [ref.acc(t, "grad") for t in g]


#: Too narrow on purpose: the powers (the const 1 too), their products, the plane waves
#: z_j(G) and the three sums overflow.
P_NARROW = {"pw": (-0.7, 0.7), "pp": (-0.45, 0.45), "zz": (-0.2, 0.2),
            "sum": (-0.01, 0.01), "grad": (-0.02, 0.02), "lap": (-0.04, 0.04)}
#: The phasors wide enough; S, its square, the const N, the products with S, their
#: differences, the terms and the sums too narrow.
P_SUMS = {"sre": (-1.5, 1.5), "sim": (-1.5, 1.5), "sq": (0.0, 1.5), "mag": (0.0, 1.9),
          "nel": (0.0, 3.0), "pair": (-1.9, 1.9), "pterm": (-0.01, 0.01),
          "zs": (-0.9, 0.9), "cre": (-0.9, 0.9), "cim": (-0.6, 0.6), "cdiff": (-0.6, 0.6),
          "eterm": (-0.01, 0.01), "gterm": (-0.02, 0.02), "lterm": (-0.05, 0.05),
          "sum": (-0.02, 0.02), "grad": (-0.05, 0.05), "lap": (-0.1, 0.1)}


@pytest.mark.parametrize("lattice, spec, ranges, expect, specialise", [
    (SKEWED, "fixed:32", None, set(), False),
    (SKEWED, "fixed:64", None, set(), False),
    (SKEWED, "fixed:26:half_even:wrap", P_NARROW, set(P_NARROW) - {"grad", "lap"}, False),
    (SKEWED, "fixed:30:stochastic:saturate", P_NARROW, set(P_NARROW), False),
    (SKEWED, "fixed:24:half_away:saturate", P_SUMS, set(P_SUMS) - {"sum"}, False),
    pytest.param(SKEWED, "fixed:28:half_up:wrap", P_SUMS, set(P_SUMS) - {"pair"}, True,
                 marks=pytest.mark.slow),  # formats compiled in: a compilation of its own
    (SKEWED_2D, "fixed:32", None, set(), False),
    (SKEWED_2D, "fixed:28:floor:wrap,jastrow_p.zz=fixed:28:stochastic:saturate", P_NARROW,
     set(P_NARROW), False),
    (SKEWED_2D, "fixed:30:zero:saturate,jastrow_p.cre=fixed:30:stochastic:wrap", P_SUMS,
     set(P_SUMS), False)])
def test_jastrow_p_is_bit_exact(lattice, spec, ranges, expect, specialise):
    """The structure-factor kernel against its oracle; ``specialise``: formats compiled in
    (the others read them at run time)."""
    params = make_params(lattice, n_p=14 if len(lattice) == 3 else 6)
    seed, step = 17, 4
    ev = JastrowEvaluator(params, spec, ranges={"jastrow_p": ranges or {}}, seed=seed,
                          specialise=specialise)
    assert ev._nmax == 2
    three = params.cell.dim == 3
    gint, pcoef = ev._gint.tolist(), ev._pcoef.tolist()
    events = check_jastrow_kernel(
        ev, "jastrow_p", params, step, seed,
        lambda ref, f: oracle_p_full(ref, f, gint, pcoef, ev._nmax, three),
        lambda ref, f, i, fnew: oracle_p_move(ref, f, i, fnew, gint, pcoef, ev._nmax, three))
    assert {f"jastrow_p.{v}" for v in expect} <= set(events), events
    assert bool(events) == bool(expect)
