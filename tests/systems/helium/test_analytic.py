"""Compiled analytic pair functions of s = r**2: one source for the kernels and the numpy
functions of r, checked against independent float64 transcriptions of the papers' formulas.

The package writes each formula once (numba, generic in the float type of s); the numpy
functions of :mod:`~fixedqmc.systems.helium.potentials` and
:mod:`~fixedqmc.systems.helium.trial` evaluate that code in float64 at s = r * r, bit for
bit the float64 compiled values (checked here).  The oracles below are written from the
papers with other numerics (scipy's P(2n+1, x) for the SAPT2 damping, the printed sine
add-on of LM2M2, plain sums of monomials for T2 and its derivatives).

Error measures.  The potentials are V = repulsion - dispersion, two terms of similar size
near the zero crossing, so an error is judged against ``scale = |rep| + |rep - V|`` (the
sum whose difference is V), or in float64 as ``|dV| <= 1e-12 max(|V|, 1 K)``
(relative 1e-12, absolute 1e-12 K near the zeros).  The trial terms are judged against the
sum of the magnitudes of their monomials (b ln r, a r^alpha, a_k r^-k, ...).  Against
these sums float64 holds TOL64_SCALED = 1e-14 (measured <= 3e-15).

float32 tolerance: the reference is evaluated at the float32 value of s (so the input's
rounding is not counted), and the error of the float32 arithmetic is bounded by
``TOL32 * scale`` with TOL32 = 1e-5.  Unit roundoff is 6e-8; exp(arg) turns the rounding
of its argument into a relative error |arg| * 6e-8 (|arg| <= 15 wherever the repulsion
matters), and a dozen further roundings add ~1e-6; the measured maximum is 1.2e-6, so
1e-5 leaves a factor 8 of margin.
"""

import re

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from numba import njit, prange
from numba.core.errors import TypingError
from scipy.special import gammainc

from fixedqmc.errors import FixedQMCError
from fixedqmc.systems.helium import analytic as an
from fixedqmc.systems.helium import potentials as pot
from fixedqmc.systems.helium import trial as tr
from fixedqmc.systems.helium.constants import BOHR_ANGSTROM, HARTREE_K, HARTREE_K_SAPT2
from fixedqmc.systems.helium.trial import DEFAULT_PAIR_PARAMS, PairProductParams

TOL64 = 1e-12  # relative (absolute in K near zeros of V)
TOL64_SCALED = 1e-14  # against the sum of magnitudes (measured <= 3e-15)
TOL32 = 1e-5  # against the sum of magnitudes (measured <= 1.2e-6)
NAMES = ("SAPT2", "HFD-B", "HFDHE2", "LM2M2")
DTYPES = (np.float64, np.float32)

# dense grid over 1.5 .. 100 A, the short range (tail series of SAPT2) and far beyond
R_MAIN = np.concatenate([np.geomspace(1.5, 100.0, 30001), np.linspace(2.5, 5.0, 5001)])
R_SHORT = np.linspace(1e-3, 1.5, 3001)
R_FAR = np.geomspace(100.0, 1e4, 201)
# numba warns (spuriously: the tuple keeps the dispatcher type) when it types a tuple whose
# first member is a compiled function
TUPLE_SOURCE_WARNING = "ignore::numba.core.errors.NumbaExperimentalFeatureWarning"


# ------------------------------------------------------------------------- helpers --
@njit
def apply(f, s_arr, out):
    """out[i] = f(s_arr[i]): a compiled function passed as a first-class argument."""
    for i in range(s_arr.size):
        out[i] = f(s_arr[i])


@njit
def apply_terms(f, s_arr, coef, out):
    for i in range(s_arr.size):
        t, g, lap = f(s_arr[i], coef)
        out[0, i] = t
        out[1, i] = g
        out[2, i] = lap


@njit(parallel=True)
def apply_parallel(f, terms, s_arr, coef, out_v, out_t):
    """A parallel kernel taking a potential and the trial terms as arguments."""
    for i in prange(s_arr.size):
        out_v[i] = f(s_arr[i])
        t, g, lap = terms(s_arr[i], coef)
        out_t[0, i] = t
        out_t[1, i] = g
        out_t[2, i] = lap


@njit
def apply_source(src, s_arr, out):
    """The pair kernels' analytic-source convention: ``src = (function, coefficients)``."""
    for i in range(s_arr.size):
        out[i] = src[0](s_arr[i], src[1])


def evaluate(f, r, dtype):
    """(f at s = r**2 rounded to dtype, the r = sqrt(s) it was evaluated at)."""
    s = (np.asarray(r, np.float64) ** 2).astype(dtype)
    out = np.empty_like(s)
    apply(f, s, out)
    return out, np.sqrt(s.astype(np.float64))


AZIZ = {"HFD-B": pot.HFDB_HE, "HFDHE2": pot.HFDHE2, "LM2M2": pot.LM2M2}


def paper_sapt2(r, hartree_k=HARTREE_K_SAPT2):
    """SAPT2 as printed by Janzen & Aziz (1997), f_2n = scipy's P(2n+1, x): (V, repulsion)
    in K for r > 0 in A (float64)."""
    p = pot.SAPT2_PARAMETERS
    rb = np.asarray(r, np.float64) / BOHR_ANGSTROM
    rep = p["A"] * np.exp(-p["alpha"] * rb + p["beta"] * rb * rb)
    rc = np.minimum(rb, 100.0)
    fret = np.where(rb <= 5.7, 1.0, np.where(
        rb <= 10.0, 0.9860029 + 5.942027e-3 * rb - 7.924833e-4 * rb**2 + 3.172548e-5 * rb**3,
        1.0 + 1.62343e-3 - 2.22097e-3 * rc**0.5 + 1.17323e-3 * rc - 3.00012e-4 * rc**1.5
        + 1.05512e-5 * rc**2))
    x = p["delta"] * rb
    disp = sum(gammainc(m + 1, x) * p[f"C{m}"] / rb**m * (fret if m == 6 else 1.0)
               for m in (6, 8, 10, 12, 14, 16))
    return rep - hartree_k * disp, rep


def paper_aziz(r, q: pot.AzizParameters):
    """The Aziz form as printed (HFD-B, HFDHE2; LM2M2 with its sine add-on): (V, repulsion)
    in K for r > 0 in A (float64)."""
    x = np.asarray(r, np.float64) / q.r_m
    with np.errstate(over="ignore", divide="ignore"):
        damp = np.where(x < q.D, np.exp(-((q.D / x - 1.0) ** 2)), 1.0)
        disp = q.eps * damp * (q.C6 / x**6 + q.C8 / x**8 + q.C10 / x**10)
    rep = q.eps * q.A * np.exp(-q.alpha * x + q.beta * x * x)
    v = rep - np.where(damp > 0.0, disp, 0.0)
    if q.Aa != 0.0:
        inside = (x > q.x1) & (x < q.x2)
        phase = 2 * np.pi * (x - q.x1) / (q.x2 - q.x1) - np.pi / 2
        v = v + np.where(inside, q.eps * q.Aa * (np.sin(phase) + 1), 0.0)
    return v, rep


def paper_potential(name, r):
    return paper_sapt2(r) if name == "SAPT2" else paper_aziz(r, AZIZ[name])


def potential_scale(rep, v):
    return np.abs(rep) + np.abs(rep - v)


def paper_trial(r, p: PairProductParams):
    """T2, T2', T2'', G = T2'/r and L = T2'' + 2 T2'/r as plain sums of their monomials
    (HAQMC Eq. 17-19), each with the sum of the monomials' magnitudes (its error scale)."""
    u = 1.0 / r
    pw = p.a * r**p.alpha if p.a != 0.0 else 0.0 * r
    ks = range(6)
    t2 = [p.a_k[k] * u**k for k in ks] + [p.b * np.log(r), pw]
    d1 = [-k * p.a_k[k] * u ** (k + 1) for k in ks] + [p.b * u, p.alpha * pw * u]
    d2 = ([k * (k + 1) * p.a_k[k] * u ** (k + 2) for k in ks]
          + [-p.b * u * u, p.alpha * (p.alpha - 1.0) * pw * u * u])
    (vt, st), (v1, s1), (v2, s2) = ((sum(m), sum(np.abs(m))) for m in (t2, d1, d2))
    return {"t2": (vt, st), "dt2": (v1, s1), "d2t2": (v2, s2), "g": (v1 * u, s1 * u),
            "l": (v2 + 2.0 * v1 * u, s2 + 2.0 * s1 * u)}


def trial_errors(p: PairProductParams, dtype, r=R_MAIN):
    """max |analytic - oracle| / scale for T2, G, L."""
    coef = an.pair_coefficients(p, dtype)
    s = (r * r).astype(dtype)
    out = np.empty((3, s.size), dtype)
    apply_terms(an.pair_terms_s, s, coef, out)
    oracle = paper_trial(np.sqrt(s.astype(np.float64)), p)
    return [float(np.max(np.abs(out[i] - oracle[k][0]) / oracle[k][1]))
            for i, k in enumerate(("t2", "g", "l"))]


def non_wrapper_ir(fn, *args):
    """LLVM IR of the compiled functions of ``fn`` called with ``args`` (without the
    CPython wrapper).

    A fresh uncached dispatcher of the same source: numba does not show IR of cached code.
    """
    fresh = njit(nogil=True, error_model="numpy")(fn.py_func)
    fresh(*args)
    text = fresh.inspect_llvm(fresh.signatures[0])
    bodies = [chunk.split("\n}\n")[0] for chunk in re.split(r"\n(?=define )", text)
              if chunk.startswith("define")]
    return [b for b in bodies if "@_ZN7cpython" not in b.split("\n")[0]]


# --------------------------------------------------------------------- potentials --
@pytest.mark.parametrize("name", NAMES)
def test_potential_float64_matches_the_papers(name):
    f = an.ANALYTIC_POTENTIALS[name]
    for r_grid in (R_MAIN, R_SHORT, R_FAR):
        v, r = evaluate(f, r_grid, np.float64)
        ref, rep = paper_potential(name, r)
        err = np.abs(v - ref)
        assert np.all(err <= TOL64 * np.maximum(np.abs(ref), 1.0)), (
            name, r[np.argmax(err / np.maximum(np.abs(ref), 1.0))])
        assert np.all(err <= TOL64_SCALED * potential_scale(rep, ref))
    assert f(0.0) == pot.POTENTIALS[name](0.0)  # finite V(0) = A (SAPT2), eps A (Aziz)


@pytest.mark.parametrize("name", NAMES)
def test_numpy_potential_is_the_compiled_float64_code(name):
    """potentials.POTENTIALS[name](r) evaluates the compiled function at s = r * r: the
    same bits, for every shape (0-d gives a float), also r = 0 and huge r."""
    f = an.ANALYTIC_POTENTIALS[name]
    r = np.concatenate([[0.0, 1e-300, 1e-160], R_SHORT, R_MAIN, R_FAR, [1e100, 1e150]])
    v = np.empty(r.size)
    apply(f, r * r, v)
    ref_f = pot.POTENTIALS[name]
    beyond = ref_f(np.array([1e154, 1e160, 1e300]))  # r * r = inf: s held finite
    assert np.all((beyond >= 0.0) & (beyond < 1e-296)), beyond
    np.testing.assert_array_equal(ref_f(r), v)
    np.testing.assert_array_equal(ref_f(r[::-1][::3]), v[::-1][::3])  # strided input
    np.testing.assert_array_equal(ref_f(r[:12].reshape(2, 3, 2)), v[:12].reshape(2, 3, 2))
    scalar = ref_f(float(r[500]))
    assert type(scalar) is float and scalar == v[500]


def test_sapt2_hartree_and_fret_arguments():
    r = np.concatenate([R_SHORT, R_MAIN, R_FAR])
    v = pot.sapt2(r, hartree_k=HARTREE_K)
    ref, rep = paper_sapt2(r, HARTREE_K)
    assert np.all(np.abs(v - ref) <= TOL64_SCALED * potential_scale(rep, ref))
    assert np.all(v <= pot.sapt2(r))  # the larger E_h: more dispersion
    rb = np.array([0.0, 5.7, 5.7000001, 8.0, 10.0, 10.0000001, 50.0, 100.0, 1e3])
    fret = pot.sapt2_fret(rb)
    assert fret[0] == fret[1] == 1.0 and np.all(fret[7:] == fret[7])
    cubic = 0.9860029 + 5.942027e-3 * rb - 7.924833e-4 * rb**2 + 3.172548e-5 * rb**3
    rc = np.minimum(rb, 100.0)
    long = (1.0 + 1.62343e-3 - 2.22097e-3 * rc**0.5 + 1.17323e-3 * rc - 3.00012e-4 * rc**1.5
            + 1.05512e-5 * rc**2)
    np.testing.assert_allclose(fret[2:5], cubic[2:5], rtol=1e-15)
    np.testing.assert_allclose(fret[5:], long[5:], rtol=1e-15)


def test_user_aziz_parameters_use_the_same_code():
    """aziz(r, params) runs the compiled Aziz form with run-time parameters: bit for bit
    the built-ins' compiled forms, and right for a user's parameter set."""
    r = np.concatenate([R_SHORT, R_MAIN])
    for name, q in AZIZ.items():
        v = np.empty(r.size)
        apply(an.ANALYTIC_POTENTIALS[name], r * r, v)
        copy = pot.AzizParameters(**{**q.__dict__, "name": "mine"})
        np.testing.assert_array_equal(pot.aziz(r, copy), v)
    user = pot.AzizParameters(**{**pot.LM2M2.__dict__, "Aa": 0.01, "x1": 0.9, "x2": 1.6,
                                 "name": "user"})
    ref, rep = paper_aziz(r, user)
    assert np.all(np.abs(user(r) - ref) <= TOL64_SCALED * potential_scale(rep, ref))


@pytest.mark.parametrize("name", NAMES)
def test_potential_float32_is_float32_with_float32_error(name):
    f = an.ANALYTIC_POTENTIALS[name]
    ref_f = pot.POTENTIALS[name]
    for r_grid in (R_MAIN, R_SHORT, R_FAR):
        v, r = evaluate(f, r_grid, np.float32)
        assert v.dtype == np.float32
        ref = ref_f(r)
        err = np.abs(v.astype(np.float64) - ref)
        assert np.all(err <= TOL32 * potential_scale(paper_potential(name, r)[1], ref)), name
    # really float32 arithmetic: float32-sized, not float64-sized, differences from the
    # float64 result at the same s, on moderate inputs (|V| not near a zero)
    v32, r = evaluate(f, R_MAIN, np.float32)
    v64 = np.empty(r.size)
    apply(f, r * r, v64)
    moderate = np.abs(v64) > 0.5 * potential_scale(paper_potential(name, r)[1], v64)
    rel = np.abs(v32 - v64)[moderate] / np.abs(v64[moderate])
    assert 1e-9 < rel.max() < TOL32
    assert f.nopython_signatures and all(
        sig.return_type == sig.args[0] for sig in f.nopython_signatures)


@pytest.mark.parametrize("fn", [an.sapt2_s, an.lm2m2_s])
def test_potential_float32_code_has_no_double(fn):
    bodies = non_wrapper_ir(fn, np.float32(9.0))
    assert bodies
    for body in bodies:
        assert "double" not in body, body.split("\n")[0]


def test_sapt2_damping_forms():
    """Both forms of the damped dispersion against scipy's P(2n+1, x) where each is used:
    the tail series for x = delta r < 6.5, the complement for x >= 6.5 (measured <= 7e-15
    relative at 6.5, where its cancellation is largest)."""
    p = pot.SAPT2_PARAMETERS
    delta = p["delta"]
    for x in np.concatenate([np.geomspace(1e-3, 6.49, 40), np.linspace(6.5, 12.0, 23)]):
        rb = x / delta
        ref = sum(gammainc(m + 1, x) * HARTREE_K_SAPT2 * p[f"C{m}"] / rb**m
                  for m in (6, 8, 10, 12, 14, 16))
        ex = np.exp(-x)
        if x < 6.5:
            assert pot._sapt2_disp_tail(x, ex, 1.0) == pytest.approx(ref, rel=1e-14)
        else:
            comp = pot._sapt2_disp_complement(x, ex, 1.0 / rb**2, 1.0)
            assert comp == pytest.approx(ref, rel=2e-14)
    x_t = 6.5 * BOHR_ANGSTROM / delta  # the switch, in angstrom
    v, r = evaluate(an.sapt2_s, x_t * (1.0 + np.linspace(-1e-9, 1e-9, 21)), np.float64)
    assert np.allclose(v, paper_sapt2(r)[0], rtol=1e-14, atol=0.0)


def test_potentials_reject_integer_input():
    with pytest.raises(TypingError, match="float32 or float64"):
        an.hfdb_s(4)


# ----------------------------------------------------------------------- registry --
def test_registry_names_match_reference():
    assert set(an.ANALYTIC_POTENTIALS) == set(an.analytic_potential_names()) == set(NAMES)
    assert set(NAMES) <= set(pot.potential_names())


@pytest.mark.parametrize("name, key", [
    ("SAPT2", "SAPT2"), ("sapt2", "SAPT2"), ("hfd-b", "HFD-B"), ("HFD-B(HE)", "HFD-B"),
    ("hfdb", "HFD-B"), ("hfd-b-he", "HFD-B"), ("HfdHe2", "HFDHE2"), ("lm2m2", "LM2M2"),
])
def test_get_analytic_potential_resolves_like_reference(name, key):
    assert an.get_analytic_potential(name) is an.ANALYTIC_POTENTIALS[key]
    assert pot.get_potential(name) is pot.POTENTIALS[key]


@pytest.mark.parametrize("name", ["LJ", "", "sapt", 3, None])
def test_get_analytic_potential_unknown(name):
    with pytest.raises(FixedQMCError) as info:
        an.get_analytic_potential(name)
    msg = str(info.value)
    assert repr(name) in msg and "HFD-B, HFDHE2, LM2M2, SAPT2" in msg and "tables" in msg


def test_user_registered_potential_has_no_analytic_form(monkeypatch):
    monkeypatch.setitem(pot.POTENTIALS, "my-LM2M2", pot.LM2M2)  # AzizParameters instance
    with pytest.raises(FixedQMCError, match="'my-lm2m2'.*use tables"):
        an.get_analytic_potential("my-lm2m2")
    # a user function registered over a built-in name replaces it for the tables too
    monkeypatch.setitem(pot.POTENTIALS, "SAPT2", lambda r: 0.0 * np.asarray(r))
    with pytest.raises(FixedQMCError, match="'SAPT2'"):
        an.get_analytic_potential("SAPT2")
    # the built-in reference function under another name is still the built-in
    monkeypatch.setitem(pot.POTENTIALS, "mine", pot.hfdhe2)
    assert an.get_analytic_potential("MINE") is an.hfdhe2_s


# ------------------------------------------------------------------ trial function --
MCMILLAN = PairProductParams.mcmillan(2.987)
FIXED_SETS = [
    DEFAULT_PAIR_PARAMS,  # alpha = 1
    MCMILLAN,  # a = 0
    PairProductParams(b=0.3, a=-0.02, alpha=2.0, a_k=(0.5, 1.0, -2.0, 3.0, -4.0, -90.0)),
    PairProductParams(b=-0.7, a=0.05, alpha=0.37, a_k=(0.0, -1.5, 0.0, 0.0, 7.0, -150.0)),
    PairProductParams(b=0.2, a=1.5, alpha=0.0, a_k=(1.0, 0.0, 0.0, 0.0, 0.0, -50.0)),
]


@pytest.mark.parametrize("params", FIXED_SETS)
def test_pair_terms_float64_match_reference(params):
    for err in trial_errors(params, np.float64):
        assert err <= TOL64_SCALED  # measured <= 8e-16


@pytest.mark.parametrize("params", FIXED_SETS)
def test_pair_terms_float32_match_reference(params):
    errs = trial_errors(params, np.float32)
    for err in errs:
        assert err <= TOL32
    assert max(errs) > 1e-9  # float32 arithmetic, not float64


def test_pair_terms_default_relative():
    """DEFAULT_PAIR_PARAMS: T2 and L have no zeros on 1.5..100 A, so plain relative errors
    hold (G = T2'/r has one, near 3.79 A)."""
    for dtype, tol in ((np.float64, TOL64), (np.float32, TOL32)):
        s = (R_MAIN**2).astype(dtype)
        r = np.sqrt(s.astype(np.float64))
        out = np.empty((3, s.size), dtype)
        apply_terms(an.pair_terms_s, s, an.pair_coefficients(DEFAULT_PAIR_PARAMS, dtype), out)
        assert out.dtype == dtype
        oracle = paper_trial(r, DEFAULT_PAIR_PARAMS)
        for i, ref in ((0, oracle["t2"][0]), (2, oracle["l"][0])):
            assert np.max(np.abs(out[i] - ref) / np.abs(ref)) <= tol, (dtype, i)


@pytest.mark.parametrize("params", FIXED_SETS)
def test_numpy_trial_functions_are_the_compiled_terms(params):
    """trial.t2 and trial.pair_laplacian_term are the compiled T2 and L at s = r * r (same
    bits); trial.dt2 and trial.d2t2 come from the same compiled function and match the
    monomial sums."""
    r = R_MAIN
    coef = an.pair_coefficients(params)
    out = np.empty((3, r.size))
    apply_terms(an.pair_terms_s, r * r, coef, out)
    np.testing.assert_array_equal(tr.t2(r, params), out[0])
    np.testing.assert_array_equal(tr.pair_laplacian_term(r, params), out[2])
    oracle = paper_trial(r, params)
    for name, fn in (("dt2", tr.dt2), ("d2t2", tr.d2t2)):
        value, scale = oracle[name]
        assert np.max(np.abs(fn(r, params) - value) / scale) <= TOL64_SCALED, name
    value, scale = oracle["g"]
    assert np.max(np.abs(tr.dt2(r, params) / r - out[1]) / scale) <= TOL64_SCALED
    grid = r[:12].reshape(3, 4)
    for fn in (tr.t2, tr.dt2, tr.d2t2, tr.pair_laplacian_term):
        assert fn(grid, params).shape == (3, 4)
        scalar = fn(float(grid[1, 2]), params)
        assert type(scalar) is float and scalar == fn(grid, params)[1, 2]


@st.composite
def pair_params(draw):
    floats = st.floats
    alpha = draw(st.one_of(st.sampled_from([0.0, 0.5, 1.0, 2.0, 3.0]),
                           floats(-3.0, 3.0)))
    a_k = tuple(draw(floats(-20.0, 20.0)) for _ in range(5)) + (draw(floats(-500.0, -1.0)),)
    return PairProductParams(b=draw(floats(-1.4, 1.0)), a=draw(floats(-0.1, 0.1)),
                             alpha=alpha, a_k=a_k)


@settings(max_examples=12)
@given(params=pair_params())
def test_pair_terms_random_params(params):
    r = np.geomspace(1.5, 100.0, 2001)
    for err in trial_errors(params, np.float64, r):
        assert err <= TOL64_SCALED
    for err in trial_errors(params, np.float32, r):
        assert err <= TOL32


def test_single_term_functions_equal_pair_terms():
    for dtype in DTYPES:
        coef = an.pair_coefficients(DEFAULT_PAIR_PARAMS, dtype)
        for s in (dtype(2.25), dtype(9.0), dtype(14.7), dtype(400.0)):
            assert (an.t2_s(s, coef), an.g_s(s, coef), an.l_s(s, coef)) == an.pair_terms_s(
                s, coef)


def test_pair_terms_float32_code_has_no_double():
    coef32 = an.pair_coefficients(DEFAULT_PAIR_PARAMS, np.float32)
    for body in non_wrapper_ir(an.pair_terms_s, np.float32(9.0), coef32):
        assert "double" not in body, body.split("\n")[0]
    # a float64 coefficient array with float32 s still computes in float32
    coef64 = an.pair_coefficients(DEFAULT_PAIR_PARAMS, np.float64)
    s = np.float32(9.0)
    assert an.pair_terms_s(s, coef64) == an.pair_terms_s(s, coef32)


def test_pair_coefficients_layout_and_errors():
    c = an.pair_coefficients(DEFAULT_PAIR_PARAMS)
    assert c.dtype == np.float64 and c.shape == (an.N_COEF,) == (len(an.COEF_NAMES),)
    named = dict(zip(an.COEF_NAMES, c))
    assert named["b"] == -1.08 and named["a5"] == -118.8 and named["half_alpha"] == 0.5
    assert an.pair_coefficients(MCMILLAN)[an.COEF_NAMES.index("half_alpha")] == 0.0
    assert an.pair_coefficients(DEFAULT_PAIR_PARAMS, np.float32).dtype == np.float32
    with pytest.raises(FixedQMCError, match="float32 or float64"):
        an.pair_coefficients(DEFAULT_PAIR_PARAMS, np.int64)
    with pytest.raises(FixedQMCError, match="PairProductParams"):
        an.pair_coefficients({"b": 1.0})


# ------------------------------------------------------- first-class function use --
@pytest.mark.filterwarnings(TUPLE_SOURCE_WARNING)
@pytest.mark.parametrize("dtype", DTYPES)
def test_first_class_in_parallel_kernel(dtype):
    """The kernels pass these functions as arguments to parallel compiled functions."""
    s = (np.geomspace(1.5, 100.0, 10007) ** 2).astype(dtype)
    coef = an.pair_coefficients(DEFAULT_PAIR_PARAMS, dtype)
    serial_v = np.empty_like(s)
    serial_t = np.empty((3, s.size), dtype)
    apply(an.sapt2_s, s, serial_v)
    apply_terms(an.pair_terms_s, s, coef, serial_t)
    par_v = np.empty_like(s)
    par_t = np.empty((3, s.size), dtype)
    apply_parallel(an.sapt2_s, an.pair_terms_s, s, coef, par_v, par_t)
    np.testing.assert_array_equal(serial_v, par_v)
    np.testing.assert_array_equal(serial_t, par_t)
    assert par_v.dtype == par_t.dtype == dtype
    # the kernels' analytic-source tuple (function, coefficients); a potential ignores coef
    source = np.empty_like(s)
    apply_source((an.sapt2_s, np.empty(0, dtype)), s, source)
    np.testing.assert_array_equal(serial_v, source)
