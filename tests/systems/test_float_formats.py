"""Every kernel of the three systems runs at float formats with no change to its source:
``float:e11m52`` (float64 as an emulated format) gives float64's local energies, and
``float:e8m23`` is as close to float64 as the machine's float32 (within a factor 10: the
float32 kernels use their own exp and constants rounded once; the emulation rounds every
result of the exact operation);
bfloat16 runs, each variable's events in the log."""

from pathlib import Path

import numpy as np
import pytest

from fixedqmc.qmc.system import Walkers
from fixedqmc.run.config import load_config
from fixedqmc.run.plan import build_system

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"
SYSTEMS = {
    "helium": (None, {"system": {"n_atoms": 3}, "tables": {"r_max": 40.0}}),
    "molecule": ("h2_lattice_vmc.toml", {"system": {"lattice": 1}}),
    "heg": ("heg_vmc.toml", {}),
}


def energies(kind, precision, pos=None):
    path, overrides = SYSTEMS[kind]
    config = load_config(EXAMPLES / path if path else None,
                         overrides={**overrides, "precision": precision})
    system = build_system(config)
    if pos is None:
        pos = system.initial_positions(6, np.random.default_rng(3))
    ev = system.evaluate(Walkers(np.array(pos), None))
    return sum(ev.parts.values()), pos, system


@pytest.mark.slow
@pytest.mark.parametrize("kind", sorted(SYSTEMS))
def test_float64_and_float32_as_formats(kind):
    e64, pos, _ = energies(kind, "float64")
    e52, _, _ = energies(kind, "float:e11m52", pos)
    np.testing.assert_allclose(e52, e64, rtol=1e-12, atol=1e-12 * np.abs(e64).max())
    e32, _, _ = energies(kind, "float32", pos)
    e23, _, system = energies(kind, "float:e8m23", pos)
    # both are float32 computations (a system's energy can be a small difference of large
    # parts, so their error is measured against float32's own, not against |E|)
    err32 = np.abs(e32 - e64).max()
    assert 0 < np.abs(e23 - e64).max() <= 10 * err32
    assert set(system.formats().values()) == {"float:e8m23:nearest_even:subnormals,inf"}


@pytest.mark.slow
@pytest.mark.parametrize("kind", sorted(SYSTEMS))
def test_bfloat16_runs_and_logs_events(kind):
    e64, pos, _ = energies(kind, "float64")
    ebf, _, system = energies(kind, "bfloat16", pos)
    assert np.isfinite(ebf).all()
    frame = system.log.to_frame()
    assert {"underflow", "subnormal", "nan"} <= set(frame.columns)
    assert set(system.formats().values()) == {"bfloat16"}


@pytest.mark.slow
def test_helium_kernel_sets_at_a_float_format_share_one_compilation():
    """Helium's fused cluster kernel takes every kernel's context: with one kernel set at a
    float format, the float64 kernels run as float64 rows of the float-format context
    (shared_context_kind), so every set compiles the one kernel, and the kernels outside
    the set give float64's bits."""
    from fixedqmc.systems.helium import kernels as K

    _, pos, system64 = energies("helium", "float64")
    ref = system64.evaluate(Walkers(np.array(pos), None))
    before = len(K.cluster_kernel.signatures)
    for kernels, same in (("potential", ("kinetic",)), ("kinetic", ("potential",))):
        _, _, system = energies("helium", f"default=float64,{kernels}=bfloat16", pos)
        assert {kp.kind for kp in system.precisions.values()} == {"formats"}
        ev = system.evaluate(Walkers(np.array(pos), None))
        np.testing.assert_array_equal(ev.ln_psi, ref.ln_psi)
        for part in same:
            np.testing.assert_array_equal(ev.parts[part], ref.parts[part])
        assert not np.array_equal(ev.parts[kernels], ref.parts[kernels])
    assert len(K.cluster_kernel.signatures) - before <= 1
