"""Simulation cells: reciprocal lattice, minimum image in any cell shape, wrapping, the
shortest lattice vector, HEG cells and bad input."""

import itertools
import math

import numpy as np
import pytest

from fixedqmc.errors import FixedQMCError
from fixedqmc.systems.periodic.cell import (Cell, bcc, fcc, heg_cell, hexagonal, reduce_basis,
                                            simple_cubic, square)

SKEWED_3D = [[1.0, 0.0, 0.0], [3.7, 1.1, 0.0], [2.2, -4.1, 1.3]]  # a long, thin basis
SKEWED_2D = [[1.0, 0.0], [2.6, 0.7]]
CELLS = [SKEWED_3D, SKEWED_2D, fcc(3.0), hexagonal(2.0), simple_cubic(2.5),
         [[4.0, 0.0, 0.0], [1.9, 3.5, 0.0], [1.2, 1.5, 3.1]]]


def brute_minimum_image(lattice, d):
    """The shortest of d - n A over every integer n that can matter: the nearest image
    d - R has |d - R| <= |d|, so |R| <= 2 |d| and |n_i| = |R . b_i| / 2 pi <= 2 |d| |b_i|
    / 2 pi (b_i the reciprocal vectors of the given basis, no reduction involved)."""
    a = np.asarray(lattice, float)
    b = np.linalg.inv(a).T
    nmax = np.ceil(2 * np.linalg.norm(d, axis=1).max() * np.linalg.norm(b, axis=1)).astype(int)
    shifts = np.array(list(itertools.product(*(range(-m, m + 1) for m in nmax)))) @ a
    out = np.empty_like(d)
    for p in range(d.shape[0]):
        cand = d[p] - shifts
        out[p] = cand[np.argmin(np.einsum("kc,kc->k", cand, cand))]
    return out


@pytest.mark.parametrize("lattice", CELLS)
def test_reciprocal_and_volume(lattice):
    cell = Cell(lattice)
    a = np.asarray(lattice, float)
    assert np.allclose(cell.reciprocal @ a.T, 2 * np.pi * np.eye(cell.dim), atol=1e-12)
    assert cell.volume == pytest.approx(abs(np.linalg.det(a)), rel=1e-13)
    assert abs(np.linalg.det(cell.reduced)) == pytest.approx(cell.volume, rel=1e-12)
    # the reduced basis spans the same lattice: integer coordinates both ways
    m = cell.reduced @ np.linalg.inv(a)
    assert np.allclose(m, np.rint(m), atol=1e-9)
    assert abs(round(np.linalg.det(np.rint(m)))) == 1


@pytest.mark.parametrize("lattice", CELLS)
def test_minimum_image_equals_brute_force(lattice):
    cell = Cell(lattice)
    rng = np.random.default_rng(7)
    d = rng.normal(scale=1.0, size=(200, cell.dim))
    d *= np.minimum(1.0, 2.5 / np.linalg.norm(d, axis=1))[:, None]  # |d| <= 2.5
    mi = cell.minimum_image(d)
    bf = brute_minimum_image(lattice, d)
    assert np.allclose(np.linalg.norm(mi, axis=1), np.linalg.norm(bf, axis=1), rtol=0,
                       atol=1e-12)
    # mi differs from d by a lattice vector
    n = (d - mi) @ np.linalg.inv(np.asarray(lattice, float))
    assert np.allclose(n, np.rint(n), atol=1e-9)


def test_rounding_alone_is_wrong_in_a_skewed_cell():
    """Why the search: rounding fractional coordinates of the user's basis misses the
    nearest image for many displacements of a skewed cell."""
    a = np.asarray(SKEWED_3D)
    rng = np.random.default_rng(3)
    d = rng.normal(scale=2.0, size=(400, 3))
    f = d @ np.linalg.inv(a)
    rounded = np.linalg.norm((f - np.rint(f)) @ a, axis=1)
    exact = np.linalg.norm(Cell(a).minimum_image(d), axis=1)
    assert np.all(exact <= rounded + 1e-12)
    assert np.mean(exact < rounded - 1e-9) > 0.3


@pytest.mark.parametrize("lattice", CELLS)
def test_wrap(lattice):
    cell = Cell(lattice)
    rng = np.random.default_rng(11)
    x = rng.normal(scale=10.0, size=(5, 7, cell.dim))
    x[0, 0] = -1e-18  # rounds to 1.0 in f - floor(f) without the guard
    f = cell.wrap_fractional(x)
    assert np.all(f >= 0.0) and np.all(f < 1.0)
    w = cell.wrap(x)
    n = (x - w) @ np.linalg.inv(np.asarray(lattice, float))
    assert np.allclose(n, np.rint(n), atol=1e-9)
    fw = cell.to_fractional(w)
    assert np.all(fw > -1e-12) and np.all(fw < 1 + 1e-12)


@pytest.mark.parametrize("lattice", CELLS)
def test_shortest_vector_and_inscribed_radius(lattice):
    cell = Cell(lattice)
    a = np.asarray(lattice, float)
    n = np.array(list(itertools.product(range(-8, 9), repeat=cell.dim)))
    lengths = np.linalg.norm(n @ a, axis=1)
    assert cell.shortest_vector == pytest.approx(lengths[lengths > 0].min(), rel=1e-12)
    assert cell.inscribed_radius == pytest.approx(0.5 * cell.shortest_vector)


def test_lattice_constructors_and_heg_cells():
    assert Cell(bcc(2.0)).volume == pytest.approx(4.0)
    assert Cell(fcc(2.0)).volume == pytest.approx(2.0)
    assert Cell(bcc(2.0)).shortest_vector == pytest.approx(math.sqrt(3.0))
    assert Cell(fcc(2.0)).shortest_vector == pytest.approx(math.sqrt(2.0))
    assert Cell(hexagonal(2.0)).area == pytest.approx(2 * math.sqrt(3.0))
    for n, rs in ((14, 1.0), (54, 5.0)):
        for shape in ("cubic", "bcc", "fcc"):
            c = heg_cell(n, rs, 3, shape)
            assert c.volume == pytest.approx(n * 4 / 3 * math.pi * rs ** 3, rel=1e-12)
        for shape in ("square", "hexagonal"):
            c = heg_cell(n, rs, 2, shape)
            assert c.dim == 2 and c.area == pytest.approx(n * math.pi * rs ** 2, rel=1e-12)
    assert np.allclose(heg_cell(8, 1.0, 2).lattice, square(math.sqrt(8 * math.pi)))


def test_reduce_basis_keeps_the_determinant():
    b = reduce_basis(SKEWED_3D)
    assert np.linalg.det(b) == pytest.approx(np.linalg.det(SKEWED_3D), rel=1e-12)
    assert np.linalg.norm(b, axis=1).max() < np.linalg.norm(SKEWED_3D, axis=1).max()


@pytest.mark.parametrize("lattice, words", [
    ([[1, 0, 0], [0, 1, 0], [1, 1, 0]], ["cell.lattice", "singular"]),
    ([[1, 0, 0], [0, 1, 0], [0, 0, 0]], ["cell.lattice", "singular"]),
    ([[0, 1, 0], [1, 0, 0], [0, 0, 1]], ["cell.lattice", "left-handed", "determinant > 0"]),
    ([[0.0, 1.0], [1.0, 0.0]], ["left-handed"]),
    ([[1, 0], [0, 1], [0, 0]], ["cell.lattice", "(3, 3)", "(2, 2)", "(3, 2)"]),
    ([[1, 0, 0], [0, np.nan, 0], [0, 0, 1]], ["cell.lattice", "finite"]),
    ([[1, 0, 0], [0, np.inf, 0], [0, 0, 1]], ["cell.lattice", "finite"]),
    ("abc", ["cell.lattice"]),
])
def test_bad_cells(lattice, words):
    with pytest.raises(FixedQMCError) as err:
        Cell(lattice)
    for w in words:
        assert w in str(err.value)


def test_bad_heg_and_positions():
    with pytest.raises(FixedQMCError, match="r_s"):
        heg_cell(14, 0.0)
    with pytest.raises(FixedQMCError, match="r_s"):
        heg_cell(14, -1.0)
    with pytest.raises(FixedQMCError, match="n_electrons"):
        heg_cell(0, 1.0)
    with pytest.raises(FixedQMCError, match="shape = 'fcc'.*square, hexagonal"):
        heg_cell(14, 1.0, 2, "fcc")
    with pytest.raises(FixedQMCError, match="dim"):
        heg_cell(14, 1.0, 4)
    with pytest.raises(FixedQMCError, match=r"\(\.\.\., 3\)"):
        Cell(simple_cubic(1.0)).wrap(np.zeros((4, 2)))
