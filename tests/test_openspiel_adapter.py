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
