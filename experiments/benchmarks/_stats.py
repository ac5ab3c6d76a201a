"""Distribution-free statistics for paired benchmark ratios.

Timings on a shared machine are heavy-tailed, so benchmarks report the median of paired
per-round ratios. ``median_ci`` gives its confidence interval from order statistics (the
sign-test interval, e.g. Conover, *Practical Nonparametric Statistics*, 3.2): the number
of observations below the true median is Binomial(n, 1/2), so with ``k`` the largest
rank with ``P(Binomial(n, 1/2) < k) <= (1 - confidence) / 2``, the interval
``[x_(k), x_(n+1-k)]`` (1-based order statistics) covers the median with probability at
least ``confidence``, whatever the distribution.
"""

from __future__ import annotations

from math import comb

import numpy as np


def median_ci(values, confidence: float = 0.95) -> tuple[float, float, float]:
    """(median, low, high) of ``values`` [n]; ``low``/``high`` are NaN when n is too small
    for the requested confidence (n < 6 at 0.95)."""
    x = np.sort(np.asarray(values, np.float64).ravel())
    n = x.size
    if n == 0:
        raise ValueError("median_ci needs at least one value")
    if not 0.0 < confidence < 1.0:
        raise ValueError(f"confidence must lie in (0, 1), got {confidence}")
    tail = (1.0 - confidence) / 2.0
    below, k = 0.0, 0  # below = P(Binomial(n, 1/2) <= k - 1)
    while True:
        nxt = below + comb(n, k) / 2.0**n  # P(Binomial <= k)
        if nxt > tail:
            break
        below, k = nxt, k + 1
    median = float(np.median(x))
    if k == 0:
        return median, float("nan"), float("nan")
    return median, float(x[k - 1]), float(x[n - k])
