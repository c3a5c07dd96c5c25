"""Every example input validates (keys, values, system kind) without running."""

from pathlib import Path

import pytest

from fixedqmc.run.config import load_config

EXAMPLES = sorted((Path(__file__).resolve().parents[1] / "examples").glob("*.toml"))


@pytest.mark.parametrize("path", EXAMPLES, ids=[p.name for p in EXAMPLES])
def test_example_input_is_valid(path):
    config = load_config(path)
    assert config["system"]["kind"]
