"""Reblocking (Flyvbjerg-Petersen, level chosen as in Lee et al. 2011) against processes
with a known variance of the mean.

AR(1) reference: x_t = phi x_{t-1} + e_t with e_t ~ N(0, 1) and a stationary start has
var(x) = 1 / (1 - phi^2) and, for n >> 1 / (1 - phi),
var(mean) = var(x) (1 + phi) / (1 - phi) / n (relative corrections O(1 / (n (1 - phi)))).

Tolerances: an estimate of the standard error from n_B blocks has relative standard
deviation 1 / sqrt(2 (n_B - 1)) (chi-square with n_B - 1 degrees of freedom).  For
phi = 0.9 and n = 2^16 the criterion picks block size 512 (n_B = 128, 6.3 % per seed) and
blocks of 512 still underestimate the variance by 2 phi / ((1 - phi^2) 512) = 1.9 %, i.e.
the error by 0.9 %.  Each seed must agree within 3 sigma + bias (about 20 %; the ~15 % of a
2.4 sigma band would fail one seed in 60), and the mean over 8 seeds within 3 sigma / sqrt(8)
+ bias (about 7.6 %).  For iid data the criterion picks block size 64 (n_B = 1024, 2.2 %);
10 % is 4.5 sigma.
"""

import numpy as np
import pandas as pd
import pytest
from scipy.signal import lfilter

from fixedqmc.errors import FixedQMCError
from fixedqmc.qmc import ReblockResult, autocorrelation_time, reblock

N = 2**16
SEEDS = range(8)


def ar1(phi: float, n: int, seed: int) -> np.ndarray:
    """Stationary AR(1) series with unit innovations."""
    e = np.random.default_rng(seed).normal(size=n)
    e[0] /= np.sqrt(1.0 - phi**2)  # x_0 ~ N(0, var_x)
    return lfilter([1.0], [1.0, -phi], e)


def exact_error(phi: float, n: int) -> float:
    var_x = 1.0 / (1.0 - phi**2)
    return float(np.sqrt(var_x * (1.0 + phi) / (1.0 - phi) / n))


def rel_sd(n_blocks: int) -> float:
    return 1.0 / np.sqrt(2.0 * (n_blocks - 1))


def test_ar1_phi09_matches_exact_error_and_naive_underestimates():
    phi = 0.9
    exact = exact_error(phi, N)
    ratios, taus = [], []
    for seed in SEEDS:
        x = ar1(phi, N, seed)
        res = reblock(x)
        assert res.converged and res.optimal_level == 9  # block size 512
        n_b = int(res.table.loc[res.optimal_level, "n_blocks"])
        assert n_b == 128
        tol = 3.0 * rel_sd(n_b) + 0.01
        ratio = res.error / exact
        assert abs(ratio - 1.0) < tol, (seed, ratio, tol)
        # naive error is low by sqrt((1 + phi) / (1 - phi)) = 4.36
        assert res.error > 3.0 * res.naive_error, seed
        assert res.naive_error == pytest.approx(np.std(x, ddof=1) / np.sqrt(N), rel=1e-12)
        assert res.mean == np.mean(x)
        ratios.append(ratio)
        taus.append(autocorrelation_time(x))
    assert abs(np.mean(ratios) - 1.0) < 3.0 * rel_sd(128) / np.sqrt(len(SEEDS)) + 0.01
    # tau = (1 + phi) / (1 - phi) = 19; a variance ratio has twice the relative spread
    assert np.mean(taus) == pytest.approx(19.0, rel=2 * 3.0 * rel_sd(128) / np.sqrt(8) + 0.02)


def test_iid_matches_naive_error():
    for seed in SEEDS:
        x = np.random.default_rng(100 + seed).normal(3.0, 2.0, N)
        res = reblock(x)
        naive = np.std(x, ddof=1) / np.sqrt(N)
        assert res.converged and res.optimal_level == 6  # 2^18 > 2 * 2^16 first at B = 6
        assert res.error == pytest.approx(naive, rel=0.10), seed
        assert res.mean == np.mean(x)
        assert res.correlation_factor == pytest.approx(1.0, rel=0.2)


def test_table_matches_direct_block_means_and_criterion():
    x = ar1(0.7, 5000, 3)  # n not a power of 2: trailing samples dropped per level
    res = reblock(x)
    t = res.table
    assert list(t.columns) == ["level", "block_size", "n_blocks", "std_err", "std_err_err"]
    assert len(t) == int(np.floor(np.log2(5000)))  # levels while n_B >= 2
    for row in t.itertuples():
        m = 2**row.level
        assert row.block_size == m and row.n_blocks == 5000 // m
        blocks = x[: row.n_blocks * m].reshape(row.n_blocks, m).mean(axis=1)
        se = np.std(blocks, ddof=1) / np.sqrt(row.n_blocks)
        assert row.std_err == pytest.approx(se, rel=1e-10)
        assert row.std_err_err == pytest.approx(se / np.sqrt(2 * (row.n_blocks - 1)), rel=1e-12)
    # the criterion, with exact integers on the left: smallest B with 2^(3B) > 2 n (s_B/s_0)^4
    s0 = t.std_err[0]
    ok = [b for b, s in zip(t.level, t.std_err) if 2 ** (3 * int(b)) > 2 * 5000 * (s / s0) ** 4]
    assert res.converged and res.optimal_level == ok[0]
    assert res.error == t.std_err[ok[0]]
    assert res.mean == np.mean(x) and res.n == 5000


def test_too_short_for_correlation_is_flagged():
    x = ar1(0.999, 256, 1)  # correlation length ~ 2000 samples > n
    res = reblock(x)
    assert not res.converged
    assert res.error == res.table.std_err.max()
    assert res.optimal_level == int(res.table.std_err.idxmax())


def test_single_sample_constant_and_small_series():
    one = reblock([2.5])
    assert one.mean == 2.5 and np.isnan(one.error) and not one.converged and one.n == 1
    assert one.table.empty and np.isnan(autocorrelation_time([2.5]))
    const = reblock(np.full(1000, 0.1))
    assert const.error == 0.0 and const.converged and const.optimal_level == 0
    assert const.mean == np.mean(np.full(1000, 0.1))
    assert (const.table.std_err == 0.0).all() and autocorrelation_time(np.full(9, 7)) == 1.0
    two = reblock([1.0, 3.0])
    assert two.mean == 2.0 and two.error == pytest.approx(1.0) and len(two.table) == 1
    assert not two.converged  # 2^0 > 2 n is never true: one level cannot show a plateau
    ints = reblock(np.arange(64) % 3)
    assert ints.mean == np.mean(np.arange(64) % 3)


def test_axis_and_shapes():
    x = ar1(0.5, 1000, 9)
    ref = reblock(x)
    assert reblock(x[:, None]) == ref
    assert reblock(x[None, :], axis=1) == ref
    assert reblock(x[None, :], axis=-1) == ref
    assert isinstance(ref, ReblockResult) and isinstance(ref.table, pd.DataFrame)
    with pytest.raises(AttributeError):
        ref.mean = 0.0  # frozen


@pytest.mark.parametrize(
    "x, kwargs, match",
    [
        (np.r_[np.zeros(17), np.nan, np.zeros(5)], {}, r"x\[17\] = nan"),
        (np.r_[np.ones(3), np.inf], {}, r"x\[3\] = inf"),
        ([], {}, "empty"),
        (np.zeros((10, 2)), {}, "one series"),
        (np.zeros(10), {"axis": 1}, "axis=1 out of range"),
        (np.zeros(4, dtype=complex), {}, "real numbers"),
        (np.array(["a", "b"]), {}, "real numbers"),
        (3.0, {}, "scalar"),
    ],
)
def test_bad_input_raises(x, kwargs, match):
    with pytest.raises(FixedQMCError, match=match):
        reblock(x, **kwargs)
