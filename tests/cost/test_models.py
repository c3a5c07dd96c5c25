"""Cost models on hand-counted data paths: FPGA operators, memory and GPU roofline;
device files, user models and bad input."""

import pandas as pd
import pytest

from fixedqmc.cost import (H100, cost, cost_model, cost_models, operand, register_cost_model,
                           totals, with_formats)
from fixedqmc.cost.fpga import FPGA_MODELS
from fixedqmc.cost.gpu import format_class, load_device
from fixedqmc.errors import FixedQMCError


def ops(*rows):
    cols = ("kernel", "variable", "op", "count", "result", "a", "b")
    return pd.DataFrame([dict(zip(cols, r)) for r in rows])


# a 40-bit multiply-add chain x * y + c, two of each per evaluation, and an exponential table
CHAIN = ops(("k", "xy", "mul", 2, "Q3.36", "Q3.36", "Q1.38"),
            ("k", "s", "add", 2, "Q4.35", "Q3.36", "Q3.36"),
            ("k", "x", "load", 4, "Q3.36", "", ""),
            ("k", "s", "store", 2, "Q4.35", "", ""))
TABLE = pd.DataFrame([{"kernel": "k", "array": "exp", "entries": 8192, "format": "Q1.38"}])


def test_fpga_counts_of_a_hand_counted_chain():
    rows = cost(CHAIN, TABLE)  # the default: DSP48E2 with 18 Kb block RAM
    mul, add, load, _, table = rows.itertuples(index=False)
    assert (mul.operators, mul.dsp, mul.luts) == (2, 2 * 6, 2 * 40)  # 40 x 40: 2 x 3 tiles
    assert (add.dsp, add.luts) == (0, 2 * 40)
    assert (load.dsp, load.luts) == (0, 0)
    assert table.memory == 8192 * 40 // (1024 * 18) + 1 == 18  # 18 blocks of 1K x 18/2K x 9
    assert totals(rows) == {"operators": 10, "dsp": 12, "luts": 160, "memory": 18}
    # one operator shared over 2 cycles halves the operators, not the memory
    shared = totals(FPGA_MODELS["fpga-dsp48e2"].cost(CHAIN, TABLE, cycles=2))
    assert shared["dsp"] == 6 and shared["memory"] == 18
    # the same through cost(): 3 cycles leave ceil(2 / 3) = 1 multiplier, ceil(4 / 3) loads
    streamed = cost(CHAIN, TABLE, cycles=3)
    assert list(streamed.operators) == [1, 1, 2, 1, 0]
    assert totals(streamed)["memory"] == 18


@pytest.mark.parametrize("model, cycles, match", [
    ("fpga-dsp48e2", 0, "cycles = 0: a whole number"),
    ("fpga-dsp48e2", 2.5, "cycles = 2.5: a whole number"),
    ("fpga-dsp48e2", True, "cycles = True: a whole number"),
    ("gpu-h100", 4, "'gpu-h100' does not share operators over cycles")])
def test_cycles_are_refused_where_they_mean_nothing(model, cycles, match):
    with pytest.raises(FixedQMCError, match=match):
        cost(CHAIN, TABLE, model=model, cycles=cycles)


def test_fpga_families_and_lut_multipliers():
    one = ops(("k", "p", "mul", 1, "Q3.36", "Q3.36", "Q3.36"))
    assert totals(cost(one, model="fpga-dsp58"))["dsp"] == 4      # 26 + 14 by 23 + 17
    assert totals(cost(one, model="fpga-intel27x27"))["dsp"] == 4  # 26 + 14 by 26 + 14
    assert totals(cost(one, model="fpga-intel18x19"))["dsp"] == 4.5  # 3 x 3 halves
    assert totals(cost(one, model="fpga-virtex4"))["dsp"] == 9  # 18 + 17 + 5, both sides
    lut = totals(cost(one, model="fpga-lut"))
    assert lut["dsp"] == 0 and lut["luts"] == 40 * 40 + 40
    m20k = totals(cost(CHAIN.iloc[:0], TABLE, model="fpga-intel27x27"))
    assert m20k["memory"] == 16  # 512 x 40 M20K, 16 deep


def test_table_methods_bring_their_multipliers_and_tables():
    exp = cost(ops(("k", "y", "exp", 2, "Q1.38", "Q3.36", "")))
    (row,) = exp.itertuples(index=False)
    # five 40 x 40 products (6 blocks each), an adder and a shift; three tables of 4096,
    # 2048 and 2048 words: 36 bits as 2K x 9 + 4 bits as 4K x 4 = 9 blocks, then 5 + 5
    assert (row.dsp, row.luts, row.memory) == (2 * 30, 2 * (5 * 40 + 2 * 40), 2 * 19)
    trig = totals(cost(ops(("k", "c", "cos_turns", 1, "Q1.38", "Q1.38", ""))))
    assert trig == {"operators": 1, "dsp": 7 * 6, "luts": 7 * 40 + 5 * 40, "memory": 4}


def test_float_operators_use_their_significands():
    bf = ops(("k", "p", "mul", 1, "bfloat16", "bfloat16", "bfloat16"),
             ("k", "s", "add", 1, "bfloat16", "", ""))
    mul, add = cost(bf).itertuples(index=False)
    assert mul.dsp == 1 and mul.luts == 2 * 8 + 2 * 8        # 8 x 8 significands
    assert add.dsp == 0 and add.luts == 2 * 8 * 4 + 2 * 8 + 2 * 8
    wide = totals(cost(ops(("k", "p", "mul", 1, "float64", "float64", "float64"))))
    assert wide["dsp"] == 3 * 4  # 53-bit significands: 26 + 26 + 1 by 17 + 17 + 17 + 2


def test_gpu_roofline_of_a_hand_counted_kernel():
    rows = ops(("k", "p", "mul", 1e9, "bfloat16", "bfloat16", "bfloat16"),
               ("k", "s", "add", 1e9, "float32", "", ""),
               ("k", "x", "load", 1e9, "bfloat16", "", ""))
    out = cost(rows, model="gpu-h100")
    assert list(out["class"]) == ["bfloat16", "float32", "bfloat16"]
    assert list(out["bytes"]) == [0, 0, 2e9]
    compute = 1e9 / 989.4e12 + 1e9 / 66.9e12
    assert H100.roofline(out) == pytest.approx(max(compute, 2e9 / 3.35e12))
    assert totals(out)["flops"] == 2e9


def test_format_classes():
    assert [format_class(operand(f)) for f in ("fp8e4m3", "fp8e5m2", "float16", "bfloat16",
                                               "tf32", "float:e8m20", "float32", "float64",
                                               "Q3.28", "Q3.36")] == \
        ["fp8", "fp8", "float16", "bfloat16", "tf32", "float32", "float32", "float64",
         "int32", "int64"]
    assert operand("tf32").storage_bytes == 4 and operand("Q1.38").storage_bytes == 8
    assert operand("fixed:UQ0.24") == operand("UQ0.24")


def test_fixed_point_on_a_gpu_needs_integer_rates(tmp_path):
    with pytest.raises(FixedQMCError, match="no peak rate for 'int64'.*int64 = "):
        cost(CHAIN, model="gpu-h100")
    dev = tmp_path / "dev.toml"
    dev.write_text('name = "mine"\nbandwidth_tb_s = 1.0\n'
                   "[peak_tflops]\nint64 = 2.0\nfloat64 = 1.0\n")
    out = cost(CHAIN, TABLE, model=f"gpu:{dev}")
    assert load_device(dev).name == "mine"
    assert totals(out)["flops"] == 4 and totals(out)["bytes"] == 6 * 8 + 8192 * 8


@pytest.mark.parametrize("text, match", [
    ('bandwidth_tb_s = 1.0\n[peak_tflops]\nfloat32 = 1.0\n', "missing key 'name'"),
    ('name = "x"\n[peak_tflops]\nfloat32 = 1.0\n', "missing key 'bandwidth_tb_s'"),
    ('name = "x"\nbandwidth_tb_s = 1.0\n', "missing key 'peak_tflops'"),
    ('name = "x"\nbandwidth_tb_s = -1.0\n[peak_tflops]\nfloat32 = 1.0\n',
     "bandwidth_tb_s = -1.0; must be a positive"),
    ('name = "x"\nbandwidth_tb_s = 1.0\n[peak_tflops]\nfloat32 = 0\n',
     "peak_tflops.float32 = 0; must be a positive"),
    ('name = "x"\nbandwidth_tb_s = 1.0\n[peak_tflops]\nfloat128 = 1.0\n',
     "unknown class 'peak_tflops.float128'"),
    ('name = "x"\nbandwidth = 1.0\n', "unknown key.*bandwidth"),
    ('name = "x"\nbandwidth_tb_s = \n', "not valid TOML"),
])
def test_bad_device_files_name_the_key(tmp_path, text, match):
    dev = tmp_path / "dev.toml"
    dev.write_text(text)
    with pytest.raises(FixedQMCError, match=match):
        cost(CHAIN, model=f"gpu:{dev}")


def test_bad_models_and_inputs_are_refused():
    with pytest.raises(FixedQMCError, match="unknown cost model 'asic'.*fpga-dsp48e2"):
        cost(CHAIN, model="asic")
    with pytest.raises(FixedQMCError, match="missing: count"):
        cost(CHAIN.drop(columns="count"))
    with pytest.raises(FixedQMCError, match="operation 'fma' has no FPGA cost rule"):
        cost(ops(("k", "v", "fma", 1, "Q3.36", "", "")))
    with pytest.raises(FixedQMCError, match="'Q99.99' is not a format"):
        cost(ops(("k", "v", "add", 1, "Q99.99", "", "")))
    with pytest.raises(FixedQMCError, match="no fixed size"):
        operand("fixed:40")
    with pytest.raises(FixedQMCError, match="cannot be read"):
        cost_model("gpu:/nonexistent/dev.toml")


def test_a_user_model_is_registered_like_a_system():
    def per_op(rows, arrays):
        return rows.assign(luts=rows["count"] * 7)

    register_cost_model("flat-7", per_op)
    try:
        assert "flat-7" in cost_models()
        assert totals(cost(CHAIN, model="flat-7"))["luts"] == 7 * 10
        with pytest.raises(FixedQMCError, match="already registered"):
            register_cost_model("flat-7", lambda r, a: r)
    finally:
        from fixedqmc import cost as C
        C._MODELS.pop("flat-7")


def test_counts_take_their_variables_formats_the_widest_for_several():
    counts = pd.DataFrame([{"kernel": "k", "variable": "s", "op": "add", "count": 3,
                            "a": "x|s", "b": ""}])
    formats = {"k.s": "Q4.35", "k.x": "Q1.20", "k.y": "bfloat16"}
    row = with_formats(counts, formats).iloc[0]
    assert (row["result"], row["a"], row["b"]) == ("Q4.35", "Q4.35", "")
    with pytest.raises(FixedQMCError, match="no format for k.s"):
        with_formats(counts, {"k.x": "Q1.20"})


def test_a_model_installed_as_an_entry_point_is_found(monkeypatch):
    from fixedqmc import cost as C

    class EntryPoint:
        name = "double-luts"

        @staticmethod
        def load():
            return lambda rows, arrays: rows.assign(luts=rows["count"] * 2)

    monkeypatch.setattr(C, "_entry_points", lambda: [EntryPoint()])
    try:
        assert "double-luts" in cost_models()
        assert totals(cost(CHAIN, model="double-luts"))["luts"] == 2 * 10
    finally:
        C._MODELS.pop("double-luts", None)
