"""The search bots (OOS, ISMCTS) and the match engine on the step form of a game.

The bots' code is the compiled form's; the step form swaps the node source of the one
walk (``jaxcfr._sampling.walk``) and the infoset-to-row mapping
(``jaxcfr.search._table``: a hashed key table). Golden values: the compiled LD(1,1)
(an independent enumeration of the same game, equivalence tested in
tests/test_step_games.py) and hand reasoning.
"""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import games_tensor
import games_tensor.step as gs
import jaxcfr
from jaxcfr import _sampling as smp
from jaxcfr.search import _bots, _match
from jaxcfr.search import _table as tbl

LD11 = {"dice0": 1, "dice1": 1}


def _ld11():
    return gs.load("liars_dice", **LD11)


def _state_after(game, moves):
    s = game.init()
    for a in moves:
        s = game.apply(s, a)
    return s


def _search(bot):
    """``bot.search`` jitted for the step form (see ``step_compiler_options``)."""
    opts = smp.step_compiler_options() or None
    return jax.jit(bot.search, static_argnums=(0, 4), compiler_options=opts)


def _bots_under_test(capacity):
    return [
        jaxcfr.oos("ist", capacity=capacity),
        jaxcfr.oos("pst", capacity=capacity),
        jaxcfr.ismcts("uct", capacity=capacity),
        jaxcfr.ismcts("rm", capacity=capacity),
    ]


def test_max_utility_matches_the_compiled_games():
    for name, params in [
        ("liars_dice", LD11),
        ("ii_goofspiel", {"num_cards": 4}),
        (
            "generic_poker",
            {"num_types": 3, "cards_per_type": 3, "max_raises": 2, "num_bet_sizes": 2},
        ),
    ]:
        compiled = games_tensor.load(name, **params)
        expect = float(np.max(np.abs(compiled.meta.host["node_utility"])))
        assert gs.load(name, **params).max_utility == expect


@pytest.mark.parametrize("bot_index", [0, 2])
def test_full_table_counts_refusals_and_still_plays_legal_moves(bot_index):
    game = _ld11()
    bot = _bots_under_test(capacity=2)[bot_index]
    # P1 rolled 3, P2 rolled 5, P1 bid 0 (one 1): P2 to move; bids 1.. and liar are legal
    state = _state_after(game, [2, 4, 0])
    view = _bots.step_view_of(game, state)
    st = _search(bot)(game, bot.init(game), view, jax.random.key(3), 200)
    assert int(st.table.size) == 2  # both rows used
    assert int(tbl.refusals(st)) > 0  # and further infosets refused, counted
    probs = np.asarray(bot.policy(game, st, view))
    legal = np.asarray(game.legal_mask(state))
    assert probs.sum() == pytest.approx(1.0, abs=1e-5)
    assert np.all(probs[~legal] == 0) and np.any(probs[legal] > 0)
    # whole matches with full tables: refusals reported, every match ends at a terminal
    u, refusals = jaxcfr.play(game, bot, jaxcfr.random_bot(), 8, 50, jax.random.key(0))
    assert refusals.shape == (8, 2) and int(refusals[:, 0].sum()) > 0
    assert np.all(refusals[:, 1] == 0)  # the random bot keeps no table
    assert set(np.asarray(u).tolist()) <= {-1.0, 1.0}


@pytest.mark.parametrize("bot_index", [0, 2])
def test_bots_see_only_their_key(bot_index):
    """Two histories of one infoset of P1 (own die 3; P2's die 1 or 6; bid 0, bid 2):
    same view, so the same search state and action for the same PRNG key."""
    game = _ld11()
    bot = _bots_under_test(capacity=64)[bot_index]
    a = _state_after(game, [2, 0, 0, 2])
    b = _state_after(game, [2, 5, 0, 2])
    assert not np.array_equal(np.asarray(a.dice), np.asarray(b.dice))
    va, vb = _bots.step_view_of(game, a), _bots.step_view_of(game, b)
    for x, y in zip(va, vb, strict=True):
        np.testing.assert_array_equal(np.asarray(x), np.asarray(y))
    search = _search(bot)
    sa = search(game, bot.init(game), va, jax.random.key(7), 100)
    sb = search(game, bot.init(game), vb, jax.random.key(7), 100)
    for x, y in zip(jax.tree_util.tree_leaves(sa), jax.tree_util.tree_leaves(sb), strict=True):
        np.testing.assert_array_equal(np.asarray(x), np.asarray(y))
    np.testing.assert_array_equal(bot.policy(game, sa, va), bot.policy(game, sb, vb))
    assert int(sa.table.size) > 0


def test_a_step_form_match_is_determined_by_its_seed():
    game = _ld11()
    bot = jaxcfr.oos("pst", capacity=256)
    args = (game, bot, jaxcfr.ismcts("uct", capacity=256), 6, 20)
    u1, r1 = jaxcfr.play(*args, jax.random.key(5), chunk_size=6)
    u2, r2 = jaxcfr.play(*args, jax.random.key(5), chunk_size=4)  # other chunking
    np.testing.assert_array_equal(u1, u2)
    np.testing.assert_array_equal(r1, r2)
    u3, _ = jaxcfr.play(*args, jax.random.key(6), chunk_size=6)
    assert not np.array_equal(u1, u3)


@pytest.mark.slow  # compiles an OOS search: 23 s wall at load 9
def test_a_bot_compiles_its_step_form_search_once_for_both_seats_and_any_budget():
    """The step-form engine compiles a bot's search once per (bot object, game, chunk
    size): the same OOS object as first and as second player, at two budgets."""
    game = _ld11()
    oos = jaxcfr.oos("pst", capacity=64)
    rnd = jaxcfr.random_bot()
    jaxcfr.play(game, oos, rnd, 4, 5, jax.random.key(0), chunk_size=4)
    jaxcfr.play(game, rnd, oos, 4, 9, jax.random.key(1), chunk_size=4)
    search = _match._seat_fns(oos, _match._options(game), _match.split_devices()).search
    assert search._cache_size() == 1


@pytest.mark.slow
@pytest.mark.parametrize("bot_index", [1, 2])
def test_host_driven_step_engine_equals_the_one_program_engine(bot_index):
    """The step form's host-driven engine (one jitted piece per bot and depth step) and
    the one-program engine (``_chunk``: a loop over depth holding both searches) give
    the same utilities and refusals: same keys, same arithmetic."""
    game = _ld11()
    bot = _bots_under_test(capacity=16)[bot_index]
    other = jaxcfr.ismcts("rm", capacity=16)
    ids = jnp.arange(6, dtype=jnp.int32)
    key = jax.random.key(11)
    u, r = _match._play_chunk_step(game, bot, other, 30, ids, key, _match.split_devices())
    opts = smp.step_compiler_options() or None
    fused = jax.jit(_match._chunk, static_argnums=(0, 1, 2, 3, 6), compiler_options=opts)
    u_ref, r_ref = fused(game, bot, other, 30, ids, key, None)
    np.testing.assert_array_equal(np.asarray(u), np.asarray(u_ref))
    np.testing.assert_array_equal(np.asarray(r), np.asarray(r_ref))
    assert int(np.asarray(r).sum()) > 0  # 16-row tables: the refusal path is exercised


@pytest.mark.parametrize("capacity", [0, 3, 6, -4, 2.0, True, None])
def test_bad_capacity_raises_value_error_naming_it(capacity):
    with pytest.raises(ValueError, match="capacity"):
        jaxcfr.oos("ist", capacity=capacity)
    with pytest.raises(ValueError, match="capacity"):
        jaxcfr.ismcts("uct", capacity=capacity)


def test_unsupported_step_form_uses_raise_value_error():
    goof = gs.load("ii_goofspiel", num_cards=4)
    with pytest.raises(ValueError, match="targeting='pst'"):
        jaxcfr.oos("pst", capacity=64).init(goof)
    with pytest.raises(ValueError, match="collect"):
        jaxcfr.play(
            _ld11(), jaxcfr.random_bot(), jaxcfr.random_bot(), 2, 0, jax.random.key(0), collect=0
        )


@pytest.mark.slow
def test_root_oos_walks_the_same_trajectories_on_both_forms():
    """OOS from the root (no targeting) on LD(1,1): the step walk samples child slot k
    from the same uniforms as the compiled walk, so after the same iterations the
    tables agree row for row once each infoset id is mapped to its key's row."""
    compiled = games_tensor.load("liars_dice", **LD11)
    step = _ld11()
    bot = jaxcfr.oos(None, capacity=1 << 10)
    key = jax.random.key(11)
    sc = jax.jit(bot.search, static_argnums=(0, 4))(
        compiled, bot.init(compiled), jaxcfr.root_view(), key, 300
    )
    minus = jnp.asarray(-1, jnp.int32)
    words = (step.key_words, step.public_key_words)
    root = _bots.View(minus, *(jnp.zeros((w,), jnp.uint32) for w in words), None)
    ss = _search(bot)(step, bot.init(step), root, key, 300)
    tree = gs.enumerate_tree(step)
    ids = compiled.meta.host["node_infoset"]
    player_nodes = np.nonzero(ids >= 0)[0]
    inf = ids[player_nodes]
    keys = jnp.asarray(tree.info_key[player_nodes])
    lookup = jax.vmap(lambda k: tbl.view_row(step, ss, _bots.View(None, k, None, None)))
    row, found = (np.asarray(x) for x in lookup(keys))
    np.testing.assert_array_equal(found, np.asarray(sc.in_memory)[inf])
    kept = found
    np.testing.assert_allclose(
        np.asarray(ss.regrets)[row[kept]], np.asarray(sc.regrets)[inf[kept]], rtol=1e-5, atol=1e-6
    )
    np.testing.assert_allclose(
        np.asarray(ss.strategy_sum)[row[kept]],
        np.asarray(sc.strategy_sum)[inf[kept]],
        rtol=1e-5,
        atol=1e-6,
    )
    checked = len(set(inf[kept].tolist()))
    assert checked > 10


def _win_rate(u):
    w = (np.asarray(u) > 0) + 0.5 * (np.asarray(u) == 0)
    return w.mean(), w.std(ddof=1) / np.sqrt(len(w))


@pytest.mark.slow
@pytest.mark.parametrize("which", ["oos", "ismcts"])
def test_step_form_win_rate_against_random_matches_the_compiled_game(which):
    """Same bot, budget and matches on the compiled and the step form of LD(1,1): the
    win rates against random agree within the 95% CI of their difference."""
    make = {
        "oos": lambda: jaxcfr.oos("ist", capacity=1 << 10),
        "ismcts": lambda: jaxcfr.ismcts("uct", capacity=1 << 10),
    }[which]
    n, iters = 300, 50
    uc = jaxcfr.play(
        games_tensor.load("liars_dice", **LD11),
        make(),
        jaxcfr.random_bot(),
        n,
        iters,
        jax.random.key(1),
    )
    us, refusals = jaxcfr.play(_ld11(), make(), jaxcfr.random_bot(), n, iters, jax.random.key(2))
    assert int(refusals.sum()) == 0
    (pc, sc), (ps, ss) = _win_rate(uc), _win_rate(us)
    assert pc > 0.55 and ps > 0.55  # both beat random (uniform play wins 50%)
    assert abs(pc - ps) <= 1.96 * np.sqrt(sc**2 + ss**2), (pc, ps)


@pytest.mark.slow
def test_ismcts_start_history_is_uniform_over_the_infoset():
    """ISMCTS draws its start history uniformly from the searcher's infoset (ALGORITHMS.md
    2.6) on the step form too: II-GS(4), a P2 infoset whose histories differ in P1's
    hidden cards, where stepping uniformly among the consistent children would not be
    uniform (checked below on the enumerated compiled tree, the independent source)."""
    from jaxcfr.search import _ismcts

    params = {"num_cards": 4}
    cg = games_tensor.load("ii_goofspiel", **params)
    game = gs.load("ii_goofspiel", **params)
    parent = np.asarray(cg.node_parent)
    kids = np.asarray(cg.node_children)
    infoset = np.asarray(cg.node_infoset)
    player = np.asarray(cg.node_player)

    def paths_of(target):
        out = []
        for h in np.nonzero(infoset == target)[0]:
            path = []
            while parent[h] >= 0:
                path.append(int(np.nonzero(kids[parent[h]] == h)[0][0]))
                h = parent[h]
            out.append(tuple(path[::-1]))
        return out

    def naive(paths):
        """Probabilities of the histories when stepping uniformly among consistent
        children (the draw before it was made exact)."""
        depth = len(paths[0])
        prefixes = {p[:d] for p in paths for d in range(depth + 1)}
        return np.array(
            [
                np.prod([1 / sum(p[:d] + (k,) in prefixes for k in range(4)) for d in range(depth)])
                for p in paths
            ]
        )

    # the P2 infoset where the naive draw is farthest from uniform
    best = -1.0
    for t in np.unique(infoset[player == 1]):
        q = naive(paths_of(t))
        if q.max() / q.min() > best:
            best, target = q.max() / q.min(), t
    assert best >= 2.0, best
    members = np.nonzero(infoset == target)[0]
    paths = paths_of(target)
    depth = len(paths[0])
    # the bot's draw: the actions of its simulations above the target
    tree = gs.enumerate_tree(game, keep_states=True)
    key = jnp.asarray(tree.info_key[members[0]])
    state = jaxcfr.ismcts("uct", capacity=64).init(game)
    target_view = tbl.StepTarget(jnp.asarray(1, jnp.int32), key, False)
    n = 6000
    u = jax.random.uniform(jax.random.key(3), (n, game.max_depth + 1))

    def draw(u):
        records, _, _ = _ismcts._sample(
            game, None, state, u, None, None, "uct", 2.0, 0.2, target_view
        )
        return records.action[:depth]  # the step-form walk stacks records: [D]

    opts = smp.step_compiler_options() or None
    got = np.asarray(jax.jit(jax.vmap(draw), compiler_options=opts)(u))
    counts = {p: 0 for p in paths}
    for row in map(tuple, got):
        counts[row] += 1  # KeyError: a start outside the infoset
    m = len(paths)
    sigma = np.sqrt(n / m * (1 - 1 / m))
    for p, c in counts.items():
        assert abs(c - n / m) < 5 * sigma, (p, c, n / m)


@pytest.mark.parametrize(
    "name,params",
    [
        ("ii_goofspiel", {"num_cards": 4}),
        pytest.param("liars_dice", {"dice0": 1, "dice1": 1}, marks=pytest.mark.slow),
    ],
)
def test_draw_weights_at_own_nodes_keep_the_one_counted_child(name, params):
    """ISMCTS's forced draw (``_table.step_draw_weights``) uses 0/1 consistent children
    at the target player's own nodes: with perfect recall exactly one legal child there
    has a positive completion count (independent source: ``num_completions``, tested
    against enumeration in test_step_games.py), and it is the consistent one; elsewhere
    the weights are the counts, and zeros once the target is reached. Checked on every
    ancestor of the histories of 3 deep target infosets."""
    sg = gs.load(name, **params)
    tree = gs.enumerate_tree(sg, keep_states=True)
    W = smp.num_slots(sg)
    player = np.asarray(jax.vmap(sg.current_player)(tree.states))
    parent = np.asarray(tree.parent)
    keys = np.asarray(tree.info_key)
    decide = np.nonzero(player >= 0)[0]
    rng = np.random.default_rng(5)
    f32 = jnp.float32
    weights = jax.jit(
        lambda p, k, v, r: tbl.step_draw_weights(sg, tbl.StepTarget(p, k, False), v, W, r, f32)
    )
    counts_fn = jax.jit(lambda p, k, v: tbl.step_completions(sg, tbl.StepTarget(p, k, False), v, W))
    own_seen = other_seen = 0
    for h in rng.choice(decide[len(decide) // 2 :], 3, replace=False):
        target = tbl.StepTarget(jnp.int32(player[h]), jnp.asarray(keys[h]), False)
        same = np.nonzero((player == player[h]) & (keys == keys[h]).all(axis=1))[0]
        above = set()
        for m in same:
            a = parent[m]
            while a >= 0:
                above.add(int(a))
                a = parent[a]
        for a in sorted(above):
            state = jax.tree_util.tree_map(lambda x, a=a: x[a], tree.states)
            v = smp.read_step(sg, state, W)
            counts = np.asarray(counts_fn(target.player, target.key, v))
            got = np.asarray(weights(target.player, target.key, v, jnp.zeros((), bool)))
            done = np.asarray(weights(target.player, target.key, v, jnp.ones((), bool)))
            assert (done == 0).all()
            usable = np.asarray(v.row) > 0
            if int(player[a]) == int(player[h]):
                own_seen += 1
                assert np.count_nonzero(counts[usable] > 0) == 1
                assert ((got > 0) & usable).tolist() == ((counts > 0) & usable).tolist()
            else:
                other_seen += 1
                np.testing.assert_array_equal(got, counts.astype(np.float32))
    assert own_seen > 0 and other_seen > 0


def test_record_span_backup_adds_what_one_scatter_adds():
    # add_record_span scatters K records a trip from the first updating record to the
    # last; under vmap the batch's spans differ (none, gaps, longer than K, ending at
    # the last record, where the chunk's dynamic_slice clamps). The golden value is
    # the one scatter-add of every record (numpy's np.add.at, rows >= R dropped).
    R, D, A, K = 6, 9, 3, 4
    rng = np.random.default_rng(0)
    rows = np.full((7, D), R, np.int32)
    rows[1, 2] = 1  # one record
    rows[2, [0, 5, 8]] = [0, 3, 5]  # gaps, the last record (clamped chunk)
    rows[3, 1:9] = [0, 1, 2, 3, 4, 5, 0, 1]  # longer than two chunks, a row twice
    rows[4, 7:] = [2, 4]
    rows[5, :3] = [5, 4, 3]
    rows[6] = np.arange(D) % R
    values = rng.integers(-8, 9, (7, D, 2, A)).astype(np.float32)
    table = rng.integers(-8, 9, (7, R, 2, A)).astype(np.float32)

    def span(t, r, v):
        return smp.add_record_span(t, r, lambda s, n: jax.lax.dynamic_slice_in_dim(v, s, n), K)

    got = np.asarray(jax.jit(jax.vmap(span))(table, rows, values))
    want = table.copy()
    for b in range(rows.shape[0]):
        keep = rows[b] < R
        np.add.at(want[b], rows[b][keep], values[b][keep])
    np.testing.assert_array_equal(got, want)
    one = np.asarray(jax.jit(span)(table[3], rows[3], values[3]))  # unbatched
    np.testing.assert_array_equal(one, want[3])
