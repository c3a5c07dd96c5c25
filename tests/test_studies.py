"""Parts of the studies that compute something of their own, on systems small enough to
count by hand."""

import importlib.util
import shutil
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]


def load_study(name: str):
    spec = importlib.util.spec_from_file_location(f"study_{name}",
                                                  ROOT / "studies" / name / "study.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_h2_table2_streams_one_electron_orbital_pair_per_cycle(tmp_path):
    """One H2 (2 electrons, 2 s-type AOs, 1 MO per spin) at the 8-H2 study's formats: a
    walker streams at most 2 x 2 pairs; per pair the MO sums take one product for the value
    and, in all of the data path, four for the derivatives (three gradient components and
    the Laplacian), in the seed's part one (the Laplacian)."""
    study = load_study("h2_lattice_bitwidth")
    for name in ("table1_points.csv", "tune_plan.csv"):
        shutil.copy(ROOT / "studies" / "h2_lattice_bitwidth" / "results" / "reduced" / name,
                    tmp_path / name)
    table = study.seed_table2(1, tmp_path)
    assert list(table.plan.unique()) == ["W = 38", "W = 40", "tuned plan", "common width 28",
                                         "seed 001 Table 2"]
    ours = table[table.plan != "seed 001 Table 2"]
    assert ((0 < ours["pairs per walker"]) & (ours["pairs per walker"] <= 4)).all()
    full = ours[ours["data path"].str.startswith("values, gradients")]
    seed = ours[ours["data path"].str.endswith("(the seed's)")]
    # the gradient's products dropped: the MO derivative sums' 4 products per pair become 1,
    # and the contraction's gradient terms (3 pd, 3 gterm per pair) go
    assert list(full.products.to_numpy() - seed.products.to_numpy()) == [3 + 3 + 3] * 4
    assert (seed.dsp_blocks.to_numpy() < full.dsp_blocks.to_numpy()).all()
    assert (seed.m20k.to_numpy() == full.m20k.to_numpy()).all()
    # signed 38- and 40-bit operands both take three chunks on 18- and 19-bit ports
    w38, w40 = (full[full.plan == p].iloc[0] for p in ("W = 38", "W = 40"))
    assert w38.dsp_blocks == w40.dsp_blocks and w38.luts < w40.luts
    # the tuned plan narrows variables of its common width, never widens one
    tuned, common = (full[full.plan == p].iloc[0] for p in ("tuned plan", "common width 28"))
    assert tuned.dsp_blocks < common.dsp_blocks and tuned.m20k <= common.m20k
    assert table.set_index("plan").loc["seed 001 Table 2", "dsp_blocks"] == 714


def test_h2_table2_needs_the_table1_part(tmp_path):
    with pytest.raises(SystemExit, match="run --part table1 first"):
        load_study("h2_lattice_bitwidth").seed_table2(1, tmp_path)


def test_helium_resources_stream_one_pair_per_cycle():
    """He3 at 32 bits, one atom pair per cycle: the squared distance takes 3 products per
    pair, the potential's and the wave function's quadratic lookups 4 each (scaling, u c,
    u (b + u c), the rescaling); a signed 32 x 32 product takes 2 x 2 DSP48 slices; each
    kernel's three coefficient tables of 1,600 32-bit words take 4 block RAMs each."""
    study = load_study("helium_bitwidth")
    table = study.seed_resources("He3", widths=(32,)).set_index("kernels")
    assert list(table["products per pair"][:2]) == [3 + 4, 3 + 4 + 4]
    assert list(table.dsp48[:2]) == [4 * 7, 4 * 11]
    assert list(table.bram18) == [12, 24, 48]
    assert list(table["dsp48 (seed)"]) == [25, 50, 75]
