"""Bounds through the host's linear algebra (verified inverses, perturbed inverses, ln|det|)
and a bound run's words on the host, against exact arithmetic on fractions and decimals."""

import decimal
import math
from fractions import Fraction

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from fixedqmc.errors import FixedQMCError
from fixedqmc.numerics import bound_linalg as BL
from fixedqmc.numerics import bound_words as BW
from fixedqmc.systems import determinants as det


def exact_inverse(A) -> list:
    """Gauss-Jordan on fractions: the exact inverse of a matrix of float64s or fractions
    (None: singular)."""
    n = len(A)
    m = [[Fraction(x) for x in row] + [Fraction(int(i == j)) for j in range(n)]
         for i, row in enumerate(A)]
    for c in range(n):
        p = next((r for r in range(c, n) if m[r][c] != 0), None)
        if p is None:
            return None
        m[c], m[p] = m[p], m[c]
        piv = m[c][c]
        m[c] = [x / piv for x in m[c]]
        for r in range(n):
            if r != c and m[r][c] != 0:
                f = m[r][c]
                m[r] = [a - f * b for a, b in zip(m[r], m[c])]
    return [row[n:] for row in m]


def exact_det(A) -> Fraction:
    n = len(A)
    m = [[Fraction(float(x)) for x in row] for row in A]
    d = Fraction(1)
    for c in range(n):
        p = next((r for r in range(c, n) if m[r][c] != 0), None)
        if p is None:
            return Fraction(0)
        if p != c:
            m[c], m[p] = m[p], m[c]
            d = -d
        d *= m[c][c]
        for r in range(c + 1, n):
            f = m[r][c] / m[c][c]
            m[r] = [a - f * b for a, b in zip(m[r], m[c])]
    return d


def ln_abs(x: Fraction) -> decimal.Decimal:
    with decimal.localcontext() as ctx:
        ctx.prec = 60
        return (decimal.Decimal(abs(x.numerator)).ln()
                - decimal.Decimal(x.denominator).ln())


def within(x, y, bound) -> bool:
    """|x - y| <= bound, exactly (fractions; an infinite bound holds)."""
    return bound == math.inf or abs(Fraction(x) - Fraction(y)) <= Fraction(bound)


def well_scaled(A) -> bool:
    """A condition number below 1e8 and entries far from underflow (a subnormal matrix's
    inverse overflows, so its bounds are rightly infinite)."""
    return np.linalg.cond(A) < 1e8 and np.abs(A).max() > 1e-100


@st.composite
def matrices(draw, n_max=4):
    """A float64 matrix of order 1..n_max with entries of mixed scale, made near-singular
    at times (a row close to a multiple of another: the ill-conditioned Slater matrices of
    walkers near a node)."""
    n = draw(st.integers(1, n_max))
    entries = st.floats(-4, 4, allow_nan=False, allow_infinity=False)
    A = np.array([[draw(entries) for _ in range(n)] for _ in range(n)])
    A += np.eye(n) * draw(st.sampled_from([0.0, 1.0, 8.0]))
    if n > 1 and draw(st.booleans()):
        A[1] = A[0] * draw(st.floats(-2, 2)) + draw(st.sampled_from([1e-3, 1e-6, 1e-9])) * A[1]
    return A


def perturbation(draw, A, scale):
    """``(A + Delta, D)`` with float64 ``A + Delta`` and ``D >= |Delta|`` exactly."""
    frac = np.array([[draw(st.floats(-1, 1)) for _ in range(A.shape[1])]
                     for _ in range(A.shape[0])])
    B = A + frac * scale * (np.abs(A) + 1e-3)
    D = np.array([[float(abs(Fraction(b) - Fraction(a))) for a, b in zip(ra, rb)]
                  for ra, rb in zip(A, B)])
    return B, np.nextafter(D, np.inf)


@settings(max_examples=80, deadline=None)
@given(matrices())
def test_verified_inverse_encloses_the_exact_inverse(A):
    """``|X - A^-1| <= E`` and ``|A^-1| <= Z`` for numpy's inverse X (fact 1), and E is
    finite for every well-conditioned matrix."""
    inv = exact_inverse(A)
    if inv is None:
        return
    X = det.fresh_inverse(A[None])[2][0]  # (the identity where LU finds A singular)
    E, Z = BL.inverse_enclosure(A[None], X[None])
    n = A.shape[0]
    for i in range(n):
        for j in range(n):
            assert within(X[i, j], inv[i][j], E[0, i, j])
            assert Z[0, i, j] == math.inf or abs(inv[i][j]) <= Fraction(Z[0, i, j])
    if well_scaled(A):
        assert np.isfinite(E).all()


@settings(max_examples=60, deadline=None)
@given(st.data(), matrices(n_max=3), st.sampled_from([1e-12, 1e-8, 1e-4]))
def test_perturbed_inverse_and_log_det_bound_every_perturbation(data, A, scale):
    """For ``|Delta| <= D``: ``|(A + Delta)^-1 - A^-1| <= F`` (fact 2) and ``ln|det|``
    of numpy's LU within ``rad`` of the exact one (fact 3), checked in fractions and
    60-digit decimals."""
    inv = exact_inverse(A)
    if inv is None:
        return
    B, D = perturbation(data.draw, A, scale)
    inv_b = exact_inverse(B)
    _, Z = BL.inverse_enclosure(A[None], det.fresh_inverse(A[None])[2])
    F, q = BL.perturbed_inverse(Z, D[None])
    n = A.shape[0]
    if inv_b is not None:
        for i in range(n):
            for j in range(n):
                assert within(inv_b[i][j], inv[i][j], F[0, i, j])
    s, rad = BL.log_abs_det(A[None], Z)
    if well_scaled(A):
        assert np.isfinite(rad[0])
    if np.isfinite(rad[0]):
        with decimal.localcontext() as ctx:
            ctx.prec = 60
            gap = abs(decimal.Decimal(float(s[0])) - ln_abs(exact_det(A)))
            assert gap <= decimal.Decimal(float(rad[0]))


def test_first_order_perturbation_bound_is_attained():
    """Tightness: a perturbation with the signs of ``A^-1`` (the worst case of element
    (0, 0)) moves that element of the inverse by at least half the bound."""
    A = np.array([[1.0, 0.999], [1.0, 1.001]])  # condition ~ 2e3
    X = np.linalg.inv(A)
    D = np.full((2, 2), 1e-9)
    Delta = -D * np.sign(np.outer(X[:, 0], X[0, :])).T  # sum X0k D_kl X_l0, all one sign
    exact = exact_inverse(A)
    moved = exact_inverse([[Fraction(a) + Fraction(d) for a, d in zip(ra, rd)]
                           for ra, rd in zip(A, Delta)])  # A + Delta exactly
    change = abs(moved[0][0] - exact[0][0])
    _, Z = BL.inverse_enclosure(A[None], X[None])
    F, _ = BL.perturbed_inverse(Z, D[None])
    assert change <= Fraction(F[0, 0, 0]) <= 2 * change


@settings(max_examples=40, deadline=None)
@given(st.data(), matrices(n_max=3), st.sampled_from([1e-10, 1e-6]))
def test_fresh_inverse_bound_covers_both_shares(data, Mx, scale):
    """The Slater matrix's bound words: the bound run's value ``V`` within ``r`` of the
    exact ``M_x``, the trial's ``A`` within ``b``.  Float64's share bounds the value's
    inverse and ln|det| against ``M_x``'s, the trial's share numpy's inverse and slogdet of
    ``A`` (fractions and decimals); and :func:`contraction_bound` covers the exact
    contraction of perturbed derivative rows with each side's inverse."""
    inv = exact_inverse(Mx)
    if inv is None:
        return
    V, r = perturbation(data.draw, Mx, scale * 1e-3)
    A, b = perturbation(data.draw, Mx, scale)
    sign, ld, Bw, (v, t) = det.fresh_inverse_bound(BW.join(V, r, b)[None], A[None])
    Bv, r_inv, b_inv = BW.split(Bw)
    ldv, r_ld, b_ld = BW.split(ld)
    n = Mx.shape[0]
    _, ld_trial, X_trial = (a[0] for a in det.fresh_inverse(A[None]))
    for i in range(n):
        for j in range(n):
            assert within(Bv[0, i, j], inv[i][j], r_inv[0, i, j])
            assert within(X_trial[i, j], inv[i][j], b_inv[0, i, j])
    with decimal.localcontext() as ctx:
        ctx.prec = 60
        exact = ln_abs(exact_det(Mx))
        for got, share in ((ldv[0], r_ld[0]), (ld_trial, b_ld[0])):
            if np.isfinite(share):
                assert abs(decimal.Decimal(float(got)) - exact) <= decimal.Decimal(float(share))
    # derivative rows G_x (n, n_d, n) and a perturbed copy within bG
    Gx = np.array(data.draw(st.lists(st.floats(-3, 3), min_size=n * 2 * n,
                                     max_size=n * 2 * n))).reshape(1, n, 2, n)
    G, bG = perturbation(data.draw, Gx.reshape(n * 2, n), scale)
    G, bG = G.reshape(1, n, 2, n), bG.reshape(1, n, 2, n)
    for side in (v, t):
        bound = det.contraction_bound(G, side, bG)
        if not np.isfinite(side.X).all():  # (an inverse that overflowed: no bound)
            assert not np.isfinite(bound).any()
            continue
        for i in range(n):
            for d in range(2):
                got = sum(Fraction(G[0, i, d, k]) * Fraction(side.X[0, k, i])
                          for k in range(n))
                want = sum(Fraction(Gx[0, i, d, k]) * inv[k][i] for k in range(n))
                assert within(got, want, bound[0, i, d])


def test_bounds_of_larger_matrices_are_finite_and_hold():
    """Orders 2 to 32 (pivoting permutes rows): finite bounds for well-conditioned
    matrices, and ln|det| within its radius of a 60-digit reference."""
    rng = np.random.default_rng(3)
    for n in (2, 5, 8, 32):
        A = rng.normal(size=(n, n)) + 2 * np.eye(n)
        E, Z = BL.inverse_enclosure(A[None], np.linalg.inv(A)[None])
        s, rad = BL.log_abs_det(A[None], Z)
        assert np.isfinite(E).all() and np.isfinite(rad).all() and rad[0] < 1e-8
        with decimal.localcontext() as ctx:
            ctx.prec = 60
            assert abs(decimal.Decimal(float(s[0])) - ln_abs(exact_det(A))) <= decimal.Decimal(
                float(rad[0]))


def test_bad_shapes_are_refused():
    with pytest.raises(FixedQMCError, match="square matrices"):
        BL.inverse_enclosure(np.ones((2, 3)), np.ones((3, 2)))


# ----------------------------------------------------------------- bound words --
@settings(max_examples=200, deadline=None)
@given(st.lists(st.tuples(st.floats(-1e6, 1e6), st.floats(0, 1e-3), st.floats(0, 1e-3)),
                min_size=1, max_size=5))
def test_words_keep_both_shares_and_sums_bound_the_trials_sum(terms):
    """``join`` then ``split`` gives back shares at least as large (at most 2**-15 looser);
    ``add`` bounds float64's sum of the values and the trial's float64 sum of values
    within their shares of the exact ones (here the values themselves)."""
    values = [v for v, _, _ in terms]
    trial = [v * (1 + b) for v, _, b in terms]
    shares = [(r * abs(v), float(abs(Fraction(t) - Fraction(v))) * (1 + 2.0 ** -52))
              for (v, r, _), t in zip(terms, trial)]
    xs = [BW.join(np.array([v]), np.array([r]), np.array([b]))
          for v, (r, b) in zip(values, shares)]
    for v, (r, b), w in zip(values, shares, xs):
        v2, r2, b2 = BW.split(w)
        assert v2[0] == v and r2[0] >= r and b2[0] >= b
        if r + b > 2.0 ** -900:  # (below 2**-960 both shares are the whole bound)
            assert r2[0] + b2[0] <= (r + b) * (1 + 2.0 ** -14)
    tv, tr, tb = BW.split(BW.add(*xs))
    t_sum = trial[0]
    for t in trial[1:]:
        t_sum = t_sum + t
    exact = sum(Fraction(v) for v in values)
    assert within(tv[0], exact, tr[0]) and within(t_sum, exact, tb[0])
    plain = BW.add(*[np.array([v]) for v in values])
    v_sum = values[0]
    for v in values[1:]:
        v_sum = v_sum + v
    assert plain[0] == v_sum == tv[0]  # float64 arrays: the plain sum, in order


def test_negation_keeps_the_bound_and_infinite_bounds_stay_apart():
    w = BW.join(np.array([2.0, 3.0]), np.array([0.0, np.inf]), np.array([1e-3, 0.0]))
    n = BW.negate(w)
    assert (n.real == [-2.0, -3.0]).all() and (n.imag == w.imag).all()
    assert np.isinf(n.imag[1]) and n.real[1] == -3.0  # not a NaN value
    assert (BW.negate(np.array([1.0])) == [-1.0]).all()
