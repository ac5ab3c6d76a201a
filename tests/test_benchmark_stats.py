"""experiments.benchmarks._stats.median_ci: the sign-test confidence interval of a median."""

import numpy as np
import pytest

from experiments.benchmarks._stats import median_ci


@pytest.mark.parametrize(
    "n, ranks",
    # 95% ranks of the order-statistic interval for the median, as tabulated in
    # nonparametric texts (e.g. Conover, Table A3 / the binomial(n, 1/2) tail):
    # n = 10 -> (2, 9): P(B <= 1) = 11/1024 <= 0.025 < P(B <= 2) = 56/1024.
    [(6, (1, 6)), (10, (2, 9)), (20, (6, 15)), (31, (10, 22))],
)
def test_ranks_match_the_binomial_table(n, ranks):
    values = np.arange(1, n + 1, dtype=float) * 10.0
    rng = np.random.default_rng(n)
    med, lo, hi = median_ci(rng.permutation(values))  # order of the input must not matter
    assert med == pytest.approx(np.median(values))
    assert (lo, hi) == (values[ranks[0] - 1], values[ranks[1] - 1])


def test_covers_a_skewed_median_at_least_as_often_as_stated():
    rng = np.random.default_rng(0)
    true_median = np.log(2.0)  # of Exponential(1)
    hits = [
        lo <= true_median <= hi
        for lo, hi in (median_ci(rng.exponential(size=15))[1:] for _ in range(4000))
    ]
    # exact coverage for n = 15 at ranks (4, 12): 1 - 2 P(B <= 3) = 0.9648
    assert np.mean(hits) > 0.95


def test_too_few_values_give_no_interval_and_bad_input_is_named():
    med, lo, hi = median_ci([3.0, 1.0, 2.0, 5.0, 4.0])
    assert med == 3.0
    assert np.isnan(lo)
    assert np.isnan(hi)
    with pytest.raises(ValueError, match="confidence"):
        median_ci([1.0, 2.0], confidence=1.5)
    with pytest.raises(ValueError, match="at least one"):
        median_ci([])
