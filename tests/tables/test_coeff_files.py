"""HAQMC coefficient files: layout, bit-identical round trip, ROM hex words and file errors
(seed 002, Appendix "Part 1")."""

import json

import pytest

from fixedqmc.tables.coeff_files import check_table, package_version, read_table, write_table
from fixedqmc.tables.two_region import TableError, build_table, quantize_table

from .test_two_region import LJ_RANGE, lj

DAT = ["fa.dat", "fb.dat", "fc.dat", "faII.dat", "fbII.dat", "fcII.dat"]
HEX = [name.replace(".dat", ".hex") for name in DAT]


@pytest.fixture(scope="module")
def lj_table():
    return build_table(lj, *LJ_RANGE, "zero")


@pytest.fixture
def folder(tmp_path, lj_table):
    return write_table(quantize_table(lj_table, "Q1.30"), tmp_path / "lj")


def _edit_line(path, line_no, text):
    lines = path.read_text().splitlines()
    lines[line_no - 1] = text
    path.write_text("\n".join(lines) + "\n")


# ------------------------------------------------------------------------ layout ------
def test_float_table_layout(tmp_path, lj_table):
    folder = write_table(lj_table, tmp_path / "t")
    assert sorted(p.name for p in folder.iterdir()) == sorted(DAT + ["table.json"])
    for name, n in zip(DAT, [256] * 3 + [1344] * 3):
        assert len((folder / name).read_text().splitlines()) == n
    meta = json.loads((folder / "table.json").read_text())
    assert meta["sigma"] == lj_table.sigma and meta["n_seg"] == 21 and meta["coef_format"] is None
    assert meta["transform"] == ["none", "none"] and meta["name"] == "lj"
    assert meta["package_version"] == package_version()
    assert float((folder / "fb.dat").read_text().splitlines()[7]) == lj_table.b1[7]


def test_hex_rom_words(folder):
    meta = json.loads((folder / "table.json").read_text())
    assert meta["coef_format"] == "Q1.30" and meta["hex_files"]["c2"] == "fcII.hex"
    table = read_table(folder)
    for name, key in zip(HEX, ["a1", "b1", "c1", "a2", "b2", "c2"]):
        lines = (folder / name).read_text().splitlines()
        assert all(len(line) == 8 for line in lines)  # 32-bit word
        assert [int(x, 16) for x in lines] == table.quantized[key].bits().tolist()
    first_b = int((folder / "fb.hex").read_text().split()[0], 16)
    assert table.b1[0] < 0 and first_b >> 31 == 1  # two's complement sign bit
    assert first_b - 2**32 == table.quantized["b1"].raw[0]


# -------------------------------------------------------------------- round trip ------
@pytest.mark.parametrize("fmt", [None, "Q1.30", "Q3.60", "Q1.8"])
def test_round_trip_is_bit_identical(tmp_path, lj_table, fmt):
    table = lj_table if fmt is None else quantize_table(lj_table, fmt)
    assert read_table(write_table(table, tmp_path / "t")) == table


def test_round_trip_of_an_exp_transformed_table(tmp_path):
    table = build_table(lj, *LJ_RANGE, 1.1, n1=16, n_seg=5, n_bin=8, transform=("none", "exp"),
                        coef_format="Q2.40", name="lj exp")
    back = read_table(write_table(table, tmp_path / "t"))
    assert back == table and back.transform == ("none", "exp") and back.name == "lj exp"


def test_quantized_dat_values_are_exact(folder):
    table = read_table(folder)
    text = (folder / "fcII.dat").read_text().splitlines()
    assert [float(x) * 2**30 for x in text] == table.quantized["c2"].raw.tolist()


# ------------------------------------------------------------------- file errors ------
def test_truncated_file(folder):
    path = folder / "fb.dat"
    path.write_text("\n".join(path.read_text().splitlines()[:200]) + "\n")
    with pytest.raises(TableError, match=r"fb\.dat, line 201: file ends after 200 lines; expected 256"):
        read_table(folder)


def test_mis_sized_file(folder):
    path = folder / "faII.dat"
    path.write_text(path.read_text() + "0.5\n")
    with pytest.raises(TableError, match=r"faII\.dat, line 1345: unexpected value"):
        read_table(folder)


@pytest.mark.parametrize("text, match", [("abc", "'abc' is not a number"), ("", "empty line"),
                                         ("inf", "'inf' is not finite")])
def test_bad_dat_line(folder, text, match):
    _edit_line(folder / "fcII.dat", 17, text)
    with pytest.raises(TableError, match=rf"fcII\.dat, line 17: {match}"):
        read_table(folder)


@pytest.mark.parametrize("text", ["zz000000", "1234567", "123456789"])
def test_bad_hex_line(folder, text):
    _edit_line(folder / "fa.hex", 3, text)
    with pytest.raises(TableError, match=r"fa\.hex, line 3: .* is not a 32-bit word of 8 hex digits"):
        read_table(folder)


def test_truncated_hex_file(folder):
    (folder / "fcII.hex").write_text("00000000\n")
    with pytest.raises(TableError, match=r"fcII\.hex, line 2: file ends after 1 lines"):
        read_table(folder)


def test_dat_and_hex_disagree(folder):
    _edit_line(folder / "fb.dat", 5, "0.25")
    with pytest.raises(TableError, match=r"fb\.dat, line 5: 0\.25 differs from the word .* in fb\.hex"):
        read_table(folder)


def test_missing_file(folder):
    (folder / "fc.dat").unlink()
    with pytest.raises(TableError, match=r"fc\.dat: file not found"):
        read_table(folder)


@pytest.mark.parametrize("edit, match", [
    (lambda m: m.pop("sigma"), "missing key.*sigma"),
    (lambda m: m.update(n1=100), "n1 must be a power of two"),
    (lambda m: m.update(coef_format="Q1.x"), "coef_format: malformed"),
    (lambda m: m.update(sigma=30.0), "sigma must lie strictly inside"),
    (lambda m: m.update(layout="other"), "not a two-region table sidecar"),
])
def test_bad_sidecar(folder, edit, match):
    path = folder / "table.json"
    meta = json.loads(path.read_text())
    edit(meta)
    path.write_text(json.dumps(meta))
    with pytest.raises(TableError, match=rf"table\.json: .*{match}"):
        read_table(folder)


def test_sidecar_not_json(folder):
    (folder / "table.json").write_text("{\n  'sigma': 1,\n}")
    with pytest.raises(TableError, match=r"table\.json: not valid JSON \(line 2\)"):
        read_table(folder)


# ------------------------------------------------------------------------- check ------
def test_check_with_function(folder):
    report, ok = check_table(folder, lj)
    assert ok and report.loc["I", "max_abs_err"] < 2e-6 and report["within_bound"].all()
    assert not check_table(folder, lj, tolerance=1e-9)[1]


def test_check_without_function(folder):
    report, ok = check_table(folder)
    assert ok and list(report.index) == ["I", "II"] and report.loc["II", "bins"] == 1344
    assert report.loc["I", "max_jump"] < 1e-5      # adjacent bins meet to within the error
    assert check_table(folder, tolerance=1e-4)[1]
    _edit_line(folder / "fa.dat", 10, "0.0")
    _edit_line(folder / "fa.hex", 10, "00000000")
    report, ok = check_table(folder, tolerance=1e-4)
    assert not ok and report.loc["I", "max_jump"] > 1.0


def test_check_fails_a_table_whose_format_loses_the_fit(tmp_path, lj_table):
    """Written with its function, a lossy table carries its measured loss in table.json and
    both checks fail it, saying why; a good format passes both."""
    lossy = quantize_table(lj_table, "Q1.2")  # no function: quantized without being measured
    folder = write_table(lossy, tmp_path / "lossy", lj)
    record = json.loads((folder / "table.json").read_text())["quantization"]
    assert record["coef_format"] == "Q1.2" and record["lossy"]
    assert record["regions"]["I"]["err_f"] > record["regions"]["I"]["allowed_f"]
    for report, ok in (check_table(folder), check_table(folder, lj)):
        assert not ok and report["lossy"].all()
        assert report["problems"].str.contains("coefficients Q1.2 lose the fit").all()
    good = write_table(quantize_table(lj_table, "Q1.30"), tmp_path / "good", lj)
    assert json.loads((good / "table.json").read_text())["quantization"]["lossy"] is False
    for report, ok in (check_table(good), check_table(good, lj)):
        assert ok and not report["lossy"].any() and (report["problems"] == "").all()
    plain = write_table(lj_table, tmp_path / "float", lj)  # a float table has no record
    assert json.loads((plain / "table.json").read_text())["quantization"] is None


def test_check_fails_a_stored_infinite_bound(tmp_path, lj_table):
    folder = write_table(lj_table, tmp_path / "t", lj)
    path = folder / "table.json"
    meta = json.loads(path.read_text())
    assert check_table(folder)[1]
    meta["bound_g"]["II"][3] = None  # how table.json writes an infinite bound
    path.write_text(json.dumps(meta))
    report, ok = check_table(folder)
    assert not ok and (report["jumps_over_bound"] == 0).all()
    assert report.loc["II", "problems"].startswith(
        "1 bin(s) with an infinite (null) error bound in table.json, first at line 4 of faII.dat")
