"""The system protocol: every system passes fixedqmc.testing.check_system; the registry and
the run input reject what does not fit, naming it."""

import numpy as np
import pytest

from fixedqmc.errors import FixedQMCError
from fixedqmc.qmc.registry import SystemPlugin, get_plugin, register_system, system_kinds
from fixedqmc.qmc.system import Units, check_protocol
from fixedqmc.run import load_config, run
from fixedqmc.systems.helium.cluster import HeliumCluster, TableSettings
from fixedqmc.testing import check_system
from tests.qmc.user_system import fermions_module

ANALYTIC = {"potential": "analytic", "wavefunction": "analytic", "kinetic": "analytic"}


def test_helium_passes_the_protocol_checks():
    he = HeliumCluster(4, sources=ANALYTIC, tables=TableSettings(r_max=30.0))
    pos = he.initial_positions(6, np.random.default_rng(1))
    dev = check_system(he, pos)
    assert dev["grad"] < 1e-6 and dev["ratio"] < 1e-12


@pytest.mark.parametrize("n_up, n_down", [(4, 3), (2, 0), (1, 1)])
def test_trapped_fermions_pass_the_protocol_checks(n_up, n_down):
    tf = fermions_module()
    system = tf.TrappedFermions(n_up, n_down, 0.8)
    pos = system.initial_positions(6, np.random.default_rng(2))
    dev = check_system(system, pos)
    assert dev["update_ln_psi"] < 1e-9 and dev["proposal_grad"] < 1e-9


def test_the_checker_catches_a_wrong_gradient():
    tf = fermions_module()

    class Broken(tf.TrappedFermions):
        def evaluate(self, walkers, *, step=0):
            ev = super().evaluate(walkers, step=step)
            ev.grad = ev.grad * 1.001
            return ev

    system = Broken(2, 1, 0.8)
    with pytest.raises(AssertionError, match="grad"):
        check_system(system, system.initial_positions(4, np.random.default_rng(0)))


def test_the_checker_catches_an_accept_that_ignores_the_mask():
    tf = fermions_module()

    class Broken(tf.TrappedFermions):
        def accept(self, walkers, i, mask, proposal):
            super().accept(walkers, i, np.ones_like(mask, bool), proposal)

    system = Broken(2, 1, 0.8)
    with pytest.raises(AssertionError, match="unmasked"):
        check_system(system, system.initial_positions(4, np.random.default_rng(0)))


def test_the_checker_catches_an_accept_that_moves_positions():
    """Positions have one owner, the caller (commit_move): a system's accept must not
    write them."""
    tf = fermions_module()

    class Mover(tf.TrappedFermions):
        def accept(self, walkers, i, mask, proposal):
            super().accept(walkers, i, mask, proposal)
            walkers.positions[mask, i] = proposal.new[mask]

    system = Mover(2, 1, 0.8)
    with pytest.raises(AssertionError, match="accept changed positions"):
        check_system(system, system.initial_positions(4, np.random.default_rng(0)))


def test_protocol_violation_names_the_missing_method():
    class Half:
        n_particles, hbar2_2m, kernels, log = 1, 0.5, {}, None
        units = Units("E", "L")

        def evaluate(self, walkers, *, step=0):
            return None

    with pytest.raises(FixedQMCError, match=r"propose\(\).*accept\(\)"):
        check_protocol(Half())
    plugin = SystemPlugin("half_system", {"system": {}}, lambda config, **kw: Half(),
                          Units("E", "L"))
    register_system(plugin, replace=True)
    try:
        with pytest.raises(FixedQMCError, match="half_system.*propose"):
            run(overrides={"system": {"kind": "half_system"}, "output": "unused"},
                progress=False)
    finally:
        from fixedqmc.qmc.registry import unregister_system
        unregister_system("half_system")


def test_registry_lists_kinds_and_rejects_unknown_ones():
    assert "helium" in system_kinds()
    assert get_plugin("helium").units.energy == "K"
    with pytest.raises(FixedQMCError, match="'argon'.*registered: .*helium"):
        load_config(overrides={"system": {"kind": "argon"}})


def test_keys_of_another_system_are_rejected_by_name(tmp_path):
    fermions_module()
    with pytest.raises(FixedQMCError, match="'tables'.*trapped_fermions.*allowed here"):
        load_config(overrides={"system": {"kind": "trapped_fermions"},
                               "tables": {"r_max": 30.0}})
    with pytest.raises(FixedQMCError, match="system.n_atoms.*trapped_fermions"):
        load_config(overrides={"system": {"kind": "trapped_fermions", "n_atoms": 3}})


@pytest.mark.parametrize("sets, match", [
    (["method.recompute_every=0"], "recompute_every"),
    (["method.energy_cutoff=-1"], "energy_cutoff"),
    (["method.max_age=0"], "max_age"),
    (["units='eV'"], "eV.*K, mK, hartree"),
    (["plugins=['nope_missing.py']"], "nope_missing.py"),
    (["plugins='x.py'"], "plugins must be a list"),
])
def test_engine_keys_are_checked(sets, match):
    with pytest.raises(FixedQMCError, match=match):
        load_config(sets=sets)


def test_a_plugin_that_fails_to_import_is_named(tmp_path):
    bad = tmp_path / "bad_plugin.py"
    bad.write_text("raise RuntimeError('boom')\n")
    with pytest.raises(FixedQMCError, match="bad_plugin.py.*RuntimeError: boom"):
        load_config(overrides={"plugins": [str(bad)]})
