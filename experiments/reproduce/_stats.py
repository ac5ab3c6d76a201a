"""Confidence intervals shared by the reproductions (95%, two-sided)."""

from __future__ import annotations

import numpy as np
from scipy import stats


def mean_ci95(values) -> tuple[float, float]:
    """Mean and half-width of its 95% Student-t confidence interval over the first axis.

    Args:
      values: [N] samples (N >= 2 for a finite half-width; N = 1 gives ``nan``).
    """
    x = np.asarray(values, np.float64).reshape(-1)
    if x.size == 0:
        raise ValueError("mean_ci95 needs at least one value")
    mean = float(x.mean())
    if x.size < 2:
        return mean, float("nan")
    half = stats.t.ppf(0.975, x.size - 1) * x.std(ddof=1) / np.sqrt(x.size)
    return mean, float(half)


def win_rate_ci95(returns) -> tuple[float, float]:
    """Win rate in percent (ties count half) and its 95% half-width, from per-match returns.

    Args:
      returns: [N] the row player's utility per match; > 0 a win, 0 a tie, < 0 a loss.
    """
    r = np.asarray(returns, np.float64).reshape(-1)
    score = np.where(r > 0, 1.0, np.where(r < 0, 0.0, 0.5))
    mean, half = mean_ci95(score)
    return 100.0 * mean, 100.0 * half
