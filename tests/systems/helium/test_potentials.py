"""He-He potentials: reference check values, registry, constants, edge cases.

Check values are those of the shared helium-potentials reference (SAPT2: Janzen & Aziz
1997; HFD-B(HE): Aziz, McCourt & Wong 1987), each reproduced to the digits quoted there.
"""

from decimal import Decimal

import numpy as np
import pytest
from scipy.optimize import brentq, minimize_scalar

from fixedqmc.systems.helium import constants, potentials
from fixedqmc.systems.helium.constants import BOHR_ANGSTROM, HARTREE_K
from fixedqmc.systems.helium.potentials import (
    HFDB_HE,
    HFDHE2,
    LM2M2,
    POTENTIALS,
    AzizParameters,
    get_potential,
    hfd_b,
    register_potential,
    sapt2,
    sapt2_fret,
    unregister_potential,
)


def assert_quoted(value: float, quoted: str) -> None:
    """value rounds to ``quoted``: |value - quoted| <= half a unit in its last digit."""
    q = Decimal(quoted)
    half_ulp = 0.5 * 10.0 ** q.as_tuple().exponent
    assert abs(value - float(q)) <= half_ulp * (1 + 1e-9), (value, quoted)


def minimum(func, lo=2.7, mid=2.95, hi=3.3):
    res = minimize_scalar(func, bracket=(lo, mid, hi), tol=1e-12)
    return res.x, res.fun


# -- SAPT2 -------------------------------------------------------------------------------


def test_sapt2_minimum():
    r_min, v_min = minimum(sapt2)
    assert_quoted(v_min, "-11.0606")
    assert_quoted(r_min / BOHR_ANGSTROM, "5.6023")
    assert_quoted(r_min, "2.9646")


def test_sapt2_zero_crossing():
    assert_quoted(brentq(sapt2, 2.0, 2.9, xtol=1e-14), "2.6390")


@pytest.mark.parametrize(
    "r_bohr, quoted", [(4.0, "291.976"), (7.0, "-4.61139"), (10.0, "-0.511576")]
)
def test_sapt2_values(r_bohr, quoted):
    assert_quoted(sapt2(r_bohr * BOHR_ANGSTROM), quoted)


def test_sapt2_hartree_choice_is_small_but_visible():
    r = 5.6023 * BOHR_ANGSTROM
    diff = sapt2(r, hartree_k=HARTREE_K) - sapt2(r)
    assert -1e-3 < diff < 0.0  # CODATA E_h is larger: slightly deeper well


def test_sapt2_fret_pieces_and_continuity():
    assert sapt2_fret(5.7) == 1.0
    assert abs(sapt2_fret(5.7 + 1e-12) - 1.0) < 5e-6
    below, above = sapt2_fret(10.0), sapt2_fret(10.0 + 1e-12)
    assert_quoted(below, "0.99790")
    assert_quoted(above, "0.99790")
    assert abs(below - above) < 1e-6
    # held constant beyond 100 bohr
    tail = sapt2_fret(np.array([100.0, 150.0, 1e4]))
    assert np.all(tail == tail[0])
    assert abs(tail[0] - 0.9022367) < 1e-7


def test_sapt2_beyond_100_bohr_is_continuous_and_tiny():
    r100 = 100.0 * BOHR_ANGSTROM
    v = sapt2(np.array([r100 * (1 - 1e-12), r100 * (1 + 1e-12), 2 * r100]))
    assert abs(v[0] - v[1]) < 1e-15
    assert np.all(np.abs(v) < 1e-6) and np.all(v < 0)


def test_sapt2_short_range_finite():
    r = np.array([0.0, 1e-8, 0.1, 0.5, 1.0, 1.5, 2.0])
    v = sapt2(r)
    assert np.all(np.isfinite(v))
    assert v[0] == pytest.approx(potentials.SAPT2_PARAMETERS["A"], rel=1e-15)
    assert np.all(np.diff(v) < 0)  # monotone repulsive wall


# -- Aziz forms ---------------------------------------------------------------------------


def test_hfdb_minimum():
    r_min, v_min = minimum(hfd_b)
    assert_quoted(v_min, "-10.948")
    assert_quoted(r_min, "2.963")


@pytest.mark.parametrize(
    "r, quoted", [(2.5, "20.4727"), (4.0, "-2.93362"), (8.0, "-0.0403713")]
)
def test_hfdb_values(r, quoted):
    assert_quoted(hfd_b(r), quoted)


def test_hfdb_uses_its_own_rm():
    assert HFDB_HE.r_m == 2.963  # not HFDHE2's 2.9673


def test_lm2m2_minimum_matches_its_parameters():
    r_min, v_min = minimum(get_potential("LM2M2"))
    assert_quoted(v_min, "-10.97")
    assert_quoted(r_min, "2.9695")


def test_hfdhe2_minimum_near_its_parameters():
    # HFDHE2's fit puts the minimum slightly off (r_m, -eps): measured 2.96741 A, -10.79975 K
    r_min, v_min = minimum(get_potential("HFDHE2"))
    assert_quoted(v_min, "-10.8")
    assert abs(r_min - HFDHE2.r_m) < 2e-4


def test_lm2m2_addon_continuous_and_active():
    x1, x2 = LM2M2.x1 * LM2M2.r_m, LM2M2.x2 * LM2M2.r_m
    for edge in (x1, x2):
        lo, hi = LM2M2(edge * (1 - 1e-12)), LM2M2(edge * (1 + 1e-12))
        assert abs(lo - hi) < 1e-9
    no_addon = AzizParameters(**{**LM2M2.__dict__, "Aa": 0.0})
    mid = 0.5 * (x1 + x2)
    addon = LM2M2(mid) - no_addon(mid)
    assert addon == pytest.approx(2 * LM2M2.eps * LM2M2.Aa, rel=1e-12)  # sin(pi/2) + 1 = 2


@pytest.mark.parametrize("name", ["SAPT2", "HFD-B", "HFDHE2", "LM2M2"])
def test_vectorised_shapes_and_scalars(name):
    v = get_potential(name)
    r = np.linspace(2.0, 12.0, 12).reshape(3, 4)
    out = v(r)
    assert out.shape == (3, 4) and out.dtype == np.float64
    assert isinstance(v(3.0), float)
    # numpy's SIMD exp on arrays may differ from the scalar path by an ulp
    assert out[1, 2] == pytest.approx(v(float(r[1, 2])), rel=1e-14)
    assert np.all(np.isfinite(v(np.array([0.0, 1e-300, 1e-3, 0.3]))))


@pytest.mark.parametrize("name", ["SAPT2", "HFD-B", "HFDHE2", "LM2M2"])
def test_all_potentials_agree_roughly(name):
    # same physics: minimum within 0.01 A of 2.965 A and depth within 0.2 K of 10.95 K
    r_min, v_min = minimum(get_potential(name))
    assert abs(r_min - 2.965) < 0.01
    assert abs(v_min + 10.95) < 0.2


def test_negative_r_rejected():
    with pytest.raises(ValueError, match=">= 0"):
        sapt2(np.array([1.0, -1.0]))
    with pytest.raises(ValueError):
        hfd_b(np.nan)


# -- registry -----------------------------------------------------------------------------


def test_get_potential_names_and_case():
    assert set(POTENTIALS) >= {"SAPT2", "HFD-B", "HFDHE2", "LM2M2"}
    assert get_potential("sapt2") is sapt2
    assert get_potential("HFD-B(HE)") is get_potential("HFD-B")


def test_get_potential_unknown_lists_names():
    with pytest.raises(ValueError) as err:
        get_potential("LJ")
    msg = str(err.value)
    assert "'LJ'" in msg
    for name in ("SAPT2", "HFD-B", "HFDHE2", "LM2M2"):
        assert name in msg


def test_register_user_lm2m2_worked_example():
    # the docs/helium.md example: LM2M2 written by hand and registered under a new name
    def my_lm2m2(r):
        eps, rm = 10.97, 2.9695
        A, alpha, beta, D = 1.89635353e5, 10.70203539, -1.90740649, 1.4088
        c6, c8, c10 = 1.34687065, 0.41308398, 0.17060159
        aa, x1, x2 = 0.0026, 1.003535949, 1.454790369
        x = np.asarray(r, dtype=float) / rm
        f = np.where(x < D, np.exp(-((D / x - 1.0) ** 2)), 1.0)
        v = eps * (A * np.exp(-alpha * x + beta * x**2)
                   - f * (c6 / x**6 + c8 / x**8 + c10 / x**10))
        inside = (x > x1) & (x < x2)
        addon = eps * aa * (np.sin(2 * np.pi * (x - x1) / (x2 - x1) - np.pi / 2) + 1)
        return v + np.where(inside, addon, 0.0)

    register_potential("my-LM2M2", my_lm2m2)
    try:
        r = np.linspace(2.0, 10.0, 401)
        mine, builtin = get_potential("my-lm2m2")(r), get_potential("LM2M2")(r)
        assert np.allclose(mine, builtin, rtol=1e-13, atol=1e-13)
        with pytest.raises(ValueError, match="clashes"):
            register_potential("MY-lm2m2", my_lm2m2)
        register_potential("my-LM2M2", my_lm2m2, overwrite=True)
    finally:
        unregister_potential("my-LM2M2")
    assert "my-LM2M2" not in POTENTIALS


def test_register_aziz_parameters_directly():
    params = AzizParameters(**{**HFDB_HE.__dict__, "name": "HFD-B copy"})
    register_potential("HFD-B copy", params)
    try:
        assert get_potential("hfd-b copy")(3.0) == hfd_b(3.0)
    finally:
        unregister_potential("HFD-B copy")


@pytest.mark.parametrize(
    "name, func, match",
    [
        ("", sapt2, "non-empty"),
        ("bad", 3.0, "callable"),
        ("bad", lambda r: 1.0, "same shape"),
        ("bad", lambda r: np.full_like(r, np.nan), "finite"),
        ("bad", lambda r: r.undefined, "failed"),
        ("SAPT2", sapt2, "clashes"),
    ],
)
def test_register_rejects_bad_input(name, func, match):
    with pytest.raises(ValueError, match=match):
        register_potential(name, func)


def test_unregister_unknown():
    with pytest.raises(ValueError, match="allowed"):
        unregister_potential("nope")


def test_aziz_parameters_validated():
    with pytest.raises(ValueError, match="x2 > x1"):
        AzizParameters(**{**LM2M2.__dict__, "x2": 0.5})
    with pytest.raises(ValueError, match="finite"):
        AzizParameters(**{**HFDB_HE.__dict__, "eps": float("inf")})


# -- constants ----------------------------------------------------------------------------


def test_hbar2_2m_from_codata_2022():
    hbar = 1.054571817e-34  # J s (exact)
    k_b = 1.380649e-23  # J/K (exact)
    u = 1.66053906892e-27  # kg (CODATA 2022)
    m_he4 = 4.00260325413 * u
    value = hbar**2 / (2 * m_he4) / k_b * 1e20  # K A^2
    assert_quoted(value, "6.0596481")
    assert constants.HBAR2_2M == constants.HBAR2_2M_CODATA2022 == 6.0596481
    assert constants.get_hbar2_2m("literature") == 6.0596
    assert constants.get_hbar2_2m("12.12") == pytest.approx(12.12 / 2)
    with pytest.raises(ValueError, match="codata2022"):
        constants.get_hbar2_2m("nist")


def test_unit_constants():
    assert constants.HARTREE_K == 315775.02480
    assert constants.BOHR_ANGSTROM == 0.529177210544
    assert constants.HARTREE_K_SAPT2 == 3.1576621e5
