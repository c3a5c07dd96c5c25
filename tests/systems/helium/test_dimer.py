"""He2 reference values: finite-difference bound state and variational quadrature.

Checks are against exact solutions (Morse potential; a potential built so that
exp(T2) is its exact ground state), against each other (two quadratures, Green's-theorem
kinetic energy, FD <r> vs quadrature <r>) and against the documented He2 energies.
"""

import math

import numpy as np
import pytest

from fixedqmc.systems.helium import DEFAULT_PAIR_PARAMS, HBAR2_2M, HBAR2_2M_12_12, sapt2
from tests.systems.helium.dimer_reference import (
    DimerState,
    DimerVMC,
    dimer_ground_state,
    dimer_vmc_energy,
    pair_density_average,
)
from fixedqmc.systems.helium.trial import dimer_local_energy, dt2, pair_laplacian_term, t2

# h -> 0 limit with SAPT2, 6.0596481 K A^2 (n = 400 000, extrapolated): -1.8219569 mK
E_SAPT2 = -1.8219569e-3


@pytest.fixture(scope="module")
def ground():
    return dimer_ground_state()


@pytest.fixture(scope="module")
def vmc():
    return dimer_vmc_energy()


# -- exact ground state -------------------------------------------------------------------


def test_sapt2_ground_state_value_and_grid(ground):
    assert isinstance(ground, DimerState)
    assert ground.energy == pytest.approx(E_SAPT2, rel=1e-4)
    assert ground.energy == pytest.approx(-1.822e-3, abs=0.0005e-3)  # docs/helium.md
    assert ground.hbar2_2m == HBAR2_2M
    r, u = ground.r, ground.u
    h = r[1] - r[0]
    assert r[0] == 1.0 and r[-1] == 1000.0 and r.size == 50_001
    assert u[0] == 0.0 and u[-1] == 0.0 and u.min() > -1e-12
    assert h * np.sum(u * u) == pytest.approx(1.0, rel=1e-12)
    # u is the plain fine-grid eigenvector: its moments carry the O(h^2) error (0.18 %)
    assert ground.mean_r == pytest.approx(h * np.sum(u * u * r), rel=5e-3)
    assert 40.0 < ground.mean_r < 50.0 and ground.mean_r2 > ground.mean_r**2
    assert ground.kinetic_energy == pytest.approx(ground.energy - ground.potential_energy)
    assert ground.potential_energy == pytest.approx(h * np.sum(u * u * sapt2(r)), rel=5e-3)
    with pytest.raises(ValueError):
        ground.u[5] = 1.0  # read-only


def test_ground_state_converged(ground):
    """Default grid vs 4x finer, 2x longer box and smaller r_min: < 1e-4 (brief: 0.1 %)."""
    finer = dimer_ground_state(n=200_000)
    longer = dimer_ground_state(r_max=2000.0, n=100_000)  # same h, wall twice as far
    inner = dimer_ground_state(r_min=0.5, n=50_000)
    assert abs(finer.energy / ground.energy - 1) < 1e-4
    assert abs(longer.energy / ground.energy - 1) < 1e-6
    assert abs(inner.energy / ground.energy - 1) < 1e-4
    assert abs(finer.mean_r / ground.mean_r - 1) < 1e-4
    # without extrapolation the default grid is off by O(h^2) ~ 0.4 %, still below E
    plain = dimer_ground_state(extrapolate=False)
    assert plain.energy == plain.energy_grid == ground.energy_grid
    assert 1e-3 < plain.energy / finer.energy - 1 < 1e-2


def test_hbar2_2m_dependence_matches_docs():
    e = dimer_ground_state(hbar2_2m=HBAR2_2M_12_12).energy
    assert e == pytest.approx(-1.815e-3, abs=0.0005e-3)
    assert e > E_SAPT2  # lighter atom: less bound


@pytest.mark.parametrize("name, e_mk", [("HFD-B", -1.692), ("LM2M2", -1.309), ("HFDHE2", -0.835)])
def test_other_potentials_match_docs(name, e_mk):
    assert dimer_ground_state(name).energy == pytest.approx(e_mk * 1e-3, abs=0.005e-3)


def test_morse_potential_exact_levels():
    """Morse V = D (e^{-2a(r-re)} - 2 e^{-a(r-re)}): E_0 = -c a^2 (lambda - 1/2)^2 with
    c = hbar^2/(2 mu) = 2 hbar2_2m, lambda = sqrt(D / c) / a (r < 0 part negligible)."""
    d, a, re = 50.0, 2.0, 3.0

    def morse(r):
        y = np.exp(-a * (np.asarray(r) - re))
        return d * (y * y - 2.0 * y)

    c = 2.0 * HBAR2_2M
    lam = math.sqrt(d / c) / a
    exact = -c * a * a * (lam - 0.5) ** 2
    s = dimer_ground_state(morse, r_min=0.0, r_max=30.0, n=20_000)
    assert s.energy == pytest.approx(exact, rel=1e-7)
    assert exact == pytest.approx(-12.89, abs=0.01)


def test_fd_ground_state_of_constructed_potential_is_exp_t2():
    """V = E0 + 2 hbar2_2m (T2'' + 2T2'/r + T2'^2) has exp(T2) as nodeless eigenfunction,
    so its ground state energy is E0 and its <r> is the pair-density <r>."""
    p = DEFAULT_PAIR_PARAMS
    e0 = -2.0 * HBAR2_2M * p.a**2  # makes V -> 0 at large r (T2' -> a)

    def v_exact(r):
        d1 = dt2(r, p)
        return e0 + 2.0 * HBAR2_2M * (pair_laplacian_term(r, p) + d1 * d1)

    s = dimer_ground_state(v_exact, r_max=1500.0, n=75_000)
    assert s.energy == pytest.approx(e0, rel=1e-4)
    mean_r = pair_density_average(lambda r: r, p, r_min=1.0, r_max=1500.0)
    assert s.mean_r == pytest.approx(mean_r, rel=1e-4)
    # and VMC with this potential is exact: E_L = E0 everywhere, zero variance
    v = dimer_vmc_energy(p, v_exact)
    assert v.energy == pytest.approx(e0, rel=1e-9)
    assert v.variance < 1e-12 * e0**2


@pytest.mark.parametrize(
    "kwargs, match",
    [
        ({"potential": "LJ"}, "allowed"),
        ({"potential": 3.0}, "callable"),
        ({"n": 1001}, "even integer"),
        ({"n": 10}, "even integer"),
        ({"r_min": 5.0, "r_max": 5.0}, "r_min < r_max"),
        ({"r_min": -1.0}, "r_min"),
        ({"hbar2_2m": 0.0}, "hbar2_2m"),
        ({"r_max": 200.0, "n": 20_000}, "need r_max >="),
        ({"potential": lambda r: 0.5 * sapt2(r)}, "no bound state"),
        ({"potential": lambda r: np.zeros(3)}, "same shape"),
    ],
)
def test_ground_state_bad_input(kwargs, match):
    with pytest.raises(ValueError, match=match):
        dimer_ground_state(**kwargs)


# -- variational energy -------------------------------------------------------------------


def test_vmc_default_params_variational(vmc, ground):
    assert isinstance(vmc, DimerVMC)
    assert vmc.energy == pytest.approx(-1.565e-3, abs=0.0005e-3)  # docs/helium.md
    assert ground.energy < vmc.energy < 0.0
    assert vmc.kinetic_energy == pytest.approx(vmc.energy - vmc.potential_energy)
    assert vmc.mean_r == pytest.approx(50.4, abs=0.05)  # docs/helium.md
    assert vmc.variance > 0.0 and vmc.mean_r2 > vmc.mean_r**2
    assert vmc.r_min < 1.5 and vmc.r_max > 3000.0


def test_vmc_two_quadratures_agree(vmc):
    q = dimer_vmc_energy(method="quad")
    for name in ("energy", "potential_energy", "kinetic_energy", "variance", "mean_r", "mean_r2"):
        assert getattr(q, name) == pytest.approx(getattr(vmc, name), rel=1e-8), name


def test_vmc_kinetic_energy_green_form(vmc):
    """-<psi|lap psi>/<psi|psi> = <|grad psi|^2>/<psi|psi>: T = 2 hbar2_2m <T2'^2>."""
    p = DEFAULT_PAIR_PARAMS
    green = 2.0 * HBAR2_2M * pair_density_average(lambda r: dt2(r, p) ** 2, p)
    assert vmc.kinetic_energy == pytest.approx(green, rel=1e-10)


def test_vmc_matches_plain_trapezoid(vmc):
    """Independent of the automatic range: fine trapezoid rule on [1, 8000] A."""
    p = DEFAULT_PAIR_PARAMS
    r = np.concatenate([np.linspace(1.0, 30.0, 300_001), np.geomspace(30.0, 8000.0, 100_001)[1:]])
    w = np.exp(2 * (t2(r, p) - t2(r, p).max())) * r**2
    e_l = dimer_local_energy(r, p, "SAPT2", HBAR2_2M)
    norm = np.trapezoid(w, r)
    assert np.trapezoid(w * e_l, r) / norm == pytest.approx(vmc.energy, rel=1e-5)
    assert np.trapezoid(w * r, r) / norm == pytest.approx(vmc.mean_r, rel=1e-6)
    var = np.trapezoid(w * (e_l - vmc.energy) ** 2, r) / norm
    assert var == pytest.approx(vmc.variance, rel=1e-5)


def test_vmc_hbar_and_potential_arguments(vmc):
    light = dimer_vmc_energy(hbar2_2m=2 * HBAR2_2M)
    assert light.potential_energy == pytest.approx(vmc.potential_energy, rel=1e-12)
    assert light.kinetic_energy == pytest.approx(2 * vmc.kinetic_energy, rel=1e-9)
    assert dimer_vmc_energy(potential=sapt2).energy == pytest.approx(vmc.energy, rel=1e-12)
    boxed = dimer_vmc_energy(r_max=100.0)  # truncated average in a 100 A sphere
    assert boxed.r_max == 100.0 and boxed.mean_r < vmc.mean_r


@pytest.mark.parametrize(
    "kwargs, match",
    [
        ({"method": "simpson"}, "allowed: gauss, quad"),
        ({"potential": "nope"}, "allowed"),
        ({"hbar2_2m": -1.0}, "hbar2_2m"),
        ({"r_min": 10.0, "r_max": 5.0}, "r_min < r_max"),
        ({"params": "default"}, "PairProductParams"),
    ],
)
def test_vmc_bad_input(kwargs, match):
    with pytest.raises(ValueError, match=match):
        dimer_vmc_energy(**kwargs)


def test_vmc_rejects_non_normalisable_params():
    from fixedqmc.systems.helium import PairProductParams

    with pytest.raises(ValueError, match="long-range term must decay"):
        dimer_vmc_energy(PairProductParams.mcmillan(2.6))
    # in a finite box the McMillan (bulk) form is fine
    assert np.isfinite(dimer_vmc_energy(PairProductParams.mcmillan(2.6), r_max=20.0).energy)
