"""Convergence-rate estimates and across-seed summaries (pure NumPy).

The rate of an algorithm is the slope b of

    mean_over_seeds log10 exploitability(t)  ~  a + b log10 t

fitted by least squares over the evaluations in the last ``decades`` decades of
iterations (t >= t_last / 10**decades). Fitting the mean of the logs is the same as
pooling every seed's points in one fit (all seeds share the evaluation points).
b = -1 is an O(1/T) rate, b = -0.5 is O(1/sqrt(T)). The confidence interval is a
percentile bootstrap over seeds: resample the seeds with replacement, refit, and
take the central ``confidence`` mass of the slopes (a fixed NumPy generator, so the
numbers are reproducible). With one seed, or seeds that are all identical, the
interval collapses to the point estimate.
"""

from __future__ import annotations

from typing import NamedTuple

import numpy as np

FLOOR = 1e-12  # exploitability at or below this (exact solve, rounding) is clipped before log10
MIN_POINTS = 3


class Rate(NamedTuple):
    slope: float
    ci_low: float
    ci_high: float
    fit_from: int  # first iteration in the fit window
    fit_to: int  # last iteration in the fit window
    points: int  # evaluations in the window


class Summary(NamedTuple):
    median: float
    q25: float
    q75: float


def summarize(values) -> Summary:
    """Median and interquartile range of a 1-D array (e.g. final exploitability per seed)."""
    v = np.asarray(values, np.float64)
    q25, med, q75 = np.percentile(v, [25, 50, 75])
    return Summary(float(med), float(q25), float(q75))


def quantile_curves(curves) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """``[S, E]`` -> (q25, median, q75), each ``[E]``, across seeds."""
    q = np.percentile(np.asarray(curves, np.float64), [25, 50, 75], axis=0)
    return q[0], q[1], q[2]


def fit_window(iterations, decades: float, min_points: int = MIN_POINTS) -> np.ndarray:
    """Indices of the evaluations with t >= t_last / 10**decades (at least the last
    ``min_points`` when the run is shorter than that)."""
    t = np.asarray(iterations, np.float64)
    idx = np.flatnonzero(t >= t[-1] / 10.0**decades)
    if idx.size < min_points:
        idx = np.arange(max(0, t.size - min_points), t.size)
    return idx


def _slopes(x: np.ndarray, y: np.ndarray) -> np.ndarray:
    """Least-squares slopes of rows of ``y [..., E]`` against ``x [E]``."""
    xc = x - x.mean()
    return ((y - y.mean(axis=-1, keepdims=True)) @ xc) / (xc @ xc)


def convergence_rate(
    iterations,
    curves,
    *,
    decades: float = 1.0,
    num_bootstrap: int = 1000,
    confidence: float = 0.95,
    seed: int = 0,
) -> Rate | None:
    """Slope of log10 exploitability vs log10 iterations with a bootstrap CI over seeds.

    Args:
      iterations: [E] iterations at each evaluation (increasing, > 0).
      curves: [S, E] exploitability per seed.
    Returns:
      :class:`Rate`, or None with fewer than two evaluations.
    """
    t = np.asarray(iterations, np.float64)
    y = np.log10(np.maximum(np.asarray(curves, np.float64), FLOOR))
    if y.ndim != 2 or y.shape[1] != t.size:
        raise ValueError(f"curves must be [S, E] with E = {t.size}, got {y.shape}")
    if t.size < 2:
        return None
    idx = fit_window(t, decades)
    x, y = np.log10(t[idx]), y[:, idx]
    slope = float(_slopes(x, y.mean(axis=0)))
    rng = np.random.default_rng(seed)
    pick = rng.integers(0, y.shape[0], size=(num_bootstrap, y.shape[0]))
    boot = _slopes(x, y[pick].mean(axis=1))  # [num_bootstrap]
    alpha = (1.0 - confidence) / 2
    lo, hi = np.quantile(boot, [alpha, 1.0 - alpha])
    return Rate(slope, float(lo), float(hi), int(t[idx[0]]), int(t[idx[-1]]), int(idx.size))
