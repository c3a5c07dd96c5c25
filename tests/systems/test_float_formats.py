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
