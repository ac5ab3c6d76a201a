"""Full-width CFR family: hand-derived iterates, OpenSpiel parity, convergence, runner."""

import subprocess
import sys
import textwrap

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import games_tensor as gt
import jaxcfr

ALGORITHMS = ["cfr", "cfr_plus", "linear_cfr", "dcfr", "pcfr_plus"]


def test_kuhn_two_simultaneous_iterations_by_hand(x64):
    """Average policy after two simultaneous vanilla CFR iterations from uniform.

    Derivation (P1 = player 0, cf. values weighted by chance 1/6 and opponent reach):
    iteration-1 regrets favour bet at every P1 root infoset (r = +1/8), fold at J|pb and
    call at Q|pb, K|pb; P2 bets after a pass with every card (r = +1/24), and after a bet
    folds J, calls Q and K. So sigma^2 is pure. Averages weight sigma^t by own reach:
    P1 roots and all P2 infosets have reach 1 both times -> (uniform + sigma^2) / 2; P1's
    pb infosets have reach 1/2 then 0 (sigma^2 always bets) -> uniform.
    """
    game = gt.load("kuhn_poker")
    init, update = jaxcfr.cfr(alternating=False)
    state = init(game)
    step = jax.jit(update)
    state = step(game, step(game, state))
    avg = np.asarray(jaxcfr.average_policy(game, state))
    expected_bet = {
        "P0 card:J | ": 0.75,
        "P0 card:Q | ": 0.75,
        "P0 card:K | ": 0.75,
        "P0 card:J | pb": 0.5,
        "P0 card:Q | pb": 0.5,
        "P0 card:K | pb": 0.5,
        "P1 card:J | p": 0.75,
        "P1 card:Q | p": 0.75,
        "P1 card:K | p": 0.75,
        "P1 card:J | b": 0.25,
        "P1 card:Q | b": 0.75,
        "P1 card:K | b": 0.75,
    }
    for i, key in enumerate(game.infoset_keys):
        np.testing.assert_allclose(
            avg[i], [1 - expected_bet[key], expected_bet[key]], atol=1e-12, err_msg=key
        )
    assert int(state.iteration) == 2


pyspiel = pytest.importorskip("pyspiel")


@pytest.mark.parametrize(
    "game_name,checkpoints",
    [("kuhn_poker", (10, 100, 1000)), ("leduc_poker", (100,))],
)
@pytest.mark.parametrize("algorithm", ["cfr", "cfr_plus"])
def test_matches_openspiel_cpp(x64, game_name, checkpoints, algorithm):
    game = gt.load(game_name)
    os_game = pyspiel.load_game(game_name)
    os_solver = {"cfr": pyspiel.CFRSolver, "cfr_plus": pyspiel.CFRPlusSolver}[algorithm](os_game)
    init, update = getattr(jaxcfr, algorithm)()
    state = init(game)
    step = jax.jit(update)
    for it in range(1, max(checkpoints) + 1):
        state = step(game, state)
        os_solver.evaluate_and_update_policy()
        if it in checkpoints:
            ours = float(jaxcfr.exploitability(game, jaxcfr.average_policy(game, state)))
            ref = pyspiel.exploitability(os_game, os_solver.average_policy())
            assert abs(ours - ref) < 1e-6, (it, ours, ref)


# Iteration budgets to reach exploitability 1e-3 (measured with
# `python -m experiments.cfr_budget`; the larger games of GAMES.md are in that study).
# float64: vanilla CFR on biased RPS needs ~1e6 iterations, where float32 sums stall.
BUDGETS = {
    ("kuhn_poker", ()): 5_000,
    ("leduc_poker", (("suits", False),)): 50_000,
    ("ii_goofspiel", (("num_cards", 4),)): 10_000,
    ("nonlocality", ()): 5_000,
    ("biased_rps", ()): 1_500_000,
    ("die_roll_poker", ()): 20_000,
}


@pytest.mark.parametrize("algorithm", ALGORITHMS)
@pytest.mark.parametrize(
    "case", sorted(BUDGETS), ids=lambda c: c[0] + "".join(f"-{v}" for _, v in c[1])
)
def test_converges_below_1e_3(x64, case, algorithm):
    name, params = case
    game = gt.load(name, **dict(params))
    budget = BUDGETS[case]
    eval_every = max(500, budget // 40)
    res = jaxcfr.run(
        getattr(jaxcfr, algorithm)(), game, budget, eval_every, target_exploitability=1e-3
    )
    assert res.exploitability[0, -1] <= 1e-3, (res.iterations[-1], res.exploitability[0, -1])
    value = float(
        jaxcfr.expected_value(
            game, jaxcfr.average_policy(game, jax.tree.map(lambda x: x[0], res.state))
        )[0]
    )
    lp = jaxcfr.solve_lp(game).value
    # |u(avg) - v*| <= exploitability-bound: each player's gain is at most NashConv
    assert abs(value - lp) <= 2 * 1e-3 + 1e-5


def test_update_compiles_once():
    game = gt.load("kuhn_poker")
    traces = []
    init, update = jaxcfr.cfr_plus()

    def counted(g, s):
        traces.append(1)
        return update(g, s)

    step = jax.jit(counted)
    state = step(game, init(game))
    state = step(game, state)
    state = step(gt.load("kuhn_poker"), state)  # a fresh compile of the same game too
    assert len(traces) == 1


def test_seed_curve_independent_of_batch():
    game = gt.load("kuhn_poker")
    key = jax.random.PRNGKey(3)
    big = jaxcfr.run(jaxcfr.cfr(), game, 40, 20, key=key, num_seeds=4, init_scale=1.0)
    small = jaxcfr.run(jaxcfr.cfr(), game, 40, 20, key=key, num_seeds=2, init_scale=1.0)
    np.testing.assert_array_equal(big.nash_conv[:2], small.nash_conv)
    assert not np.allclose(big.nash_conv[0], big.nash_conv[1])  # seeds differ


def test_hyperparameter_grid_matches_individual_runs():
    game = gt.load("kuhn_poker")
    alphas = jnp.array([1.0, 2.0])
    grid = jaxcfr.run(jaxcfr.dcfr, game, 30, 10, hparams={"alpha": alphas})
    assert grid.nash_conv.shape == (2, 1, 3)
    for i, a in enumerate([1.0, 2.0]):
        single = jaxcfr.run(jaxcfr.dcfr(alpha=a), game, 30, 10)
        np.testing.assert_allclose(grid.nash_conv[i], single.nash_conv, rtol=1e-5)


def test_resume_from_state_is_identical():
    game = gt.load("leduc_poker", suits=False)
    whole = jaxcfr.run(jaxcfr.cfr_plus(), game, 40, 10, num_seeds=2, init_scale=0.5)
    first = jaxcfr.run(jaxcfr.cfr_plus(), game, 20, 10, num_seeds=2, init_scale=0.5)
    rest = jaxcfr.run(
        jaxcfr.cfr_plus(), game, 20, 10, num_seeds=2, init_scale=0.5, state=first.state
    )
    np.testing.assert_array_equal(
        np.concatenate([first.nash_conv, rest.nash_conv], -1), whole.nash_conv
    )
    np.testing.assert_array_equal(rest.iterations, [30, 40])


def test_current_policy_is_regret_matching():
    game = gt.load("kuhn_poker")
    init, update = jaxcfr.cfr()
    state = update(game, init(game))
    pol = np.asarray(jaxcfr.current_policy(game, state))
    reg = np.maximum(np.asarray(state.regrets), 0)
    for i in range(game.num_infosets):
        if reg[i].sum() > 0:
            np.testing.assert_allclose(pol[i], reg[i] / reg[i].sum(), rtol=1e-6)
        else:
            np.testing.assert_allclose(pol[i], [0.5, 0.5])


@pytest.mark.parametrize(
    "call,match",
    [
        (lambda: jaxcfr.dcfr(alpha=-1.0), "alpha"),
        (lambda: jaxcfr.dcfr(gamma="x"), "gamma"),
        (lambda: jaxcfr.cfr(alternating="yes"), "alternating"),
        (lambda: jaxcfr.run(jaxcfr.cfr(), gt.load("kuhn_poker"), 10, 0), "eval_every"),
        (lambda: jaxcfr.run(jaxcfr.cfr(), gt.load("kuhn_poker"), 0, 1), "num_iterations"),
        (
            lambda: jaxcfr.run(
                jaxcfr.dcfr, gt.load("kuhn_poker"), 10, 5, hparams={"alpha": jnp.array([1.0, -2.0])}
            ),
            "alpha",
        ),
        (
            lambda: jaxcfr.run(
                jaxcfr.dcfr, gt.load("kuhn_poker"), 10, 5, hparams={"alpah": jnp.array([1.0])}
            ),
            "alpah",
        ),
    ],
)
def test_bad_input(call, match):
    with pytest.raises(ValueError, match=match):
        call()


def test_unknown_option_name():
    with pytest.raises(TypeError, match="nonsense"):
        jaxcfr.cfr_plus(nonsense=1)


def test_sharded_run_matches_unsharded(tmp_path):
    """Shard the seed axis over 4 forced host devices in a subprocess."""
    code = textwrap.dedent(
        """
        import jax, numpy as np, games_tensor as gt, jaxcfr
        assert len(jax.devices()) == 4
        game = gt.load("kuhn_poker")
        r = jaxcfr.run(jaxcfr.cfr_plus(), game, 30, 10, num_seeds=8, init_scale=1.0)
        assert len(r.state.regrets.sharding.device_set) == 4
        np.save(%r, r.nash_conv)
        """
        % str(tmp_path / "sharded.npy")
    )
    env = {"XLA_FLAGS": "--xla_force_host_platform_device_count=4", "JAX_PLATFORMS": "cpu"}
    import os

    subprocess.run([sys.executable, "-c", code], check=True, env={**os.environ, **env})
    sharded = np.load(tmp_path / "sharded.npy")
    plain = jaxcfr.run(
        jaxcfr.cfr_plus(), gt.load("kuhn_poker"), 30, 10, num_seeds=8, init_scale=1.0
    )
    np.testing.assert_allclose(sharded, plain.nash_conv, rtol=1e-6, atol=1e-7)


def test_run_never_mixes_up_custom_solvers_of_the_same_name():
    """Compiled chunks are shared by name only for built-in factories."""
    game = gt.load("kuhn_poker")
    from jaxcfr._cfr import regret_plus, regret_sum, weight_power

    a = jaxcfr.make_cfr_solver("mine", regret_sum, weight_power(0))
    b = jaxcfr.make_cfr_solver("mine", regret_plus, weight_power(1))
    ra = jaxcfr.run(a, game, 50, 50)
    rb = jaxcfr.run(b, game, 50, 50)
    np.testing.assert_allclose(ra.nash_conv, jaxcfr.run(jaxcfr.cfr(), game, 50, 50).nash_conv)
    np.testing.assert_allclose(rb.nash_conv, jaxcfr.run(jaxcfr.cfr_plus(), game, 50, 50).nash_conv)


def test_repeated_runs_reuse_compiled_code():
    game = gt.load("kuhn_poker")
    jaxcfr.run(jaxcfr.cfr_plus(), game, 20, 10)
    again = jaxcfr.run(jaxcfr.cfr_plus(), game, 20, 10)
    assert again.compile_seconds == 0.0


@pytest.mark.parametrize(
    "name,params",
    [
        ("leduc_poker", {}),
        # levels split by legal count (compact_layout); ~15 s of compiles (float64, both
        # layouts, five evaluations), so slow; the split layout's structure is checked by
        # default in tests/test_compiler.py (test_compact_layout, test_split_level_*)
        pytest.param("die_roll_poker", {}, marks=pytest.mark.slow),
        pytest.param("ii_goofspiel", {"num_cards": 4}, marks=pytest.mark.slow),
        # LD(1,1): flat compact levels where XLA folded the child segment sum into a
        # scatter-add onto g (1 ulp off) until ``_child_sums`` kept it apart
        pytest.param("liars_dice", {}, marks=pytest.mark.slow),
    ],
)
def test_compact_layout_gives_the_action_major_iterates(x64, monkeypatch, name, params):
    """The kernel's compact layout (each level as wide as its widest infoset, actions
    renumbered) and the ``[A, n_p]`` layout give equal float64 iterates and evaluations:
    both sum the same legal terms in the same order (the compact one skips only zeros)."""
    from jaxcfr import _sequence_form as sf

    game = gt.load(name, **params)

    def evaluate(game, state):
        policy = jaxcfr.current_policy(game, state)
        cfv = jaxcfr.counterfactual_values(game, policy, 1)
        average = jaxcfr.average_policy(game, state)
        return [
            jaxcfr.infoset_table(game, state.regrets),
            jaxcfr.infoset_table(game, state.strategy_sum),
            cfv.values,
            cfv.best_response_values,
            jaxcfr.best_response(game, policy, 0)[0],
            jaxcfr.exploitability(game, average),
        ]

    results = {}
    for compact in (False, True):
        monkeypatch.setattr(sf, "uses_compact", lambda g, c=compact: c)
        init, update = jaxcfr.cfr_plus()
        state = init(game, jax.random.key(3), scale=1.0)
        step = jax.jit(update)  # a new update function: a fresh trace per layout
        for _ in range(3):
            state = step(game, state)
        results[compact] = jax.jit(lambda g, s: evaluate(g, s))(game, state)  # fresh too
    for full, compact in zip(results[False], results[True], strict=True):
        np.testing.assert_array_equal(np.asarray(compact), np.asarray(full))


def test_compact_state_tables_and_old_checkpoint_leaves(monkeypatch):
    """On a game in the compact layout the CFR state keeps its tables flat: exactly the
    legal (infoset, action) pairs of each level, padded to the level's width, zero on
    padding; ``infoset_table`` gives back the ``[I, A]`` table (zeros off the legal
    pairs), ``kernel_table`` the reverse, and an ``[I, A]`` leaf of an earlier checkpoint
    is converted on load."""
    from experiments.convergence import _upgrade_leaf
    from jaxcfr import _sequence_form as sf

    monkeypatch.setattr(sf, "uses_compact", lambda g: True)
    game = gt.load("leduc_poker")  # 2 or 3 legal actions of 3: padded levels
    legal = np.asarray(game.legal_mask)
    widths = game.meta.compact_widths
    size = sum(
        w * (e - s)
        for p in (0, 1)
        for w, (s, e) in zip(widths[p], game.meta.infoset_levels[p], strict=True)
    )
    state = jaxcfr.cfr_plus().init(game, jax.random.key(0), scale=1.0)
    assert state.regrets.shape == (size,)
    assert state.strategy_sum.shape == (size,)
    assert int(np.count_nonzero(np.asarray(state.regrets))) == int(legal.sum())
    table = np.asarray(jaxcfr.infoset_table(game, state.regrets))
    assert table.shape == legal.shape
    assert np.all(table[~legal] == 0)
    assert np.all(table[legal] > 0)
    back = jaxcfr.kernel_table(game, jnp.asarray(table))
    np.testing.assert_array_equal(np.asarray(back), np.asarray(state.regrets))
    old = np.stack([table, 2 * table])  # a checkpoint leaf [seeds, I, A]
    new = _upgrade_leaf(game, old, jax.ShapeDtypeStruct((size,), old.dtype))
    np.testing.assert_array_equal(new[1], 2 * np.asarray(state.regrets))
    with pytest.raises(ValueError, match="compact"):
        jaxcfr.cfr_plus().update(game, state._replace(regrets=jnp.asarray(table)))


def test_checkpoint_leaves_of_the_unsplit_compact_layout_are_converted(monkeypatch):
    """Before session 26 a compact level was one ``[W_d, n_d]`` block (slot ``(k, q)`` =
    the ``k``-th legal action of the level's ``q``-th infoset, zero padding); a flat
    checkpoint leaf in that layout is converted on load to the split layout, equal to
    ``kernel_table`` of the same ``[I, A]`` table. The old slots are built here from that
    description, independently of the compiler."""
    from experiments.convergence import _upgrade_leaf
    from jaxcfr import _sequence_form as sf

    monkeypatch.setattr(sf, "uses_compact", lambda g: True)
    game = gt.load("die_roll_poker")  # levels mixing legal counts: split
    assert any(len(p) > 1 for levels in game.meta.compact_pieces for p in levels)
    legal = np.asarray(game.legal_mask)
    table = np.where(legal, np.random.default_rng(0).random(legal.shape), 0.0).astype(np.float32)
    old = []
    for levels in game.meta.infoset_levels:
        for s, e in levels:
            rows = [np.flatnonzero(legal[i]) for i in range(s, e)]
            w = max(len(r) for r in rows)
            block = np.zeros((w, e - s), np.float32)
            for q, r in enumerate(rows):
                block[: len(r), q] = table[s + q, r]
            old.append(block.reshape(-1))
    old = np.concatenate(old)
    want = np.asarray(jaxcfr.kernel_table(game, jnp.asarray(table)))
    assert old.size > want.size  # the split layout pads less
    new = _upgrade_leaf(game, np.stack([old, 3 * old]), jax.ShapeDtypeStruct(want.shape, old.dtype))
    np.testing.assert_array_equal(new[0], want)
    np.testing.assert_array_equal(new[1], 3 * want)


@pytest.mark.slow  # ~6 s: two compiles of II-GS(4)'s update after clearing the caches
def test_grouped_payoff_step_gives_the_segment_sum_iterates(monkeypatch):
    """``jaxcfr._cfr.GROUPED`` (on by default) sums the CFR payoff step by fan-in group,
    as the exact evaluation does; on II-GS(4) in the compact layout (groups compiled)
    three CFR+ iterates from random regrets equal the segment-sum path's bit for bit."""
    from jaxcfr import _cfr
    from jaxcfr import _sequence_form as sf

    monkeypatch.setattr(sf, "uses_compact", lambda g: True)
    game = gt.load("ii_goofspiel", num_cards=4)
    assert sf.uses_groups(game, True)
    solver = jaxcfr.cfr_plus()
    results, programs = {}, {}
    for grouped in (False, True):
        monkeypatch.setattr(_cfr, "GROUPED", grouped)
        jax.clear_caches()  # the flag is read while tracing: no cached inner trace
        state = solver.init(game, jax.random.key(1), scale=1.0)
        programs[grouped] = str(jax.make_jaxpr(solver.update)(game, state))
        step = jax.jit(solver.update)
        for _ in range(3):
            state = step(game, state)
        results[grouped] = state
    assert programs[False] != programs[True]  # the flag does switch the payoff step
    for a, b in zip(jax.tree.leaves(results[False]), jax.tree.leaves(results[True]), strict=True):
        np.testing.assert_array_equal(np.asarray(a), np.asarray(b))
