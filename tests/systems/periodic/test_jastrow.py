"""The two-body Jastrow factor of periodic systems (seed 000, Eq. 8-10): the float64
reference (finite-difference gradients and Laplacians, Kato cusps, behaviour at L_u,
periodicity, moves, stars), bad input, and the one-source kernels at float64, float32 and
fixed point."""

import math

import numpy as np
import pytest

from fixedqmc.errors import FixedQMCError
from fixedqmc.systems.periodic import jastrow as J
from fixedqmc.systems.periodic.cell import Cell, simple_cubic
from fixedqmc.systems.periodic.jastrow_eval import JastrowEvaluator, candidate_images

SKEWED = [[3.0, 0.0, 0.0], [1.0, 2.8, 0.0], [0.5, 0.7, 3.2]]
SKEWED_2D = [[3.0, 0.0], [1.3, 2.6]]
VERY_SKEWED = [[3.0, 0.0, 0.0], [2.7, 1.1, 0.0], [1.6, 0.4, 2.2]]
PARTS = ("u_value", "u_grad", "u_lap", "p_value", "p_grad", "p_lap")


def make_params(lattice, n=6, n_up=4, c=3, n_u=8, n_p=4, seed=0, cutoff=None):
    """Random parameters of natural size: beta_l = alpha_l L**(l+C) ~ 0.3."""
    cell = Cell(lattice)
    rng = np.random.default_rng(seed)
    big_l = cell.inscribed_radius if cutoff is None else cutoff
    powers = np.r_[0, 2:n_u + 1] + c

    def alpha():
        return list(rng.normal(size=n_u) * 0.3 / big_l ** powers)
    return J.jastrow_parameters(cell, n, n_up, cutoff=cutoff, c=c, alpha_parallel=alpha(),
                                alpha_antiparallel=alpha(),
                                p_coefficients=list(rng.normal(size=n_p) * 0.05))


def positions(params, n_walkers=3, seed=1, scale=2.0):
    rng = np.random.default_rng(seed)
    return rng.normal(scale=scale, size=(n_walkers, params.n_electrons, params.cell.dim))


# ------------------------------------------------------------------- reference --
@pytest.mark.parametrize("lattice, c", [(SKEWED, 3), (SKEWED, 2), (SKEWED_2D, 3),
                                        (SKEWED_2D, 2)])
def test_gradient_and_laplacian_against_finite_differences(lattice, c):
    params = make_params(lattice, c=c, n_p=5)
    x = positions(params)
    v = J.evaluate(params, x)
    h = 1e-4
    grad, lap = np.zeros_like(v.grad), np.zeros_like(v.lap)
    for i in range(params.n_electrons):
        for k in range(params.cell.dim):
            xp, xm = x.copy(), x.copy()
            xp[:, i, k] += h
            xm[:, i, k] -= h
            fp, fm = J.evaluate(params, xp).value, J.evaluate(params, xm).value
            grad[:, i, k] = (fp - fm) / (2 * h)
            lap[:, i] += (fp - 2 * v.value + fm) / h ** 2
    assert np.abs(v.grad).max() > 0.1 and np.abs(v.lap).max() > 0.1
    assert np.allclose(grad, v.grad, rtol=0, atol=1e-6)  # O(h**2) differences: <4e-7
    assert np.allclose(lap, v.lap, rtol=0, atol=2e-5)  # measured <6e-6


@pytest.mark.parametrize("dim", [3, 2])
@pytest.mark.parametrize("c", [2, 3])
def test_kato_cusp_conditions(dim, c):
    """du/dr(0) = 1/4 (parallel), 1/2 (antiparallel) in 3D; 1/3, 1 in 2D; numerically from
    values of u, and for the whole J as one electron approaches another."""
    params = make_params(SKEWED if dim == 3 else SKEWED_2D, c=c, n=4, n_up=2)
    expected = {3: (0.25, 0.5), 2: (1 / 3, 1.0)}[dim]
    h = 1e-6
    for spin in (0, 1):
        u0, du0, _ = J.u_terms(params, 0.0, spin)
        assert du0 == pytest.approx(expected[spin], abs=1e-12)
        uh, _, _ = J.u_terms(params, h, spin)
        assert (uh - u0) / h == pytest.approx(expected[spin], abs=1e-4)
    # J along a line through electron 0: electron 1 (parallel) and 2 (antiparallel)
    x = positions(params, 1)
    for j, gamma in ((1, expected[0]), (2, expected[1])):
        direction = np.zeros(dim)
        direction[0] = 1.0
        values = []
        for t in (-h, 0.0, h):
            y = x.copy()
            y[0, j] = x[0, 0] + t * direction
            values.append(J.evaluate(params, y).value[0])
        kink = (values[0] + values[2] - 2 * values[1]) / (2 * h)  # (J'(0+) - J'(0-)) / 2
        assert kink == pytest.approx(gamma, abs=1e-4)


@pytest.mark.parametrize("c", [2, 3])
def test_u_and_its_first_c_minus_1_derivatives_vanish_at_the_cutoff(c):
    """Orders 0..C-1 vanish at L_u (from the left, and u = 0 beyond); the order-C
    derivative jumps from C! P(L_u) to 0, so u is C-1 times continuously differentiable."""
    params = make_params(SKEWED, c=c)
    big_l = params.cutoff
    for spin in (0, 1):
        poly_l = float(np.polyval(params.alpha[spin][::-1], big_l))
        assert abs(poly_l) > 1e-3  # a generic case: the C-th derivative really jumps
        assert all(float(t) == 0.0 for t in J.u_terms(params, big_l, spin))
        assert all(float(t) == 0.0 for t in J.u_terms(params, big_l * 1.01, spin))
        for h in (1e-3, 1e-4):
            derivs = J.u_terms(params, big_l - h, spin)
            for k in range(3):
                # leading term C!/(C-k)! P(L) (-h)**(C-k)
                lead = math.factorial(c) / math.factorial(c - k) * poly_l * (-h) ** (c - k)
                assert float(derivs[k]) == pytest.approx(lead, rel=50 * h)
        if c == 3:  # u''' from the left: finite difference of u''
            h = 1e-5
            d3 = (float(J.u_terms(params, big_l - h, spin)[2])
                  - float(J.u_terms(params, big_l - 2 * h, spin)[2])) / h
            assert d3 == pytest.approx(6 * poly_l, rel=1e-3)


@pytest.mark.parametrize("lattice", [SKEWED, SKEWED_2D])
def test_periodic_and_translation_invariant(lattice):
    params = make_params(lattice, n_p=6)
    x = positions(params)
    ref = J.evaluate(params, x)
    rng = np.random.default_rng(5)
    y = x.copy()
    y[:, 2] += np.array([1, -2, 1][:params.cell.dim]) @ params.cell.lattice  # a lattice vector
    y[:, 4] -= params.cell.lattice[0]
    shifted = x + rng.normal(size=params.cell.dim)  # rigid translation
    for z in (y, shifted, params.cell.wrap(x)):
        got = J.evaluate(params, z)
        for part in PARTS:
            assert np.allclose(getattr(got, part), getattr(ref, part), rtol=0, atol=1e-12)


@pytest.mark.parametrize("lattice", [SKEWED, SKEWED_2D])
def test_move_equals_two_full_evaluations(lattice):
    params = make_params(lattice)
    x = positions(params)
    new = np.random.default_rng(7).normal(scale=2.0, size=(3, params.cell.dim))
    for i in (0, 5):
        delta, grad = J.move(params, x, i, new)
        y = x.copy()
        y[:, i] = new
        a, b = J.evaluate(params, x), J.evaluate(params, y)
        assert np.allclose(delta, b.value - a.value, rtol=0, atol=1e-13)
        assert np.allclose(grad, b.grad[:, i], rtol=0, atol=1e-13)


def test_stars_of_a_cubic_cell():
    """Half stars of the simple cubic reciprocal lattice: |G|**2 = 1, 2, 3, 4, 5, 6, 8 in
    units of (2 pi / a)**2 hold 3, 6, 4, 3, 12, 12, 6 vectors."""
    a = 2.5
    g, star = J.stars(Cell(simple_cubic(a)), 7)
    assert np.bincount(star).tolist() == [3, 6, 4, 3, 12, 12, 6]
    n2 = np.rint(np.einsum("gc,gc->g", g, g) / (2 * math.pi / a) ** 2)
    assert sorted(set(n2.tolist())) == [1, 2, 3, 4, 5, 6, 8]
    assert len({tuple(v) for v in np.rint(g * a / (2 * math.pi)).astype(int)}
               | {tuple(-v) for v in np.rint(g * a / (2 * math.pi)).astype(int)}) == 2 * len(g)


def test_bad_input_names_the_key():
    cell = Cell(SKEWED)
    ok = dict(alpha_parallel=[0.1, 0.0], alpha_antiparallel=[0.1, 0.0])
    cases = [
        (dict(cutoff=cell.inscribed_radius * 1.01), "jastrow.cutoff"),
        (dict(cutoff=-1.0), "jastrow.cutoff"),
        (dict(c=4), "jastrow.C"),
        (dict(c=2.5), "jastrow.C"),
        (dict(alpha_parallel=[0.1] * 13), "jastrow.alpha_parallel"),
        (dict(alpha_antiparallel=[]), "jastrow.alpha_antiparallel"),
        (dict(alpha_parallel=[0.1, 0.0, 0.0]), "jastrow.alpha_parallel"),
        (dict(alpha_parallel=[0.1, float("nan")]), "jastrow.alpha_parallel"),
        (dict(p_coefficients=[0.01] * 31), "jastrow.p_coefficients"),
        (dict(p_coefficients=[[0.01]]), "jastrow.p_coefficients"),
    ]
    for change, key in cases:
        with pytest.raises(FixedQMCError, match=key.replace(".", r"\.")):
            J.jastrow_parameters(cell, 4, 2, **{**ok, **change})
    with pytest.raises(FixedQMCError, match="jastrow.n_up"):
        J.jastrow_parameters(cell, 4, 5, **ok)
    with pytest.raises(FixedQMCError, match="jastrow.n_electrons"):
        J.jastrow_parameters(cell, 1, 1, **ok)
    params = J.jastrow_parameters(cell, 4, 2, **ok)
    with pytest.raises(FixedQMCError, match="positions"):
        J.evaluate(params, np.zeros((2, 5, 3)))


def test_cutoff_default_is_the_inscribed_radius_and_cusp_alpha1():
    cell = Cell(SKEWED)
    params = J.jastrow_parameters(cell, 4, 2, c=2, alpha_parallel=[0.2, 0.05],
                                  alpha_antiparallel=[-0.1, 0.0])
    big_l = cell.inscribed_radius
    assert params.cutoff == big_l and params.n_u == 2
    assert params.alpha[0, 1] == pytest.approx(0.25 / big_l ** 2 + 2 * 0.2 / big_l)
    assert params.alpha[1, 1] == pytest.approx(0.5 / big_l ** 2 - 2 * 0.1 / big_l)
    assert params.alpha[0, 2] == 0.05


def test_candidate_images_are_complete():
    """The kernel's image list: for random displacements in a very skewed cell, the
    minimum image within L_u is d0 - R with R in the list."""
    params = make_params(VERY_SKEWED)
    cell = params.cell
    img = candidate_images(params)
    rng = np.random.default_rng(3)
    d = rng.normal(scale=3.0, size=(20000, 3))
    f = d @ np.linalg.inv(cell.reduced)
    d0 = (f - np.rint(f)) @ cell.reduced
    r_min = np.linalg.norm(cell.minimum_image(d), axis=1)
    r_list = np.linalg.norm(d0[:, None] - img[None], axis=2).min(axis=1)
    inside = r_min < params.cutoff
    assert inside.sum() > 1000
    assert np.allclose(r_list[inside], r_min[inside], rtol=0, atol=1e-12)
    assert len(img) < len(cell.lattice_points(cell.reduced_radius + params.cutoff))


# --------------------------------------------------------------------- kernels --
KERNEL_CASES = [(SKEWED, 3), (SKEWED_2D, 2), (VERY_SKEWED, 2), (simple_cubic(3.0), 3)]


def _compare(got, ref, atol):
    for part in PARTS:
        g, r = getattr(got, part), getattr(ref, part)
        scale = max(1.0, float(np.abs(r).max()))
        assert np.allclose(g, r, rtol=0, atol=atol * scale), (part, np.abs(g - r).max())


@pytest.mark.parametrize("lattice, c", KERNEL_CASES)
def test_float64_kernels_equal_the_reference(lattice, c):
    params = make_params(lattice, c=c, n=7, n_up=3, n_p=5)
    x = positions(params, 4)
    ev = JastrowEvaluator(params)
    _compare(ev.evaluate(x), J.evaluate(params, x), 1e-12)
    new = np.random.default_rng(2).normal(scale=2.0, size=(4, params.cell.dim))
    for i in (0, 4):
        delta, grad = ev.move(x, i, new)
        rd, rg = J.move(params, x, i, new)
        assert np.allclose(delta, rd, rtol=0, atol=1e-12)
        assert np.allclose(grad, rg, rtol=0, atol=1e-12)


def test_kernel_move_equals_two_kernel_evaluations():
    params = make_params(SKEWED)
    x = positions(params)
    new = np.random.default_rng(4).normal(scale=2.0, size=(3, 3))
    ev = JastrowEvaluator(params)
    delta, grad = ev.move(x, 3, new)
    y = x.copy()
    y[:, 3] = new
    a, b = ev.evaluate(x), ev.evaluate(y)
    assert np.allclose(delta, b.value - a.value, rtol=0, atol=1e-13)
    assert np.allclose(grad, b.grad[:, 3], rtol=0, atol=1e-13)


@pytest.mark.heavy
def test_float32_kernels_compute_in_float32():
    params = make_params(SKEWED, n_p=5)
    x = positions(params)
    ev = JastrowEvaluator(params, "float32")
    assert ev.ks["jastrow_u"].dtype == np.float32 and ev.ks["jastrow_p"].dtype == np.float32
    got, ref = ev.evaluate(x), J.evaluate(params, x)
    for part in PARTS:
        err = np.abs(getattr(got, part) - getattr(ref, part)).max()
        scale = max(1.0, float(np.abs(getattr(ref, part)).max()))
        assert 1e-11 < err / scale < 1e-4, (part, err)  # float32-sized, not float64-sized


def test_precision_per_kernel():
    params = make_params(SKEWED_2D)
    x = positions(params)
    ev = JastrowEvaluator(params, "jastrow_u=float32,jastrow_p=float64")
    got, ref = ev.evaluate(x), J.evaluate(params, x)
    assert np.abs(got.p_value - ref.p_value).max() < 1e-13
    assert 1e-11 < np.abs(got.u_lap - ref.u_lap).max() < 1e-4
    assert ev.formats()["jastrow_u.sum"] == "float32"


@pytest.mark.heavy
@pytest.mark.parametrize("lattice", [SKEWED, SKEWED_2D])
def test_fixed_point_error_falls_with_width_without_overflow(lattice):
    params = make_params(lattice, n=5, n_up=2, n_p=4)
    x = positions(params, 2)
    new = np.random.default_rng(8).normal(scale=2.0, size=(2, params.cell.dim))
    ref = J.evaluate(params, x)
    ref_move = J.move(params, x, 1, new)
    widths = (24, 32, 40, 48)
    errors = {}
    for w in widths:
        ev = JastrowEvaluator(params, f"fixed:{w}")
        got = ev.evaluate(x)
        delta, grad = ev.move(x, 1, new)
        errors[w] = [np.abs(getattr(got, p) - getattr(ref, p)).max() for p in PARTS]
        errors[w] += [np.abs(delta - ref_move[0]).max(), np.abs(grad - ref_move[1]).max()]
        assert sum(ev.log.events.values()) == 0, ev.log.events
    for k in range(len(PARTS) + 2):
        e = [errors[w][k] for w in widths]
        assert all(b < a / 16 for a, b in zip(e, e[1:])), (k, e)
    assert max(errors[48]) < 1e-8


def test_kernels_of_a_2d_cell_read_a_full_3x3_lattice():
    """The kernels index three lattice rows: a 2D cell's (2, 2) lattice is padded with a
    zero row and column (a (2, 3) array would be read past its end)."""
    params = make_params(SKEWED_2D, n=5, n_up=2, n_p=4)
    ev = JastrowEvaluator(params, "float64")
    assert ev._lat.shape == (3, 3) and not ev._lat[2].any() and not ev._lat[:, 2].any()


# ------------------------------------------------------------ linear parameters --
@pytest.mark.parametrize("lattice, c", [(SKEWED, 3), (SKEWED_2D, 2)])
def test_linear_basis_reproduces_other_parameters(lattice, c):
    """J(c') = J(c) + (c' - c) . phi with phi, its gradients and Laplacians from
    linear_basis: checked against evaluate() with parameters built from the input lists of
    c' (alpha_1 from the cusp each time)."""
    params = make_params(lattice, c=c, n_u=4, n_p=3)
    x = positions(params, n_walkers=4)
    c0 = J.parameter_vector(params)
    assert len(J.parameter_names(params)) == c0.size == 2 * 4 + 3
    phi, grad, lap = J.linear_basis(params, x)
    rng = np.random.default_rng(5)
    c1 = c0 + rng.normal(size=c0.size) * np.abs(c0).clip(0.01)
    other = J.jastrow_parameters(params.cell, params.n_electrons, params.n_up,
                                 cutoff=params.cutoff, c=c, **J.parameter_lists(params, c1))
    v0, v1 = J.evaluate(params, x), J.evaluate(other, x)
    dc = c1 - c0
    assert np.abs(v1.value - v0.value).max() > 1e-2
    assert np.allclose(v0.value + phi @ dc, v1.value, rtol=0, atol=1e-12)
    assert np.allclose(v0.grad + np.einsum("wkic,k->wic", grad, dc), v1.grad, atol=1e-11)
    assert np.allclose(v0.lap.sum(1) + lap @ dc, v1.lap.sum(1), rtol=0, atol=1e-10)
    assert np.allclose(J.parameter_vector(other), c1, rtol=1e-14, atol=0)


def test_parameter_lists_bad_vector():
    params = make_params(SKEWED, n_u=2, n_p=1)
    with pytest.raises(FixedQMCError, match="5 finite numbers"):
        J.parameter_lists(params, [0.0, 1.0])
