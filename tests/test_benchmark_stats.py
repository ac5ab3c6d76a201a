"""experiments.benchmarks: the sign-test confidence interval of a median (_stats.median_ci),
the listing and the --help of the benchmarks."""

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


def test_benchmark_help_states_every_default():
    """``python -m experiments.benchmarks <name> --help`` gives each option's default:
    every benchmark builds its parser with ``_cli.Parser``, which appends it."""
    import pathlib

    from experiments import benchmarks
    from experiments.benchmarks._cli import Parser

    p = Parser(prog="x")
    p.add_argument("--games", default="ld,leduc")
    p.add_argument("--rounds", type=int, default=3, help="A/B rounds")
    p.add_argument("--seconds", type=float, default=2.0, help="per point (default 2)")
    p.add_argument("--quick", action="store_true", help="fewer")
    p.add_argument("--ply", type=int, default=0, help="decisions after the first")
    text = " ".join(p.format_help().split())
    assert "decisions after the first (default: 0)" in text  # 0 == False, still stated
    assert "--games GAMES (default: ld,leduc)" in text
    assert "A/B rounds (default: 3)" in text
    assert "per point (default 2)" in text and "(default: 2.0)" not in text
    assert "fewer (default" not in text
    folder = pathlib.Path(benchmarks.__file__).parent
    for name in benchmarks.names():
        assert "argparse.ArgumentParser(" not in (folder / f"{name}.py").read_text(), name


def test_benchmark_listing_gives_whole_first_sentences():
    from experiments import benchmarks

    for name in benchmarks.names():
        line = benchmarks.summary(name)
        assert line.endswith((".", ")", "``")), (name, line)
    assert "DRP-3" in benchmarks.summary("compile_bytes")
