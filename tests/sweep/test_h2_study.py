"""The H2 bit-width study (studies/h2_lattice_bitwidth/study.py): its table2 part prices
the seed's streaming data path from the counted operations."""

import shutil

import pytest

from tests.sweep.studies import STUDIES, load_study


def test_h2_table2_streams_one_electron_orbital_pair_per_cycle(tmp_path):
    """One H2 (2 electrons, 2 s-type AOs, 1 MO per spin) at the 8-H2 study's formats: a
    walker streams at most 2 x 2 pairs; per pair the MO sums take one product for the value
    and, in all of the data path, four for the derivatives (three gradient components and
    the Laplacian), in the seed's part one (the Laplacian)."""
    study = load_study("h2_lattice_bitwidth")
    for name in ("table1_points.csv", "tune_plan.csv"):
        shutil.copy(STUDIES / "h2_lattice_bitwidth" / "results" / "reduced" / name,
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
