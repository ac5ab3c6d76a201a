"""Online search: OOS, ISMCTS, the random bot and the match engine (jaxcfr.search).

* OOS with delta = 0, every infoset in memory and gamma = 0: the mean over keys of one
  trajectory's regret and mean-strategy increments equals the kernel's exact
  counterfactual regrets (as for outcome sampling, tests/test_mccfr.py).
* delta = 1: every trajectory passes through the target (IST infoset, PST public
  state), checked by replaying the sampled slots on the host.
* s1 / s2 / l, w_T and one regret row by hand on the non-locality game and Kuhn.
* Root OOS exploitability on Kuhn, LD(1,1) and II-GS(4) below stated levels; the
  non-locality game (OOS Fig. 1): targeted OOS -> (1/3, 2/3), (1/6, 5/6); ISMCTS-UCT
  inside the infoset -> (1/2, 1/2).
* Bots see only their view; random vs random; determinism; no retrace; batch
  independence; bad input.
"""

from __future__ import annotations

import functools

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from test_mccfr import _assert_unbiased, _expected_increments, _fixed_regrets, _moments

import games_tensor as gt
import jaxcfr
from jaxcfr import _sampling as smp
from jaxcfr.search import _bots, _match, _oos
from jaxcfr.search import _table as tbl


@functools.cache
def _game(name, **params):
    return gt.load(name, **params)


def _full_state(game, regrets=None, strategy_sum=None):
    """An OOS state with every infoset in memory."""
    st = jaxcfr.oos().init(game)
    return st._replace(
        regrets=st.regrets if regrets is None else regrets,
        strategy_sum=st.strategy_sum if strategy_sum is None else strategy_sum,
        in_memory=jnp.ones_like(st.in_memory),
    )


def _one(game, state, view, key, player, targeted, targeting, delta, epsilon, gamma):
    """One OOS trajectory: (records, carry, utility, inv_w)."""
    sets = _oos._sets(game, targeting)
    target, inv_w = _oos._prepare(game, state, view, sets, targeting, delta)
    u = smp.uniforms(key, (game.meta.max_depth + 1,), state.regrets.dtype)
    out = _oos._sample(
        game,
        smp.node_tables(game),
        state,
        u,
        jnp.asarray(player),
        jnp.asarray(targeted),
        target,
        inv_w,
        (epsilon, delta, gamma),
    )
    return (*out, jnp.asarray(inv_w))


def _first_history(game, infoset):
    return int(np.nonzero(np.asarray(game.node_infoset) == infoset)[0][0])


def _replay(game, records):
    """Nodes visited by a trajectory, from its sampled slots (host)."""
    kids = game.meta.host["node_children"]
    player = game.meta.host["node_player"]
    h, out = 0, [0]
    for r in records:
        if player[h] == gt.TERMINAL:
            break
        h = int(kids[h, int(r.action)])
        out.append(h)
    return out


# ---------------------------------------------------------------- unbiasedness
@pytest.mark.parametrize(
    "name,samples",
    [("kuhn_poker", 100_000), pytest.param("leduc_poker", 200_000, marks=pytest.mark.slow)],
)
def test_oos_delta0_sampled_regrets_are_unbiased(name, samples):
    game = _game(name)
    jaxcfr.oos().init(game)
    regrets = _fixed_regrets(game)
    sigma = jaxcfr.regret_matching(regrets, game.legal_mask)
    state = _full_state(game, regrets)
    # a targeted (IST) bot at a P2 infoset, with delta = 0: plain outcome sampling
    view = jaxcfr.view_of(game, _first_history(game, game.meta.infosets_per_player[0]))

    def rows_fn(key):
        out = []
        for i, k in enumerate(jax.random.split(key)):
            recs, carry, utility, _ = _one(game, state, view, k, i, False, "ist", 0.0, 0.6, 0.0)
            rr, rv, ar, av, _ = _oos._rows(game, recs, carry, utility, i, 0.0, True)
            out.append((rr, rv, ar, av))
        return tuple(jnp.concatenate([a, b]) for a, b in zip(*out, strict=True))

    n, (reg_m, avg_m) = _moments(game, rows_fn, samples)
    regret, avg = _expected_increments(game, sigma, (0, 1))
    _assert_unbiased(n, reg_m, regret, f"{name} OOS delta=0 regrets")
    _assert_unbiased(n, avg_m, avg, f"{name} OOS delta=0 mean strategy")


# ---------------------------------------------------------------- targeting
@pytest.mark.parametrize(
    "name,targeting", [("leduc_poker", "ist"), ("leduc_poker", "pst"), ("liars_dice", "pst")]
)
def test_delta1_trajectories_pass_through_the_target(name, targeting):
    game = _game(name)
    jaxcfr.oos(targeting).init(game)
    state = _full_state(game, _fixed_regrets(game, 3))
    rng = np.random.default_rng(0)
    players = game.meta.host["node_player"]
    node_inf = np.asarray(game.node_infoset)
    node_pub = np.asarray(game.node_public_state)
    cands = np.nonzero((players >= 0) & (game.meta.host["node_depth"] >= 3))[0]
    sample = jax.jit(lambda v, k, i: _one(game, state, v, k, i, True, targeting, 1.0, 0.4, 0.01)[0])
    for h in rng.choice(cands, 4, replace=False):
        view = jaxcfr.view_of(game, int(h))
        if targeting == "ist":
            target = set(np.nonzero(node_inf == node_inf[h])[0])
        else:
            target = set(np.nonzero((node_pub == node_pub[h]) & (players >= 0))[0])
        for s in range(64):
            recs = sample(view, jax.random.PRNGKey(s), s % 2)
            visited = _replay(game, recs)
            assert target & set(visited), f"trajectory {visited} misses the target of {h}"


def test_bookkeeping_by_hand_nonlocality():
    """IST at the minimizer's infoset I, delta 0.5, epsilon 0.4, uniform sigma and mean:
    pi_bar(I) = 1/2 so 1/w_T = (1 - delta) + delta / (1/2) = 1.5. A trajectory
    (right, L, L) for update player 0: untargeted q = 1/2 * 1/2 * 1/2 (Phi = 0.4/2 +
    0.6/2 = 1/2), targeted q = 1 * 1/2 * 1/2 (chance renormalised to the right branch),
    l = 1.5 (0.5 * 1/4 + 0.5 * 1/8) = 0.28125. Regret at max's infoset with u = 3,
    pi_{-0} = 1/2, c = 1/2, sigma = 1/2: W = 3 * 0.5 / 0.28125; r(L) += (c - c/2) W = 4/3,
    r(R) += -W c / 2 = -4/3. A left-branch trajectory: q_t = 0, l = 1.5 * 0.5 * 1/4."""
    game = _game("nonlocality", left_leaf=1)
    jaxcfr.oos().init(game)
    state = _full_state(game)
    view = jaxcfr.view_of(game, _first_history(game, 1))
    seen = set()
    one = jax.jit(lambda k, t: _one(game, state, view, k, 0, t, "ist", 0.5, 0.4, 0.01))
    for s in range(40):
        recs, carry, utility, inv_w = one(jax.random.PRNGKey(s), s % 2 == 0)
        np.testing.assert_allclose(float(inv_w), 1.5, rtol=1e-6)
        path = _replay(game, recs)
        leaf = 0.5 * float(carry.s1) + 0.5 * float(carry.s2)
        right = game.meta.host["node_player"][path[2]] == 1
        expect = 1.5 * (0.5 * 0.25 + 0.5 * 0.125) if right else 1.5 * 0.5 * 0.25
        np.testing.assert_allclose(leaf, expect, rtol=1e-6)
        seen.add(bool(right))
        if right and int(recs[1].action) == 0 and int(recs[2].action) == 0:
            rr, rv, _, _, _ = _oos._rows(game, recs, carry, utility, 0, 0.5, True)
            row = int(np.nonzero(np.asarray(rr) == 0)[0][0])
            np.testing.assert_allclose(np.asarray(rv[row]), [4 / 3, -4 / 3], rtol=1e-5)
            seen.add("regret")
    assert seen == {True, False, "regret"}


def test_w_T_by_hand_kuhn():
    """IST at P2's infoset (card J, P1 bet): pi_bar(I) = P(P2 holds J) * sum over P1's
    cards Q, K of P(card) * mean bet probability = 1/3 * 1/2 * (b_Q + b_K)."""
    game = _game("kuhn_poker")
    keys = list(game.infoset_keys)
    ss = np.zeros((game.num_infosets, 2), np.float32)
    ss[keys.index("P0 card:Q | ")] = [0.8, 0.2]  # bet probability 0.2 with Q
    ss[keys.index("P0 card:K | ")] = [0.4, 0.6]  # and 0.6 with K
    target = [keys.index("P1 card:J | b")]
    reach = 1 / 3 * 1 / 2 * (0.2 + 0.6)
    state = _full_state(game, strategy_sum=jnp.asarray(ss))
    view = jaxcfr.view_of(game, _first_history(game, target[0]))
    sets = _oos._sets(game, "ist")
    _, inv_w = _oos._prepare(game, state, view, sets, "ist", 0.9)
    np.testing.assert_allclose(float(inv_w), 0.1 + 0.9 / reach, rtol=1e-5)


# ---------------------------------------------------------------- convergence
ROOT = [("kuhn_poker", {}, 50_000, 0.05), ("ii_goofspiel", {"num_cards": 4}, 20_000, 0.5)]


def _root_nash_conv(game, bot, iterations, key):
    st = jax.jit(bot.search, static_argnums=4)(
        game, bot.init(game), jaxcfr.root_view(), key, iterations
    )
    weights, mem = bot.strategy(game, st)
    pol = jaxcfr.search.table_policy(game, weights, mem, game.legal_uniform)
    return float(jaxcfr.nash_conv(game, pol)), pol


@pytest.mark.parametrize("name,params,iterations,level", ROOT)
def test_root_oos_exploitability(name, params, iterations, level):
    game = _game(name, **params)
    uniform = float(jaxcfr.nash_conv(game, game.legal_uniform))
    bot = jaxcfr.oos(None, epsilon=0.6)
    # median over 3 keys: one key's NashConv is a noisy sample of the budget's typical level
    runs = [_root_nash_conv(game, bot, iterations, jax.random.key(k)) for k in range(3)]
    runs.sort(key=lambda r: r[0])
    nc, pol = runs[1]
    assert nc < level < uniform, ([r[0] for r in runs], level, uniform)
    if name == "kuhn_poker":  # the average strategy approaches the LP value -1/18
        value = float(jaxcfr.solve_lp(game).value)
        assert abs(float(jaxcfr.expected_value(game, pol)[0]) - value) < 0.02


@pytest.mark.slow
def test_root_oos_exploitability_liars_dice():
    game = _game("liars_dice")
    nc, _ = _root_nash_conv(game, jaxcfr.oos(None, epsilon=0.6), 200_000, jax.random.key(0))
    assert nc < 0.8 < float(jaxcfr.nash_conv(game, game.legal_uniform)), nc


def test_nonlocality_oos_vs_ismcts():
    """OOS Fig. 1: OOS targeted at the minimizer's infoset finds (1/3, 2/3), and
    (1/6, 5/6) with the leftmost leaf 2; ISMCTS searching inside I gives (1/2, 1/2)."""
    for leaf, expect in ((1, 1 / 3), (2, 1 / 6)):
        game = _game("nonlocality", left_leaf=leaf)
        view = jaxcfr.view_of(game, _first_history(game, 1))
        bot = jaxcfr.oos("ist", delta=0.9, epsilon=0.6)
        st = jax.jit(bot.search, static_argnums=4)(
            game, bot.init(game), view, jax.random.key(1), 100_000
        )
        p = np.asarray(bot.policy(game, st, view))
        assert abs(p[0] - expect) < 0.03, (leaf, p)
    # UCT's frequencies drift slowly (the two actions' means are equal): 8 seeds
    uct = jaxcfr.ismcts("uct")
    states = jax.vmap(lambda _: uct.init(game))(jnp.arange(8))
    search = jax.jit(jax.vmap(uct.search, (None, 0, None, 0, None)), static_argnums=4)
    st = search(game, states, view, jax.random.split(jax.random.key(1), 8), 20_000)
    freq = np.asarray(st.visits[:, 1, 0] / st.visits[:, 1].sum(-1))
    assert abs(freq.mean() - 0.5) < 0.05, freq


# ---------------------------------------------------------------- bots and matches
BOTS = {
    "oos_ist": lambda: jaxcfr.oos("ist"),
    "oos_pst": lambda: jaxcfr.oos("pst"),
    "uct": lambda: jaxcfr.ismcts("uct"),
    "rm": lambda: jaxcfr.ismcts("rm"),
}


@pytest.mark.parametrize("which", sorted(BOTS))
def test_bot_sees_only_its_view(which):
    """Two different histories of one infoset (different opponent cards) give the same
    view, so the same key gives the identical search state and action."""
    game = _game("leduc_poker")
    bot = BOTS[which]()
    inf = np.asarray(game.node_infoset)
    target = game.meta.infosets_per_player[0] + 5
    h1, h2 = np.nonzero(inf == target)[0][:2]
    search = jax.jit(bot.search, static_argnums=4)
    out = []
    for h in (h1, h2):
        view = jaxcfr.view_of(game, int(h))
        st = search(game, bot.init(game), view, jax.random.key(7), 200)
        out.append((st, bot.policy(game, st, view)))
    for a, b in zip(
        jax.tree_util.tree_leaves(out[0]), jax.tree_util.tree_leaves(out[1]), strict=True
    ):
        np.testing.assert_array_equal(np.asarray(a), np.asarray(b))


def test_random_vs_random_is_even():
    """II-Goofspiel is symmetric: random vs random wins 50% (ties half) within the CI,
    and on Kuhn the mean utility matches the exact value of the uniform profile."""
    game = _game("ii_goofspiel", num_cards=4)
    rnd = jaxcfr.random_bot()
    u = np.asarray(jaxcfr.play(game, rnd, rnd, 4000, 0, jax.random.key(3)))
    score = (u > 0) + 0.5 * (u == 0)
    half = 1.96 * score.std(ddof=1) / np.sqrt(u.size)
    assert abs(score.mean() - 0.5) < half, (score.mean(), half)
    kuhn = _game("kuhn_poker")
    u = np.asarray(jaxcfr.play(kuhn, rnd, rnd, 4000, 0, jax.random.key(4)))
    exact = float(jaxcfr.expected_value(kuhn, kuhn.legal_uniform)[0])
    assert abs(u.mean() - exact) < 1.96 * u.std(ddof=1) / np.sqrt(u.size)


def test_oos_beats_random_and_matches_are_deterministic_and_batch_independent():
    game = _game("kuhn_poker")
    bot, rnd = jaxcfr.oos("pst"), jaxcfr.random_bot()
    key = jax.random.key(5)
    a = np.asarray(jaxcfr.play(game, bot, rnd, 12, 300, key, chunk_size=12))
    b = np.asarray(jaxcfr.play(game, bot, rnd, 12, 300, key, chunk_size=12))
    c = np.asarray(jaxcfr.play(game, bot, rnd, 12, 300, key, chunk_size=4))
    np.testing.assert_array_equal(a, b)
    np.testing.assert_array_equal(a, c)
    u = np.asarray(jaxcfr.play(game, bot, rnd, 240, 300, key, chunk_size=12))
    assert u.mean() > 0.1, u.mean()  # random loses ~0.26 per match to equilibrium-like play


@pytest.mark.parametrize("which", ["oos_ist", "uct", "rm"])
def test_search_deterministic_and_no_retrace(which):
    game = _game("kuhn_poker")
    bot = BOTS[which]()
    traces = []

    def counted(state, view, key):
        traces.append(1)
        return bot.search(game, state, view, key, jnp.asarray(50))

    search = jax.jit(counted)
    view = jaxcfr.view_of(game, _first_history(game, 0))
    s1 = search(bot.init(game), view, jax.random.key(0))
    s2 = search(s1, jaxcfr.view_of(game, _first_history(game, 7)), jax.random.key(1))
    s1b = search(bot.init(game), view, jax.random.key(0))
    assert len(traces) == 1
    for a, b in zip(jax.tree_util.tree_leaves(s1), jax.tree_util.tree_leaves(s1b), strict=True):
        np.testing.assert_array_equal(np.asarray(a), np.asarray(b))
    assert int(s2.iteration) == 100


def test_bad_input():
    with pytest.raises(ValueError, match=r"targeting must be one of \('ist', 'pst', None\)"):
        jaxcfr.oos("xyz")
    with pytest.raises(ValueError, match=r"selection must be one of \('uct', 'rm'\)"):
        jaxcfr.ismcts("ucb")
    for kw, name in (({"delta": 1.5}, "delta"), ({"epsilon": 0.0}, "epsilon")):
        with pytest.raises(ValueError, match=name):
            jaxcfr.oos(**kw)
    with pytest.raises(ValueError, match="gamma"):
        jaxcfr.oos(gamma=-0.1)
    with pytest.raises(ValueError, match="gamma"):
        jaxcfr.ismcts("rm", gamma=2.0)
    with pytest.raises(ValueError, match="c must"):
        jaxcfr.ismcts("uct", c=0.0)
    gs = _game("ii_goofspiel", num_cards=4)
    with pytest.raises(ValueError, match="targeting='pst'"):
        jaxcfr.oos("pst").init(gs)
    game = _game("kuhn_poker")
    bot = jaxcfr.oos("ist")
    st = bot.init(game)
    p2_infoset = game.meta.infosets_per_player[0]
    bad = _bots.View(jnp.asarray(0), jnp.asarray(p2_infoset), jnp.asarray(0))
    with pytest.raises(ValueError, match="view.infoset"):
        bot.search(game, st, bad, jax.random.key(0), 1)
    with pytest.raises(ValueError, match="view.infoset"):
        bot.search(game, st, _bots.View(*(jnp.asarray(x) for x in (0, 99, 0))), None, 1)
    with pytest.raises(ValueError, match="view.public_state"):
        v = jaxcfr.view_of(game, _first_history(game, 0))
        jaxcfr.oos("pst").search(game, st, v._replace(public_state=v.public_state + 1), None, 1)
    with pytest.raises(ValueError, match="num_matches"):
        jaxcfr.play(game, bot, bot, -1, 10, jax.random.key(0))


def test_bytes_per_match_and_table_rows():
    game = _game("liars_dice")
    I, A = game.num_infosets, game.num_actions  # noqa: E741
    assert tbl.num_rows(game) == I
    oos_bytes = 2 * I * A * 4 + I + 4
    assert jaxcfr.search.bytes_per_match(game, jaxcfr.oos(), jaxcfr.random_bot()) == oos_bytes + 4
    uct_bytes, rm_bytes = oos_bytes, 3 * I * A * 4 + I + 4  # UCT: visits and values only
    both = jaxcfr.search.bytes_per_match(game, jaxcfr.ismcts("uct"), jaxcfr.ismcts("rm"))
    assert both == uct_bytes + rm_bytes


@pytest.mark.parametrize("selection", ["uct", "rm"])
def test_ismcts_rows_in_memory_are_the_visited_rows(selection):
    """The invariant compiled ISMCTS selection relies on (it tells "in memory" from
    the visits part of its statistics row, not the mask): after searches from the root
    and from an infoset, a row is marked in memory iff its visit counts are not all
    zero (the mask is still kept; ``strategy`` returns it)."""
    game = _game("kuhn_poker")
    h = int(np.nonzero(np.asarray(game.node_player) == 1)[0][0])  # a P2 history
    bot = jaxcfr.ismcts(selection)
    search = jax.jit(bot.search)  # one compile for both calls
    st = search(game, bot.init(game), jaxcfr.root_view(), jax.random.key(0), 7)
    st = search(game, st, jaxcfr.view_of(game, h), jax.random.key(1), 9)
    visited = np.asarray(st.visits).sum(-1) > 0
    np.testing.assert_array_equal(np.asarray(st.in_memory), visited)
    assert 0 < visited.sum() < game.num_infosets  # neither none nor every row


@pytest.mark.parametrize("which", ["uct", "rm", "oos"])
def test_bot_state_views_of_the_statistics_table(which):
    """The one ``stats`` table per bot state and its named views: each view is its part
    of ``stats`` (UCT stores no mean strategy: zeros), and ``_replace`` by a view name
    writes that part only."""
    game = _game("kuhn_poker")
    bot = jaxcfr.oos("pst") if which == "oos" else jaxcfr.ismcts(which)
    names = {
        "uct": ("visits", "values"),
        "rm": ("visits", "values", "strategy_sum"),
        "oos": ("regrets", "strategy_sum"),
    }[which]
    st = bot.init(game)
    R, A = game.num_infosets, game.num_actions
    assert st.stats.shape == (R, len(names), A)
    fill = jnp.arange(R * A, dtype=st.stats.dtype).reshape(R, A)
    for j, name in enumerate(names):
        new = st._replace(**{name: fill + j})
        for jj, other in enumerate(names):
            want = fill + j if jj == j else np.zeros((R, A))
            np.testing.assert_array_equal(np.asarray(getattr(new, other)), want)
    if which == "uct":
        np.testing.assert_array_equal(np.asarray(st.strategy_sum), np.zeros((R, A)))
        with pytest.raises(ValueError, match="strategy_sum"):
            st._replace(strategy_sum=fill)


def test_search_compiler_options():
    """Compiled games: no YNNPACK fusions on CPU (the option the MCTS solvers use);
    the step form: those and the old fusion emitters."""
    game = _game("kuhn_poker")
    cpu = jax.default_backend() == "cpu"
    no_ynn = {"xla_cpu_experimental_ynn_fusion_type": ""} if cpu else None
    assert jaxcfr.search.compiler_options(game) == no_ynn
    assert dict(_match._options(game)) == (no_ynn or {})  # what jaxcfr.play jits with
    step = gt.step.load("liars_dice", dice0=1, dice1=1)
    step_options = {"xla_cpu_use_fusion_emitters": False, **no_ynn} if cpu else None
    assert jaxcfr.search.compiler_options(step) == step_options


# ---------------------------------------------------------------- aggregate method
KUHN_BELOW = {  # OOS paper's aggregate method: an infoset and its own successors
    "P0 card:J | ": {"P0 card:J | ", "P0 card:J | pb"},
    "P0 card:Q | ": {"P0 card:Q | ", "P0 card:Q | pb"},
    "P0 card:K | ": {"P0 card:K | ", "P0 card:K | pb"},
}


def test_at_or_below_by_hand_kuhn():
    """Kuhn by hand: P0's first infoset (its card) has one successor of its own, the
    same card after pass-bet; every other infoset (P0 after pb, all of P1's) is a leaf
    of its player's forest; the root view covers every row."""
    game = _game("kuhn_poker")
    keys = game.meta.infoset_keys
    for i, name in enumerate(keys):
        got = {keys[j] for j in np.nonzero(np.asarray(tbl.at_or_below(game, jnp.int32(i))))[0]}
        assert got == KUHN_BELOW.get(name, {name}), name
    assert bool(jnp.all(tbl.at_or_below(game, jnp.int32(-1))))


def _counting_bot(action):
    """A bot whose strategy weights are its iteration count in every cell (so each
    search changes every row) and which always plays ``action``."""

    def init(game):
        return jnp.zeros((), jnp.float32)

    def search(game, state, view, key, num_iterations):
        return state + num_iterations

    def policy(game, state, view):
        return jax.nn.one_hot(action, game.num_actions, dtype=game.sf_payoff.dtype)

    def strategy(game, state):
        R = tbl.num_rows(game)
        return jnp.full((R, game.num_actions), state, game.sf_payoff.dtype), jnp.ones(R, bool)

    return _bots.Bot(init, search, policy, strategy, f"count{action}")


def test_aggregate_adds_the_current_infoset_and_its_successors():
    """Kuhn, seat 0 always passes, seat 1 always bets, 3 iterations per move: seat 0
    searches at its card (rows card and card-pb get 3 each) and at card-pb (that row
    gets 3 more). By hand, summed over M matches: the three card rows hold 3 M per
    action, each card-pb row twice its card row, P1's rows nothing (the old method,
    every changed row, would give P1's rows 6 M)."""
    game = _game("kuhn_poker")
    M = 12
    _, acc = jaxcfr.play(
        game, _counting_bot(0), _counting_bot(1), M, 3, jax.random.key(0), collect=0
    )
    acc = np.asarray(acc)
    keys = game.meta.infoset_keys
    first = [keys.index(f"P0 card:{c} | ") for c in "JQK"]
    second = [keys.index(f"P0 card:{c} | pb") for c in "JQK"]
    p1 = [i for i, k in enumerate(keys) if k.startswith("P1")]
    np.testing.assert_array_equal(acc[first].sum(axis=0), [3 * M, 3 * M])
    np.testing.assert_array_equal(acc[second], 2 * acc[first])
    np.testing.assert_array_equal(acc[p1], 0)
    assert acc[first].min() > 0  # every card dealt at least once in 12 matches


@pytest.mark.slow  # 7-16 s each under load, mostly compiling II-GS(4)
@pytest.mark.parametrize(
    "make,name,params",
    [
        (lambda: jaxcfr.oos("ist"), "ii_goofspiel", {"num_cards": 4}),
        (lambda: jaxcfr.ismcts("rm"), "ii_goofspiel", {"num_cards": 4}),
        (lambda: jaxcfr.oos("pst"), "liars_dice", {}),  # walk(loop=True): a nested while
    ],
    ids=["oos-ist", "ismcts-rm", "oos-pst-ld"],
)
def test_vmapped_search_updates_its_tables_in_place(make, name, params):
    """The compiled loop body of ``jit(vmap(search))`` holds no copy of an ``[B, R, ...]``
    table. Before ``_table.read_rows`` read rows through ``materialize``, XLA:CPU fused a
    row gather into a consumer ordered after another table's scatter and copied the whole
    table to keep that read valid: 4 copies per iteration here on II-GS(4) (and 2,093 it/s
    for 512 OOS searchers on II-GS(6), docs/search.md)."""
    from experiments.benchmarks.search_step import loop_body_stats

    game, bot, B = gt.load(name, **params), make(), 2
    state = jax.vmap(lambda _: bot.init(game))(jnp.arange(B))
    run = jax.jit(jax.vmap(bot.search, (None, 0, None, 0, None)), donate_argnums=1)
    keys = jax.random.split(jax.random.key(0), B)
    hlo = run.lower(game, state, jaxcfr.root_view(), keys, jnp.int32(1)).compile().as_text()
    kernels, _, copies = loop_body_stats(hlo, game.num_infosets)
    assert kernels > 0  # the loop body was found
    assert copies == 0


@pytest.mark.slow  # 13-14 s each at load 7 (two Leduc walks compiled)
@pytest.mark.parametrize("batch", [1, 16])
def test_looped_walk_matches_the_unrolled_walk_and_stops_early(batch):
    """``walk(loop=True)`` on Leduc (levels 7-10 looped, terminals among them): every
    trajectory's records up to and including its terminal, its final node (utility)
    and its sampled slots equal the unrolled walk's, and the loop runs only until
    every trajectory of the (vmapped) batch has reached its terminal: a step counter
    carried through ends at max over the batch of (terminal depth + 1), read off the
    unrolled records, not at D."""
    game = _game("leduc_poker")
    D = game.meta.max_depth
    assert smp.loop_levels(game) < D - 1
    tables = smp.node_tables(game)

    def run(key, loop):
        u = smp.uniforms(key, (D,), jnp.float32)

        def step(d, kinds, v, count):
            k = smp.sample_index(v.row, u[d])
            return k, count + 1, (v.code, k)

        recs, count, utility = smp.walk(game, tables, step, jnp.int32(0), loop=loop)
        return jnp.stack([r[0] for r in recs]), jnp.stack([r[1] for r in recs]), count, utility

    keys = jax.random.split(jax.random.key(7), batch)
    out = {loop: jax.jit(jax.vmap(functools.partial(run, loop=loop)))(keys) for loop in (0, 1)}
    (code0, k0, count0, u0), (code1, k1, count1, u1) = out[0], out[1]
    code0, k0, code1, k1 = map(np.asarray, (code0, k0, code1, k1))
    terminal = code0 == gt.TERMINAL
    # each trajectory's terminal depth (D: its terminal lies past the walked levels)
    end = np.where(terminal.any(axis=1), np.argmax(terminal, axis=1), D)
    for b in range(batch):
        np.testing.assert_array_equal(code1[b, : end[b] + 1], code0[b, : end[b] + 1])
        np.testing.assert_array_equal(k1[b, : end[b] + 1], k0[b, : end[b] + 1])
    np.testing.assert_array_equal(np.asarray(u1), np.asarray(u0))
    np.testing.assert_array_equal(np.asarray(count0), D)
    np.testing.assert_array_equal(np.asarray(count1), min(end.max() + 1, D))
    assert batch > 1 or end.max() + 1 < D  # the single trajectory stopped early


def test_default_chunk_bytes_is_2gib_on_cpu_and_a_quarter_of_an_accelerator(monkeypatch):
    assert jax.devices()[0].platform != "cpu" or _match.default_chunk_bytes() == 2 << 30

    class _Gpu:
        platform = "gpu"

        def memory_stats(self):
            return {"bytes_limit": 80 << 30}

    class _NoStats(_Gpu):
        def memory_stats(self):
            return None

    monkeypatch.setattr(_match.jax, "devices", lambda: [_Gpu()])
    assert _match.default_chunk_bytes() == 20 << 30
    monkeypatch.setattr(_match.jax, "devices", lambda: [_NoStats()])
    assert _match.default_chunk_bytes() == 2 << 30
