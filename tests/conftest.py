"""Shared test setup: strict rank promotion, and helpers."""

import jax
import pytest

jax.config.update("jax_numpy_rank_promotion", "raise")


# Default-run cases moved to the slow set to keep `make test` under 15 minutes on a
# 2-core CPU (each took 8-21 s in the 2026-11-24 full run, `pytest --durations=30`); a
# cheaper sibling of each stays in the default run. `pytest -m slow` runs them.
SLOW_CASES = {
    "tests/test_evaluation.py::test_nash_conv_matches_openspiel[liars_dice]",
    "tests/test_evaluation.py::test_ii_goofspiel6_uniform_best_responses",
    "tests/test_evaluation.py::test_vmap_equals_loop",
    "tests/test_evaluation.py::test_lp_value_and_policy_agree[liars_dice]",
    "tests/test_pruning.py::test_rbp_converges_on_rank_only_leduc[cfr-total-worst_case]",
    "tests/test_step_search.py::test_a_step_form_match_is_determined_by_its_seed",
    "tests/test_cfr.py::test_converges_below_1e_3[die_roll_poker-cfr]",
    "tests/test_cfr.py::test_converges_below_1e_3[die_roll_poker-linear_cfr]",
    "tests/test_imperfect_recall.py::test_sampling_full_average_sums_to_the_abstract_average"
    "[outcome_sampling-kwargs0]",
    "tests/test_mccfr.py::test_learning_matches_openspiel_spread[leduc_poker-external-2000]",
    "tests/test_games_misc.py::test_sizes[ii_goofspiel-{'num_cards': 6}]",
    "tests/test_search.py::test_root_oos_exploitability[ii_goofspiel-params1-20000-0.5]",
    "tests/test_search.py::test_delta1_trajectories_pass_through_the_target[liars_dice-pst]",
    "tests/test_mccfr.py::test_sampled_increments_are_unbiased[leduc_poker-external-80000]",
    "tests/test_compiler.py::test_deterministic_numbering[leduc5]",
    # session 21: the costliest default cases of `make test --durations` (10-24 s each); a
    # cheaper sibling of each stays in the default run
    "tests/test_step_games.py::test_children_checks_equal_applying_every_child[ii_goofspiel-params1]",  # noqa: E501
    "tests/test_step_search.py::test_full_table_counts_refusals_and_still_plays_legal_moves[0]",
    "tests/test_guarantees_jaxcfr.py::test_extreme_hyperparameters_stay_finite_at_large_iterations[dcfr(alpha=10.0, beta=0.0, gamma=2.0, alternating=True)]",  # noqa: E501
    "tests/test_evaluation.py::test_lp_value_and_policy_agree[die_roll_poker]",
    "tests/test_mccfr.py::test_sampled_increments_are_unbiased[leduc_poker-outcome-250000]",
    "tests/test_mccfr.py::test_learning_matches_openspiel_spread[leduc_poker-outcome-10000]",
    "tests/test_cfr.py::test_converges_below_1e_3[die_roll_poker-cfr_plus]",
    "tests/test_imperfect_recall.py::test_sampling_full_average_sums_to_the_abstract_average[outcome_sampling-kwargs1]",  # noqa: E501
    "tests/test_numerics.py::test_float32_leduc_within_precision_floor[cfr_plus]",
    "tests/test_pruning.py::test_partial_pruning_is_bit_identical[pcfr_plus]",
    "tests/test_evaluation.py::test_uniform_nash_conv_closed_forms[leduc_poker-params2-4.747222222222222]",  # noqa: E501
    "tests/test_numerics.py::test_goofspiel_random_order_matches_openspiel_cpp[cfr_plus]",
}


def pytest_collection_modifyitems(config, items):
    found = set()
    for item in items:
        if item.nodeid in SLOW_CASES:
            item.add_marker(pytest.mark.slow)
            found.add(item.nodeid)
    missing = SLOW_CASES - found
    if missing and len(items) > 600:  # a full collection: a renamed test must be renamed here
        raise pytest.UsageError(f"tests/conftest.py SLOW_CASES not collected: {sorted(missing)}")


@pytest.fixture
def x64():
    """Enable float64 for the duration of a test (load games inside the test)."""
    jax.config.update("jax_enable_x64", True)
    try:
        yield
    finally:
        jax.config.update("jax_enable_x64", False)
