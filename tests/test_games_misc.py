"""Liar's Dice, II-Goofspiel, biased RPS and the non-locality game: sizes, rules, parameters.

Sizes are GAMES.md 1.5, 1.7, 1.11, 1.12; max_depth counts edges from the root.
"""

import numpy as np
import pytest

import games_tensor as gt
from games_tensor._rules import CHANCE, TERMINAL

SIZES = [
    (
        "liars_dice",
        {},
        dict(
            infosets=24_576,
            infosets_per_player=(12_288, 12_288),
            infoset_actions=49_140,
            terminals=147_420,
            histories=294_883,
            max_depth=15,
        ),
    ),
    (  # recall=4 is OpenSpiel's liars_dice_ir (same abstract keys)
        "liars_dice",
        {"recall": 4},
        dict(
            infosets=24_576,
            infoset_actions=49_140,
            abstract_infosets=6_744,
            abstract_infoset_actions=19_020,
        ),
    ),
    ("liars_dice", {"recall": 1}, dict(abstract_infosets=144, abstract_infoset_actions=936)),
    (
        "ii_goofspiel",
        {},
        dict(
            infosets=738,
            infosets_per_player=(369, 369),
            infoset_actions=924,
            terminals=576,
            histories=2_229,
            max_depth=8,
        ),
    ),
    (
        "ii_goofspiel",
        {"first_point": 1, "decide_last_card": False},
        dict(
            infosets=162,
            infosets_per_player=(81, 81),
            infoset_actions=348,
            terminals=576,
            histories=1_077,
            max_depth=6,
        ),
    ),
    (
        "ii_goofspiel",
        {"num_cards": 6},
        dict(
            infosets=166_002,
            infosets_per_player=(83_001, 83_001),
            infoset_actions=205_596,
            terminals=518_400,
            histories=2_006_323,
            max_depth=12,
        ),
    ),
    (
        "biased_rps",
        {},
        dict(
            infosets=2,
            infosets_per_player=(1, 1),
            infoset_actions=6,
            terminals=9,
            histories=13,
            max_depth=2,
        ),
    ),
    (
        "nonlocality",
        {},
        dict(
            infosets=2,
            infosets_per_player=(1, 1),
            infoset_actions=4,
            terminals=6,
            histories=11,
            max_depth=3,
        ),
    ),
]


@pytest.mark.parametrize("name,params,expected", SIZES, ids=[f"{n}-{p}" for n, p, _ in SIZES])
def test_sizes(name, params, expected):
    sizes = gt.load(name, **params).sizes
    assert {k: sizes[k] for k in expected} == expected
    if name == "liars_dice" and params.get("recall") is None:
        assert "abstract_infosets" not in sizes


def test_ii_goofspiel6_without_last_card_infosets():
    rules = gt.make_rules("ii_goofspiel", num_cards=6, decide_last_card=False)
    assert rules.estimated_histories() == 969_523
    game = gt.load("ii_goofspiel", num_cards=6, decide_last_card=False)
    assert game.sizes["infosets_per_player"] == (17_241, 17_241)


def test_estimates_refuse_large_games():
    assert gt.make_rules("ii_goofspiel", num_cards=6).estimated_histories() == 2_006_323
    ld11 = gt.make_rules("liars_dice").estimated_histories()
    assert 294_883 <= ld11 <= 2 * 294_883
    with pytest.raises(gt.GameTooLargeError):
        gt.load("liars_dice", dice0=2, dice1=2)
    with pytest.raises(gt.GameTooLargeError):
        gt.load("ii_goofspiel", num_cards=13)


# ---------------------------------------------------------------- rules


def _play(rules, actions):
    s = rules.initial_state()
    for a in actions:
        s = rules.apply(s, a)
    return s


def test_liars_dice_rules():
    r = gt.make_rules("liars_dice")
    assert r.num_actions == 13 and r.action_name(12) == "Liar" and r.action_name(7) == "2-2"
    # dice 3 and 6 (outcomes 2 and 5); bids 1-1, 1-4, 2-2; P2 calls.
    s = _play(r, [2, 5, 0, 3, 7])
    assert r.current_player(s) == 1
    assert r.information_state(s, 1) == "6 1-1 1-4 2-2"
    assert r.public_state(s) == "bids:1-1 1-4 2-2"
    assert list(r.legal_actions(s)) == [8, 9, 10, 11, 12]
    s = r.apply(s, 12)
    assert r.current_player(s) == TERMINAL
    assert r.returns(s) == (-1.0, 1.0)  # one 2 (the wild 6) < two 2s: the caller wins
    s = _play(r, [2, 5, 0, 3, 6, 12])  # bid 2-1: the 6 is wild, 3 is not a 1 -> one
    assert r.returns(s) == (-1.0, 1.0)
    s = _play(r, [2, 5, 2, 12])  # P1 bids 1-3; the bid holds, P2 loses
    assert r.returns(s) == (1.0, -1.0)
    # the opening move cannot be a call; the highest bid forces a call
    s = _play(r, [0, 0])
    assert r.current_player(s) == 0 and 12 not in r.legal_actions(s)
    assert list(r.legal_actions(r.apply(s, 11))) == [12]


def test_liars_dice_chance_order_and_recall_key():
    r = gt.make_rules("liars_dice", dice0=2, dice1=1, faces=3, recall=2)
    assert r.num_actions == 10
    s = r.initial_state()
    for outcome in (2, 0, 1):  # P1 rolls 3 then 1, then P2 rolls 2
        assert r.current_player(s) == CHANCE
        assert [o for o, _ in r.chance_outcomes(s)] == [0, 1, 2]
        assert [p for _, p in r.chance_outcomes(s)] == pytest.approx([1 / 3] * 3)
        s = r.apply(s, outcome)
    assert r.current_player(s) == 0
    s = _play(r, [2, 0, 1, 0, 1, 4])  # bids 1-1, 1-2, 2-2
    assert r.current_player(s) == 1
    assert r.information_state(s, 1) == "2 1-1 1-2 2-2"
    assert r.abstract_information_state(s, 1) == "P1 2 1-2 2-2"
    assert r.information_state(r.apply(s, 5), 0) == "13 1-1 1-2 2-2 2-3"  # own dice sorted
    assert gt.make_rules("liars_dice").abstract_information_state(s, 1) is None


def test_ii_goofspiel_rules():
    r = gt.make_rules("ii_goofspiel", num_cards=3)
    s = r.initial_state()
    assert r.current_player(s) == 0 and list(r.legal_actions(s)) == [0, 1, 2]
    s = r.apply(s, 2)
    assert r.current_player(s) == 1
    assert r.information_state(s, 1) == "P1"  # P2 does not see P1's card
    s = _play(r, [2, 1, 0, 2])  # round 0 (worth 0): P1 wins; round 1 (worth 1): P2 wins
    assert r.information_state(s, 0) == "P0 2W 0L"
    assert r.public_state(s) == "WL"
    assert list(r.legal_actions(s)) == [1]  # forced last card is still a decision
    s = _play(r, [2, 1, 0, 2, 1, 0])  # round 2 (worth 2): P1 wins, 2 - 1 > 0
    assert r.current_player(s) == TERMINAL and r.returns(s) == (1.0, -1.0)
    s = _play(r, [0, 0, 1, 1, 2, 2])  # all ties
    assert r.returns(s) == (0.0, 0.0)
    # OpenSpiel's variant: the last card is played automatically.
    o = gt.make_rules("ii_goofspiel", num_cards=3, first_point=1, decide_last_card=False)
    s = _play(o, [2, 1, 0, 2])  # P1 wins 1, P2 wins 2, last round 1 vs 0: P1 wins 3
    assert o.current_player(s) == TERMINAL and o.returns(s) == (1.0, -1.0)


def test_biased_rps_payoffs():
    r = gt.make_rules("biased_rps")
    u = np.array([[r.returns((i, j))[0] for j in range(3)] for i in range(3)])
    np.testing.assert_array_equal(u, [[0, -25, 50], [25, 0, -5], [-50, 5, 0]])
    x = np.array([1, 10, 5]) / 16
    np.testing.assert_allclose(x @ u, 0, atol=1e-12)  # indifference at the equilibrium
    assert r.information_state((0,), 1) == r.information_state((2,), 1)


@pytest.mark.parametrize("left_leaf,value", [(1, 1.0), (2.0, 1.25)])
def test_nonlocality_equilibrium_value(left_leaf, value):
    r = gt.make_rules("nonlocality", left_leaf=left_leaf)

    def u(p, q):  # P1 plays L w.p. p, P2 plays L at I w.p. q
        total = 0.0
        for c, pc in r.chance_outcomes(r.initial_state()):
            for a1, p1 in ((0, p), (1, 1 - p)):
                s = r.apply(r.apply(r.initial_state(), c), a1)
                if r.current_player(s) == TERMINAL:
                    total += pc * p1 * r.returns(s)[0]
                else:
                    for a2, p2 in ((0, q), (1, 1 - q)):
                        total += pc * p1 * p2 * r.returns(r.apply(s, a2))[0]
        return total

    q = 1 / 3 if left_leaf == 1 else 1 / 6
    assert u(0.5, q) == pytest.approx(value)
    # both players are indifferent at the equilibrium
    assert u(1.0, q) == pytest.approx(value) and u(0.0, q) == pytest.approx(value)
    assert u(0.5, 1.0) == pytest.approx(value) and u(0.5, 0.0) == pytest.approx(value)
    s_a = _play(r, [1, 0])
    s_b = _play(r, [1, 1])
    assert r.information_state(s_a, 1) == r.information_state(s_b, 1)
    assert r.information_state(_play(r, [0]), 0) == r.information_state(_play(r, [1]), 0)


# ---------------------------------------------------------------- OpenSpiel


def _lockstep(rules, game):
    """Walk both trees together: players, legal actions, chance, returns and the
    infoset partition (a bijection between keys) must agree."""
    ours, theirs = {}, {}
    stack = [(rules.initial_state(), game.new_initial_state())]
    while stack:
        s, o = stack.pop()
        p = rules.current_player(s)
        if o.is_terminal():
            assert p == TERMINAL and tuple(rules.returns(s)) == tuple(o.returns())
            continue
        if o.is_chance_node():
            assert p == CHANCE
            outcomes = rules.chance_outcomes(s)
            assert [a for a, _ in outcomes] == [a for a, _ in o.chance_outcomes()]
            for a, _ in outcomes:
                stack.append((rules.apply(s, a), o.child(a)))
            continue
        assert p == o.current_player()
        legal = list(rules.legal_actions(s))
        assert legal == o.legal_actions()
        mk, ok = (p, rules.information_state(s, p)), (p, o.information_state_string())
        assert ours.setdefault(mk, ok) == ok and theirs.setdefault(ok, mk) == mk
        for a in legal:
            stack.append((rules.apply(s, a), o.child(a)))
    return ours


def test_liars_dice_matches_openspiel():
    pyspiel = pytest.importorskip("pyspiel")
    keys = _lockstep(
        gt.make_rules("liars_dice", dice0=2, dice1=2, faces=2),
        pyspiel.load_game("liars_dice", {"numdice": 2, "dice_sides": 2}),
    )
    assert all(k[1] == v[1] for k, v in keys.items())  # same strings, too
    keys = _lockstep(gt.make_rules("liars_dice"), pyspiel.load_game("liars_dice"))
    assert len(keys) == 24_576


def test_ii_goofspiel_matches_openspiel():
    pyspiel = pytest.importorskip("pyspiel")
    for n, infosets in ((3, 16), (4, 162)):
        game = pyspiel.convert_to_turn_based(
            pyspiel.load_game(
                "goofspiel",
                {
                    "num_cards": n,
                    "imp_info": True,
                    "points_order": "ascending",
                    "returns_type": "win_loss",
                },
            )
        )
        rules = gt.make_rules("ii_goofspiel", num_cards=n, first_point=1, decide_last_card=False)
        assert len(_lockstep(rules, game)) == infosets


# ---------------------------------------------------------------- parameters

BAD_PARAMS = [
    ("liars_dice", {"dice0": 0}, "dice0"),
    ("liars_dice", {"dice1": 0}, "dice1"),
    ("liars_dice", {"dice0": 1.5}, "dice0"),
    ("liars_dice", {"faces": 1}, "faces"),
    ("liars_dice", {"recall": 0}, "recall"),
    ("liars_dice", {"recall": "all"}, "recall"),
    ("ii_goofspiel", {"num_cards": 0}, "num_cards"),
    ("ii_goofspiel", {"num_cards": 1, "decide_last_card": False}, "num_cards"),
    ("ii_goofspiel", {"first_point": -1}, "first_point"),
    ("ii_goofspiel", {"decide_last_card": 1}, "decide_last_card"),
    ("nonlocality", {"left_leaf": "1"}, "left_leaf"),
    ("nonlocality", {"left_leaf": float("nan")}, "left_leaf"),
    ("biased_rps", {"bias": 2}, "bias"),
]


@pytest.mark.parametrize("name,params,word", BAD_PARAMS, ids=[f"{n}-{w}" for n, _, w in BAD_PARAMS])
def test_invalid_parameters(name, params, word):
    with pytest.raises(ValueError, match=word):
        gt.make_rules(name, **params)


def test_parameters_listed():
    av = gt.available()
    assert av["liars_dice"] == {"dice0": 1, "dice1": 1, "faces": 6, "recall": None}
    assert av["ii_goofspiel"] == {"num_cards": 4, "first_point": 0, "decide_last_card": True}
    assert av["biased_rps"] == {}
    assert av["nonlocality"] == {"left_leaf": 1}
    assert gt.make_rules("ii_goofspiel", num_cards=1).estimated_histories() == 3
