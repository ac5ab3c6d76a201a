"""CFR on imperfect-recall abstractions (Lanctot et al. 2012; ALGORITHMS.md 2.9).

Keying by the abstraction, chance sampling, the full-game regret measure, the
well-formedness checker and the Section 7 counterexample. Goldens: the unabstracted
solvers (identity abstraction), the full-keyed solver (well-formed DRP-IR), the exact
LP, hand derivations (the counterexample's stall) and plain-Python enumerations of
the abstract infosets written here.
"""

import itertools

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import games_tensor as gt
import jaxcfr


# ------------------------------------------------------------------ identity abstraction
def _iterate(solver, game, steps=6):
    state = solver.init(game)
    update = jax.jit(solver.update)
    for t in range(steps):
        if solver.needs_key:
            state = update(game, state, jax.random.fold_in(jax.random.PRNGKey(3), t))
        else:
            state = update(game, state)
    return state


SOLVERS = [
    ("cfr", {}),
    ("cfr", {"alternating": False}),
    ("cfr", {"chance_sampling": True}),
    ("cfr_plus", {}),
    ("linear_cfr", {}),
    ("dcfr", {}),
    ("pcfr_plus", {}),
    ("outcome_sampling", {}),
    ("outcome_sampling", {"alternating": False}),
    ("external_sampling", {}),
]


@pytest.mark.parametrize("name, kwargs", SOLVERS)
def test_identity_abstraction_is_bit_identical(name, kwargs):
    # recall = number of bids: the last-r-bids abstraction keeps everything
    full = gt.load("liars_dice", faces=2)
    ident = gt.load("liars_dice", faces=2, recall=4)
    assert ident.meta.has_abstraction
    np.testing.assert_array_equal(ident.abstract_infoset, np.arange(ident.num_infosets))
    factory = getattr(jaxcfr, name)
    a = _iterate(factory(**kwargs), full)
    b = _iterate(factory(keying="abstract", **kwargs), ident)
    for field in ("regrets", "strategy_sum", "iteration"):
        np.testing.assert_array_equal(getattr(a, field), getattr(b, field), err_msg=field)
    np.testing.assert_array_equal(jaxcfr.average_policy(full, a), jaxcfr.average_policy(ident, b))


def test_identity_full_average_equals_strategy_sum():
    ident = gt.load("liars_dice", faces=2, recall=4)
    s = _iterate(jaxcfr.cfr(full_average=True), ident)
    assert isinstance(s, jaxcfr.AbstractCFRState)
    np.testing.assert_array_equal(s.full_strategy_sum, s.strategy_sum)


def test_state_is_sized_by_the_abstraction():
    game = gt.load("die_roll_poker", abstraction="ir")
    J, I, A = 366, 1116, 3  # noqa: E741, N806  (GAMES.md 1.8)
    s = jaxcfr.cfr().init(game)
    assert s.regrets.shape == s.strategy_sum.shape == (J, A)
    assert s.full_strategy_sum.shape == (0, A)
    assert jaxcfr.cfr(full_average=True).init(game).full_strategy_sum.shape == (I, A)
    assert jaxcfr.cfr(keying="full").init(game).regrets.shape == (I, A)
    assert jaxcfr.outcome_sampling().init(game).regrets.shape == (J, A)
    assert jaxcfr.external_sampling().init(game).strategy_sum.shape == (J, A)
    # a full infoset plays its abstract infoset's policy
    game = gt.load("liars_dice", faces=3, recall=1)
    s = _iterate(jaxcfr.outcome_sampling(), game, steps=50)
    pol = np.asarray(jaxcfr.current_policy(game, s))
    ids = np.asarray(game.abstract_infoset)
    rows = np.asarray(jaxcfr.regret_matching(s.regrets, game.meta.host["abstract_legal_mask"]))
    np.testing.assert_allclose(pol, rows[ids], atol=1e-7)


SAMPLERS = [
    ("outcome_sampling", {}),
    ("outcome_sampling", {"alternating": False}),
    ("external_sampling", {}),
]


@pytest.mark.parametrize("name, kwargs", SAMPLERS)
def test_sampling_identity_full_average_is_the_unabstracted_average(name, kwargs):
    # golden: the unabstracted solver's strategy_sum on the same keys
    full = gt.load("liars_dice", faces=2)
    ident = gt.load("liars_dice", faces=2, recall=4)
    factory = getattr(jaxcfr, name)
    a = _iterate(factory(**kwargs), full, steps=20)
    b = _iterate(factory(keying="abstract", full_average=True, **kwargs), ident, steps=20)
    assert isinstance(b, jaxcfr.AbstractMCCFRState)
    np.testing.assert_array_equal(b.full_strategy_sum, a.strategy_sum)
    np.testing.assert_array_equal(b.regrets, a.regrets)


@pytest.mark.parametrize("name, kwargs", SAMPLERS)
def test_sampling_full_average_sums_to_the_abstract_average(name, kwargs):
    # the abstract row of J is, by definition, the sum of the rows its merged full
    # infosets received (same sampled increments); full_average leaves the abstract
    # tables bit-identical (same policy at every node, so the same trajectories)
    game = gt.load("liars_dice", faces=3, recall=1)
    factory = getattr(jaxcfr, name)
    a = _iterate(factory(**kwargs), game, steps=30)
    b = _iterate(factory(full_average=True, **kwargs), game, steps=30)
    np.testing.assert_array_equal(b.regrets, a.regrets)
    np.testing.assert_array_equal(b.strategy_sum, a.strategy_sum)
    summed = np.zeros(a.strategy_sum.shape)
    np.add.at(summed, np.asarray(game.abstract_infoset), np.asarray(b.full_strategy_sum))
    np.testing.assert_allclose(summed, a.strategy_sum, rtol=1e-5, atol=1e-5)
    assert np.asarray(b.full_strategy_sum).shape == (game.num_infosets, game.num_actions)
    assert np.isfinite(float(jaxcfr.full_game_regret(game, b)))
    with pytest.raises(ValueError, match="full_average"):
        jaxcfr.full_game_regret(game, a)


@pytest.mark.slow
@pytest.mark.parametrize("name", ["outcome_sampling", "external_sampling"])
def test_sampling_full_regret_converges_on_a_well_formed_abstraction(name):
    # the counterexample's well-formed abstraction (forget the signal): the full-game
    # average regret of the sampled full-game average goes to 0 (its value at a Nash
    # equilibrium); the uniform profile's is above 0.4
    game = gt.load("recall_counterexample", abstraction="forget_signal")
    solver = getattr(jaxcfr, name)(full_average=True)
    res = jaxcfr.run(solver, game, 20_000, 20_000, num_seeds=3, evaluate="full_regret")
    uniform = float(jaxcfr.nash_conv(game, gt.uniform_policy(game)))
    assert np.all(res.nash_conv[:, -1] < 0.06), res.nash_conv
    assert uniform > 0.4


# ------------------------------------------------------------------ DRP-IR converges
def test_well_formed_k_l_one_matches_full_cfr(x64):
    # k = l = 1: merged infosets have equal regrets, so abstract-keyed CFR from the
    # uniform profile plays exactly full CFR's profile (Theorem 1's proof)
    game = gt.load("recall_counterexample", abstraction="forget_signal")
    for alternating in (False, True):
        a = _iterate(jaxcfr.cfr(alternating=alternating, keying="full"), game, steps=30)
        b = _iterate(jaxcfr.cfr(alternating=alternating, full_average=True), game, steps=30)
        np.testing.assert_allclose(b.full_strategy_sum, a.strategy_sum, rtol=1e-12)
        np.testing.assert_allclose(
            jaxcfr.full_game_regret(game, b), jaxcfr.full_game_regret(game, a), rtol=1e-12
        )


@pytest.mark.slow
def test_drp_ir_well_formed_matches_full_cfr(x64):
    # k = l = 1: merged infosets have equal regrets, so abstract-keyed CFR from the
    # uniform profile plays exactly full CFR's profile (Theorem 1's proof)
    game = gt.load("die_roll_poker", abstraction="ir")
    a = _iterate(jaxcfr.cfr(alternating=False, keying="full"), game, steps=30)
    b = _iterate(jaxcfr.cfr(alternating=False, full_average=True), game, steps=30)
    assert b.regrets.shape[0] == 366
    ra, rb = jaxcfr.full_game_regret(game, a), jaxcfr.full_game_regret(game, b)
    np.testing.assert_allclose(float(rb), float(ra), rtol=1e-9)


@pytest.mark.slow
def test_drp_ir_full_regret_goes_to_zero_and_reaches_the_lp_value():
    game = gt.load("die_roll_poker", abstraction="ir")
    res = jaxcfr.run(
        jaxcfr.cfr(alternating=False, full_average=True),
        game,
        1024,
        64,
        num_seeds=3,
        init_scale=1.0,
        evaluate="full_regret",
    )
    r = res.nash_conv  # [seeds, E]
    assert np.all(r[:, -1] < 0.08)
    # the CFR rate O(1/sqrt(T)): log-log slope over the last 1.2 decades at most -1/2
    t = res.iterations
    sel = t >= 64
    slopes = [np.polyfit(np.log(t[sel]), np.log(rs[sel]), 1)[0] for rs in r]
    assert max(slopes) < -0.5, slopes
    value = jaxcfr.solve_lp(gt.load("die_roll_poker")).value
    for seed in range(3):
        state = jax.tree.map(lambda x, s=seed: x[s], res.state)
        ev = float(jaxcfr.expected_value(game, jaxcfr.average_policy(game, state))[0])
        # in a zero-sum game |u(xbar) - v*| <= NashConv(xbar)
        assert abs(ev - value) <= r[seed, -1]
        assert abs(ev - value) < 0.01


# ------------------------------------------------------------------ the measure, runner
def test_full_game_regret_in_the_runner():
    game = gt.load("liars_dice", faces=3, recall=1)
    res = jaxcfr.run(jaxcfr.cfr(full_average=True), game, 20, 10, evaluate="full_regret")
    state = jax.tree.map(lambda x: x[0], res.state)
    np.testing.assert_allclose(res.nash_conv[0, -1], jaxcfr.full_game_regret(game, state), 1e-6)
    res2 = jaxcfr.run(jaxcfr.cfr(full_average=True), game, 20, 10, evaluate=jaxcfr.full_game_regret)
    np.testing.assert_array_equal(res2.nash_conv, res.nash_conv)
    # a full-keyed state: the measure is NashConv of its average
    s = _iterate(jaxcfr.cfr(keying="full"), game, 5)
    np.testing.assert_allclose(
        jaxcfr.full_game_regret(game, s),
        jaxcfr.nash_conv(game, jaxcfr.average_policy(game, s)),
        rtol=1e-5,
    )


def test_full_game_regret_of_a_compact_layout_state():
    """LD(1,1)'s full-width CFR state is kept in the kernel's compact [P_0 + P_1] layout;
    full_game_regret (and run's evaluate="full_regret") refused it as "abstract". On a
    perfect-recall game it is the NashConv of the average policy."""
    from jaxcfr import _sequence_form as sf

    game = gt.load("liars_dice")
    assert sf.uses_compact(game)
    solver = jaxcfr.cfr()
    state = solver.init(game)
    for _ in range(3):
        state = solver.update(game, state)
    assert state.strategy_sum.ndim == 1
    want = jaxcfr.nash_conv(game, jaxcfr.average_policy(game, state))
    np.testing.assert_allclose(jaxcfr.full_game_regret(game, state), want, rtol=1e-6)
    a = jaxcfr.run(solver, game, 4, 2, evaluate="full_regret").nash_conv
    np.testing.assert_allclose(a, jaxcfr.run(solver, game, 4, 2).nash_conv, rtol=1e-6)


def test_chance_sampled_payoffs_are_unbiased():
    from jaxcfr._chance_sampling import sampled_game

    game = gt.load("kuhn_poker")
    n = 5_000
    keys = jax.random.split(jax.random.PRNGKey(0), n)
    pay = np.asarray(jax.vmap(lambda k: sampled_game(game, k).sf_payoff)(keys), np.float64)
    mean, se = pay.mean(0), pay.std(0) / np.sqrt(n)
    exact = np.asarray(game.sf_payoff, np.float64)
    assert np.all(np.abs(mean - exact) <= 5 * se + 1e-9)
    # one sample keeps one of Kuhn's 6 deals: its 5 terminals (no zero utilities)
    assert set(np.unique((pay != 0).sum(1))) == {5}


def test_chance_sampled_cfr_converges_on_kuhn():
    game = gt.load("kuhn_poker")
    res = jaxcfr.run(
        jaxcfr.cfr(alternating=False, chance_sampling=True), game, 4000, 1000, num_seeds=2
    )
    assert np.all(res.nash_conv[:, -1] < 0.05)
    assert np.all(res.nash_conv[:, -1] < res.nash_conv[:, 0])


# ------------------------------------------------------------------ the checker
def test_checker_drp_ir_well_formed():
    c = gt.check_abstraction(gt.load("die_roll_poker", abstraction="ir"))
    assert (c.verdict, c.condition, c.delta) == ("well-formed", None, 0.0)
    assert np.all(c.K == 183)  # k = l = 1 on each player's 183 abstract infosets


def test_checker_skew_drp_ir_delta():
    skew = 0.05
    c = gt.check_abstraction(gt.load("die_roll_poker", abstraction="ir", skew=skew))
    assert (c.verdict, c.condition) == ("skew well-formed", "i")
    # GAMES.md 1.8: delta x the largest pot (26 chips: 1 + 2 + 2 + 4 + 4 each)
    np.testing.assert_allclose(c.delta, skew * 26, rtol=1e-9)
    assert c.skew_term[1] == 0  # P2's merged infosets see the same bonus


@pytest.mark.parametrize("recall", [1, 2])
def test_checker_last_r_bids_not_well_formed(recall):
    c = gt.check_abstraction(gt.load("liars_dice", faces=3, recall=recall))
    assert (c.verdict, c.condition) == ("not well-formed", "iii")
    assert "opponent" in c.example


def test_checker_counterexample_breaks_only_iii():
    game = gt.load("recall_counterexample")
    c = gt.check_abstraction(game)
    assert (c.verdict, c.condition) == ("not well-formed", "iii")
    assert "'P1 L0' and 'P1 R0'" in c.example
    assert gt.check_abstraction(game, conditions=("i", "ii", "iv")).verdict == "well-formed"
    for drop in ("i", "ii", "iv"):  # each of the others alone still fails on (iii)
        kept = tuple(x for x in ("i", "ii", "iii", "iv") if x != drop)
        assert gt.check_abstraction(game, conditions=kept).condition == "iii"
    good = gt.load("recall_counterexample", abstraction="forget_signal")
    assert gt.check_abstraction(good).verdict == "well-formed"


# ------------------------------------------------------------------ the counterexample
@pytest.mark.parametrize("alternating", [False, True])
def test_counterexample_stalls_while_well_formed_converges(alternating):
    bad = gt.load("recall_counterexample")
    good = gt.load("recall_counterexample", abstraction="forget_signal")
    solver = jaxcfr.cfr(alternating=alternating, full_average=True)
    rb = jaxcfr.run(solver, bad, 1000, 100, evaluate="full_regret").nash_conv[0]
    rg = jaxcfr.run(solver, good, 1000, 100, evaluate="full_regret").nash_conv[0]
    # hand derivation (module docstring of the game): from iteration 2 the profile is
    # P1 = b, P2 = c on both sides; P1 forgoes 1 on side L (prob 1/2): regret -> 1/2
    assert np.all(rb >= 0.5 - 1e-6) and np.all(rb[-3:] < 0.501)
    assert rg[-1] < 0.03 and rg[-1] < rg[0] / 3
    s = _iterate(solver, bad, 50)
    pol = np.asarray(jaxcfr.current_policy(bad, s))
    np.testing.assert_array_equal(pol, np.array([[0.0, 1.0]] * 4 + [[1.0, 0.0]] * 2))


# ------------------------------------------------------------------ sizes, enumerated
def _ld_abstract_counts(faces, recall):
    """Plain enumeration of LD(1,1) bid sequences: (abstract infosets, pairs)."""
    bids = 2 * faces
    keys = {}
    for n in range(bids + 1):
        for seq in itertools.combinations(range(bids), n):
            legal = bids if not seq else bids - seq[-1]  # higher bids + liar (none first)
            for die in range(faces):
                keys[(n % 2, die, seq[len(seq) - recall :] if recall < n else seq)] = legal
    return len(keys), sum(keys.values())


def _drp_counts():
    """Plain enumeration of DRP's betting (GAMES.md 1.8 assumptions): (full infosets,
    pairs, DRP-IR infosets, pairs)."""

    def nodes(hist="", raises=0):  # (history, legal count) where a player acts
        facing = hist.endswith("r")
        legal = ["c"] + (["f"] if facing else []) + (["r"] if raises < 2 else [])
        out = [(hist, len(legal))]
        for a in legal:
            h = hist + a
            if a == "f" or (a == "c" and len(h) >= 2):  # fold; check-check or call
                continue
            out += nodes(h, raises + (a == "r"))
        return out

    def closes(hist="", raises=0):  # round histories ending without a fold
        facing = hist.endswith("r")
        out = []
        for a in ["c"] + (["r"] if raises < 2 else []):
            h = hist + a
            if a == "c" and len(h) >= 2:
                out.append(h)
            elif a == "c" or a == "r":
                out += closes(h, raises + (a == "r"))
        del facing
        return out

    r1, ends = nodes(), closes()
    full = pairs = abst = apairs = 0
    for p in (0, 1):
        mine = [(h, n) for h, n in r1 if len(h) % 2 == p]
        full += 6 * len(mine)
        pairs += 6 * sum(n for _, n in mine)
        abst += 6 * len(mine)
        apairs += 6 * sum(n for _, n in mine)
        mine2 = [(h, n) for h, n in r1 if len(h) % 2 == p]  # round 2 has round 1's shape
        k = len(ends)
        full += 36 * k * len(mine2)
        pairs += 36 * k * sum(n for _, n in mine2)
        abst += 11 * k * len(mine2)  # sums 2..12
        apairs += 11 * k * sum(n for _, n in mine2)
    return full, pairs, abst, apairs


def test_drp_ir_counts_enumerated():
    game = gt.load("die_roll_poker", abstraction="ir")
    full, pairs, abst, apairs = _drp_counts()
    s = game.sizes
    assert (s["infosets"], s["infoset_actions"]) == (full, pairs) == (1116, 2604)
    assert (s["abstract_infosets"], s["abstract_infoset_actions"]) == (abst, apairs) == (366, 854)


@pytest.mark.parametrize("recall", [1, 2, 3, 4, 5])
def test_ld_small_abstract_counts_enumerated(recall):
    s = gt.load("liars_dice", faces=3, recall=recall).sizes
    assert (s["abstract_infosets"], s["abstract_infoset_actions"]) == _ld_abstract_counts(3, recall)


@pytest.mark.slow
@pytest.mark.parametrize("recall", [1, 2, 3, 4])
def test_ld11_abstract_counts_enumerated(recall):
    s = gt.load("liars_dice", recall=recall).sizes
    assert (s["abstract_infosets"], s["abstract_infoset_actions"]) == _ld_abstract_counts(6, recall)


@pytest.mark.slow
@pytest.mark.parametrize("recall", [1, 4])
def test_ld11_last_r_bids_not_well_formed(recall):
    c = gt.check_abstraction(gt.load("liars_dice", recall=recall))
    assert (c.verdict, c.condition) == ("not well-formed", "iii")


# ------------------------------------------------------------------ bad input
def test_bad_input_names_the_parameter():
    kuhn = gt.load("kuhn_poker")
    with pytest.raises(ValueError, match="keying"):
        jaxcfr.cfr(keying="abstract").init(kuhn)
    with pytest.raises(ValueError, match="keying"):
        jaxcfr.outcome_sampling(keying="abstract").init(kuhn)
    with pytest.raises(ValueError, match="keying"):
        jaxcfr.cfr_plus(keying="coarse")
    with pytest.raises(ValueError, match="keying"):
        jaxcfr.external_sampling(keying=None)
    with pytest.raises(ValueError, match="chance_sampling"):
        jaxcfr.cfr(chance_sampling=1)
    with pytest.raises(ValueError, match="full_average"):
        jaxcfr.dcfr(full_average="yes")
    for recall in (0, 13):
        with pytest.raises(ValueError, match="recall"):
            gt.load("liars_dice", recall=recall)
    with pytest.raises(ValueError, match="skew"):
        gt.load("die_roll_poker", abstraction="ir", skew=-0.01)
    with pytest.raises(ValueError, match="abstraction"):
        gt.load("recall_counterexample", abstraction="forget_all")
    with pytest.raises(ValueError, match="abstraction"):
        gt.check_abstraction(kuhn)
    with pytest.raises(ValueError, match="conditions"):
        gt.check_abstraction(gt.load("recall_counterexample"), conditions=("v",))
    game = gt.load("recall_counterexample")
    with pytest.raises(ValueError, match="full_average"):
        jaxcfr.full_game_regret(game, jaxcfr.cfr().init(game))
    with pytest.raises(ValueError, match="evaluate"):
        jaxcfr.run(jaxcfr.cfr(), game, 2, 1, evaluate="best")


def test_no_recompile_across_iterations():
    game = gt.load("recall_counterexample")
    solver = jaxcfr.cfr(full_average=True, chance_sampling=True)
    traces = []

    def update(g, s, k):
        traces.append(1)
        return solver.update(g, s, k)

    step = jax.jit(update)
    state = solver.init(game)
    for t in range(3):
        state = step(game, state, jax.random.PRNGKey(t))
    assert len(traces) == 1
    assert state.iteration.dtype == jnp.int32


# ------------------------------------------------------------------ reproduction plumbing
def test_reproduction_key_reaches_the_chance_sampled_runs(monkeypatch, tmp_path):
    # python -m experiments reproduce --key K must set the chance-sampled seeds; the
    # games and the runs are stubbed out: only the wiring ctx.key -> _curves is tested
    from experiments.reproduce import Context, imperfect_recall

    class Stop(Exception):
        pass

    seen = []

    def fake_curves(game, **kwargs):
        seen.append(kwargs)
        raise Stop

    monkeypatch.setattr(imperfect_recall, "_curves", fake_curves)
    monkeypatch.setattr(imperfect_recall.gt, "load", lambda *a, **k: None)
    for run in (imperfect_recall.run_fig1_drp, imperfect_recall.run_fig1_ld):
        with pytest.raises(Stop):
            run(Context(out=tmp_path, quick=True, key=12345))
    assert [(k["chance_sampling"], k["key"]) for k in seen] == [(True, 12345)] * 2


def test_reproduction_curves_depend_on_the_key_and_resume(tmp_path):
    from experiments.reproduce.imperfect_recall import _curves

    game = gt.load("kuhn_poker")
    kw = dict(iterations=4, eval_every=2, seeds=1, chance_sampling=True)
    _, a, _ = _curves(game, key=0, **kw)
    _, b, _ = _curves(game, key=1, **kw)
    assert not np.array_equal(a, b)  # another key, other chance outcomes
    # a run stopped after 2 iterations and continued from its checkpoint gives the
    # same curve as the uninterrupted run
    ckpt = tmp_path / "c.npz"
    _curves(game, key=0, ckpt=ckpt, **{**kw, "iterations": 2})
    x, c, _ = _curves(game, key=0, ckpt=ckpt, **kw)
    np.testing.assert_array_equal(x, [2, 4])
    np.testing.assert_array_equal(c, a)
    _, d, _ = _curves(game, key=5, ckpt=ckpt, **kw)  # finished: read back, not recomputed
    np.testing.assert_array_equal(d, a)
