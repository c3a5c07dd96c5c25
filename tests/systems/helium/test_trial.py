"""Pair-product trial function: analytic derivatives vs finite differences, local energy,
normalisability.

Finite-difference tolerances come from the step h: a central first difference has error
<= h^2/6 |f'''| + eps |f| / h, a central second difference <= h^2/12 |f''''| + 4 eps |f| / h^2;
|f'''| and |f''''| are estimated with a coarse step H = 1e-2 and a safety factor of 10.
"""

import numpy as np
import pytest

from fixedqmc.systems.helium import (
    DEFAULT_PAIR_PARAMS,
    HBAR2_2M,
    PairProductParams,
    d2t2,
    dimer_local_energy,
    dt2,
    grad_lap_ln_psi,
    ln_psi,
    local_energy_pair_sum,
    pair_laplacian_term,
    pair_psi,
    pair_psi_derivatives,
    pair_psi_laplacian,
    sapt2,
    t2,
)
from tests.systems.helium.dimer_reference import dimer_ground_state, dimer_vmc_energy

EPS = np.finfo(np.float64).eps
H = 1e-4  # finite-difference step, angstrom
H_COARSE = 1e-2  # step for estimating higher derivatives in the error bound
SAFETY = 10.0


def third_derivative_estimate(f, x):
    h = H_COARSE
    return (f(x + 2 * h) - 2 * f(x + h) + 2 * f(x - h) - f(x - 2 * h)) / (2 * h**3)


def fourth_derivative_estimate(f, x):
    h = H_COARSE
    return (f(x + 2 * h) - 4 * f(x + h) + 6 * f(x) - 4 * f(x - h) + f(x - 2 * h)) / h**4


def first_diff(f, x, h=H):
    """Central first difference and its error bound derived from h."""
    value = (f(x + h) - f(x - h)) / (2 * h)
    bound = h**2 / 6 * np.abs(third_derivative_estimate(f, x)) + EPS * np.abs(f(x)) / h
    return value, SAFETY * bound + 1e-300


def second_diff(f, x, h=H):
    """Central second difference and its error bound derived from h."""
    value = (f(x + h) - 2 * f(x) + f(x - h)) / h**2
    bound = h**2 / 12 * np.abs(fourth_derivative_estimate(f, x)) + 4 * EPS * np.abs(f(x)) / h**2
    return value, SAFETY * bound + 1e-300


def random_params(rng) -> PairProductParams:
    """Full Eq. 17 form: every term present, a_5 < 0 so psi -> 0 at r -> 0."""
    a_k = rng.uniform(-1.0, 1.0, 6) * np.array([1.0, 3.0, 10.0, 30.0, 100.0, 0.0])
    a_k[5] = -rng.uniform(20.0, 200.0)
    return PairProductParams(
        b=rng.uniform(-2.0, 2.0), a=-rng.uniform(0.005, 0.5), alpha=rng.uniform(0.3, 2.5),
        a_k=tuple(a_k),
    )


def t2_options():
    rng = np.random.default_rng(20240611)
    options = [("random-%d" % i, random_params(rng)) for i in range(5)]
    options += [
        ("mcmillan", PairProductParams.mcmillan(2.6)),
        ("mcmillan+tail", PairProductParams.mcmillan(3.0, a=-0.02, alpha=1.0, b_log=-1.0)),
        ("default", DEFAULT_PAIR_PARAMS),
        ("log-only", PairProductParams(b=0.7)),
        ("power-only", PairProductParams(a=-0.3, alpha=1.7)),
        ("inverse-only", PairProductParams(a_k=(0.2, -0.5, 1.0, -2.0, 3.0, -9.0))),
    ]
    return options


R_GRID = np.linspace(2.0, 8.0, 25)


@pytest.mark.parametrize("label, params", t2_options())
def test_dt2_matches_finite_difference(label, params):
    fd, bound = first_diff(lambda r: t2(r, params), R_GRID)
    err = np.abs(dt2(R_GRID, params) - fd)
    assert np.all(err <= bound), (label, np.max(err / bound))


@pytest.mark.parametrize("label, params", t2_options())
def test_d2t2_matches_finite_differences(label, params):
    analytic = d2t2(R_GRID, params)
    fd1, bound1 = first_diff(lambda r: dt2(r, params), R_GRID)
    assert np.all(np.abs(analytic - fd1) <= bound1), label
    fd2, bound2 = second_diff(lambda r: t2(r, params), R_GRID)
    assert np.all(np.abs(analytic - fd2) <= bound2), label


@pytest.mark.parametrize("label, params", t2_options())
def test_pair_psi_derivatives_and_fig8_kernel(label, params):
    psi, d1, d2 = pair_psi_derivatives(R_GRID, params)
    fd1, b1 = first_diff(lambda r: pair_psi(r, params), R_GRID)
    fd2, b2 = second_diff(lambda r: pair_psi(r, params), R_GRID)
    assert np.all(np.abs(d1 - fd1) <= b1), label
    assert np.all(np.abs(d2 - fd2) <= b2), label
    lap_t2 = pair_laplacian_term(R_GRID, params)
    direct = d2t2(R_GRID, params) + 2 * dt2(R_GRID, params) / R_GRID
    assert np.allclose(lap_t2, direct, rtol=1e-14)
    expected = psi * (lap_t2 + dt2(R_GRID, params) ** 2)
    assert np.allclose(pair_psi_laplacian(R_GRID, params), expected, rtol=1e-12, atol=0)


def test_printed_eq19_is_wrong_and_ours_is_right():
    """HAQMC's Eq. 19 as printed disagrees with differentiating Eq. 18; the corrected one agrees."""
    params = random_params(np.random.default_rng(7))
    r = R_GRID
    b, a, al, c = params.b, params.a, params.alpha, params.a_k
    u = 1 / r
    bracket18 = b / r + a * al * r ** (al - 1) - sum(k * c[k] * u ** (k + 1) for k in range(6))
    printed = np.exp(t2(r, params)) * (
        -b / r**2
        + a * (al - 1) * al * r ** (al - 2)
        - sum(k * c[k] * u ** (k + 1) for k in range(6))
    ) + np.exp(t2(r, params)) * bracket18 * bracket18
    fd, bound = second_diff(lambda x: pair_psi(x, params), r)
    assert np.any(np.abs(printed - fd) > 100 * bound)
    assert np.all(np.abs(pair_psi_derivatives(r, params)[2] - fd) <= bound)


def test_scalar_and_shape():
    p = DEFAULT_PAIR_PARAMS
    assert isinstance(t2(3.0, p), float) and isinstance(dt2(3.0, p), float)
    r = np.linspace(2, 5, 6).reshape(2, 3)
    for f in (t2, dt2, d2t2, pair_laplacian_term, pair_psi, pair_psi_laplacian):
        assert f(r, p).shape == (2, 3)
    assert p.t2(3.0) == t2(3.0, p) and p.pair_laplacian_term(3.0) == pair_laplacian_term(3.0, p)


# -- a whole configuration ----------------------------------------------------------------


def random_configuration(rng, n_atoms=4, min_dist=2.6):
    while True:
        x = rng.uniform(-3.5, 3.5, (n_atoms, 3))
        d = np.linalg.norm(x[:, None] - x[None], axis=-1)
        if np.min(d[np.triu_indices(n_atoms, 1)]) > min_dist:
            return x


@pytest.mark.parametrize("label, params", [t2_options()[0], t2_options()[6], t2_options()[7]])
def test_configuration_gradient_and_laplacian_fd(label, params):
    rng = np.random.default_rng(1234)
    x = random_configuration(rng)
    grad, lap = grad_lap_ln_psi(x, params)
    assert grad.shape == (4, 3) and lap.shape == (4,)
    for i in range(4):
        lap_fd, lap_bound = 0.0, 0.0
        for k in range(3):
            def f(s, i=i, k=k):
                y = x.copy()
                y[i, k] += s
                return ln_psi(y, params)

            g_fd, g_bound = first_diff(f, 0.0)
            assert abs(grad[i, k] - g_fd) <= g_bound, (label, i, k)
            d2, b2 = second_diff(f, 0.0)
            lap_fd += d2
            lap_bound += b2
        assert abs(lap[i] - lap_fd) <= lap_bound, (label, i)
    # Newton's third law for pair terms: gradients sum to zero
    assert np.allclose(grad.sum(axis=0), 0.0, atol=1e-12)


def test_local_energy_he2_equals_direct_laplacian_of_psi():
    """E_kin = -hbar2/2m (lap psi)/psi with the Laplacian from finite differences of psi."""
    params = DEFAULT_PAIR_PARAMS
    x = np.array([[0.1, -0.2, 0.3], [1.9, 1.7, -1.2]])  # r = 3.0166 A

    def psi(y):
        return np.exp(ln_psi(y, params))

    lap_fd, bound = 0.0, 0.0
    for i in range(2):
        for k in range(3):
            def f(s, i=i, k=k):
                y = x.copy()
                y[i, k] += s
                return psi(y)

            d2, b2 = second_diff(f, 0.0)
            lap_fd += d2
            bound += b2
    e_kin_direct = -HBAR2_2M * lap_fd / psi(x)
    e_kin, e_pot = local_energy_pair_sum(x, params, "SAPT2", HBAR2_2M)
    assert abs(e_kin - e_kin_direct) <= HBAR2_2M * bound / psi(x)
    r = np.linalg.norm(x[1] - x[0])
    assert e_pot == pytest.approx(sapt2(r), rel=1e-14)  # array vs scalar exp: an ulp
    e_dimer = dimer_local_energy(r, params, "SAPT2", HBAR2_2M)
    assert e_kin + e_pot == pytest.approx(e_dimer, rel=1e-13)


def test_local_energy_invariances_and_potential_argument():
    rng = np.random.default_rng(99)
    x = random_configuration(rng, n_atoms=5)
    p = DEFAULT_PAIR_PARAMS
    e = np.array(local_energy_pair_sum(x, p, "SAPT2"))
    q, _ = np.linalg.qr(rng.normal(size=(3, 3)))
    moved = x[rng.permutation(5)] @ q.T + np.array([1.0, -2.0, 0.5])
    assert np.allclose(local_energy_pair_sum(moved, p, "SAPT2"), e, rtol=1e-12)
    assert np.allclose(local_energy_pair_sum(x, p, sapt2), e, rtol=0)
    e_lit = local_energy_pair_sum(x, p, "SAPT2", hbar2_2m=6.0596)
    assert e_lit[0] == pytest.approx(e[0] * 6.0596 / HBAR2_2M, rel=1e-13)
    with pytest.raises(ValueError, match="allowed"):
        local_energy_pair_sum(x, p, "nope")


@pytest.mark.parametrize(
    "positions, match",
    [(np.zeros((1, 3)), "n_atoms >= 2"), (np.zeros((3, 2)), "shape"),
     (np.zeros((2, 3)), "coincide"), (np.array([[0, 0, 0], [np.nan, 0, 0]]), "finite")],
)
def test_local_energy_rejects_bad_configurations(positions, match):
    with pytest.raises(ValueError, match=match):
        local_energy_pair_sum(positions, DEFAULT_PAIR_PARAMS)


# -- normalisability and the default parameters ------------------------------------------


def radial_norm(params, r_max):
    r = np.concatenate([np.linspace(1e-3, 20.0, 20001), np.geomspace(20.0, r_max, 20001)[1:]])
    w = pair_psi(r, params) ** 2 * r**2
    return np.trapezoid(w, r), w


def test_default_params_normalisable_at_both_ends():
    p = DEFAULT_PAIR_PARAMS
    assert p.is_normalisable()
    assert p.check_normalisable() is p
    n1, w = radial_norm(p, 3000.0)
    tail_r = np.linspace(3000.0, 1e5, 100001)
    tail = np.trapezoid(pair_psi(tail_r, p) ** 2 * tail_r**2, tail_r)
    assert np.isfinite(n1) and n1 > 0
    assert tail < 1e-10 * n1  # converged at large r
    assert w[0] == 0.0 and w[-1] < 1e-20 * w.max()  # psi^2 r^2 -> 0 at both ends


def test_default_params_bind_he2_with_sapt2():
    """Variational He2 energy (radial quadrature) is negative and above the exact ground state."""
    e_vmc = dimer_vmc_energy(DEFAULT_PAIR_PARAMS, "SAPT2", hbar2_2m=HBAR2_2M).energy
    e_exact = dimer_ground_state("SAPT2", hbar2_2m=HBAR2_2M).energy
    assert -2.0e-3 < e_exact < -1.7e-3  # about -1.82 mK
    assert e_exact < e_vmc < -1.5e-3  # variational, and bound (measured -1.565 mK)


def test_pure_mcmillan_not_normalisable_for_a_cluster():
    p = PairProductParams.mcmillan(2.6)
    assert not p.is_normalisable()
    with pytest.raises(ValueError, match="long-range term must decay"):
        p.check_normalisable()
    assert PairProductParams.mcmillan(2.6, a=-0.01).is_normalisable()
    assert PairProductParams.mcmillan(2.6, b_log=-2.0).is_normalisable()


@pytest.mark.parametrize(
    "kwargs, match",
    [
        (dict(a=0.1, alpha=1.0), "must decay"),
        (dict(a=-0.1, alpha=-1.0), "must decay"),  # a r^-1 is short-range, no tail left
        (dict(b=-1.0), "must decay"),
    ],
)
def test_long_range_validation(kwargs, match):
    p = PairProductParams(a_k=(0, 0, 0, 0, 0, -10.0), **kwargs)
    assert not p.is_normalisable()
    with pytest.raises(ValueError, match=match):
        p.check_normalisable()


@pytest.mark.parametrize(
    "kwargs, match",
    [
        (dict(a_k=(0, 0, 0, 0, 0, 10.0)), "diverges as r -> 0"),
        (dict(a_k=(0, -5.0, 0, 2.0)), "diverges as r -> 0"),
        (dict(b=-1.6), "not integrable at r -> 0"),
        (dict(a=2.0, alpha=-6.0, a_k=(0, 0, 0, 0, 0, -1.0)), "diverges as r -> 0"),
        (dict(b=float("nan")), "finite"),
        (dict(a_k=(0,) * 7), "at most 6"),
    ],
)
def test_short_range_validation_at_construction(kwargs, match):
    with pytest.raises(ValueError, match=match):
        PairProductParams(**kwargs)


def test_params_dict_roundtrip_and_padding():
    p = PairProductParams(b=-1.0, a=-0.01, alpha=1.0, a_k=[0.0, 0.0, -2.0])
    assert p.a_k == (0.0, 0.0, -2.0, 0.0, 0.0, 0.0)
    assert PairProductParams.from_dict(p.as_dict()) == p
    with pytest.raises(ValueError, match="> 0"):
        PairProductParams.mcmillan(-1.0)


def test_mcmillan_vmc_functions_finite():
    """McMillan psi: T2 and derivatives, psi^2 r^2 and psi^2 E_L finite down to r -> 0."""
    p = PairProductParams.mcmillan(2.6)
    r = np.geomspace(1e-2, 100.0, 2001)
    for f in (t2, dt2, d2t2, pair_laplacian_term):
        assert np.all(np.isfinite(f(r, p)))
    psi2 = pair_psi(r, p) ** 2
    density = psi2 * r**2
    e_l = dimer_local_energy(r, p, "SAPT2")
    assert np.all(np.isfinite(density)) and np.all(np.isfinite(psi2 * e_l))
    assert density[0] == 0.0 and np.all(pair_psi(r, p) <= 1.0)
    # the radial integral to a finite box is finite; local energy finite where psi matters
    box = np.linspace(0.0, 50.0, 50001)[1:]
    assert np.isfinite(np.trapezoid(pair_psi(box, p) ** 2 * box**2, box))
    relevant = psi2 > 1e-12
    assert np.all(np.isfinite(e_l[relevant])) and np.max(np.abs(e_l[relevant])) < 1e5
