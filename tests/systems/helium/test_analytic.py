"""Compiled analytic pair functions of s = r**2 against the float64 numpy references.

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
from fixedqmc.systems.helium.trial import (
    DEFAULT_PAIR_PARAMS,
    PairProductParams,
    dt2,
    pair_laplacian_term,
    t2,
)

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


def repulsion(name, r):
    """The exponential repulsion of potential ``name`` (K), float64."""
    if name == "SAPT2":
        p = pot.SAPT2_PARAMETERS
        rb = r / pot.BOHR_ANGSTROM
        return p["A"] * np.exp(-p["alpha"] * rb + p["beta"] * rb * rb)
    q = {"HFD-B": pot.HFDB_HE, "HFDHE2": pot.HFDHE2, "LM2M2": pot.LM2M2}[name]
    x = r / q.r_m
    return q.eps * q.A * np.exp(-q.alpha * x + q.beta * x * x)


def potential_scale(name, r, ref):
    rep = repulsion(name, r)
    return np.abs(rep) + np.abs(rep - ref)


def trial_scales(r, p: PairProductParams):
    """Sum of |monomials| of T2, T2'/r and T2'' + 2 T2'/r (as the reference forms them)."""
    u = 1.0 / r
    k = np.arange(6)[:, None]
    ak = np.asarray(p.a_k)[:, None]
    pw = np.abs(p.a) * r**p.alpha if p.a != 0.0 else 0.0
    t2s = np.sum(np.abs(ak) * u**k, axis=0) + np.abs(p.b * np.log(r)) + pw
    d1 = (np.sum(np.abs(k * ak) * u ** (k + 1), axis=0) + np.abs(p.b) * u
          + abs(p.alpha) * pw * u)
    d2 = (np.sum(np.abs(k * (k + 1) * ak) * u ** (k + 2), axis=0) + np.abs(p.b) * u * u
          + abs(p.alpha * (p.alpha - 1.0)) * pw * u * u)
    return t2s, d1 * u, d2 + 2.0 * d1 * u


def trial_errors(p: PairProductParams, dtype, r=R_MAIN):
    """max |analytic - reference| / scale for T2, G, L."""
    coef = an.pair_coefficients(p, dtype)
    s = (r * r).astype(dtype)
    out = np.empty((3, s.size), dtype)
    apply_terms(an.pair_terms_s, s, coef, out)
    rr = np.sqrt(s.astype(np.float64))
    refs = (t2(rr, p), dt2(rr, p) / rr, pair_laplacian_term(rr, p))
    return [float(np.max(np.abs(out[i] - refs[i]) / sc))
            for i, sc in enumerate(trial_scales(rr, p))]


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
def test_potential_float64_matches_reference(name):
    f = an.ANALYTIC_POTENTIALS[name]
    ref_f = pot.POTENTIALS[name]
    for r_grid in (R_MAIN, R_SHORT, R_FAR):
        v, r = evaluate(f, r_grid, np.float64)
        ref = ref_f(r)
        err = np.abs(v - ref)
        assert np.all(err <= TOL64 * np.maximum(np.abs(ref), 1.0)), (
            name, r[np.argmax(err / np.maximum(np.abs(ref), 1.0))])
        assert np.all(err <= TOL64_SCALED * potential_scale(name, r, ref))
    assert f(0.0) == pytest.approx(ref_f(0.0), rel=1e-15)  # finite V(0), like the reference


@pytest.mark.parametrize("name", NAMES)
def test_potential_float32_is_float32_with_float32_error(name):
    f = an.ANALYTIC_POTENTIALS[name]
    ref_f = pot.POTENTIALS[name]
    for r_grid in (R_MAIN, R_SHORT, R_FAR):
        v, r = evaluate(f, r_grid, np.float32)
        assert v.dtype == np.float32
        ref = ref_f(r)
        err = np.abs(v.astype(np.float64) - ref)
        assert np.all(err <= TOL32 * potential_scale(name, r, ref)), name
    # really float32 arithmetic: float32-sized, not float64-sized, differences from the
    # float64 result at the same s, on moderate inputs (|V| not near a zero)
    v32, r = evaluate(f, R_MAIN, np.float32)
    v64 = np.empty(r.size)
    apply(f, r * r, v64)
    moderate = np.abs(v64) > 0.5 * potential_scale(name, r, v64)
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
        ref = sum(gammainc(m + 1, x) * pot.HARTREE_K_SAPT2 * p[f"C{m}"] / rb**m
                  for m in (6, 8, 10, 12, 14, 16))
        ex = np.exp(-x)
        if x < 6.5:
            assert an._sapt2_disp_tail(x, ex, 1.0) == pytest.approx(ref, rel=1e-14)
        else:
            comp = an._sapt2_disp_complement(x, ex, 1.0 / rb**2, 1.0)
            assert comp == pytest.approx(ref, rel=2e-14)
    x_t = 6.5 * pot.BOHR_ANGSTROM / delta  # the switch, in angstrom
    v, r = evaluate(an.sapt2_s, x_t * (1.0 + np.linspace(-1e-9, 1e-9, 21)), np.float64)
    assert np.allclose(v, pot.sapt2(r), rtol=1e-14, atol=0.0)


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
        for i, ref in ((0, t2(r, DEFAULT_PAIR_PARAMS)),
                       (2, pair_laplacian_term(r, DEFAULT_PAIR_PARAMS))):
            assert np.max(np.abs(out[i] - ref) / np.abs(ref)) <= tol, (dtype, i)


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
