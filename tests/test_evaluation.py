"""Exact evaluation: closed forms, OpenSpiel cross-checks, LP oracle, batching, bad input."""

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import games_tensor as gt
import jaxcfr


def _random_policy(game, seed):
    rng = np.random.default_rng(seed)
    pol = rng.random((game.num_infosets, game.num_actions)) * np.asarray(
        game.meta.host["legal_mask"]
    )
    return pol / pol.sum(axis=1, keepdims=True)


# ---------------------------------------------------------------- closed forms
@pytest.mark.parametrize(
    "name,params,expected",
    [
        ("kuhn_poker", {}, 11 / 12),
        ("leduc_poker", {}, 4.747222222222222),
        ("leduc_poker", {"suits": False}, 4.747222222222222),
        (
            "generic_poker",
            {"num_types": 3, "cards_per_type": 2, "max_raises": 1, "num_bet_sizes": 1},
            4.747222222222222,
        ),
    ],
)
def test_uniform_nash_conv_closed_forms(x64, name, params, expected):
    game = gt.load(name, **params)
    nc = jax.jit(jaxcfr.nash_conv)(game, gt.uniform_policy(game))
    assert abs(float(nc) - expected) < 1e-9
    assert abs(float(jaxcfr.exploitability(game, gt.uniform_policy(game))) - expected / 2) < 1e-9


def _kuhn_equilibrium(game, alpha):
    """Hoehn et al. (2005) family, written from GAMES.md 1.1 by infoset key."""
    pol = np.zeros((game.num_infosets, 2))  # actions: 0 = pass/fold, 1 = bet/call
    bet = {
        "P0 card:J | ": alpha,
        "P0 card:Q | ": 0.0,
        "P0 card:K | ": 3 * alpha,
        "P0 card:J | pb": 0.0,
        "P0 card:Q | pb": alpha + 1 / 3,
        "P0 card:K | pb": 1.0,
        "P1 card:J | b": 0.0,
        "P1 card:Q | b": 1 / 3,
        "P1 card:K | b": 1.0,
        "P1 card:J | p": 1 / 3,
        "P1 card:Q | p": 0.0,
        "P1 card:K | p": 1.0,
    }
    for i, key in enumerate(game.infoset_keys):
        pol[i] = [1 - bet[key], bet[key]]
    return pol


@pytest.mark.parametrize("alpha", [0.0, 0.1, 0.25, 1 / 3])
def test_kuhn_equilibrium_family_has_zero_nash_conv(x64, alpha):
    game = gt.load("kuhn_poker")
    pol = _kuhn_equilibrium(game, alpha)
    assert abs(float(jaxcfr.nash_conv(game, pol))) < 1e-9
    np.testing.assert_allclose(
        np.asarray(jaxcfr.expected_value(game, pol)), [-1 / 18, 1 / 18], atol=1e-12
    )


def test_kuhn_off_equilibrium_is_exploitable(x64):
    game = gt.load("kuhn_poker")
    pol = _kuhn_equilibrium(game, 0.5)  # alpha outside [0, 1/3] (K bets with prob 1.5 -> clip)
    pol = np.clip(pol, 0, 1)
    pol /= pol.sum(axis=1, keepdims=True)
    assert float(jaxcfr.nash_conv(game, pol)) > 1e-3


def test_best_response_is_one_hot_and_attains_value(x64):
    game = gt.load("leduc_poker", suits=False)
    pol = _random_policy(game, 3)
    for p in (0, 1):
        br, value = jaxcfr.best_response(game, pol, p)
        br = np.asarray(br)
        sl = game.player_slice(p)
        assert set(np.unique(br[sl])) <= {0.0, 1.0}
        np.testing.assert_allclose(br[sl].sum(axis=1), 1.0)
        other = game.player_slice(1 - p)
        np.testing.assert_allclose(br[other], pol[other])
        # the BR profile's expected value is the BR value
        np.testing.assert_allclose(
            float(jaxcfr.expected_value(game, br)[p]), float(value), atol=1e-10
        )


def test_counterfactual_values_are_consistent(x64):
    """Expected value = sum of root-level counterfactual infoset values (+ empty-sequence terms),
    and CBV dominates the policy's values."""
    game = gt.load("kuhn_poker")
    pol = _random_policy(game, 5)
    for p in (0, 1):
        cfv = jaxcfr.counterfactual_values(game, pol, p)
        sl = game.player_slice(p)
        ev = float(jaxcfr.expected_value(game, pol)[p])
        start, end = game.meta.infoset_levels[p][0]
        assert abs(float(jnp.sum(cfv.infoset_values[start:end])) - ev) < 1e-12
        assert (
            np.asarray(cfv.best_response_infoset_values)[sl]
            >= np.asarray(cfv.infoset_values)[sl] - 1e-12
        ).all()


def test_kuhn_counterfactual_value_by_hand(x64):
    """P2 holding K facing a bet, vs uniform P1: opponent reach = chance 1/6 * 1/2 (bet) for
    each of J and Q; calling wins 2, folding loses 1 (u_2 for P2)."""
    game = gt.load("kuhn_poker")
    cfv = jaxcfr.counterfactual_values(game, gt.uniform_policy(game), 1)
    i = game.infoset_keys.index("P1 card:K | b")
    np.testing.assert_allclose(np.asarray(cfv.values[i]), [2 * (1 / 12) * -1, 2 * (1 / 12) * 2])


# ---------------------------------------------------------------- OpenSpiel
pyspiel = pytest.importorskip("pyspiel")


def _openspiel_nash_conv(game, pol):
    from open_spiel.python import policy as os_policy

    tab = gt.to_tabular_policy(game, pol)
    return pyspiel.nash_conv(
        game.meta.host["openspiel_game"], os_policy.python_policy_to_pyspiel_policy(tab)
    )


OS_GAMES = [
    ("kuhn_poker", {}),
    ("leduc_poker", {}),
    ("liars_dice", {"numdice": 1}),
    (
        "goofspiel",
        {"imp_info": True, "num_cards": 4, "points_order": "ascending", "returns_type": "win_loss"},
    ),
]


@pytest.mark.parametrize("name,params", OS_GAMES, ids=[g[0] for g in OS_GAMES])
def test_nash_conv_matches_openspiel(x64, name, params):
    game = gt.from_openspiel(name, **params)
    seeds = [0] if name == "liars_dice" else [0, 1, 2]
    for seed in seeds:
        pol = _random_policy(game, seed)
        assert abs(float(jaxcfr.nash_conv(game, pol)) - _openspiel_nash_conv(game, pol)) < 1e-6


def test_expected_value_matches_openspiel(x64):
    from open_spiel.python.algorithms import expected_game_score

    game = gt.from_openspiel("leduc_poker")
    pol = _random_policy(game, 7)
    tab = gt.to_tabular_policy(game, pol)
    os_game = game.meta.host["openspiel_game"]
    ref = expected_game_score.policy_value(os_game.new_initial_state(), [tab, tab])
    np.testing.assert_allclose(np.asarray(jaxcfr.expected_value(game, pol)), ref, atol=1e-9)


# ---------------------------------------------------------------- LP oracle
def test_lp_kuhn_value(x64):
    sol = jaxcfr.solve_lp(gt.load("kuhn_poker"))
    assert abs(sol.value - (-1 / 18)) < 1e-9


def test_lp_leduc_value(x64):
    sol = jaxcfr.solve_lp(gt.load("leduc_poker"))
    assert abs(sol.value - (-0.0856064240)) < 1e-9
    assert float(jaxcfr.nash_conv(gt.load("leduc_poker"), sol.policy)) < 1e-8


@pytest.mark.parametrize(
    "left_leaf,value,minimizer", [(1, 1.0, (1 / 3, 2 / 3)), (2, 1.25, (1 / 6, 5 / 6))]
)
def test_lp_nonlocality(x64, left_leaf, value, minimizer):
    game = gt.load("nonlocality", left_leaf=left_leaf)
    sol = jaxcfr.solve_lp(game)
    assert abs(sol.value - value) < 1e-9
    p2 = game.player_slice(1).start
    np.testing.assert_allclose(np.asarray(sol.policy[p2]), minimizer, atol=1e-9)
    np.testing.assert_allclose(np.asarray(sol.policy[0]), (0.5, 0.5), atol=1e-9)


def test_lp_biased_rps(x64):
    game = gt.load("biased_rps")
    sol = jaxcfr.solve_lp(game)
    np.testing.assert_allclose(np.asarray(sol.policy), [[1 / 16, 10 / 16, 5 / 16]] * 2, atol=1e-9)
    assert abs(sol.value) < 1e-12


LP_GAMES = [
    ("leduc_poker", {"suits": False}),
    ("die_roll_poker", {}),
    ("ii_goofspiel", {"num_cards": 4}),
    pytest.param("generic_poker", {}, marks=pytest.mark.slow),
    ("liars_dice", {}),
]


@pytest.mark.parametrize(
    "name,params", LP_GAMES, ids=[getattr(g, "values", g)[0] for g in LP_GAMES]
)
def test_lp_value_and_policy_agree(x64, name, params):
    """The two LPs' optima agree, the LP policy has (near) zero NashConv, and its
    expected value (computed by the independent traversal kernel) is the LP value."""
    game = gt.load(name, **params)
    sol = jaxcfr.solve_lp(game)
    assert abs(sol.values[0] - sol.values[1]) < 1e-6
    assert float(jaxcfr.nash_conv(game, sol.policy)) < 1e-6
    assert abs(float(jaxcfr.expected_value(game, sol.policy)[0]) - sol.value) < 1e-6


def test_ii_goofspiel_value_is_zero_by_symmetry(x64):
    sol = jaxcfr.solve_lp(gt.load("ii_goofspiel", num_cards=4))
    assert abs(sol.value) < 1e-7


# ---------------------------------------------------------------- batching
def test_vmap_equals_loop():
    game = gt.load("leduc_poker")
    pols = jnp.asarray(np.stack([_random_policy(game, s) for s in range(6)]), dtype=jnp.float32)
    batched = jax.jit(jax.vmap(jaxcfr.exploitability, in_axes=(None, 0)))(game, pols)
    loop = [float(jaxcfr.exploitability(game, p)) for p in pols]
    np.testing.assert_allclose(np.asarray(batched), loop, rtol=1e-5)


def test_float32_by_default():
    game = gt.load("kuhn_poker")
    assert jaxcfr.nash_conv(game, gt.uniform_policy(game)).dtype == jnp.float32


# ---------------------------------------------------------------- bad input
@pytest.fixture(scope="module")
def kuhn():
    return gt.load("kuhn_poker")


def test_wrong_shape(kuhn):
    with pytest.raises(ValueError, match="shape"):
        jaxcfr.nash_conv(kuhn, np.ones((3, 2)) / 2)
    with pytest.raises(ValueError, match="shape"):
        jaxcfr.validate_policy(kuhn, np.ones((12, 3)) / 3)


def test_negative_entry(kuhn):
    pol = np.asarray(gt.uniform_policy(kuhn)).copy()
    pol[0] = [1.5, -0.5]
    with pytest.raises(ValueError, match="negative"):
        jaxcfr.exploitability(kuhn, pol)


def test_rows_not_summing_to_one(kuhn):
    pol = np.asarray(gt.uniform_policy(kuhn)).copy()
    pol[3] = [0.2, 0.2]
    with pytest.raises(ValueError, match="sums to"):
        jaxcfr.expected_value(kuhn, pol)


def test_mass_on_illegal_action():
    game = gt.load("leduc_poker")
    pol = np.asarray(gt.uniform_policy(game)).copy()
    row = int(
        np.argmin(np.asarray(game.legal_mask).sum(axis=1))
    )  # an infoset with an illegal action
    illegal = int(np.argmin(np.asarray(game.legal_mask)[row]))
    pol[row] = 0.0
    pol[row, illegal] = 1.0
    with pytest.raises(ValueError, match="illegal"):
        jaxcfr.best_response(game, pol, 0)
    # inside jit it cannot raise: the result is NaN, not the number of a repaired policy
    assert np.isnan(float(jax.jit(jaxcfr.nash_conv)(game, pol)))


@pytest.mark.parametrize("compact", [False, True])
def test_invalid_policy_inside_jit_gives_nan_in_either_layout(monkeypatch, compact):
    """Inside jit the best-response values of an invalid policy are NaN, in both kernel
    layouts (the compact one's max over actions used to turn a NaN row into -inf)."""
    from jaxcfr import _sequence_form as sf

    monkeypatch.setattr(sf, "uses_compact", lambda g, c=compact: c)
    game = gt.load("ii_goofspiel", num_cards=4)
    good = _random_policy(game, 0)
    legal = np.asarray(game.meta.host["legal_mask"])
    row = 5
    a = int(np.argmax(legal[row]))
    pols = np.stack([good] * 5)
    for k, value in enumerate([np.nan, np.inf, -0.5, 0.5]):  # the last row stays valid
        pols[k, row, a] = value

    def evaluate(g, p):  # a fresh function per layout: no trace of the other one reused
        return jaxcfr.best_response_values(g, p)

    br = np.asarray(jax.jit(jax.vmap(evaluate, in_axes=(None, 0)))(game, pols))
    assert np.isnan(br[:4]).all()
    assert np.isfinite(br[4]).all()


@pytest.mark.parametrize("cards", [4, 5])
def test_fanin_groups_give_the_segment_sums_bits(cards):
    """The exact evaluation's payoff sums by fan-in group (``_sequence_form.own_terminal_values``
    with ``grouped``) equal the segment sum of the CFR update bit for bit (same entries, same
    order of the adds; II-Goofspiel's unit payoffs: a zero's sign may differ, which
    ``assert_array_equal`` does not see), in the compact layout of II-Goofspiel(4) (one
    fan-in) and II-Goofspiel(5) (18 fan-ins merged into 3 padded groups,
    ``games_tensor._table.GROUP_PAD_FRACTION``); a chance-sampled copy, whose
    payoffs differ from the compiled groups, carries none (it takes the segment sum)."""
    from jaxcfr import _chance_sampling
    from jaxcfr import _sequence_form as sf

    game = gt.load("ii_goofspiel", num_cards=cards)
    assert sf.uses_groups(game, True)
    if cards == 5:  # merged groups: a column padded below its entries
        assert len(game.meta.payoff_groups[0]) < 18
    rng = np.random.default_rng(3)
    for p in (0, 1):
        opp = jnp.asarray(rng.random(sf.compact_size(game, 1 - p)), game.sf_payoff.dtype)
        want = jax.jit(lambda g, x, p=p: sf.own_terminal_values(g, x, p, True))(game, opp)
        got = jax.jit(lambda g, x, p=p: sf.own_terminal_values(g, x, p, True, grouped=True))(
            game, opp
        )
        for w, g in zip(want, got, strict=True):
            np.testing.assert_array_equal(np.asarray(g), np.asarray(w))
    sampled = _chance_sampling.sampled_game(game, jax.random.key(0))
    assert not sf.uses_groups(sampled, True)


def test_public_call_is_one_compiled_kernel_with_the_jitted_bits(kuhn):
    """On concrete input the public functions run one cached jitted kernel (no per-op
    dispatch; a second call does not trace again) and give the bits of the same function
    jitted by the caller."""
    from jaxcfr import _evaluation

    game = kuhn
    pol = jnp.asarray(_random_policy(game, 7), game.sf_payoff.dtype)
    got = jaxcfr.counterfactual_values(game, pol, 1)
    size = _evaluation._jitted._cache_size()
    other = jaxcfr.counterfactual_values(game, jnp.asarray(_random_policy(game, 8), pol.dtype), 1)
    assert _evaluation._jitted._cache_size() == size
    assert not np.array_equal(np.asarray(other.values), np.asarray(got.values))
    want = jax.jit(jaxcfr.counterfactual_values, static_argnums=2)(game, pol, 1)
    for a, b in zip(got, want, strict=True):
        np.testing.assert_array_equal(np.asarray(a), np.asarray(b))


def test_public_call_where_only_the_device_check_refuses(monkeypatch):
    """A policy the host check accepts but the in-jit check refuses (a row sum within
    float32 rounding of ``atol``; simulated here) gets the unchecked value, not NaN."""
    from jaxcfr import _evaluation

    game = gt.load("kuhn_poker")
    pol = _random_policy(game, 2)
    want = float(jaxcfr.nash_conv(game, pol))
    _evaluation._jitted.clear_cache()
    monkeypatch.setattr(_evaluation, "_entries_ok", lambda g, p, atol=0.0: jnp.asarray(False))
    try:  # a fresh function to jit: jax.jit(jaxcfr.nash_conv) would share a global cache
        assert np.isnan(float(jax.jit(lambda g, p: jaxcfr.nash_conv(g, p))(game, pol)))
        assert float(jaxcfr.nash_conv(game, pol)) == want
    finally:
        jax.clear_caches()  # no trace made under the patched check outlives this test


def test_concrete_policy_closed_over_inside_jit_is_checked_on_the_host(kuhn):
    pol = np.asarray(gt.uniform_policy(kuhn)).copy()
    want = float(jaxcfr.exploitability(kuhn, pol))
    assert float(jax.jit(lambda: jaxcfr.exploitability(kuhn, pol))()) == want
    pol[3] = [0.2, 0.2]
    with pytest.raises(ValueError, match="sums to"):
        jax.jit(lambda: jaxcfr.exploitability(kuhn, pol))()


def test_bad_player(kuhn):
    with pytest.raises(ValueError, match="player"):
        jaxcfr.best_response(kuhn, gt.uniform_policy(kuhn), 2)


def test_ii_goofspiel6_uniform_best_responses(x64):
    """GAMES.md 1.7: each player's best response to uniform II-GS(6) gains 0.895833."""
    game = gt.load("ii_goofspiel", num_cards=6)
    br = np.asarray(jaxcfr.best_response_values(game, gt.uniform_policy(game)))
    np.testing.assert_allclose(br, [0.895833, 0.895833], atol=5e-7)


@pytest.mark.parametrize("name", ["kuhn_poker", "leduc_poker", "die_roll_poker"])
def test_payoff_blocks_equal_segment_sums(x64, name):
    """The dense payoff-block layout and the plain segment sum give the same values."""
    import dataclasses

    from jaxcfr import _sequence_form as sf

    game = gt.load(name)
    assert game.meta.num_payoff_blocks > 0
    plain = dataclasses.replace(game, meta=dataclasses.replace(game.meta, num_payoff_blocks=0))
    blocks = sf.policy_blocks(game, jnp.asarray(_random_policy(game, 11)))
    plans = [sf.plan_block(game, blocks[p], p) for p in (0, 1)]
    for p in (0, 1):
        for got, want in zip(
            sf.own_terminal_values(game, plans[1 - p], p),
            sf.own_terminal_values(plain, plans[1 - p], p),
            strict=True,
        ):
            np.testing.assert_allclose(np.asarray(got), np.asarray(want), rtol=1e-12, atol=1e-14)


@pytest.mark.parametrize("cards", [4, 5])
def test_fanin_groups_with_non_unit_payoffs_give_the_entry_sums(cards):
    """The grouped payoff sums' general branch (payoffs other than -1, 0, 1: a product
    per cell). No registered game without payoff blocks has such payoffs, so II-GS(4)'s
    and II-GS(5)'s (merged, padded groups) groups are rebuilt from their payoffs times 2.5
    (``fanin_groups`` on the compact positions, as the compiler does) and the sums are
    checked against a plain ``np.add.at`` over the scaled entries, in float64."""
    import dataclasses

    from games_tensor._table import fanin_groups
    from jaxcfr import _sequence_form as sf

    game = gt.load("ii_goofspiel", num_cards=cards)
    own = [np.asarray(game.compact_sf_own0), np.asarray(game.compact_sf_own1)]
    size = [sf.compact_size(game, p) for p in (0, 1)]
    payoff = 2.5 * np.asarray(game.meta.host["sf_payoff"], np.float64)
    groups = [
        fanin_groups(own[p], own[1 - p], sign * payoff, size[p], size[1 - p])
        for p, sign in ((0, 1.0), (1, -1.0))
    ]
    assert not groups[0]["unit"]

    def cat(key):
        return jnp.asarray(np.concatenate([g[key] for g in groups]))

    scaled = dataclasses.replace(
        game,
        compact_group_opp=cat("opp"),
        compact_group_payoff=cat("payoff").astype(game.sf_payoff.dtype),
        compact_group_slot=cat("slot"),
        meta=dataclasses.replace(
            game.meta, payoff_groups=(groups[0]["shapes"], groups[1]["shapes"], False)
        ),
    )
    rng = np.random.default_rng(5)
    for p, sign in ((0, 1.0), (1, -1.0)):
        x = rng.random(size[1 - p])
        got, got_root = jax.jit(
            lambda g, x, p=p: sf.own_terminal_values(g, x, p, True, grouped=True)
        )(scaled, jnp.asarray(x, game.sf_payoff.dtype))
        plan = np.concatenate([x, [1.0, 1.0]])  # the empty sequence and padding read 1
        want = np.zeros(size[p] + 2)
        np.add.at(want, own[p], sign * payoff * plan[own[1 - p]])
        np.testing.assert_allclose(np.asarray(got), want[: size[p]], rtol=1e-5, atol=1e-5)
        np.testing.assert_allclose(float(got_root), want[size[p]], rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("shape", [(5, 5), (7, 3), (2, 5), (36, 2)])
def test_entry_check_sees_a_bad_entry_in_every_chunk_and_the_remainder(shape):
    """The entry check ORs the flat table over ``ENTRY_CHUNKS`` chunks and checks the
    remainder apart: a bad entry (NaN, negative, or mass on an illegal action) at any flat
    position is refused, and a valid table accepted (shapes with and without a remainder,
    and one smaller than the chunk count)."""
    from types import SimpleNamespace

    from jaxcfr import _evaluation as ev

    rng = np.random.default_rng(0)
    legal = rng.random(shape) < 0.7
    legal[:, 0] = True
    game = SimpleNamespace(legal_mask=jnp.asarray(legal))
    good = np.where(legal, 1.0 / legal.sum(1, keepdims=True), 0.0).astype(np.float32)
    check = jax.jit(lambda p: ev._entries_ok(game, p))
    assert bool(check(jnp.asarray(good)))
    for k in range(good.size):
        i, a = np.unravel_index(k, shape)
        for bad_value in (np.nan, -0.5) if legal[i, a] else (0.5,):
            bad = good.copy()
            bad[i, a] = bad_value
            assert not bool(check(jnp.asarray(bad))), (shape, k, bad_value)
