"""The step form of Liar's Dice, II-Goofspiel and Generic Poker (games_tensor.step).

Small instances: enumerating the step form breadth first gives the compiled history tree
node for node (same parent and child slot, so each compiled history is mapped to the
step-form history with the same action sequence), with the same players, legal actions,
chance probabilities and utilities, and the same infoset and public-state partitions.
Large instances (not compilable): random trajectories played in lockstep with the plain
Python rules (the compiled game's source) agree step by step.
"""

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import games_tensor as gt
from games_tensor import step
from games_tensor._rules import CHANCE, TERMINAL

SMALL = [
    ("liars_dice", {"dice0": 1, "dice1": 1}),
    ("ii_goofspiel", {"num_cards": 4}),
    ("ii_goofspiel", {"num_cards": 4, "first_point": 1, "decide_last_card": False}),
    ("generic_poker", {"num_types": 3, "cards_per_type": 3, "max_raises": 2, "num_bet_sizes": 2}),
    # one card per type: the deck runs out of types, so chance slots != outcome indices
    ("generic_poker", {"num_types": 3, "cards_per_type": 1, "max_raises": 1, "num_bet_sizes": 1}),
    ("liars_dice", {"dice0": 2, "dice1": 1, "faces": 3}),
]

LARGE = [
    ("liars_dice", {"dice0": 2, "dice1": 2}, 1),
    ("ii_goofspiel", {"num_cards": 13}, 3),
    (
        "generic_poker",
        {"num_types": 4, "cards_per_type": 6, "max_raises": 4, "num_bet_sizes": 4},
        2,
    ),
]


def _rows(x: np.ndarray) -> np.ndarray:
    """Rows of a 2-D integer array as one hashable void scalar each."""
    x = np.ascontiguousarray(x.astype(np.uint64))
    return x.view(np.dtype((np.void, 8 * x.shape[1]))).ravel()


def assert_same_partition(ids: np.ndarray, keys: np.ndarray):
    """The partitions of the same items by ``ids [n]`` and by ``keys [n, W]`` are equal."""
    n_ids = np.unique(ids).size
    n_keys = np.unique(_rows(keys)).size
    n_pairs = np.unique(_rows(np.concatenate([ids[:, None], keys], axis=1))).size
    assert n_ids == n_keys == n_pairs, (n_ids, n_keys, n_pairs)


def check_equivalence(name, params):
    game = gt.load(name, **params)
    sg = step.load(name, **params)
    tree = step.enumerate_tree(sg)
    H = game.meta.num_histories
    assert tree.player.shape == (H,)
    # the same histories: node h has the compiled parent, reached by the compiled slot
    np.testing.assert_array_equal(tree.parent, np.asarray(game.node_parent))
    children = np.asarray(game.node_children)
    np.testing.assert_array_equal(children[tree.parent[1:], tree.slot[1:]], np.arange(1, H))
    np.testing.assert_array_equal(tree.player, np.asarray(game.node_player))
    # legal actions
    player = tree.player
    decide = player >= 0
    infoset = np.asarray(game.node_infoset)
    np.testing.assert_array_equal(tree.legal[decide], np.asarray(game.legal_mask)[infoset[decide]])
    assert not tree.legal[~decide].any()
    # chance probabilities: the compiled slots are the positive outcomes in order
    chance = player == CHANCE
    probs = tree.chance_probs[chance]
    compiled = game.meta.host["node_chance_probs"][chance]
    for row, ref in zip(probs, compiled, strict=True):
        np.testing.assert_allclose(row[row > 0], ref[: np.count_nonzero(row > 0)], rtol=1e-6)
        assert np.count_nonzero(ref) == np.count_nonzero(row > 0)
    np.testing.assert_allclose(probs.sum(axis=1), 1.0, rtol=1e-6)
    assert not tree.chance_probs[~chance].any()
    # utilities
    np.testing.assert_allclose(tree.returns[:, 0], game.meta.host["node_utility"], rtol=1e-6)
    np.testing.assert_array_equal(tree.returns[:, 1], -tree.returns[:, 0])
    # the same infoset partition (the key carries the player) and public partition
    assert_same_partition(infoset[decide], tree.info_key[decide])
    keys_player = sg.info_layout.unpack(tree.info_key[decide])["player"][:, 0]
    np.testing.assert_array_equal(keys_player, player[decide])
    assert_same_partition(np.asarray(game.node_public_state), tree.public_key)
    assert np.unique(_rows(tree.public_key)).size == game.meta.num_public_states


@pytest.mark.parametrize("name,params", SMALL)
def test_enumerated_step_form_equals_compiled_game(name, params):
    check_equivalence(name, params)


@pytest.mark.slow
def test_ii_goofspiel6_step_form_equals_compiled_game():
    check_equivalence("ii_goofspiel", {"num_cards": 6})


# ---------------------------------------------------------------- large games
def _play_in_lockstep(name, params, num_traj, seed):
    """Random trajectories in the Python rules and the step form together; returns the
    visited (infoset string, step key) and (public string, step key) pairs."""
    rules = gt.make_rules(name, **params)
    sg = step.load(name, **params)
    rng = np.random.default_rng(seed)
    states = [rules.initial_state() for _ in range(num_traj)]
    batch = jax.tree_util.tree_map(lambda x: jnp.stack([x] * num_traj), sg.init())
    describe = jax.jit(
        jax.vmap(
            lambda s: (
                sg.current_player(s),
                sg.legal_mask(s),
                sg.chance_probs(s),
                sg.returns(s),
                sg.current_key(s),
                sg.public_state_key(s),
            )
        )
    )
    apply = jax.jit(jax.vmap(sg.apply))
    info_pairs, public_pairs = [], []
    for _ in range(sg.max_depth + 1):
        player, legal, probs, returns, key, pkey = jax.device_get(describe(batch))
        actions = np.zeros(num_traj, np.int32)
        for i, s in enumerate(states):
            p = rules.current_player(s)
            assert player[i] == p
            public_pairs.append((rules.public_state(s), tuple(pkey[i])))
            if p == TERMINAL:
                np.testing.assert_allclose(returns[i], rules.returns(s), rtol=1e-6)
                continue
            assert not returns[i].any()
            if p == CHANCE:
                outcomes = list(rules.chance_outcomes(s))
                positive = np.nonzero(probs[i] > 0)[0]
                np.testing.assert_array_equal(positive, [o for o, _ in outcomes])
                np.testing.assert_allclose(probs[i][positive], [q for _, q in outcomes], rtol=1e-6)
                k = rng.choice(len(outcomes), p=[q for _, q in outcomes])
                actions[i] = outcomes[k][0]
            else:
                legal_actions = list(rules.legal_actions(s))
                np.testing.assert_array_equal(np.nonzero(legal[i])[0], legal_actions)
                info_pairs.append(((p, rules.information_state(s, p)), tuple(key[i])))
                actions[i] = rng.choice(legal_actions)
            states[i] = rules.apply(s, int(actions[i]))
        batch = apply(batch, jnp.asarray(actions))
    assert all(rules.current_player(s) == TERMINAL for s in states)
    return sg, info_pairs, public_pairs


def _assert_bijection(pairs):
    forward, backward = {}, {}
    for a, b in pairs:
        assert forward.setdefault(a, b) == b
        assert backward.setdefault(b, a) == a


@pytest.mark.parametrize("name,params,words", LARGE)
def test_large_games_agree_with_rules_on_random_trajectories(name, params, words):
    sg, info_pairs, public_pairs = _play_in_lockstep(name, params, num_traj=64, seed=0)
    assert sg.key_words == words
    _assert_bijection(info_pairs)
    _assert_bijection(public_pairs)
    assert len({a for a, _ in info_pairs}) > 100


# ---------------------------------------------------------------- API
def test_step_game_is_a_static_pytree_and_jits_once():
    traces = []

    @jax.jit
    def first_moves(game, state):
        traces.append(1)
        return game.legal_mask(game.apply(game.apply(state, 0), 5))

    g1 = step.load("liars_dice", dice0=2, dice1=2)
    g2 = step.load("liars_dice", dice0=2, dice1=2)
    assert jax.tree_util.tree_leaves(g1) == []
    m1 = first_moves(g1, g1.init())
    first_moves(g2, g2.init())
    assert len(traces) == 1  # equal parameters share the trace
    assert m1.shape == (25,) and not m1.any()  # still rolling: a chance node


def test_vmap_over_states():
    sg = step.load("generic_poker", num_types=4, cards_per_type=6, max_raises=4, num_bet_sizes=4)
    apply = jax.jit(jax.vmap(sg.apply))
    states = jax.vmap(lambda _: sg.init())(jnp.arange(4))
    states = apply(states, jnp.array([0, 1, 2, 3]))  # P1's card
    probs = jax.jit(jax.vmap(sg.chance_probs))(states)
    assert probs.shape == (4, 4)
    # 6 copies of each of 4 types; one dealt: 5 of the 23 cards left have that type
    np.testing.assert_allclose(np.diag(probs), np.full(4, 5 / 23), rtol=1e-6)
    np.testing.assert_allclose(probs.sum(axis=1), 1.0, rtol=1e-6)
    states = apply(states, jnp.array([3, 2, 1, 0]))  # P2's card
    assert (jax.jit(jax.vmap(sg.current_player))(states) == 0).all()
    keys = jax.jit(jax.vmap(sg.information_state_key, in_axes=(0, None)))(states, 0)
    assert keys.shape == (4, 2) and keys.dtype == jnp.uint32


def test_key_layout_packs_and_unpacks():
    layout = step.KeyLayout([("a", 1, 1), ("b", 5, 7), ("c", 40, 1), ("d", 2, 32)])
    # 1 + 28 bits fill word 0 up to bit 29; the 40 flags take bits 29..31 and word 1;
    # d needs a whole word each
    assert layout.words == 5
    rng = np.random.default_rng(1)
    for _ in range(5):
        vals = {
            "a": rng.integers(0, 2, 1),
            "b": rng.integers(0, 128, 5),
            "c": rng.integers(0, 2, 40),
            "d": rng.integers(0, 2**32, 2, dtype=np.uint64).astype(np.uint32),
        }
        words = jax.jit(layout.pack)({k: jnp.asarray(v) for k, v in vals.items()})
        out = layout.unpack(np.asarray(words))
        for k, v in vals.items():
            np.testing.assert_array_equal(out[k], v.astype(np.int64))


@pytest.mark.parametrize(
    "name,params,match",
    [
        ("kuhn_poker", {}, "no step form"),
        ("liars_dice", {"recall": 2}, "recall"),
        ("liars_dice", {"dice0": 0}, "dice0"),
        ("liars_dice", {"dice0": 50, "dice1": 50}, "dice0=50, dice1=50"),
        ("ii_goofspiel", {"num_cards": 200}, "num_cards=200"),
        ("generic_poker", {"max_raises": 5}, "max_raises"),
        ("ii_goofspiel", {"cards": 4}, "cards"),
    ],
)
def test_bad_parameters_raise_value_error(name, params, match):
    with pytest.raises(ValueError, match=match):
        step.load(name, **params)


@pytest.mark.parametrize("name,params,words", LARGE)
def test_random_playouts_replay_in_the_rules(name, params, words):
    rules = gt.make_rules(name, **params)
    sg = step.load(name, **params)
    traj = jax.jit(jax.vmap(lambda k: step.random_playout(sg, k)))(
        jax.random.split(jax.random.key(0), 16)
    )
    traj = jax.device_get(traj)
    assert traj.keys.shape == (16, sg.max_depth, words)
    for i in range(16):
        s = rules.initial_state()
        for a, p in zip(traj.actions[i], traj.players[i], strict=True):
            assert p == rules.current_player(s)
            if p == TERMINAL:
                assert a == -1
                continue
            legal = (
                [o for o, q in rules.chance_outcomes(s) if q > 0]
                if p == CHANCE
                else list(rules.legal_actions(s))
            )
            assert a in legal
            s = rules.apply(s, int(a))
        assert rules.current_player(s) == TERMINAL
        np.testing.assert_allclose(traj.returns[i], rules.returns(s), rtol=1e-6)


def test_random_playout_frequencies():
    sg = step.load("liars_dice", dice0=1, dice1=1)
    n = 12_000
    traj = jax.jit(jax.vmap(lambda k: step.random_playout(sg, k)))(
        jax.random.split(jax.random.key(1), n)
    )
    actions = np.asarray(traj.actions)
    for column, slots in ((0, 6), (1, 6), (2, 12)):  # two dice, then P1's opening bid
        counts = np.bincount(actions[:, column], minlength=slots)
        expected = n / slots
        sigma = np.sqrt(n * (1 / slots) * (1 - 1 / slots))
        assert counts.size == slots and np.all(np.abs(counts - expected) < 5 * sigma), counts


def test_float64_under_x64(x64):
    sg = step.load("generic_poker")
    traj = jax.jit(lambda k: step.random_playout(sg, k))(jax.random.key(0))
    assert traj.returns.dtype == jnp.float64
    assert sg.chance_probs(sg.init()).dtype == jnp.float64


# ---------------------------------------------------------------- targeting
def _ancestors_or_self(parent, members):
    truth = np.zeros(parent.size, bool)
    frontier = members
    while frontier.size:
        truth[frontier] = True
        frontier = np.unique(parent[frontier][parent[frontier] >= 0])
    return truth


def check_consistent(name, params, count=16):
    """``consistent`` (and ``public_consistent``) mark exactly the ancestors-or-self of
    the histories of random infosets (public states), biased to deep ones."""
    game = gt.load(name, **params)
    sg = step.load(name, **params)
    tree = step.enumerate_tree(sg, keep_states=True)
    parent = np.asarray(game.node_parent)
    rng = np.random.default_rng(0)
    infoset = np.asarray(game.node_infoset)
    public = np.asarray(game.node_public_state)
    decide = np.nonzero(infoset >= 0)[0]
    nodes = np.concatenate(
        [rng.choice(decide[-len(decide) // 3 :], 3 * count // 4), rng.choice(decide, count // 4)]
    )
    cases = [(sg.consistent, infoset, tree.info_key)]
    if name != "ii_goofspiel":  # no public-subgame targeting there
        cases.append((sg.public_consistent, public, tree.public_key))
    for fn, ids, keys in cases:
        check = jax.jit(jax.vmap(fn, in_axes=(0, None)))
        for target in np.unique(ids[nodes]):
            members = np.nonzero(ids == target)[0]
            got = np.asarray(check(tree.states, jnp.asarray(keys[members[0]])))
            truth = _ancestors_or_self(parent, members)
            np.testing.assert_array_equal(got, truth, err_msg=f"{fn.__name__} {target}")


@pytest.mark.parametrize("name,params", SMALL)
def test_consistent_marks_exactly_the_prefixes_of_a_target(name, params):
    check_consistent(name, params)


@pytest.mark.slow
def test_ii_goofspiel6_consistent():
    check_consistent("ii_goofspiel", {"num_cards": 6}, count=8)


def _deep_targets(infoset, count, seed):
    """Random target infosets of the enumerated tree, biased to deep ones (3/4 drawn
    from the last third of the decision nodes)."""
    rng = np.random.default_rng(seed)
    decide = np.nonzero(infoset >= 0)[0]
    nodes = np.concatenate(
        [rng.choice(decide[-len(decide) // 3 :], 3 * count // 4), rng.choice(decide, count // 4)]
    )
    return np.unique(infoset[nodes])


def _histories_at_or_below(parent, depth, members):
    """``[N]`` per node: how many of the nodes ``members`` lie at or below it."""
    truth = np.zeros(parent.size, np.int64)
    truth[members] = 1
    for d in range(int(depth.max()), 0, -1):
        at = np.nonzero(depth == d)[0]
        np.add.at(truth, parent[at], truth[at])
    return truth


def _enumerated(name, params):
    """(step game, its enumerated tree with states, and the compiled game's node parent,
    depth and infoset arrays): what the completion-count checks compare against."""
    game = gt.load(name, **params)
    sg = step.load(name, **params)
    tree = step.enumerate_tree(sg, keep_states=True)
    depth = game.meta.host["node_depth"]
    return sg, tree, np.asarray(game.node_parent), depth, np.asarray(game.node_infoset)


def check_num_completions(name, params, count=12):
    """``num_completions(h, key)`` equals the number of the target infoset's histories
    at or below h (counted on the enumerated compiled tree), for every history h and
    random target infosets biased to deep ones; so a walk choosing children in
    proportion to it draws the infoset's histories uniformly (ISMCTS's start)."""
    sg, tree, parent, depth, infoset = _enumerated(name, params)
    fn = jax.jit(jax.vmap(sg.num_completions, in_axes=(0, None)))
    for target in _deep_targets(infoset, count, seed=1):
        members = np.nonzero(infoset == target)[0]
        truth = _histories_at_or_below(parent, depth, members)
        got = np.asarray(fn(tree.states, jnp.asarray(tree.info_key[members[0]])))
        np.testing.assert_array_equal(got, truth, err_msg=f"{name} {params} infoset {target}")


@pytest.mark.parametrize(
    "name,params",
    SMALL + [("liars_dice", {"dice0": 3, "dice1": 1, "faces": 2})],
)
def test_num_completions_counts_the_target_histories_below(name, params):
    check_num_completions(name, params)


@pytest.mark.slow
def test_ii_goofspiel6_num_completions():
    check_num_completions("ii_goofspiel", {"num_cards": 6}, count=8)


def check_children_completions(name, params, count=12):
    """``children_completions(h, key, W)[k]`` equals the number of the target infoset's
    histories at or below h's child by slot k (counted on the enumerated compiled tree),
    for every legal slot of every history h and random target infosets biased to deep
    ones (II-Goofspiel computes them with one forward and one backward DP pass)."""
    sg, tree, parent, depth, infoset = _enumerated(name, params)
    W = max(sg.num_actions, sg.num_chance_outcomes)
    kid = np.full((parent.size, W), -1)
    has_parent = np.nonzero(parent >= 0)[0]
    kid[parent[has_parent], np.asarray(tree.action)[has_parent]] = has_parent
    fn = jax.jit(jax.vmap(lambda s, k: sg.children_completions(s, k, W), in_axes=(0, None)))
    for target in _deep_targets(infoset, count, seed=3):
        members = np.nonzero(infoset == target)[0]
        truth = _histories_at_or_below(parent, depth, members)
        want = np.where(kid >= 0, truth[np.maximum(kid, 0)], 0)
        got = np.asarray(fn(tree.states, jnp.asarray(tree.info_key[members[0]])))
        np.testing.assert_array_equal(
            np.where(kid >= 0, got, 0), want, err_msg=f"{name} {params} infoset {target}"
        )
        assert want.any()


@pytest.mark.parametrize(
    "name,params",
    [
        ("ii_goofspiel", {"num_cards": 4}),
        ("ii_goofspiel", {"num_cards": 4, "first_point": 1, "decide_last_card": False}),
        pytest.param("liars_dice", {"dice0": 1, "dice1": 1}, marks=pytest.mark.slow),
        pytest.param("ii_goofspiel", {"num_cards": 5}, marks=pytest.mark.slow),
        pytest.param("ii_goofspiel", {"num_cards": 6}, marks=pytest.mark.slow),
    ],
)
def test_children_completions_count_the_target_histories_below_each_child(name, params):
    check_children_completions(name, params, count=6 if params.get("num_cards") == 4 else 12)


@pytest.mark.parametrize(
    "name,params",
    [
        ("liars_dice", {"dice0": 1, "dice1": 1}),
        ("ii_goofspiel", {"num_cards": 4}),
        pytest.param("liars_dice", {"dice0": 2, "dice1": 1, "faces": 3}, marks=pytest.mark.slow),
        pytest.param("ii_goofspiel", {"num_cards": 5}, marks=pytest.mark.slow),
    ],
)
def test_children_checks_equal_applying_every_child(name, params):
    """Liar's Dice and II-Goofspiel check their children's consistency (Liar's Dice
    also counts their completions) without applying them; it must agree with the base
    class's apply-every-child definition on enumerated histories (the targets'
    ancestors and random ones; legal actions and possible outcomes), for random infoset
    (and public-state) keys."""
    sg = step.load(name, **params)
    tree = step.enumerate_tree(sg, keep_states=True)
    W = max(sg.num_actions, sg.num_chance_outcomes)
    rng = np.random.default_rng(2)
    H = tree.info_key.shape[0]
    decide = np.nonzero(np.asarray(jax.vmap(sg.current_player)(tree.states)) >= 0)[0]
    targets = np.concatenate([rng.choice(decide[len(decide) // 2 :], 4), rng.choice(decide, 2)])
    # the targets' ancestors (consistent) and random histories (mostly not)
    parent = np.asarray(tree.parent)
    sample = set(rng.choice(H, 2000).tolist())
    for h in targets:
        while h >= 0:
            sample.add(int(h))
            h = parent[h]
    states = jax.tree_util.tree_map(lambda x: x[np.array(sorted(sample))], tree.states)
    rows = jax.vmap(lambda s: jnp.concatenate([sg.legal_mask(s), jnp.zeros((1,), bool)])[:W])(
        states
    ) | jax.vmap(lambda s: jnp.pad(sg.chance_probs(s) > 0, (0, W - sg.num_chance_outcomes)))(states)
    base = step.StepGame
    for h in targets:
        cases = [(sg.consistent_children, base.consistent_children, tree.info_key[h])]
        if name == "liars_dice":
            cases.append(
                (sg.public_consistent_children, base.public_consistent_children, tree.public_key[h])
            )
        for fast, slow, key in cases:
            key = jnp.asarray(key)
            got = jax.vmap(lambda s, f=fast, k=key: f(s, k, W))(states)
            want = jax.vmap(lambda s, f=slow, k=key: f(sg, s, k, W))(states)
            np.testing.assert_array_equal(np.asarray(got & rows), np.asarray(want & rows))
            assert np.asarray(want & rows).any()
        if name == "liars_dice":  # its completion counts too, bit for bit
            key = jnp.asarray(tree.info_key[h])
            got = jax.vmap(lambda s, k=key: sg.children_completions(s, k, W))(states)
            want = jax.vmap(lambda s, k=key: base.children_completions(sg, s, k, W))(states)
            np.testing.assert_array_equal(
                np.where(rows, np.asarray(got), 0.0), np.where(rows, np.asarray(want), 0.0)
            )
            assert (np.where(rows, np.asarray(want), 0.0) > 0).any()
