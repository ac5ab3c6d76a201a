"""Numerical robustness: regret matching that rounding noise cannot steer (issue 16),
OpenSpiel parity on a game whose exact regrets are often zero, float32 precision."""

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import games_tensor as gt
import jaxcfr
from jaxcfr._solver import regret_matching, regret_tolerance, sum_actions


def test_regret_matching_ignores_noise_below_tolerance():
    """+8.7e-19 where the exact regret is 0 (goofspiel, one CFR iteration in float64):
    plain regret matching plays it with probability 1, the tolerance keeps uniform."""
    regrets = jnp.array([[8.67e-19, 0.0, -8.67e-19], [3e-3, 1e-3, -1.0]])
    mask = jnp.ones((2, 3), bool)
    plain = np.asarray(regret_matching(regrets, mask))
    np.testing.assert_array_equal(plain[0], [1.0, 0.0, 0.0])
    robust = np.asarray(regret_matching(regrets, mask, tolerance=1e-15))
    np.testing.assert_allclose(robust[0], [1 / 3, 1 / 3, 1 / 3])
    np.testing.assert_allclose(robust[1], [0.75, 0.25, 0.0])  # real regrets are untouched


def test_regret_tolerance_closed_form(x64):
    leduc = gt.load(
        "leduc_poker"
    )  # largest |u| = 13 (1 ante + 2 * 2 + 2 * 4 chips... of the loser)
    assert regret_tolerance(leduc) == 16 * 2.0**-52 * 13
    assert regret_tolerance(leduc, jnp.float32) == 16 * 2.0**-23 * 13
    assert regret_tolerance(2.0, np.float64) == 32 * 2.0**-52
    with pytest.raises(ValueError, match="dtype"):
        regret_tolerance(2.0)


def test_sum_actions_is_left_to_right():
    x = jnp.asarray(np.random.default_rng(0).random((5, 7, 3)).astype(np.float32) * 100)
    want = (np.asarray(x[..., 0]) + np.asarray(x[..., 1])) + np.asarray(x[..., 2])
    np.testing.assert_array_equal(np.asarray(jax.jit(sum_actions)(x)), want)
    np.testing.assert_array_equal(np.asarray(sum_actions(x.T, axis=0)), want.T)


pyspiel = pytest.importorskip("pyspiel")


def _openspiel_policy(game, os_policy):
    out = np.zeros((game.num_infosets, game.num_actions))
    for i, key in enumerate(game.infoset_keys):
        for a, p in os_policy.get_state_policy(key):
            out[i, a] = p
    return out


@pytest.mark.parametrize("algorithm", ["cfr", "cfr_plus"])
def test_goofspiel_random_order_matches_openspiel_cpp(x64, algorithm):
    """II-Goofspiel(4) with random point order: many exact regrets are 0, and summing in
    another order than OpenSpiel leaves +-1e-18 there. Before the tolerance, one CFR
    iteration already gave pure policies where OpenSpiel's are uniform (0.67 apart) and
    CFR+ average policies were 0.63 apart after 100 iterations."""
    params = {"imp_info": True, "num_cards": 4, "points_order": "random"}
    os_game = pyspiel.convert_to_turn_based(pyspiel.load_game("goofspiel", params))
    game = gt.from_openspiel(os_game)
    os_solver = {"cfr": pyspiel.CFRSolver, "cfr_plus": pyspiel.CFRPlusSolver}[algorithm](os_game)
    init, update = getattr(jaxcfr, algorithm)()
    state, step = init(game), jax.jit(update)
    for it in range(1, 101):
        state = step(game, state)
        os_solver.evaluate_and_update_policy()
        if it in (1, 10, 100):
            avg = np.asarray(jaxcfr.average_policy(game, state))
            cur = np.asarray(jaxcfr.current_policy(game, state))
            ref_avg = _openspiel_policy(game, os_solver.average_policy())
            ref_cur = _openspiel_policy(game, os_solver.current_policy())
            np.testing.assert_allclose(avg, ref_avg, rtol=0, atol=1e-9, err_msg=f"avg {it}")
            # After 100 iterations 1e-9 is out of reach for any two float64 codes: CFR's
            # dynamics on this game amplify rounding (~1.15x per iteration), OpenSpiel's own current
            # policy is 2.7e-9 (CFR) / 5.9e-10 (CFR+) away from exact CFR computed in
            # 80-bit precision, jaxcfr's 2.2e-9 / 1.3e-9 (`python -m
            # experiments.openspiel_precision`; test_goofspiel_both_near_exact_cfr below).
            atol = 1e-9 if it < 100 else 1e-8
            np.testing.assert_allclose(cur, ref_cur, rtol=0, atol=atol, err_msg=f"cur {it}")


@pytest.mark.slow
def test_goofspiel_both_near_exact_cfr(x64):
    """OpenSpiel is the limit of the parity test above: against CFR run in 80-bit
    extended precision on the tree enumerated from pyspiel (an independent code,
    ``experiments.openspiel_precision``), after 100 iterations OpenSpiel's C++ CFR and
    jaxcfr are equally far from exact (measured 2.7e-9 and 2.2e-9 for the current
    policy, 2.3e-11 and 1.9e-11 for the average), farther than the 1e-9 the issue asked
    between them."""
    from experiments.openspiel_precision import GAME, ReferenceCFR, Tree

    os_game = pyspiel.convert_to_turn_based(pyspiel.load_game("goofspiel", GAME))
    game = gt.from_openspiel(os_game)
    ref = ReferenceCFR(Tree(os_game), plus=False)
    os_solver = pyspiel.CFRSolver(os_game)
    init, update = jaxcfr.cfr()
    state, step = init(game), jax.jit(update)
    for _ in range(100):
        ref.step()
        os_solver.evaluate_and_update_policy()
        state = step(game, state)
    exact_cur = np.zeros((game.num_infosets, game.num_actions))
    exact_avg = np.zeros_like(exact_cur)
    for i, key in enumerate(game.infoset_keys):
        p = int(game.infoset_player[i])
        exact_cur[i] = ref.current(p, key).astype(np.float64)
        exact_avg[i] = ref.average(p, key).astype(np.float64)
    errors = {}
    for name, cur, avg in (
        ("OpenSpiel", os_solver.current_policy(), os_solver.average_policy()),
        ("jaxcfr", jaxcfr.current_policy(game, state), jaxcfr.average_policy(game, state)),
    ):
        if name == "OpenSpiel":
            cur, avg = _openspiel_policy(game, cur), _openspiel_policy(game, avg)
        errors[name] = (
            np.abs(np.asarray(cur) - exact_cur).max(),
            np.abs(np.asarray(avg) - exact_avg).max(),
        )
    assert 1e-9 < errors["OpenSpiel"][0] < 1e-8, errors  # OpenSpiel itself misses 1e-9
    assert errors["jaxcfr"][0] < 1e-8, errors
    assert errors["jaxcfr"][1] < 1e-10 and errors["OpenSpiel"][1] < 1e-10, errors


@pytest.mark.parametrize("algorithm", ["cfr_plus", "dcfr"])
def test_float32_leduc_within_precision_floor(algorithm):
    """A float32 run on Leduc ends within the documented float32 floor (docs/cfr.md:
    1e-5) of the float64 run, and its exploitability computed in float32 is that of its
    policy computed in float64. (Intermediate iterates drift apart by more: the dynamics
    amplify last-bit differences; measured 6% at 500 iterations.)"""
    game32 = gt.load("leduc_poker")
    res32 = jaxcfr.run(getattr(jaxcfr, algorithm)(), game32, 4000, 4000)
    policy32 = np.asarray(jaxcfr.average_policy(game32, jax.tree.map(lambda x: x[0], res32.state)))
    jax.config.update("jax_enable_x64", True)
    try:
        game64 = gt.load("leduc_poker")
        res64 = jaxcfr.run(getattr(jaxcfr, algorithm)(), game64, 4000, 4000)
        exact = float(jaxcfr.exploitability(game64, policy32.astype(np.float64)))
    finally:
        jax.config.update("jax_enable_x64", False)
    assert res64.exploitability[0, -1] < 3e-5  # the float64 run converges
    assert abs(res32.exploitability[0, -1] - res64.exploitability[0, -1]) <= 1e-5
    assert abs(res32.exploitability[0, -1] - exact) <= 1e-6


def _noise_tables(game, state, field):
    """Every infoset in memory with regrets (+1e-19, 0): rounding noise on exact zeros."""
    noise = jnp.zeros_like(getattr(state, field)).at[:, 0].set(1e-19)
    noise = jnp.where(game.legal_mask, noise, 0.0)
    return state._replace(**{field: noise, "in_memory": jnp.ones_like(state.in_memory)})


@pytest.mark.parametrize("which", ["ismcts_rm", "oos"])
def test_search_regret_matching_ignores_noise(which):
    """ISMCTS-RM and OOS select with regret matching: a +1e-19 regret (noise) must give
    the uniform RM distribution, not a pure one. ISMCTS-RM accumulates p = RM(r) into
    the mean strategy, OOS accumulates gamma-uniform + (1 - gamma) RM(r) scaled by
    reach: with plain RM the sums would be (1, 0) resp. (1 - gamma / 2, gamma / 2)."""
    game = gt.load("kuhn_poker")
    bot = jaxcfr.ismcts("rm") if which == "ismcts_rm" else jaxcfr.oos(None, gamma=0.2)
    field = "values" if which == "ismcts_rm" else "regrets"
    state = _noise_tables(game, bot.init(game), field)
    touched = 0
    for seed in range(4):  # one iteration each: later ones would see real regrets
        after = bot.search(game, state, jaxcfr.root_view(), jax.random.key(seed), 1)
        ssum = np.asarray(after.strategy_sum)
        rows = ssum.sum(axis=1) > 0
        touched += rows.sum()
        np.testing.assert_allclose(ssum[rows, 0], ssum[rows, 1], rtol=1e-6)
    assert touched >= 4
