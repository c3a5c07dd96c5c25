"""Error bounds of a molecule's evaluation (``fixedqmc.bound``): Slater determinants bounded
through the host's fresh inverses, with and without a Jastrow factor, beside the errors
measured (the bound context of every kernel compiles once: about 3 minutes cold)."""

import numpy as np
import pytest

import fixedqmc
from fixedqmc.qmc.profile import RangeProfile
from fixedqmc.qmc.system import Walkers
from fixedqmc.sweep.estimates import Reference, paired_estimate
from fixedqmc.systems import determinants as det
from fixedqmc.systems.determinant_part import UNBOUNDED_INVERSE
from fixedqmc.systems.molecule.geometry import build_mole
from fixedqmc.systems.molecule.scf import mean_field
from fixedqmc.systems.molecule.system import Molecule
from fixedqmc.testing import assert_system_within_bound

pytestmark = [pytest.mark.heavy, pytest.mark.xdist_group("molecule_bound")]

PARTS = {"kinetic", "electron_electron", "electron_nucleus", "nucleus_nucleus"}
DETERMINANT = {"determinant.ln_det", "determinant.grad", "determinant.lap"}
JASTROW = {"jastrow.value", "jastrow.grad", "jastrow.lap"}


@pytest.fixture(scope="module")
def h2_pair():
    """Two H2 molecules (2 x 2 determinants per spin), 48 walkers spread around the nuclei
    (some close to a node of the determinant), and the range profile of float64 there."""
    mol = build_mole("H 0 0 0; H 0 0 1.4; H 5 0 0; H 5 0 1.4")
    mf = mean_field(mol, "rhf")
    f64 = Molecule(mol, mf.mo_up, mf.mo_down, jastrow_b=1.0)
    pos = f64.initial_positions(48, np.random.default_rng(1))
    ranges = RangeProfile.from_system(f64, [pos]).ranges()

    def build(spec, **kw):
        return Molecule(mol, mf.mo_up, mf.mo_down, spec, ranges=ranges, seed=3, **kw)
    return build, pos


@pytest.mark.parametrize("spec", ["fixed:24", "fixed:32:stochastic", "float32"])
def test_every_quantity_within_its_bound_and_the_trial_is_evaluate(h2_pair, spec):
    """No measured error exceeds its bound; the local energy's bound is infinite only for
    walkers whose Slater matrix may be singular within its bounds (counted as
    ``determinant.fresh_inverse``: these walkers are drawn around the nuclei, not from
    psi**2, and some lie near a node), and finite for most; the trial's local energy and
    ln|psi| are :meth:`evaluate`'s bit for bit, and its log holds the events that call
    logs (the system's own log untouched)."""
    build, pos = h2_pair
    system = build(spec, jastrow_b=1.0)
    res = assert_system_within_bound(system, pos, step=4, allow_unbounded=True)
    assert set(res.value) == DETERMINANT | JASTROW | PARTS | {"local_energy", "ln_psi"}
    assert system.log.total_events == 0
    fresh = build(spec, jastrow_b=1.0)
    ev = fresh.evaluate(Walkers(pos, None), step=4)
    assert np.array_equal(res.trial["local_energy"], ev.local_energy)
    assert np.array_equal(res.trial["ln_psi"], ev.ln_psi)
    assert dict(res.log.events) == dict(fresh.log.events)
    assert res.log.formats == fresh.log.formats
    lost = (~np.isfinite(res.bound["local_energy"])).sum()
    assert lost == (~np.isfinite(res.bound["ln_psi"])).sum() <= 16
    assert lost <= res.unbounded[UNBOUNDED_INVERSE]
    assert not {k: c for k, c in res.unbounded.items() if c and k != UNBOUNDED_INVERSE}
    row = res.table().loc["local_energy"]
    assert row.max_error > 0 and row.ratio < 1e3, row


def test_the_propagated_terms_are_needed(h2_pair, monkeypatch):
    """Mutation check: without the host's propagated contraction term (the kernel's own
    roundings only), or with the inverses taken as exact, measured errors exceed the
    bounds."""
    build, pos = h2_pair
    system = build("fixed:24")
    assert (fixedqmc.bound(system, pos).table().violations == 0).all()
    monkeypatch.setattr(det, "contraction_bound", lambda G, side, bG: np.zeros(G.shape[:3]))
    assert fixedqmc.bound(system, pos).table().loc["determinant.grad"].violations > 0


def test_an_ill_conditioned_walker_is_bounded_or_marked(h2_pair):
    """Two same-spin electrons at nearly one point (the determinant near a node): the
    bound is finite and holds, or is infinite (a matrix that may be singular within its
    bounds), never violated."""
    build, pos = h2_pair
    near = pos[:4].copy()
    near[:, 1] = near[:, 0] + 1e-4
    res = fixedqmc.bound(build("fixed:24"), near)
    assert (res.table().violations == 0).all()


def test_a_molecules_paired_point_has_bound_columns_and_the_evaluated_values(h2_pair):
    """A sweep's paired point of a molecule (two blocks, stochastic rounding): the bound
    columns cover every sample with no violation, and every paired and reweighted column
    equals that of the point evaluated without bounds (``sweep --no-bounds``)."""
    build, pos = h2_pair
    f64 = build("float64")
    blocks = pos[:32].reshape(2, 16, *pos.shape[1:])
    evs = [f64.evaluate(Walkers(b, None), step=i) for i, b in enumerate(blocks)]
    ref = Reference(blocks, np.array([e.local_energy for e in evs]), 0.0, 1.0, 0.5, None,
                    0.0, None, np.array([e.ln_psi for e in evs]))
    got = {b: paired_estimate(build("fixed:28:stochastic"), ref, bounds=b)
           for b in (True, False)}
    assert got[True]["bound_samples"] == 32 and got[True]["bound_violations"] == 0
    assert "bound_samples" not in got[False]
    assert all(np.array_equal(got[True][k], got[False][k], equal_nan=True)
               for k in got[False])
