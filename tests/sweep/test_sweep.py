"""Sweeps: the paired estimate's trend, resume, Dask equality, figure, costs and bad input."""

import json
import shutil

import numpy as np
import pandas as pd
import pytest

from fixedqmc.cost import cost, totals, with_formats
from fixedqmc.errors import FixedQMCError
from fixedqmc.numerics.kernel import KernelSpec, Variable
from fixedqmc.qmc.counts import arrays_with_formats
from fixedqmc.qmc.system import Walkers
from fixedqmc.sweep import sweep
from fixedqmc.sweep.costs import point_costs
from fixedqmc.sweep.sweep import (bound_defects, narrowest_width, no_answer_reason,
                                  paired_blind, paired_judge, parse_kernels, parse_plans,
                                  parse_widths, predicted_width, verdict)

SMALL = {"system": {"n_atoms": 3}, "tables": {"r_max": 40.0},
         "method": {"walkers": 12, "blocks": 8, "equil_blocks": 2, "steps_per_block": 6}}


def run_small(tmp_path, name="s", **kw):
    kw.setdefault("widths", "20,28,36,56")
    return sweep(overrides={**SMALL, "output": str(tmp_path / name)}, workers=1,
                 float32=False, progress=False, **kw)


@pytest.fixture(scope="module")
def small_sweep(tmp_path_factory):
    return run_small(tmp_path_factory.mktemp("sweep"), kernels="all,potential")


@pytest.mark.heavy
def test_paired_difference_shrinks_with_width_and_vanishes_when_wide(small_sweep):
    for k in ("all", "potential"):
        t = small_sweep.table.query("kernels == @k").sort_values("width")
        d, e = t.paired_diff.abs().to_numpy(), t.paired_error.to_numpy()
        assert d[0] > 3 * e[0]  # 20 bits: a real, resolved shift
        assert d[0] > d[1] > d[2]  # shrinks as the width grows
        assert d[3] < max(3 * e[3], 1e-9)  # 56 bits: zero for any physical tolerance
        assert (e < 0.2 * small_sweep.summary["float64_error"]).all()  # paired << own error


@pytest.mark.heavy
def test_answer_rule_and_outputs(small_sweep, tmp_path):
    out = small_sweep.output
    from tests.qmc.test_run import strict_json
    assert strict_json(out / "answer.json")["energy_unit"] == "K"
    for name in ("sweep.parquet", "sweep.csv", "answer.json", "sweep.png", "profile.csv"):
        assert (out / name).exists()
    answer = json.loads((out / "answer.json").read_text())["answer"]
    t = small_sweep.table
    for a in answer:
        rows = t[t.kernels == a["kernels"]]
        assert a["narrowest_width"] == narrowest_width(rows, 0.01, "paired")
    rows = pd.DataFrame({"width": [16, 24, 32, 40], "paired_diff": [0.5, 0.001, 0.02, 0.0],
                         "paired_error": [0.0, 0.001, 0.0, 0.001]})
    assert narrowest_width(rows, 0.01, "paired") == 40  # 32 fails, so 24 does not count
    assert narrowest_width(rows.iloc[:1], 0.01, "paired") is None


@pytest.mark.heavy
def test_every_point_has_its_bound_and_the_answer_a_predicted_width(small_sweep):
    """Helium can be bounded: every paired point has the bound columns on every sample of
    the reference, no measured error exceeds its bound, the bound shrinks with the width,
    and each answer's predicted width is the rule's on its rows (no defects)."""
    t = small_sweep.table
    m = SMALL["method"]
    samples = m["walkers"] * m["blocks"]  # (blocks after the equilibration blocks)
    assert (t.bound_violations == 0).all() and (t.bound_samples == samples).all()
    for a in small_sweep.summary["answer"]:
        rows = t[t.kernels == a["kernels"]].sort_values("width")
        assert a["predicted_width"] == predicted_width(rows, 0.01)
        assert a["bound_defects"] == []
        bounded = rows[rows.bound_unbounded == 0]
        assert (bounded.bound_error_max <= bounded.bound_max).all()
        assert bounded.bound_max.is_monotonic_decreasing and len(bounded) >= 2
    rows = pd.DataFrame({"width": [16, 24, 32, 40], "bound_max": [0.5, 0.001, 0.002, 1e-4],
                         "bound_unbounded": [0, 0, 3, 0], "bound_violations": [0, 0, 0, 2],
                         "precision": ["fixed:16", "fixed:24", "fixed:32", "fixed:40"]})
    assert predicted_width(rows, 0.01) == 40  # 32 has unbounded samples, so 24 does not count
    assert predicted_width(rows.drop(columns="bound_max"), 0.01) is None
    mantissas = rows.rename(columns={"width": "mantissa"}).assign(mantissa=[4, 8, 12, 16])
    assert predicted_width(mantissas, 0.01, "mantissa") == 16
    assert predicted_width(mantissas, 0.01) is None  # no width points
    assert bound_defects(rows) == ["fixed:40"]


@pytest.mark.heavy
def test_resume_skips_finished_points_and_gives_the_same_table(small_sweep, tmp_path):
    src = small_sweep.output
    dst = tmp_path / "copy" / "sweep"
    dst.mkdir(parents=True)
    for f in ("meta.json", "reference.pkl"):
        (dst / f).write_bytes((src / f).read_bytes())
    (dst / "points").mkdir()
    for f in sorted((src / "points").glob("*.json"))[::2]:  # half the points "finished"
        (dst / "points" / f.name).write_bytes(f.read_bytes())
    res = sweep(overrides={**SMALL, "output": str(tmp_path / "copy")}, widths="20,28,36,56",
                kernels="all,potential", workers=1, float32=False, progress=False)
    cols = ["kernels", "width", "paired_diff", "paired_error", "formats", "overflow_events"]
    pd.testing.assert_frame_equal(res.table[cols], small_sweep.table[cols], check_exact=True)


@pytest.mark.heavy
def test_refuses_a_folder_of_another_input(small_sweep):
    with pytest.raises(FixedQMCError, match="another input"):
        sweep(overrides={**SMALL, "seed": 5}, output=small_sweep.output, widths="20",
              workers=1, float32=False, progress=False)


@pytest.mark.heavy
def test_dask_local_cluster_gives_identical_bits(small_sweep, tmp_path):
    distributed = pytest.importorskip("distributed")
    with distributed.LocalCluster(n_workers=1, threads_per_worker=1, processes=False,
                                  dashboard_address=None) as cluster, \
            distributed.Client(cluster) as client:
        res = sweep(overrides={**SMALL, "output": str(tmp_path / "d")}, widths="20,28,36,56",
                    kernels="all,potential", client=client, float32=False, progress=False)
    cols = ["kernels", "width", "paired_diff", "paired_error", "formats"]
    a = res.table[cols].sort_values(["kernels", "width"]).reset_index(drop=True)
    b = small_sweep.table[cols].sort_values(["kernels", "width"]).reset_index(drop=True)
    pd.testing.assert_frame_equal(a, b, check_exact=True)


@pytest.mark.parametrize("address", ["banana", "tcp://host", "http://h:1"])
def test_malformed_scheduler_address_is_named(address):
    with pytest.raises(FixedQMCError, match=f"--scheduler '{address}' is not a Dask"):
        sweep(overrides=SMALL, widths="20", scheduler=address, progress=False)


def test_unreachable_scheduler_fails_fast_with_its_address(tmp_path):
    with pytest.raises(FixedQMCError, match="tcp://127.0.0.1:9"):
        sweep(overrides={**SMALL, "output": str(tmp_path / "x")}, widths="20",
              scheduler="tcp://127.0.0.1:9", progress=False)


@pytest.mark.parametrize("text, match", [("", "no width"), ("40:20", "no width"),
                                         ("16:80:8", "1..64"), ("0,8", "1..64"), ("a:b", "start:stop")])
def test_bad_widths(text, match):
    with pytest.raises(FixedQMCError, match=match):
        parse_widths(text)


def test_bad_kernel_and_tolerance(tmp_path):
    with pytest.raises(FixedQMCError, match="jastrow"):
        parse_kernels("potential,jastrow", ("distance", "potential"))
    for bad in ("distance+jastrow", "distance+distance", "distance+", "all+distance"):
        with pytest.raises(FixedQMCError, match="joined by"):
            parse_kernels(bad, ("distance", "potential"))
    assert parse_kernels("all,distance+potential", ("distance", "potential")) == [
        "all", "distance+potential"]
    with pytest.raises(FixedQMCError, match="tolerance"):
        sweep(overrides=SMALL, widths="20", tolerance=-1.0)


@pytest.mark.slow
def test_full_mode_and_float32_row(tmp_path):
    res = sweep(overrides={**SMALL, "output": str(tmp_path / "f")}, widths="24",
                kernels="potential", mode="both", workers=1, progress=False)
    t = res.table
    assert set(t.precision) == {"default=float64,potential=fixed:24", "float32"}
    assert np.isfinite(t.full_energy).all() and (t.full_acceptance > 0).all()
    assert (t.full_diff_error >= t.paired_error).all()


@pytest.mark.heavy
def test_a_group_of_every_kernel_is_the_same_as_all(small_sweep, tmp_path):
    """Kernels joined by '+' go to the width together: the group of all four helium
    kernels builds the same system as 'all', so its estimates are the same bits; a group
    reports the formats of its members only."""
    group = "distance+potential+wavefunction+kinetic"
    res = run_small(tmp_path, "group", kernels=f"{group},distance+kinetic")
    t, ref = res.table.set_index(["kernels", "width"]), small_sweep.table
    for _, row in ref[ref.kernels == "all"].iterrows():
        got = t.loc[(group, row.width)]
        assert got.precision == "default=float64," + ",".join(
            f"{k}=fixed:{row.width}" for k in group.split("+"))
        assert (got.paired_diff, got.paired_error) == (row.paired_diff, row.paired_error)
    pair = res.table[res.table.kernels == "distance+kinetic"]
    names = {k.split(".")[0] for f in pair.formats for k in json.loads(f)}
    assert names == {"distance", "kinetic"}


@pytest.mark.heavy
def test_formats_sized_from_another_sweeps_profile(small_sweep, tmp_path):
    """profile=: a sweep of other samples (fewer walkers, another seed) takes its formats
    from a finished sweep's profile, so its points have that sweep's formats; a folder
    sized otherwise is not resumed, and a folder without a finished sweep is named."""
    other = {**SMALL, "seed": 11, "method": {**SMALL["method"], "walkers": 6},
             "output": str(tmp_path / "o")}
    res = sweep(overrides=other, widths="28", kernels="potential", workers=1, float32=False,
                progress=False, profile=small_sweep.output)
    want = small_sweep.table.query("kernels == 'potential' and width == 28").formats.iloc[0]
    assert res.table.formats.iloc[0] == want
    assert res.summary["profile_source"] == "given"
    assert res.summary["profile"] == small_sweep.summary["profile"]
    with pytest.raises(FixedQMCError, match="another input"):
        sweep(overrides=other, widths="28", kernels="potential", workers=1, float32=False,
              progress=False)
    with pytest.raises(FixedQMCError, match="answer.json"):
        sweep(overrides=other, widths="28", profile=tmp_path / "nothing", progress=False)


@pytest.mark.heavy
def test_units_convert_table_tolerance_and_answer(small_sweep, tmp_path):
    """The same finished points reported in mK: the table is 1000x, the tolerance is read
    in mK, and so the answer equals the one in K at a 1000x tolerance."""
    folder = tmp_path / "mk"
    shutil.copytree(small_sweep.output, folder)  # finished points: only the report is redone
    res = sweep(overrides=SMALL, output=folder, widths="20,28,36,56", kernels="all,potential",
                workers=1, float32=False, progress=False, units="mK", tolerance=10.0)
    assert res.summary["energy_unit"] == "mK"
    np.testing.assert_allclose(res.table.paired_diff, 1e3 * small_sweep.table.paired_diff)
    assert res.answer.narrowest_width.tolist() == small_sweep.answer.narrowest_width.tolist()
    with pytest.raises(FixedQMCError, match="units = 'eV'"):
        sweep(overrides=SMALL, output=folder, widths="20", units="eV",
              workers=1, progress=False)


def test_both_mode_needs_both_rules_and_blind_kernels_get_no_paired_answer():
    rows = pd.DataFrame({"width": [16, 24, 32], "paired_diff": [0.5, 0.001, 0.0],
                         "paired_error": [0.0, 0.001, 0.0], "full_diff": [0.5, 0.02, 0.0],
                         "full_diff_error": [0.01, 0.001, 0.001]})
    assert narrowest_width(rows, 0.01, "paired") == 24
    assert narrowest_width(rows, 0.01, "full") == 32
    assert narrowest_width(rows, 0.01, "both") == 32  # the wider of the two
    blind = rows.assign(paired_diff=0.0, paired_error=0.0)
    assert paired_blind(blind) and not paired_blind(rows)
    # float64 rounding of a -250 K energy summed in another order is not an effect
    rounding = blind.assign(paired_diff=-2.8e-14, paired_error=5.8e-14, paired_energy=-250.0)
    assert paired_blind(rounding) and not paired_blind(rounding.assign(paired_error=1e-9))
    assert narrowest_width(blind, 0.01, "paired") is None
    assert narrowest_width(blind, 0.01, "both") is None
    assert narrowest_width(blind, 0.01, "full") == 32
    # the reweighted estimate judges what the paired one cannot see, where points have it
    seen = blind.assign(reweighted_diff=[0.3, 0.004, 1e-5], reweighted_error=[0.1, 0.002, 1e-5])
    assert paired_judge(seen) == "reweighted" and paired_judge(rows) == "paired"
    assert narrowest_width(seen, 0.01, "paired") == 24
    assert narrowest_width(seen, 0.01, "both") == 32
    for unseen in (seen.assign(reweighted_diff=0.0, reweighted_error=0.0),  # psi unchanged
                   seen.assign(reweighted_diff=np.nan, reweighted_error=np.nan)):  # old
        assert paired_judge(unseen) is None and narrowest_width(unseen, 0.01, "paired") is None
        assert "cannot see" in no_answer_reason(unseen, 0.01, "paired", "K")
    assert no_answer_reason(seen.assign(reweighted_diff=0.02), 0.01, "paired", "K") \
        .startswith("reweighted: no width passes")


def test_a_width_too_narrow_for_a_profiled_range_is_a_failing_point_not_a_crash(tmp_path):
    """Helium's potential sums reach hundreds of K: 6-bit words cannot hold their integer
    part, so that point does not fit; the sweep goes on and the answer skips it."""
    res = run_small(tmp_path, "narrow", widths="6,36,56", kernels="potential",
                    tolerance=1.0)
    t = res.table.set_index("width")
    assert not t.loc[6, "fits"] and "integer" in t.loc[6, "note"]
    assert np.isnan(t.loc[6, "paired_diff"]) and np.isnan(t.loc[6, "paired_error"])
    assert t.loc[36, "fits"] and t.loc[56, "fits"]
    assert res.answer.set_index("kernels").loc["potential", "narrowest_width"] == 36


class _ShiftedEnergies:
    """A stand-in system whose local energies are the samples' first coordinate."""

    def evaluate(self, walkers, step):
        from types import SimpleNamespace
        return SimpleNamespace(local_energy=walkers.positions[:, 0, 0].copy())


def test_paired_error_is_the_spread_of_the_independent_walkers():
    """VMC walkers are independent chains: the paired error is the spread of the
    per-walker means over the blocks (also for a single block, seed 001's one ensemble);
    a single walker falls back to reblocking its block series."""
    from fixedqmc.qmc.estimators import reblock
    from fixedqmc.sweep.estimates import Reference, paired_estimate
    rng = np.random.default_rng(3)
    samples = rng.normal(size=(4, 500, 2, 3))
    ref_e = samples[:, :, 0, 0] - rng.normal(0.01, 0.002, size=(4, 500))
    diff = samples[:, :, 0, 0] - ref_e
    for blocks in (1, 4):
        got = paired_estimate(_ShiftedEnergies(), Reference(
            samples[:blocks], ref_e[:blocks], 0.0, 0.0, 1.0, None, 0.0))
        w = diff[:blocks].mean(axis=0)
        assert got["paired_diff"] == pytest.approx(diff[:blocks].mean(), rel=1e-12)
        assert got["paired_error"] == pytest.approx(w.std(ddof=1) / np.sqrt(500), rel=1e-12)
        # the spread put in: 0.002 per value, averaged over the blocks
        assert 0.75 < got["paired_error"] * np.sqrt(500 * blocks) / 0.002 < 1.25
        e = samples[:blocks, :, 0, 0].mean(axis=0)
        assert got["paired_energy_error"] == pytest.approx(e.std(ddof=1) / np.sqrt(500),
                                                           rel=1e-12)
    one = paired_estimate(_ShiftedEnergies(), Reference(samples[:, :1], ref_e[:, :1], 0.0,
                                                        0.0, 1.0, None, 0.0))
    assert one["paired_error"] == reblock(diff[:, 0]).error


class _Gaussian:
    """A stand-in trial of the 3D harmonic oscillator (H = -lap/2 + r^2/2):
    psi = exp(-a r^2 / 2), E_L = 3a/2 + (1 - a^2) r^2 / 2 (first particle)."""

    def __init__(self, a):
        self.a = a

    def evaluate(self, walkers, step):
        from types import SimpleNamespace
        r2 = (walkers.positions[:, 0] ** 2).sum(axis=1)
        return SimpleNamespace(local_energy=1.5 * self.a + (1 - self.a**2) * r2 / 2,
                               ln_psi=-self.a * r2 / 2)


def test_the_reweighted_estimate_is_the_energy_sampled_from_the_trials_psi():
    """Correlated sampling on exact samples of |psi_a|^2 (a Gaussian of variance 1/(2a)):
    the reweighted difference of a trial psi_b is E(b) - E(a) with E(a) = 3 (a + 1/a) / 4
    (within 3 of its errors, and the errors themselves calibrated over 40 sample sets),
    while the paired difference is the trial's E_L on psi_a's samples; a trial whose
    psi is the reference's bit for bit gives exactly the paired estimate's zero."""
    from fixedqmc.sweep.estimates import Reference, paired_estimate
    a, b = 0.7, 0.9  # neither the exact a = 1: both local energies vary
    exact = 0.75 * (b + 1 / b) - 0.75 * (a + 1 / a)
    z, ess = [], []
    for seed in range(40):
        x = np.random.default_rng(seed).normal(scale=np.sqrt(0.5 / a), size=(5, 200, 1, 3))
        ref_ev = [_Gaussian(a).evaluate(Walkers(blk, None), 0) for blk in x]
        ref = Reference(x, np.array([e.local_energy for e in ref_ev]), 0.0, 0.0, 1.0, None,
                        0.0, ln_psi=np.array([e.ln_psi for e in ref_ev]))
        got = paired_estimate(_Gaussian(b), ref)
        z.append((got["reweighted_diff"] - exact) / got["reweighted_error"])
        ess.append(got["reweighted_ess"])
        # the paired estimate: E_L(b) - E_L(a) averaged over psi_a's samples, r^2 = 3/(2a)
        assert abs(got["paired_diff"] - 1.5 * (b - a) + (b**2 - a**2) * 0.75 / a) < \
            4 * got["paired_error"]
        same = paired_estimate(_Gaussian(a), ref)
        assert same["reweighted_diff"] == 0.0 and same["reweighted_error"] == 0.0
        assert same["reweighted_ess"] == 1.0
    z = np.array(z)  # unbiased (the mean of 40 within 3 of its errors), errors calibrated
    assert abs(z.mean()) < 3 / np.sqrt(z.size) and 0.7 < z.std() < 1.35, z
    d = (b - a) / a  # the ESS's limit for these Gaussians, (1 + 2d)^(3/2) / (1 + d)^3
    assert np.mean(ess) == pytest.approx((1 + 2 * d) ** 1.5 / (1 + d) ** 3, rel=0.02)


@pytest.mark.heavy
def test_a_kernel_off_the_wave_function_reweights_by_one(small_sweep):
    """In a real sweep every paired point has the reweighted estimate: the potential
    leaves psi as it is (weights exactly 1: the paired estimate again), while the whole
    system at 20 bits moves psi (effective sample fraction below 1; at most 1 anywhere)."""
    t = small_sweep.table[small_sweep.table.width.notna()]
    pot, every = t[t.kernels == "potential"], t[t.kernels == "all"]
    assert (pot.reweighted_ess == 1.0).all()
    np.testing.assert_allclose(pot.reweighted_diff, pot.paired_diff, rtol=1e-9, atol=1e-15)
    np.testing.assert_allclose(pot.reweighted_error, pot.paired_error, rtol=1e-6)
    assert 0.9 < every.reweighted_ess.min() == every.set_index("width").reweighted_ess[20] < 1
    assert (t.reweighted_ess <= 1.0).all()


def test_a_runs_error_bar_is_calibrated_across_seeds():
    """A run's error is the spread of its independent walkers' means: over 40 seeds of a
    short run (8 blocks of 12 walkers), the energies scatter as their error bars say (the
    standard deviation of (E - mean) / error near 1; reblocking the 8 block means gives
    about 2, with single errors 20x too small)."""
    from fixedqmc.run.config import load_config
    from fixedqmc.sweep.estimates import sample_reference
    refs = [sample_reference(load_config(overrides={**SMALL, "seed": s}))
            for s in range(1, 41)]
    energy = np.array([r.energy for r in refs])
    error = np.array([r.error for r in refs])
    z = (energy - energy.mean()) / error
    assert 0.7 < z.std(ddof=1) < 1.35  # 39 degrees of freedom: about +-3 sigma


@pytest.mark.parametrize("coupling", [0.0, 0.97])
def test_an_error_ratios_interval_is_calibrated_and_pairs_the_walkers(coupling):
    """The bootstrap interval of an error ratio covers the true ratio of the walkers'
    spreads (2) in about 95 % of 200 sets of 48 Gaussian walkers, whether the two runs'
    walkers are independent or share most of their noise (walker w of both runs draws the
    same random numbers); with shared noise, resampling the walkers in pairs makes the
    interval narrow (resampled apart, it would be as wide as for independent runs)."""
    from fixedqmc.sweep.estimates import error_ratio_interval
    rng = np.random.default_rng(5)
    covered, widths = 0, []
    for _ in range(200):
        common, own = rng.normal(size=(2, 1, 48))
        ref = common * coupling + own * np.sqrt(1 - coupling ** 2)
        other = rng.normal(size=(1, 48))
        trial = 2 * (common * coupling + other * np.sqrt(1 - coupling ** 2))
        lo, hi = error_ratio_interval(trial, ref)
        covered += lo <= 2 <= hi
        widths.append(hi - lo)
    assert 0.88 <= covered / 200 <= 0.99
    # Gaussian theory: each spread known to 1/sqrt(2 x 47), so for independent runs the
    # interval is about 2 x 1.96 x 2 x 0.146 = 1.1 wide; shared noise cancels in the ratio
    assert np.median(widths) < (1.3 if coupling == 0 else 0.6)
    assert np.isnan(error_ratio_interval(np.ones((3, 2)), np.ones((3, 2)))).all()


# ------------------------------------------------------------------------- faults --
POINT_COLS = ["kernels", "width", "paired_diff", "paired_error", "formats", "overflow_events"]


def _copy(small_sweep, tmp_path):
    folder = tmp_path / "copy"
    shutil.copytree(small_sweep.output, folder)
    return folder


def _resume(folder, **kw):
    return sweep(overrides=SMALL, output=folder, widths="20,28,36,56", kernels="all,potential",
                 workers=1, float32=False, **kw)


@pytest.mark.heavy
def test_a_damaged_reference_or_point_is_computed_again_and_said(small_sweep, tmp_path,
                                                                 capsys):
    folder = _copy(small_sweep, tmp_path)
    ref = folder / "reference.pkl"
    ref.write_bytes(ref.read_bytes()[: ref.stat().st_size // 2])  # half-size
    point = sorted((folder / "points").glob("*.json"))[1]
    point.write_bytes(point.read_bytes()[:40])  # truncated
    res = _resume(folder, progress=None)
    err = capsys.readouterr().err
    assert "reference.pkl' is damaged" in err and "sampling the float64 reference again" in err
    assert f"{point.name}' is damaged" in err and "computing this point again" in err
    pd.testing.assert_frame_equal(res.table[POINT_COLS], small_sweep.table[POINT_COLS],
                                  check_exact=True)


@pytest.mark.heavy
@pytest.mark.parametrize("content", [b"", b'{"input_hash": "x", "mode": "paired"}'])
def test_a_damaged_meta_is_named_with_what_to_do(small_sweep, tmp_path, capsys, content):
    folder = _copy(small_sweep, tmp_path)
    (folder / "meta.json").write_bytes(content)
    with pytest.raises(FixedQMCError, match="meta.json' is damaged.*delete it and run the "
                                            "same command again"):
        _resume(folder, progress=False)
    (folder / "meta.json").unlink()  # as the message says: the points are reused
    res = _resume(folder, progress=None)
    assert "damaged" not in capsys.readouterr().err
    pd.testing.assert_frame_equal(res.table[POINT_COLS], small_sweep.table[POINT_COLS],
                                  check_exact=True)


@pytest.mark.heavy
def test_a_sweep_into_a_folder_in_use_is_refused(small_sweep, tmp_path):
    from fixedqmc.output_folder import FolderLock
    folder = _copy(small_sweep, tmp_path)
    with FolderLock(folder, "sweep"):
        with pytest.raises(FixedQMCError, match="in use by another fixedqmc command"):
            _resume(folder, progress=False)


@pytest.mark.heavy
def test_a_dask_scheduler_without_workers_stops_the_sweep_clearly(small_sweep, tmp_path,
                                                                  capsys):
    """A cluster whose workers are all gone: status lines while it waits, then a clear
    error naming the scheduler; the finished points are kept and a rerun resumes."""
    distributed = pytest.importorskip("distributed")
    folder = _copy(small_sweep, tmp_path)
    for p in sorted((folder / "points").glob("*.json"))[::2]:
        p.unlink()  # half the points still to do
    with distributed.LocalCluster(n_workers=0, processes=False,
                                  dashboard_address=None) as cluster, \
            distributed.Client(cluster) as client:
        with pytest.raises(FixedQMCError, match=f"Dask scheduler at {cluster.scheduler_address}"
                                                " has had no worker .*4 of 8 points.*resume"):
            _resume(folder, client=client, worker_wait=0.5, progress=None)
    assert "waiting for Dask workers" in capsys.readouterr().err
    res = _resume(folder, progress=False)
    pd.testing.assert_frame_equal(res.table[POINT_COLS], small_sweep.table[POINT_COLS],
                                  check_exact=True)


def test_every_estimate_without_an_answer_says_why():
    rows = pd.DataFrame({"width": [24, 32], "fits": [True, True],
                         "paired_diff": [0.02, 0.0], "paired_error": [0.0, 0.0],
                         "full_diff": [0.002, 0.001], "full_diff_error": [0.02, 0.012]})
    assert no_answer_reason(rows, 0.01, "paired", "K") == ""  # 32 passes
    # full: |diff| 0.001 + 2 sigma 0.024 > 0.01: noise, (0.024 / 0.009)^2 = 7.1x longer
    assert no_answer_reason(rows, 0.01, "full", "K") == (
        "full: the estimate cannot resolve the tolerance: at 32 bits |diff| = 0.001 and "
        "2 sigma = 0.024 K; a run about 7.11x longer would (errors fall as 1/sqrt(samples))")
    assert "no width passes: at the widest, 32 bits, |diff| + 2 sigma = 0.025 K > 0.001" in \
        no_answer_reason(rows, 0.001, "full", "K")
    blind = rows.assign(paired_diff=0.0)
    assert "cannot see this kernel set" in no_answer_reason(blind, 0.01, "paired", "K")
    narrow = rows.assign(fits=[True, False], paired_diff=[0.02, np.nan],
                         paired_error=[0.0, np.nan],
                         note=["", "potential.sum needs 9 integer bits"])
    assert "32 bits, does not fit: potential.sum needs" in no_answer_reason(
        narrow, 0.01, "paired", "K")


@pytest.mark.heavy
def test_the_full_difference_pairs_walkers_that_share_random_numbers(small_sweep):
    """A trial system that samples exactly as float64 (the potential, which does not act
    on sampling) follows the reference's trajectories: the full difference's error is
    the spread of the per-walker differences, far below the independent runs' error."""
    from fixedqmc.run.config import load_config
    from fixedqmc.sweep.estimates import full_estimate, sample_reference, trial_system
    config = load_config(overrides=SMALL)
    ref = sample_reference(config)
    assert ref.walker_energy.shape == (8, 12)  # production blocks x walkers
    same = full_estimate(config, trial_system(config, "float64", ref.profile), ref)
    assert same["full_diff"] == 0.0 and same["full_diff_error"] == 0.0
    assert same["full_parted"] == 0
    fixed = full_estimate(config, trial_system(
        config, "default=float64,potential=fixed:28", ref.profile), ref)
    assert 0 < fixed["full_diff_error"] < 1e-3 * fixed["full_diff_independent_error"]
    assert fixed["full_parted"] == 0  # the potential does not act on sampling
    coarse = full_estimate(config, trial_system(
        config, "default=float64,wavefunction=fixed:14", ref.profile), ref)
    assert 0 < coarse["full_parted"] <= 12  # a 14-bit wave function takes other decisions
    assert fixed["full_diff_independent_error"] == pytest.approx(np.hypot(
        fixed["full_error"], ref.error))


@pytest.mark.heavy
@pytest.mark.slow  # a scheduler and a worker process of their own: about 20 s
def test_a_sweep_whose_only_dask_worker_is_killed_stops_clearly(small_sweep, tmp_path):
    """The fault as a user meets it: a scheduler and one worker (no nanny) on this
    machine, the worker killed with SIGKILL while points are to do. The sweep goes on
    reporting, stops after --worker-wait with the scheduler's address, and the same
    command without the cluster resumes to the same table."""
    import json as json_
    import os
    import signal
    import subprocess
    import sys
    import threading
    import time
    pytest.importorskip("distributed")
    dask = [sys.executable, "-m", "distributed.cli.dask_scheduler"]
    info = tmp_path / "scheduler.json"
    scheduler = subprocess.Popen([*dask, "--host", "127.0.0.1", "--port", "0",
                                  "--scheduler-file", str(info), "--no-dashboard"],
                                 stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    worker = None
    try:
        for _ in range(300):
            if info.exists() and info.stat().st_size:
                break
            time.sleep(0.1)
        address = json_.loads(info.read_text())["address"]
        worker = subprocess.Popen([sys.executable, "-m", "distributed.cli.dask_worker",
                                   address, "--nthreads", "1", "--no-nanny",
                                   "--no-dashboard"],
                                  stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        folder = _copy(small_sweep, tmp_path)
        for p in sorted((folder / "points").glob("*.json"))[::2]:
            p.unlink()
        from distributed import Client
        with Client(address, timeout="30s") as client:
            client.wait_for_workers(1, timeout=60)
            killer = threading.Timer(1.0, os.kill, (worker.pid, signal.SIGKILL))
            killer.start()
            with pytest.raises(FixedQMCError, match=f"Dask scheduler at {address} has had "
                                                    "no worker.*points are "
                                                    "finished and saved"):
                _resume(folder, client=client, worker_wait=2.0, progress=False)
            killer.join()
    finally:
        for proc in (worker, scheduler):
            if proc is not None:
                proc.kill()
                proc.wait()
    res = _resume(folder, progress=False)
    pd.testing.assert_frame_equal(res.table[POINT_COLS], small_sweep.table[POINT_COLS],
                                  check_exact=True)


# -- costs (fixedqmc.sweep.costs) ------------------------------------------------------
@pytest.mark.heavy
def test_every_point_is_priced_at_its_own_formats(small_sweep):
    t, out = small_sweep.table, small_sweep.output
    counts = pd.read_csv(out / "counts.csv", keep_default_na=False)
    arrays = pd.read_csv(out / "arrays.csv")
    assert {"kernel", "variable", "op", "count", "a", "b"} <= set(counts.columns)
    assert set(arrays["array"]) == {f"{t}.{c}" for t in ("potential", "T2", "G", "L")
                                    for c in "abc"}  # helium's four tables
    assert small_sweep.summary["cost_model"] == "fpga-dsp48e2"
    for _, row in t.iterrows():  # the columns are the model's totals at the row's formats
        formats = json.loads(row["formats"])
        part = counts[counts["kernel"].isin({k.split(".")[0] for k in formats})]
        want = totals(cost(with_formats(part, formats), arrays_with_formats(arrays, formats)))
        assert {r: row[f"cost_{r}"] for r in want} == pytest.approx(want)
        assert row["cost_memory"] > 0  # the tables of every set's kernels
    for k, grp in t.groupby("kernels"):  # wider words never cost less
        grp = grp.sort_values("width")
        assert (np.diff(grp["cost_dsp"]) >= 0).all() and (np.diff(grp["cost_luts"]) > 0).all()
    whole = t[t.kernels == "all"].set_index("width")["cost_luts"]
    alone = t[t.kernels == "potential"].set_index("width")["cost_luts"]
    assert (whole > alone).all()  # every kernel's data path costs more than one's
    for a in json.loads((out / "answer.json").read_text())["answer"]:
        if a["narrowest_width"] is not None:
            row = t[(t.kernels == a["kernels"]) & (t.width == a["narrowest_width"])].iloc[0]
            assert a["cost_at_width"]["dsp"] == row["cost_dsp"]
    assert (out / "pareto.png").stat().st_size > 0


@pytest.mark.heavy
def test_a_model_that_cannot_price_a_point_says_why_in_its_row(small_sweep):
    counts = (pd.read_csv(small_sweep.output / "counts.csv", keep_default_na=False),
              pd.read_csv(small_sweep.output / "arrays.csv"))
    rows = point_costs(small_sweep.table, counts, "gpu-h100")  # no integer rates
    assert rows["cost_note"].str.contains("no peak rate for 'int").all()
    t = small_sweep.table
    floats = t.assign(formats=[json.dumps(dict.fromkeys(json.loads(f), "bfloat16"))
                               for f in t.formats])  # every variable in bfloat16
    gpu = point_costs(floats, counts, "gpu-h100")
    assert (gpu["cost_flops"] > 0).all() and (gpu["cost_seconds"] > 0).all()
    assert "cost_note" not in gpu


def test_an_unknown_cost_model_is_refused_before_any_work(tmp_path):
    with pytest.raises(FixedQMCError, match="unknown cost model 'asic'"):
        sweep(overrides={**SMALL, "output": str(tmp_path / "x")}, widths="20",
              cost_model="asic", workers=1, progress=False)
    assert not (tmp_path / "x").exists()


def test_costs_of_a_table_with_a_float32_row_and_no_answer():
    """A float32 row has no width: the answer's cost and the figure skip it."""
    from fixedqmc.sweep.costs import answer_costs, plot_pareto
    from fixedqmc.sweep.sweep import rule_value
    t = pd.DataFrame({"kernels": ["all"] * 3, "width": pd.array([20, 28, None], "Int64"),
                      "paired_diff": [0.1, 0.001, 0.0005], "paired_error": [0.001] * 3,
                      "cost_dsp": [6.0, 9.0, 4.0], "cost_luts": [100.0, 150.0, 900.0]})
    answers = [{"kernels": "all", "narrowest_width": 28}, {"kernels": "x"}]
    answer_costs(t, answers)
    assert answers[0]["cost_at_width"] == {"dsp": 9.0, "luts": 150.0}
    assert answers[1]["cost_at_width"] is None
    fig = plot_pareto(t, 0.01, rule_value, "paired", answers=answers)
    assert "dsp" in fig.axes[0].get_xlabel()


@pytest.mark.heavy
def test_a_plan_is_judged_paired_and_confirmed_by_a_full_run(small_sweep, tmp_path):
    """A plan whose spec is a point's precision gives that point's paired bits; whatever the
    mode it also gets a full run and verdicts; the answers do not see it; a changed spec
    under the same label is judged anew."""
    folder = _copy(small_sweep, tmp_path)
    same = "default=float64,potential=fixed:28"
    res = _resume(folder, plans={"p28": same, "narrow": "potential=fixed:20,distance=fixed:36"})
    t = res.table
    plan = t[t.plan == "p28"].iloc[0]
    point = t[(t.kernels == "potential") & (t.width == 28)].iloc[0]
    assert plan.kernels == "plan:p28" and plan.precision == same
    assert (plan.paired_diff, plan.paired_error) == (point.paired_diff, point.paired_error)
    assert np.isfinite(plan.full_diff) and plan.full_diff_error > 0
    pd.testing.assert_frame_equal(res.answer, small_sweep.answer)
    for label, v in res.summary["plans"].items():
        row = t[t.plan == label].iloc[0]
        assert v["paired_value"] == pytest.approx(abs(row.paired_diff) + 2 * row.paired_error)
        assert v["passes"] == (v["paired_verdict"] == v["full_verdict"] == "passes")
        assert v["full_verdict"] == verdict(row.full_diff, row.full_diff_error, 0.01)
        assert v["reweighted_verdict"] == verdict(row.reweighted_diff, row.reweighted_error,
                                                  0.01)
    again = _resume(folder, plans={"p28": "default=float64,potential=fixed:36"})
    assert again.summary["plans"]["p28"]["spec"].endswith("fixed:36")
    assert len(list((folder / "points").glob("plan_p28_*.json"))) == 2
    paired = _resume(folder, plans={"p28": same}, confirm_plans=False)  # no full run
    v, row = paired.summary["plans"]["p28"], paired.table[paired.table.plan == "p28"].iloc[0]
    assert v["full_verdict"] == "not run" and v["passes"] is None and v["full_diff"] is None
    assert (row.paired_diff, row.paired_error) == (point.paired_diff, point.paired_error)
    names = [p.name for p in (folder / "points").glob("plan_p28_*")]
    assert len(names) == 3 and sum(n.endswith("_paired.json") for n in names) == 1


def test_verdicts_and_bad_plans():
    assert verdict(0.004, 0.002, 0.01) == "passes"
    assert verdict(-0.02, 0.004, 0.01) == "fails"
    assert verdict(0.008, 0.002, 0.01) == "unresolved"
    kernels = {"potential": KernelSpec("potential", (Variable("s", 0.0, 1.0),))}
    assert parse_plans(["a=potential=fixed:20", "b=bfloat16"], kernels) == {
        "a": "potential=fixed:20", "b": "bfloat16"}
    for plans, match in ((["nolabel"], "LABEL=SPEC"), (["a=x", "a=y"], "twice"),
                         ({"a b": "float32"}, "label 'a b'"),
                         ({"p": "jastrow=fixed:20"}, "plan 'p'.*jastrow"),
                         ({"p": "potential.q=bfloat16"}, "plan 'p'.*potential.q"),
                         ({"p": "potential=fixed:99"}, "plan 'p'")):
        with pytest.raises(FixedQMCError, match=match):
            parse_plans(plans, kernels)


def test_a_bad_plan_is_refused_before_any_work(tmp_path):
    with pytest.raises(FixedQMCError, match="plan 'p'.*jastrow"):
        sweep(overrides={**SMALL, "output": str(tmp_path / "b")}, widths="20",
              plans={"p": "jastrow=bfloat16"}, progress=False)
    assert not (tmp_path / "b" / "sweep" / "reference.pkl").exists()
