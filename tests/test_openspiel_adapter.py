"""The OpenSpiel adapter against the native games (same infosets, terminals, chance x utility)."""

import numpy as np
import pytest

import games_tensor as gt
from games_tensor._rules import TERMINAL

pyspiel = pytest.importorskip("pyspiel")


def _terminal_multiset(game):
    term = np.asarray(game.node_player) == TERMINAL
    reach = game.meta.host["node_chance_reach"][term]
    util = game.meta.host["node_utility"][term]
    pairs = np.round(np.stack([reach, util], axis=1), 12)
    return pairs[np.lexsort((pairs[:, 1], pairs[:, 0]))]


CASES = [
    ("kuhn_poker", {}, pyspiel.load_game("kuhn_poker")),
    ("leduc_poker", {}, pyspiel.load_game("leduc_poker")),
    ("liars_dice", {}, pyspiel.load_game("liars_dice", {"numdice": 1})),
    (
        "ii_goofspiel",
        {"num_cards": 4, "first_point": 1, "decide_last_card": False},
        pyspiel.load_game(
            "goofspiel",
            {
                "imp_info": True,
                "num_cards": 4,
                "points_order": "ascending",
                "returns_type": "win_loss",
            },
        ),
    ),
]


@pytest.mark.parametrize("name,params,os_game", CASES, ids=[c[0] for c in CASES])
def test_native_matches_openspiel(name, params, os_game):
    native = gt.load(name, **params)
    adapted = gt.from_openspiel(os_game)
    assert native.sizes["infosets_per_player"] == adapted.sizes["infosets_per_player"]
    assert native.sizes["infoset_actions"] == adapted.sizes["infoset_actions"]
    assert native.sizes["terminals"] == adapted.sizes["terminals"]
    np.testing.assert_allclose(_terminal_multiset(native), _terminal_multiset(adapted), atol=1e-12)


def test_goofspiel_forced_last_card_counts():
    """GAMES.md counts the forced last-card infosets; OpenSpiel auto-plays the last card."""
    with_forced = gt.load("ii_goofspiel", num_cards=4)
    without = gt.load("ii_goofspiel", num_cards=4, decide_last_card=False)
    assert with_forced.sizes["infosets"] == 738
    assert without.sizes["infosets_per_player"] == (81, 81)


def test_policy_round_trip():
    game = gt.from_openspiel("kuhn_poker")
    rng = np.random.default_rng(0)
    pol = rng.random((game.num_infosets, game.num_actions)) * np.asarray(game.legal_mask)
    pol /= pol.sum(axis=1, keepdims=True)
    tab = gt.to_tabular_policy(game, pol)
    back = gt.from_tabular_policy(game, tab)
    np.testing.assert_allclose(np.asarray(back), pol, rtol=1e-6)


def test_native_game_refuses_tabular_conversion():
    game = gt.load("kuhn_poker")
    with pytest.raises(ValueError, match="from_openspiel"):
        gt.to_tabular_policy(game, gt.uniform_policy(game))


# ---------------------------------------------------------------- imperfect recall (issue 16)
def _openspiel_information_states(os_game):
    """{(player, information-state string)} of every decision node, enumerated from
    pyspiel directly (independent of the compiler)."""
    out, stack = set(), [os_game.new_initial_state()]
    while stack:
        state = stack.pop()
        if state.is_terminal():
            continue
        if state.is_chance_node():
            stack.extend(state.child(a) for a, _ in state.chance_outcomes())
            continue
        p = state.current_player()
        out.add((p, state.information_state_string(p)))
        stack.extend(state.child(a) for a in state.legal_actions())
    return out


def _check_refinement(os_game):
    """The adapter's abstraction is OpenSpiel's information states, its keying runs CFR,
    and policies of the abstraction round-trip through a TabularPolicy."""
    import jax

    import jaxcfr

    game = gt.from_openspiel(os_game)
    assert game.meta.host["openspiel_refined"] and game.meta.has_abstraction
    states = _openspiel_information_states(os_game)
    assert game.meta.num_abstract_infosets == len(states)
    player = np.asarray(game.infoset_player)
    abstract = np.asarray(game.meta.host["abstract_infoset"])
    got = {(int(player[i]), game.meta.abstract_keys[j]) for i, j in enumerate(abstract)}
    assert got == states
    solver = jaxcfr.cfr(keying="abstract")
    state = solver.init(game)
    for _ in range(2):
        state = jax.jit(solver.update)(game, state)
    assert state.regrets.shape == (len(states), game.num_actions)
    policy = jaxcfr.average_policy(game, state)
    assert np.isfinite(np.asarray(policy)).all()
    back = gt.from_tabular_policy(game, gt.to_tabular_policy(game, policy))
    np.testing.assert_allclose(np.asarray(back), np.asarray(policy), atol=1e-6)
    return game


def test_leduc_action_mapping_is_a_real_violation_and_compiles_refined():
    """With action_mapping, Fold with nothing to call is a check: P0's round-2 check as
    action 0 ("Fold") or 1 ("Call") gives one information string, so the strings do not
    give perfect recall (two own action sequences, one string): a real violation, not
    the adapter's keying. The adapter compiles the refinement."""
    os_game = pyspiel.load_game("leduc_poker", {"action_mapping": True})
    a = os_game.new_initial_state()
    b = os_game.new_initial_state()
    for x in (0, 1, 0, 0, 2, 0, 2):
        a = a.child(x)
    for x in (0, 1, 0, 0, 2, 1, 2):
        b = b.child(x)
    assert a.current_player() == b.current_player() == 0
    assert a.information_state_string(0) == b.information_state_string(0)
    game = _check_refinement(os_game)
    # a policy that differs inside one OpenSpiel information state has no TabularPolicy
    rng = np.random.default_rng(0)
    pol = rng.random((game.num_infosets, game.num_actions)) * np.asarray(game.legal_mask)
    pol /= pol.sum(axis=1, keepdims=True)
    with pytest.raises(ValueError, match="one OpenSpiel information state"):
        gt.to_tabular_policy(game, pol)
    plain = gt.from_openspiel("leduc_poker")
    assert not plain.meta.has_abstraction and not plain.meta.host["openspiel_refined"]
    assert plain.sizes["infosets"] == 936 == game.meta.num_abstract_infosets


def test_dark_hex_ir_compiles_refined():
    _check_refinement(pyspiel.load_game("dark_hex_ir", {"num_rows": 2, "num_cols": 2}))


@pytest.mark.slow
def test_liars_dice_ir_compiles_as_refinement_of_liars_dice():
    """liars_dice_ir: abstract infosets = OpenSpiel's information states (enumerated
    here); the refinement has the perfect-recall LD(1,1) sizes of GAMES.md 1.5 (24,576
    infosets, 12,288 per player, 147,420 terminals, 294,883 nodes)."""
    game = _check_refinement(pyspiel.load_game("liars_dice_ir"))
    assert game.sizes["infosets_per_player"] == (12288, 12288)
    assert game.sizes["terminals"] == 147420
    assert game.sizes["histories"] == 294883


def test_abstraction_merging_different_legal_actions_is_named():
    from games_tensor._rules import Rules

    class Merged(Rules):
        name = "merged"
        num_actions = 3

        def initial_state(self):
            return ()

        def current_player(self, s):
            return TERMINAL if len(s) == 2 else len(s)

        def legal_actions(self, s):
            return (0, 1) if len(s) == 0 or s[0] == 0 else (0, 1, 2)

        def apply(self, s, a):
            return s + (a,)

        def returns(self, s):
            return (float(s[0] == s[1]), -float(s[0] == s[1]))

        def information_state(self, s, player):
            return f"p{player} saw {s[:1] if player else ''}"

        def abstract_information_state(self, s, player):
            return f"p{player}"

    with pytest.raises(ValueError, match=r"'p1' merges .*different legal actions.*\[0, 1\]"):
        gt.compile(Merged())
