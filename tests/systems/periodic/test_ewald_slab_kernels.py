"""The Ewald kernels of charges off a 2D-periodic plane (``ewald_real`` with heights and
``slab_recip``, :class:`SlabEwaldEvaluator`) against the float64 reference
``slab_ewald_energy``: float64 to rounding (also where the erfcx arguments pass the form's
x_max and where a < gamma |z|), the in-plane limit against the in-plane kernels, invariance
under gamma and a rigid shift, float32 really in float32, fixed point converging with the
width and no overflow at the declared ranges, and bad input.  (The bit-exact fixed-point
oracles are in ``test_periodic_exact.py``.)"""

import numpy as np
import pytest

from fixedqmc.errors import FixedQMCError
from fixedqmc.systems.periodic.cell import Cell, hexagonal, simple_cubic
from fixedqmc.systems.periodic.erfc_form import WIDE_FORM
from fixedqmc.systems.periodic.evaluator import EwaldEvaluator
from fixedqmc.systems.periodic.ewald import balanced_gamma, ewald_parameters
from fixedqmc.systems.periodic.ewald_slab import slab_ewald_energy
from fixedqmc.systems.periodic.slab_evaluator import SlabEwaldEvaluator, shells
from strategies import random_charges

SKEWED_2D = [[3.0, 0.0], [1.3, 2.6]]
PARTS = ("real", "recip", "background", "total")


def _case(seed, n, neutral, nw, height, lattice=SKEWED_2D):
    """(cell, charges, positions (nw, n, 3)): random charges, positions in-plane normal (2
    bohr), heights uniform in [-height, height]."""
    rng = np.random.default_rng(seed)
    q = random_charges(rng, n, neutral)
    x = np.concatenate([rng.normal(scale=2.0, size=(nw, n, 2)),
                        rng.uniform(-height, height, size=(nw, n, 1))], axis=-1)
    return Cell(lattice), q, x


def _errors(got, ref, scale):
    return {p: float(np.max(np.abs(getattr(got, p) - getattr(ref, p)))) / scale for p in PARTS}


@pytest.mark.parametrize("lattice, n, neutral, height", [(SKEWED_2D, 6, True, 2.0),
                                                         (hexagonal(2.5), 5, False, 12.0),
                                                         (SKEWED_2D, 4, False, 0.3)])
def test_float64_kernels_equal_the_reference(lattice, n, neutral, height):
    cell, q, x = _case(n, n, neutral, 4, height, lattice)
    params = ewald_parameters(cell, q, 1e-13)
    ev = SlabEwaldEvaluator(cell, q, (-height, height), params)
    err = _errors(ev.energy(x), slab_ewald_energy(cell, q, x, params), params.energy_scale)
    assert max(err.values()) < 1e-13, err
    a = shells(params)[2][:, 0]
    tz = params.gamma * np.ptp(x[..., 2], axis=1).max()  # the largest gamma |z_ij|
    assert tz > a.min() or height < 1, "both forms of F (some a < gamma |z_ij|)"
    assert a.max() + tz > WIDE_FORM.x_max or height < 10, "arguments beyond x_max"


def test_shells_group_the_half_set_by_length():
    cell = Cell(hexagonal(2.5))
    params = ewald_parameters(cell, np.ones(3), 1e-10)
    gint, start, shell = shells(params)
    assert sorted(map(tuple, gint)) == sorted(map(tuple, params.gints))
    g = np.linalg.norm(gint @ (2 * np.pi * np.linalg.inv(cell.reduced).T), axis=1)
    for s in range(len(shell)):
        assert np.allclose(g[start[s]:start[s + 1]], -shell[s, 2], rtol=1e-12, atol=0)
    assert np.all(np.diff(-shell[:, 2]) > 1e-9)
    # hexagonal: shells of 6 or 12 vectors, 3 or 6 of them in the half set
    assert set(np.diff(start)) == {3, 6} and start[1] == 3


def test_heights_zero_equal_the_in_plane_kernels():
    cell, q, x = _case(3, 6, False, 3, 0.0)
    params = ewald_parameters(cell, q, 1e-12)
    got = SlabEwaldEvaluator(cell, q, (0.0, 0.0), params).energy(x)
    flat = EwaldEvaluator(cell, q, params).energy(x[..., :2])
    err = _errors(got, flat, params.energy_scale)
    assert max(err.values()) < 1e-13, err
    assert np.array_equal(got.images, flat.images) and np.array_equal(got.self, flat.self)


def test_energy_independent_of_gamma_and_of_a_rigid_shift():
    cell, q, x = _case(4, 5, True, 3, 3.0)
    g0 = balanced_gamma(cell, 5)
    totals = []
    for g in (0.6 * g0, g0, 1.7 * g0):
        params = ewald_parameters(cell, q, 1e-14, gamma=g)
        ev = SlabEwaldEvaluator(cell, q, (-4.0, 4.0), params)
        parts = ev.energy(x)
        totals.append(parts.total)
        shifted = ev.energy(x + [0.7, -1.9, 0.8]).total
        assert np.allclose(shifted, parts.total, rtol=1e-12, atol=0)
    scale = params.energy_scale
    assert np.max(np.abs(totals[0] - totals[2])) < 1e-12 * scale
    assert np.max(np.abs(totals[0] - totals[1])) < 1e-12 * scale


@pytest.mark.parametrize("height", [0.0, 2.0, 12.0])
def test_profiled_values_stay_within_the_declared_ranges(height):
    """A float64 range profile of both kernels (every value each variable held, the branch
    of F that is formed and not selected included) inside the declared ranges that size
    the fixed formats, up to rounding (erfcx(0) of the form is 1 + 3e-15; a range of 1
    gets a format that holds 1 and more)."""
    cell, q, x = _case(7, 5, False, 20, height)
    ev = SlabEwaldEvaluator(cell, q, (-height, height), ewald_parameters(cell, q, 1e-12))
    ks = ev.ks.profiling()
    ev.real(x, ks=ks)
    ev.recip(x, ks=ks)
    for name in ("ewald_real", "slab_recip"):
        stats = ks.stats(name)
        assert len(stats) > 20
        for v in ev.kernels[name].variables:
            if v.name in stats:
                lo, hi = stats[v.name][:2]
                tol = 1e-12 * max(abs(v.lo), abs(v.hi), 1.0)
                assert v.lo - tol <= lo and hi <= v.hi + tol, (name, v.name, (lo, hi),
                                                               (v.lo, v.hi))


@pytest.mark.heavy
def test_float32_kernels_compute_in_float32():
    cell, q, x = _case(5, 5, False, 3, 2.0)
    params = ewald_parameters(cell, q, 1e-10)
    ev = SlabEwaldEvaluator(cell, q, (-2.0, 2.0), params, "float32")
    assert ev.ks["ewald_real"].dtype == np.float32 and ev.ks["slab_recip"].dtype == np.float32
    err = _errors(ev.energy(x), slab_ewald_energy(cell, q, x, params), params.energy_scale)
    for p in ("real", "recip", "background"):
        assert 1e-10 < err[p] < 1e-5, (p, err)  # float32-sized, not float64-sized


def test_fixed_point_error_falls_with_width_without_overflow():
    cell, q, x = _case(6, 4, False, 2, 5.0)
    params = ewald_parameters(cell, q, 1e-12)
    ref = slab_ewald_energy(cell, q, x, params)
    errors = {}
    for w in (24, 32, 40, 48):
        ev = SlabEwaldEvaluator(cell, q, (-5.0, 5.0), params, f"fixed:{w}")
        errors[w] = _errors(ev.energy(x), ref, params.energy_scale)
        assert sum(ev.log.events.values()) == 0, ev.log.events
    for p in ("real", "recip", "background"):
        e = [errors[w][p] for w in (24, 32, 40, 48)]
        assert all(b < a / 16 for a, b in zip(e, e[1:])), (p, e)
    assert max(errors[48].values()) < 1e-10, errors[48]


def test_bad_input_names_the_argument():
    cell = Cell(SKEWED_2D)
    q = [1.0, -1.0]
    x = np.array([[0.0, 0.0, 0.5], [1.0, 1.0, -0.5]])
    ev = SlabEwaldEvaluator(cell, q, (-1.0, 1.0), accuracy=1e-6)
    with pytest.raises(FixedQMCError, match="heights = .*band"):
        ev.energy(x * [1, 1, 3])
    with pytest.raises(FixedQMCError, match="positions must have shape"):
        ev.energy(x[:, :2])
    with pytest.raises(FixedQMCError, match="charge"):
        ev.energy(np.zeros((3, 3)))
    for bad in ((1.0, -1.0), (0.0, np.inf), "up", (1.0,)):
        with pytest.raises(FixedQMCError, match="heights"):
            SlabEwaldEvaluator(cell, q, bad)
    with pytest.raises(FixedQMCError, match="2D cell"):
        SlabEwaldEvaluator(Cell(simple_cubic(3.0)), q, (-1.0, 1.0))
    with pytest.raises(FixedQMCError, match="slab_recip"):
        SlabEwaldEvaluator(cell, q, (-1.0, 1.0), precision="ewald_recip=float32")
