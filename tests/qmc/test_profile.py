"""Range profiles record the real statistics of every variable: a variable that holds both
operation results and kernel inputs covers both, and profiles of several batches merge
statistic by statistic (never derived from min and max)."""

import math

import numpy as np
import pytest

from fixedqmc.errors import FixedQMCError, FloatRangeWarning
from fixedqmc.numerics.float_format import FloatFormat
from fixedqmc.numerics.kernel import KernelPrecision, KernelSpec, Variable
from fixedqmc.numerics.kernel_set import KernelSet, host_stats
from fixedqmc.qmc.profile import RangeProfile


def test_a_variable_covers_operation_results_and_its_inputs(monkeypatch):
    ks = KernelSet({"k": KernelSpec("k", (Variable("y", -4.0, 4.0),))}).profiling()
    ks.encode("k", "y", np.array([-3.0, 0.01, 0.0]))  # an input loaded into y
    monkeypatch.setattr(KernelPrecision, "profile", lambda self, ctx: {"y": (0.5, 2.0, 2.0, 0.5)})
    assert ks.stats("k") == {"y": (-3.0, 2.0, 3.0, 0.01)}
    assert ks.stats("k", inputs={"y": [7.0, -1e-4]})["y"] == (-3.0, 7.0, 7.0, 1e-4)


class _Batches:
    """A system whose profile of a batch is the host statistics of its values."""

    def profile(self, batch, *, step=0):
        return {"k": {"x": host_stats(batch)}}


def test_profiles_of_batches_merge_each_statistic():
    batches = [np.array([-8.0, 5.0, 0.25]), np.array([3.0, 0.0, -0.002])]
    stats = RangeProfile.from_system(_Batches(), batches).stats["k"]["x"]
    assert stats == host_stats(np.concatenate(batches)) == (-8.0, 5.0, 8.0, 0.002)
    frame = RangeProfile({"k": {"x": stats}}).frame()
    assert frame.loc[0, "min_nonzero_abs"] == 0.002  # not min(|min|, |max|) = 5


def test_helium_table_positions_cover_the_tables_region_starts():
    """The region starts [s_min, sigma] of each table are loaded into the kernel's s: its
    statistics include them as well as the profiled squared distances."""
    from fixedqmc.run.config import load_config
    from fixedqmc.run.plan import build_system

    system = build_system(load_config(overrides={"system": {"n_atoms": 3},
                                                 "tables": {"r_max": 40.0}}))
    pos = system.initial_positions(12, np.random.default_rng(1))
    stats = system.profile(pos)
    for kernel, table, prefix in system.TABLE_USES:
        t = system.tables[table]
        lo, hi, mx, mn = stats[kernel][prefix + "s"]
        assert lo <= t.s_min and mn <= t.s_min and hi >= t.sigma and mx >= t.sigma, (kernel, table)
        assert hi >= stats["distance"]["s"][1] or hi >= t.s_max  # distances (clamped) too


def test_only_table_positions_named_u_or_t_are_pinned_to_the_unit_interval():
    """A lookup's ``u`` in [0, 1) gets exactly [0, 1); a signed ``u`` of another kernel (the
    erfc form's Chebyshev variable, a Sherman-Morrison sum) is widened like any variable."""
    prof = RangeProfile({"table": {"u": (0.0, 0.99, 0.99, 1e-3)},
                         "ewald_real": {"u": (-0.61, 0.95, 0.95, 1e-4)},
                         "determinant": {"u": (-3.0, 40.0, 40.0, 1e-6)}})
    r = prof.ranges(margin_bits=1)
    assert r["table"]["u"] == (0.0, float(np.nextafter(1.0, 0.0)), 5e-4)
    assert r["ewald_real"]["u"] == (-1.22, 1.9, 5e-5)
    assert r["determinant"]["u"] == (-6.0, 80.0, 5e-7)


# ------------------------------------------------- float formats sized from the profile --
def test_ranges_carry_the_smallest_nonzero_magnitude_through_the_margin():
    """(lo, hi) widen away from zero and the smallest nonzero magnitude toward it by
    2**margin_bits; a variable that was always zero keeps inf (no bound)."""
    prof = RangeProfile({"k": {"a": (-3.0, 5.0, 5.0, 0.25), "z": (0.0, 0.0, 0.0, np.inf)}})
    assert prof.ranges(margin_bits=2)["k"] == {"a": (-12.0, 20.0, 0.0625),
                                               "z": (0.0, 0.0, np.inf)}
    frame = prof.frame()
    assert frame.set_index("variable").loc["a", ["max_abs", "min_nonzero_abs"]].tolist() == [
        5.0, 0.25]


SPEC = KernelSpec("k", (Variable("a", -1.0, 1.0), Variable("b", 0.0, 1.0)))


@pytest.mark.parametrize("e", [4, 5, 8, 11])  # E >= 4: room for the other bound
def test_sizing_with_the_margin_at_the_boundaries(e):
    """The profile's largest magnitude widened by the margin may reach E's largest finite
    value, and its smallest nonzero magnitude divided by the margin E's smallest normal;
    beyond either, E + 1 (at E = 11 the variable is named)."""
    f = FloatFormat(e, 7)
    for margin in (0, 1, 3):
        m = 2.0 ** margin
        at = {"a": (-f.max_finite / m, 1.0, f.max_finite / m, 1.0),
              "b": (f.min_normal * m, 1.0, 1.0, f.min_normal * m)}
        kp = SPEC.resolve("float:m7", RangeProfile({"k": at}).ranges(margin)["k"])
        assert kp.formats == (f, f)
        over, under = math.nextafter(f.max_finite, math.inf), math.nextafter(f.min_normal, 0)
        beyond = {"a": (-over / m, 1.0, over / m, 1.0),  # exact: scaled by powers of 2
                  "b": (under * m, 1.0, 1.0, under * m)}
        ranges = RangeProfile({"k": beyond}).ranges(margin)["k"]
        if e < 11:
            kp = SPEC.resolve("float:m7", ranges)
            assert kp.formats == (FloatFormat(e + 1, 7), FloatFormat(e + 1, 7))
        else:
            with pytest.warns(FloatRangeWarning) as w:
                SPEC.resolve("float:m7", ranges)
            assert w[0].message.variables == {"k.a": "overflow", "k.b": "subnormal"}


def test_frame_lists_float_formats_and_the_variables_no_exponent_holds():
    prof = RangeProfile({"k": {"a": (-3.0, 5.0, 5.0, 0.25), "b": (1e-320, 1.0, 1.0, 1e-320)},
                         "j": {"c": (0.0, 1e6, 1e6, 1e-3)}})
    f = prof.frame(float_mantissa=7).set_index("variable")
    assert f.float_format.to_dict() == {"a": "float:e4m7:nearest_even:subnormals,inf",
                                        "b": "float:e11m7:nearest_even:subnormals,inf",
                                        "c": "float:e6m7:nearest_even:subnormals,inf"}
    assert f.float_exp_bits.to_dict() == {"a": 4, "b": 11, "c": 6}
    assert f.float_range.to_dict() == {"a": "", "b": "subnormal", "c": ""}
    assert prof.float_problems(7) == {"k.b": "subnormal"}
    assert prof.float_problems("float:m3:saturate,fn") == {"k.b": "subnormal"}
    spec = prof.frame(float_mantissa="float:m2:toward_zero:nosubnormals")
    assert spec.float_format.iloc[0] == "float:e4m2:toward_zero:nosubnormals,inf"
    assert "float_format" not in prof.frame(width=16)
    for bad in ("bfloat16", True, 0, "float:m99"):
        with pytest.raises(FixedQMCError, match="float_mantissa|M=|1..52"):
            prof.frame(float_mantissa=bad)


def test_a_run_at_a_mantissa_only_spec_without_a_profile_stops_before_any_work(tmp_path,
                                                                                capsys):
    from fixedqmc.cli import main
    from fixedqmc.run import run
    out = tmp_path / "new" / "run"
    with pytest.raises(FixedQMCError, match=r"potential=float:m7.*needs a range profile: "
                                            r"fixedqmc run --profile PROFILE\.json"):
        run(overrides={"output": str(out), "precision": "default=float64,potential=float:m7"},
            progress=False)
    assert main(["run", "--precision", "float:m10:toward_zero", "--set", f"output='{out}'"]) == 2
    err = capsys.readouterr().err
    assert "default=float:m10:toward_zero" in err and "needs a range profile" in err
    assert not (tmp_path / "new").exists()
