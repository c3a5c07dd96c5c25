"""Error bars of serially correlated Monte Carlo data: reblocking (blocking analysis).

Successive QMC samples (per-step or per-block energies) are correlated, so the naive
standard error of the mean, s_0 / sqrt(n), underestimates the true one.  Reblocking
(Flyvbjerg & Petersen 1989) averages neighbouring pairs of the series again and again.
At level B the series x_t (t = 0 .. n-1) has been cut into n_B = floor(n / 2^B) blocks of
2^B consecutive samples (a trailing remainder is dropped), and the block means y_j give

    sigma_B     = sqrt( sum_j (y_j - ybar)^2 / (n_B - 1) / n_B )     (standard error, level B)
    sigma_B_err = sigma_B / sqrt(2 (n_B - 1))                      (its error, Gaussian y_j)

sigma_B grows with B and reaches a plateau, the true standard error, once the block size
exceeds the correlation length.  The mean is always that of the whole series.

Choice of level (as in the ``pyblock`` package, ``pyblock.blocking.find_optimal_block``):
Lee, Conduit, Nemec, Lopez Rios & Drummond, Phys. Rev. E 83, 066706 (2011), Eq. 13-14
(after Wolff, Comput. Phys. Commun. 156, 143 (2004), Eq. 47), take the optimal block size
m = 2^B from m^3 = 2 n n_corr^2, where n_corr = (sigma_B / sigma_0)^2 is the factor by which
correlation inflates the variance of the mean.  The chosen level is the smallest B with

    2^(3B) > 2 n (sigma_B / sigma_0)^4                                      (criterion)

(n: number of samples at level 0).  If no level meets it the data are too short for the
correlation length: the result is flagged ``converged=False`` and the error is the largest
sigma_B of all levels, the best available guess but not a reliable one (collect more data).

Functions
---------
:func:`reblock`
    Blocking analysis of one series -> :class:`ReblockResult`.
:func:`autocorrelation_time`
    tau = (error / naive error)^2 = 1 + 2 sum_k rho_k from the same analysis.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np
import pandas as pd

from fixedqmc.errors import FixedQMCError

__all__ = ["ReblockResult", "autocorrelation_time", "reblock"]

TABLE_COLUMNS = ("level", "block_size", "n_blocks", "std_err", "std_err_err")


@dataclass(frozen=True)
class ReblockResult:
    """Result of :func:`reblock` (all values in the units of the data).

    Attributes
    ----------
    mean : float
        Mean of the whole series in float64 (equal to ``np.mean(x)`` for float64 x).
    error : float
        Standard error of the mean: sigma_B at :attr:`optimal_level` (NaN for n = 1,
        0 for a constant series).
    n : int
        Number of samples.
    optimal_level : int
        Blocking level B whose sigma_B is :attr:`error` (block size 2^B).  If not
        :attr:`converged`, the level with the largest sigma_B.
    converged : bool
        True if a level met the criterion 2^(3B) > 2 n (sigma_B / sigma_0)^4 (or the series
        is constant).  False means the series is too short for its correlation length and
        :attr:`error` is only the largest estimate seen.
    naive_error : float
        sigma_0 = std(x, ddof=1) / sqrt(n), the error ignoring correlation.
    table : pandas.DataFrame
        One row per level, columns ``level``, ``block_size`` (2^B), ``n_blocks``,
        ``std_err`` (sigma_B) and ``std_err_err``.  Not compared by ``==``.
    """

    mean: float
    error: float
    n: int
    optimal_level: int
    converged: bool
    naive_error: float
    table: pd.DataFrame = field(compare=False, repr=False)

    @property
    def correlation_factor(self) -> float:
        """(error / naive_error)^2 = 1 + 2 sum_{k>=1} rho_k: variance inflation by correlation.

        1 for iid data (and for a constant series); see :func:`autocorrelation_time`.
        """
        if self.naive_error == 0.0:
            return 1.0
        return (self.error / self.naive_error) ** 2


def _series(x, axis: int) -> np.ndarray:
    """x as a 1-D float64 array along ``axis``; validates shape and values."""
    try:
        arr = np.asarray(x)
    except Exception as exc:  # noqa: BLE001 - ragged or odd input
        raise FixedQMCError(f"reblock: x must be an array of real numbers ({exc})") from None
    if arr.dtype.kind not in "biuf":
        raise FixedQMCError(
            f"reblock: x must hold real numbers (bool, int or float), got dtype {arr.dtype}"
        )
    if arr.ndim == 0:
        raise FixedQMCError("reblock: x must be a series (1-D array), got a scalar")
    if not -arr.ndim <= axis < arr.ndim:
        raise FixedQMCError(
            f"reblock: axis={axis} out of range for x of shape {arr.shape} "
            f"(allowed {-arr.ndim} .. {arr.ndim - 1})"
        )
    arr = np.moveaxis(arr, axis, 0)
    if arr.ndim > 1 and int(np.prod(arr.shape[1:])) != 1:
        raise FixedQMCError(
            f"reblock analyses one series: every axis but axis={axis} must have length 1, "
            f"got shape {np.moveaxis(arr, 0, axis).shape}; call it once per series"
        )
    series = arr.reshape(arr.shape[0]).astype(np.float64)
    bad = ~np.isfinite(series)
    if np.any(bad):
        i = int(np.argmax(bad))
        raise FixedQMCError(
            f"reblock: x must be finite; x[{i}] = {float(series[i])} (along axis {axis}), "
            f"{int(bad.sum())} non-finite value(s) in total"
        )
    if series.size == 0:
        raise FixedQMCError("reblock: x is empty; need at least 1 sample (2 for an error)")
    return series


def _levels(series: np.ndarray) -> pd.DataFrame:
    """Blocking table: sigma_B and its error for B = 0, 1, ... while n_B >= 2."""
    rows = []
    y = series
    level = 0
    while y.size >= 2:
        n_b = y.size
        std_err = float(np.sqrt(np.var(y, ddof=1) / n_b))
        rows.append((level, 2**level, n_b, std_err, std_err / np.sqrt(2.0 * (n_b - 1))))
        half = n_b // 2
        y = 0.5 * (y[: 2 * half : 2] + y[1 : 2 * half : 2])
        level += 1
    table = pd.DataFrame(rows, columns=list(TABLE_COLUMNS))
    return table.astype({"level": "int64", "block_size": "int64", "n_blocks": "int64"})


def reblock(x, *, axis: int = 0) -> ReblockResult:
    """Flyvbjerg-Petersen blocking analysis of one correlated series.

    Parameters
    ----------
    x : array_like, n samples along ``axis``
        The series, e.g. per-step local energies or per-block energies of a QMC run.
        Every other axis must have length 1 (e.g. shape (n,), (n, 1) or, with axis=1,
        (1, n)).  Bool, integer or float; all values finite.
    axis : int
        The sample axis.

    Returns
    -------
    ReblockResult
        ``mean`` (np.mean of x in float64), ``error`` (sigma_B at the level chosen by the
        criterion of Lee et al. 2011, see the module docstring), ``n``, ``optimal_level``,
        ``converged``, ``naive_error`` and the per-level ``table``.

    Edge cases
    ----------
    * n = 1: returns mean = x[0], error = NaN, naive_error = NaN, converged = False,
      optimal_level = 0 and an empty table (no error can be estimated).
    * constant series: error = 0, converged = True, optimal_level = 0.

    Raises
    ------
    FixedQMCError (a ValueError)
        Empty x; NaN or infinite values (the message names the first bad index); non-real
        dtype; more than one series; axis out of range.

    References
    ----------
    H. Flyvbjerg and H. G. Petersen, J. Chem. Phys. 91, 461 (1989).
    R. M. Lee, G. J. Conduit, N. Nemec, P. Lopez Rios and N. D. Drummond, Phys. Rev. E 83,
    066706 (2011), Eq. 13-14; implemented as in ``pyblock`` (J. Spencer).
    """
    series = _series(x, axis)
    n = int(series.size)
    mean = float(np.mean(series))
    if n == 1:
        empty = pd.DataFrame(
            {
                c: pd.Series(dtype="int64" if c in TABLE_COLUMNS[:3] else "float64")
                for c in TABLE_COLUMNS
            }
        )
        return ReblockResult(mean, float("nan"), 1, 0, False, float("nan"), empty)

    table = _levels(series)
    std_err = table["std_err"].to_numpy()
    sigma0 = float(std_err[0])
    if sigma0 == 0.0 or np.all(series == series[0]):
        # constant series (np.var may leave a rounding residue of ~1e-34 relative)
        table["std_err"] = 0.0
        table["std_err_err"] = 0.0
        return ReblockResult(mean, 0.0, n, 0, True, 0.0, table)

    level = table["level"].to_numpy()
    met = 2.0 ** (3 * level) > 2.0 * n * (std_err / sigma0) ** 4  # Lee et al. 2011, Eq. 14
    if np.any(met):
        best = int(np.argmax(met))  # smallest level meeting the criterion
        converged = True
    else:
        best = int(np.argmax(std_err))
        converged = False
    return ReblockResult(mean, float(std_err[best]), n, int(level[best]), converged, sigma0, table)


def autocorrelation_time(x, *, axis: int = 0) -> float:
    """Integrated autocorrelation time tau = (sigma_B / sigma_0)^2 from :func:`reblock`.

    tau = 1 + 2 sum_{k>=1} rho_k (rho_k: autocorrelation at lag k), in samples, is the
    factor by which correlation inflates the variance of the mean, so n / tau is the
    effective number of independent samples.  This is the convention of e.g. ``emcee``;
    Sokal's tau_int = 1/2 + sum rho_k is tau / 2.  tau = 1 for iid data and
    (1 + phi) / (1 - phi) for an AR(1) process x_t = phi x_{t-1} + e_t.

    Returns NaN for n = 1 and 1 for a constant series; the value is unreliable (and
    usually too small) when the analysis is not converged (``reblock(x).converged``).
    Same arguments and errors as :func:`reblock`.
    """
    result = reblock(x, axis=axis)
    if result.n == 1:
        return float("nan")
    return result.correlation_factor
