"""Slater-Jastrow parts, each checked alone (fixedqmc.testing.check_part): the determinant
part over the molecule's, the electron gas's and a user's orbitals, the molecule's Pade
Jastrow factor, the electron gas's u + p factor and each of its terms alone; and the
checker catches broken parts."""

import numpy as np
import pytest

from fixedqmc.qmc.system import Walkers
from fixedqmc.systems.molecule.geometry import build_mole
from fixedqmc.systems.molecule.jastrow import PadeJastrow
from fixedqmc.systems.molecule.scf import mean_field
from fixedqmc.systems.molecule.system import Molecule
from fixedqmc.systems.parts import PartMove
from fixedqmc.systems.periodic.cell import heg_cell
from fixedqmc.systems.periodic.heg import ElectronGas
from fixedqmc.systems.periodic.jastrow import jastrow_parameters
from fixedqmc.systems.periodic.jastrow_eval import JastrowEvaluator, JastrowTerms
from fixedqmc.testing import check_part, check_system
from tests.qmc.user_system import fermions_module


@pytest.fixture(scope="module")
def molecule():
    mol = build_mole("H 0 0 0; H 0 0 1.4; H 4 0 0; H 4 0 1.4")
    mf = mean_field(mol, "rhf")
    return Molecule(mol, mf.mo_up, mf.mo_down, jastrow_b=1.0)


@pytest.fixture(scope="module")
def gas():
    cell = heg_cell(14, 2.0, 3, None)
    jp = jastrow_parameters(cell, 14, 7, alpha_parallel=[0.05, 0.01],
                            alpha_antiparallel=[0.1, -0.02], p_coefficients=[0.02, -0.01])
    return ElectronGas(cell, 7, 7, jastrow=JastrowEvaluator(jp))


def test_the_molecules_parts_pass_alone(molecule):
    assert [type(p).__name__ for p in molecule.parts] == ["DeterminantPart", "PadeJastrow"]
    pos = molecule.initial_positions(4, np.random.default_rng(1))
    for part in molecule.parts:
        dev = check_part(part, molecule.ks, pos)
        assert dev["update_value"] < 1e-9 and dev["proposal_grad"] < 1e-9


def test_the_electron_gas_parts_pass_alone(gas):
    """The determinant, the Jastrow factor u + p as the gas composes it, and each of its
    terms alone."""
    assert [getattr(p, "names", None) for p in gas.parts] == [None, ("jastrow_u", "jastrow_p")]
    pos = gas.initial_positions(3, np.random.default_rng(1))
    ev = gas.jastrow
    for part in (*gas.parts, JastrowTerms(ev, ("jastrow_u",)), JastrowTerms(ev, ("jastrow_p",))):
        check_part(part, gas.ks, pos)


def test_a_users_system_is_a_composition_of_parts():
    """The trapped fermions (examples/trapped_fermions.py): a determinant part over the
    user's polynomials and a user's Gaussian Jastrow part pass alone and composed; with
    alpha = 1 the composed local energy is the exact 18 hbar omega at any position."""
    tf = fermions_module()
    system = tf.TrappedFermions(4, 4, 1.0)
    pos = system.initial_positions(5, np.random.default_rng(3))
    for part in system.parts:
        check_part(part, system.ks, pos)
    check_system(system, pos)
    e = system.evaluate(Walkers(pos.copy(), None)).local_energy
    assert np.abs(e - 18.0).max() < 1e-9


class _WrongLaplacian(PadeJastrow):
    laplacian = "value"  # reports lap J, claims lap exp(J) / exp(J)


class _GradOff(PadeJastrow):
    def propose(self, ks, pos, state, i, new, step, grad=True):
        mv = super().propose(ks, pos, state, i, new, step, grad)
        return PartMove(mv.log_ratio, None, None if mv.grad is None else mv.grad * 1.001)


class _RatioOff(PadeJastrow):
    def propose(self, ks, pos, state, i, new, step, grad=True):
        mv = super().propose(ks, pos, state, i, new, step, grad)
        return PartMove(mv.log_ratio + 1e-6, None, mv.grad)


@pytest.mark.parametrize("broken, match", [
    (_WrongLaplacian, "Laplacian"), (_GradOff, "propose gradient"), (_RatioOff, "ratio")])
def test_the_checker_catches_a_broken_jastrow_part(molecule, broken, match):
    part = broken(molecule.n[0], 1.0)
    with pytest.raises(AssertionError, match=match):
        check_part(part, molecule.ks, molecule.initial_positions(3, np.random.default_rng(0)))


def test_the_checker_catches_a_determinant_that_ignores_the_mask(molecule):
    det = molecule.determinant

    class Greedy(type(det)):
        def accept(self, ks, state, i, mask, move):
            super().accept(ks, state, i, np.ones_like(mask), move)

    part = Greedy(det.n, det.orbitals)
    with pytest.raises(AssertionError, match="unmasked"):
        check_part(part, molecule.ks, molecule.initial_positions(4, np.random.default_rng(0)))
