"""Optimisation on fixed samples (fixedqmc.qmc.optimize): the quadratic local energy and the
variance's derivatives against direct evaluation and finite differences, and both methods
on the harmonic oscillator, whose exact ground state lies in the trial family."""

import numpy as np
import pytest

from fixedqmc.qmc.optimize import (QuadraticEnergy, linear_method_matrices, linear_method_step,
                                   minimise_variance, reweighted)

OMEGA = 1.3  # psi_c = exp(-c x**2) is exact at c = omega / 2, E = omega / 2


def oscillator(c0: float, n: int, seed: int = 0):
    """1D oscillator H = -1/2 d2/dx2 + omega**2 x**2 / 2 in 3 uncoupled particles (ln psi
    = c phi, phi = -sum x**2): samples of |psi_c0|**2 and their quadratic local energy."""
    x = np.random.default_rng(seed).normal(scale=np.sqrt(1 / (4 * c0)), size=(n, 3, 1))
    pos = np.concatenate([x, np.zeros((n, 3, 2))], axis=2)  # (n, N=3, 3)
    r2 = np.sum(x[..., 0] ** 2, axis=1)
    phi = -r2[:, None]
    grad_phi = (-2 * pos)[:, None]
    lap_phi = np.full((n, 1), -2.0 * 3)
    e_l = local_energy(c0, r2)
    return QuadraticEnergy.from_samples([c0], e_l, -2 * c0 * pos, phi, grad_phi, lap_phi, 0.5), r2


def local_energy(c, r2):
    """E_L of psi_c: 3 c + r2 (omega**2 / 2 - 2 c**2)."""
    return 3 * c + r2 * (OMEGA ** 2 / 2 - 2 * c ** 2)


def test_quadratic_energy_equals_direct_local_energies():
    q, r2 = oscillator(0.4, 200)
    for c in (0.1, 0.4, 0.9):
        assert np.allclose(q.energies([c]), local_energy(c, r2), rtol=1e-13, atol=1e-13)


def test_variance_gradient_and_hessian_against_finite_differences():
    rng = np.random.default_rng(3)
    n, k = 300, 4
    a = rng.normal(size=(n, k, k))
    q = QuadraticEnergy(rng.normal(size=k), rng.normal(size=n), rng.normal(size=(n, k)),
                        0.1 * (a + a.transpose(0, 2, 1)), rng.normal(size=(n, k)))
    c = q.c0 + 0.3 * rng.normal(size=k)
    v, g, h = q.variance(c)
    eps = 1e-6
    for j in range(k):
        dc = np.zeros(k)
        dc[j] = eps
        vp, gp, _ = q.variance(c + dc)
        vm, gm, _ = q.variance(c - dc)
        assert (vp - vm) / (2 * eps) == pytest.approx(g[j], rel=1e-6, abs=1e-8)
        assert np.allclose((gp - gm) / (2 * eps), h[:, j], rtol=1e-5, atol=1e-7)


def test_variance_minimisation_finds_the_exact_ground_state():
    """Zero variance at c = omega / 2 from any sample: one step, to solver precision."""
    q, _ = oscillator(0.3, 500)
    c, info = minimise_variance(q)
    assert c[0] == pytest.approx(OMEGA / 2, rel=1e-8)
    assert info["variance_after"] < 1e-12 < info["variance_before"]


def test_linear_method_converges_to_the_exact_ground_state():
    """Iterated steps, each on fresh samples of the current psi, reach c = omega / 2; the
    matrices have S_00 = 1 and H_00 = <E_L>."""
    c = 0.3
    for it in range(6):
        q, _ = oscillator(c, 4000, seed=it)
        h, s = linear_method_matrices(q)
        assert s[0, 0] == 1 and h[0, 0] == pytest.approx(q.e0.mean(), rel=1e-14)
        c_new, info = linear_method_step(q)
        assert info["energy"] <= reweighted(q, [c])["energy"]
        c = float(c_new[0])
    assert c == pytest.approx(OMEGA / 2, rel=1e-3)


def test_reweighted_is_plain_average_at_c0():
    q, _ = oscillator(0.5, 100)
    r = reweighted(q, q.c0)
    assert r["energy"] == pytest.approx(q.e0.mean(), rel=1e-14)
    assert r["effective"] == pytest.approx(1.0, rel=1e-14)
