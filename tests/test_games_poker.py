"""Kuhn, Leduc, Leduc-5, Generic Poker and Die-Roll Poker: sizes, rules, parameters.

Sizes are GAMES.md 1.1-1.4 and 1.8; max_depth counts edges from the root.
"""

import pytest

import games_tensor as gt
from games_tensor._rules import CHANCE, TERMINAL

LEDUC_RANKS = dict(
    infosets=288,
    infosets_per_player=(144, 144),
    infoset_actions=672,
    terminals=1_116,
    histories=1_939,
    max_depth=11,
)

SIZES = [
    (
        "kuhn_poker",
        {},
        dict(
            infosets=12,
            infosets_per_player=(6, 6),
            infoset_actions=24,
            terminals=30,
            histories=58,
            max_depth=5,
        ),
    ),
    (
        "leduc_poker",
        {},
        dict(
            infosets=936,
            infosets_per_player=(468, 468),
            infoset_actions=2_184,
            terminals=5_520,
            histories=9_457,
            max_depth=11,
        ),
    ),
    ("leduc_poker", {"suits": False}, LEDUC_RANKS),
    (
        "generic_poker",
        dict(num_types=3, cards_per_type=2, max_raises=1, num_bet_sizes=1),
        LEDUC_RANKS,
    ),
    (
        "generic_poker",
        {},
        dict(
            infosets=7_920,
            infosets_per_player=(3_960, 3_960),
            infoset_actions=22_704,
            terminals=44_883,
            histories=68_908,
            max_depth=13,
        ),
    ),
    (
        "leduc5",
        {},
        dict(
            infosets=34_224,
            infosets_per_player=(17_112, 17_112),
            infoset_actions=100_464,
            terminals=177_684,
            histories=269_563,
            max_depth=11,
        ),
    ),
    (
        "die_roll_poker",
        {},
        dict(
            infosets=1_116,
            infosets_per_player=(558, 558),
            infoset_actions=2_604,
            terminals=58_464,
            histories=98_827,
            max_depth=12,
        ),
    ),
    (
        "die_roll_poker",
        {"abstraction": "ir"},
        dict(
            infosets=1_116,
            infoset_actions=2_604,
            terminals=58_464,
            abstract_infosets=366,
            abstract_infoset_actions=854,
        ),
    ),
    (
        "die_roll_poker",
        {"abstraction": "ir", "fold_always_legal": True},
        dict(
            infosets=1_116,
            infoset_actions=2_976,
            abstract_infosets=366,
            abstract_infoset_actions=976,
        ),
    ),
]


@pytest.mark.parametrize("name,params,expected", SIZES, ids=[f"{n}-{p}" for n, p, _ in SIZES])
def test_sizes(name, params, expected):
    sizes = gt.load(name, **params).sizes
    assert {k: sizes[k] for k in expected} == expected
    assert gt.make_rules(name, **params).estimated_histories() == sizes["histories"]


def test_no_abstraction_by_default():
    assert "abstract_infosets" not in gt.load("die_roll_poker").sizes


def test_generic_poker_large_instance_is_refused():
    gp4644 = dict(num_types=4, cards_per_type=6, max_raises=4, num_bet_sizes=4)
    rules = gt.make_rules("generic_poker", **gp4644)
    assert rules._round_shape(0)[0] == 2_730  # decision nodes per round (GAMES.md 1.4)
    with pytest.raises(gt.GameTooLargeError):
        gt.load("generic_poker", **gp4644)


# ---------------------------------------------------------------- tree walks


def _play(rules, actions):
    s = rules.initial_state()
    for a in actions:
        s = rules.apply(s, a)
    return s


def _split(outcomes):
    """Chance outcomes as (outcome list, approximate probability list)."""
    return [o for o, _ in outcomes], pytest.approx([q for _, q in outcomes])


def _expected_value(rules):
    """P1's expected return under uniform play; also checks zero-sum and chance sums."""

    def walk(s):
        p = rules.current_player(s)
        if p == TERMINAL:
            u0, u1 = rules.returns(s)
            assert u1 == -u0
            return u0
        if p == CHANCE:
            outs = rules.chance_outcomes(s)
            assert sum(q for _, q in outs) == pytest.approx(1.0)
            return sum(q * walk(rules.apply(s, o)) for o, q in outs)
        legal = list(rules.legal_actions(s))
        assert legal == sorted(legal) and all(0 <= a < rules.num_actions for a in legal)
        return sum(walk(rules.apply(s, a)) for a in legal) / len(legal)

    return walk(rules.initial_state())


@pytest.mark.parametrize(
    "name,params,value",
    [
        ("kuhn_poker", {}, 0.125),
        ("leduc_poker", {}, -0.078125),
        ("leduc_poker", {"suits": False}, -0.078125),
        ("die_roll_poker", {}, -0.078125),
    ],
)
def test_uniform_expected_value(name, params, value):
    # Kuhn and Leduc values equal OpenSpiel's expected_game_score under uniform play.
    assert _expected_value(gt.make_rules(name, **params)) == pytest.approx(value)


def _lockstep(rules, game):
    """Walk ours and OpenSpiel's trees together; the infoset partitions must be equal."""
    ours, theirs = {}, {}
    stack = [(rules.initial_state(), game.new_initial_state())]
    while stack:
        s, o = stack.pop()
        p = rules.current_player(s)
        if o.is_terminal():
            assert p == TERMINAL and tuple(rules.returns(s)) == pytest.approx(o.returns())
            continue
        if o.is_chance_node():
            assert p == CHANCE
            ours_out, theirs_out = rules.chance_outcomes(s), o.chance_outcomes()
            assert [a for a, _ in ours_out] == [a for a, _ in theirs_out]
            assert [q for _, q in ours_out] == pytest.approx([q for _, q in theirs_out])
            for a, _ in rules.chance_outcomes(s):
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


@pytest.mark.parametrize("name,infosets", [("kuhn_poker", 12), ("leduc_poker", 936)])
def test_matches_openspiel(name, infosets):
    pyspiel = pytest.importorskip("pyspiel")
    assert len(_lockstep(gt.make_rules(name), pyspiel.load_game(name))) == infosets


# ---------------------------------------------------------------- rules


def test_kuhn_rules():
    r = gt.make_rules("kuhn_poker")
    assert r.num_actions == 2 and [r.action_name(a) for a in (0, 1)] == ["pass", "bet"]
    s = _play(r, [2, 0])  # P1 K, P2 J
    assert r.information_state(s, 0) == "P0 card:K | "
    cases = {(0, 0): 1, (1, 0): 1, (1, 1): 2, (0, 1, 0): -1, (0, 1, 1): 2}
    for acts, u0 in cases.items():
        t = _play(r, [2, 0, *acts])
        assert r.current_player(t) == TERMINAL and r.returns(t) == (u0, -u0)
    t = _play(r, [0, 2, 0, 1, 1])  # J calls K's bet
    assert r.returns(t) == (-2, 2) and r.public_state(t) == "pbb"


def test_leduc_rules():
    r = gt.make_rules("leduc_poker")  # card c has rank c // 2, suit c % 2
    s = _play(r, [5, 0])  # P1 K, P2 J
    assert r.legal_actions(s) == [1, 2]  # no fold when not facing a bet
    s = _play(r, [5, 0, 2])
    assert r.legal_actions(s) == [0, 1, 2]
    s = _play(r, [5, 0, 2, 2])
    assert r.legal_actions(s) == [0, 1]  # two-bet maximum
    s = _play(r, [5, 0, 2, 1, 3])  # bet, call; public Q
    assert r.information_state(s, 0) == "P0 card:Kh | round1: rc | public:Qh | round2: "
    assert r.public_state(s) == "round1: rc | public:Qh | round2: "
    t = _play(r, [5, 0, 2, 1, 3, 2, 2, 1])  # round 2: bet 4, raise 4 more, call
    assert r.returns(t) == (1 + 2 + 8, -(1 + 2 + 8))
    t = _play(r, [5, 0, 2, 1, 1, 2, 0])  # public J pairs P2; P1 bets, P2 folds
    assert r.returns(t) == (3, -3)
    t = _play(r, [5, 0, 1, 1, 1, 1, 1])  # check-check, public J: P2's pair wins
    assert r.returns(t) == (-1, 1)
    t = _play(r, [5, 4, 1, 1, 1, 1, 1])  # two kings: split
    assert r.returns(t) == (0, 0)


def test_leduc_rank_chance_and_generic_equivalence():
    r = gt.make_rules("leduc_poker", suits=False)
    g = gt.make_rules("generic_poker", num_types=3, cards_per_type=2, max_raises=1, num_bet_sizes=1)
    assert _split(r.chance_outcomes(_play(r, [2]))) == ([0, 1, 2], [0.4, 0.4, 0.2])
    assert _split(r.chance_outcomes(_play(r, [2, 2]))) == ([0, 1], [0.5, 0.5])
    s = _play(r, [2, 1, 2, 1, 0])
    assert r.information_state(s, 1) == "P1 card:Q | round1: rc | public:J | round2: "
    assert g.information_state(_play(g, [2, 1, 2, 1, 0]), 1) == r.information_state(s, 1)


def test_leduc5_bet_sizes():
    r = gt.make_rules("leduc5")
    assert r.num_actions == 7
    s = _play(r, [2, 0])
    assert r.legal_actions(s) == [1, 2, 3, 4, 5, 6]
    s = _play(r, [2, 0, 2, 6])  # bet 0.5, raise 8 (puts in 0.5 + 8)
    assert r.legal_actions(s) == [0, 1]
    assert r.contributions(s) == (1.5, 9.5)
    t = _play(r, [2, 0, 2, 6, 0])
    assert r.returns(t) == (-1.5, 1.5)
    t = _play(r, [2, 0, 2, 6, 1, 0, 6, 1])  # call; public J pairs P2; bet 16, call
    assert r.returns(t) == (-(9.5 + 16), 9.5 + 16)
    assert r.information_state(_play(r, [2, 0, 3, 1, 1, 4]), 1) == (
        "P1 card:J | round1: r1c | public:Q | round2: r4"
    )


def test_generic_poker_rules():
    r = gt.make_rules("generic_poker")  # sizes 2, 4 then 4, 8; two raises after the bet
    assert r.num_actions == 4
    s = _play(r, [2, 0, 3, 2, 3])  # bet 4, raise 2, raise 4
    assert r.contributions(s) == (1 + 4 + 6, 1 + 6)
    assert r.legal_actions(s) == [0, 1]  # R = 2 raises after the opening bet
    t = _play(r, [2, 0, 3, 2, 3, 1, 0, 1, 2, 0])  # call; public J pairs P2: check, bet 4, fold
    assert r.returns(t) == (-11, 11)
    r3 = gt.make_rules("generic_poker", cards_per_type=3)
    t = _play(r3, [1, 1, 1, 1, 1, 1, 1])  # both pair the public card: split
    assert r3.returns(t) == (0, 0)
    t = _play(r3, [2, 1, 1, 1, 1, 1, 1])  # P2 pairs
    assert r3.returns(t) == (-1, 1)


def test_die_roll_poker_rules():
    r = gt.make_rules("die_roll_poker")
    s = _play(r, [2, 0])  # P1 rolls 3, P2 rolls 1
    assert r.current_player(s) == 0 and r.legal_actions(s) == [1, 2]
    s = _play(r, [2, 0, 2, 1])
    assert r.current_player(s) == CHANCE
    assert _split(r.chance_outcomes(s)) == (list(range(6)), [1 / 6] * 6)
    s = _play(r, [2, 0, 2, 1, 3, 5])  # P1 rolls 4 (sum 7), P2 rolls 6 (sum 7)
    assert r.information_state(s, 0) == "P0 dice:3,4 | round1: rc | round2: "
    assert r.abstract_information_state(s, 0) is None
    t = _play(r, [2, 0, 2, 1, 3, 5, 2, 1])
    assert r.returns(t) == (0, 0)  # equal sums split
    t = _play(r, [2, 0, 2, 1, 3, 4, 2, 2, 1])  # P2 sum 6; round 2 bet 4, raise 4, call
    assert r.returns(t) == (11, -11)
    assert r.returns(_play(r, [2, 0, 2, 0])) == (1, -1)
    # fold_always_legal adds folds at round start
    f = gt.make_rules("die_roll_poker", fold_always_legal=True)
    assert f.legal_actions(_play(f, [2, 0])) == [0, 1, 2]
    assert f.returns(_play(f, [2, 0, 0])) == (-1, 1)


def test_die_roll_poker_ir_and_skew():
    r = gt.make_rules("die_roll_poker", abstraction="ir")
    a = _play(r, [0, 0, 2, 1, 4, 1])  # P1 rolls 1 then 5
    b = _play(r, [2, 0, 2, 1, 2, 1])  # P1 rolls 3 then 3
    assert r.information_state(a, 0) != r.information_state(b, 0)
    assert r.abstract_information_state(a, 0) == r.abstract_information_state(b, 0)
    assert r.abstract_information_state(a, 0) == "P0 sum:6 | round1: rc | round2: "
    c = _play(r, [2, 0, 2])  # round 1: unchanged key
    assert r.abstract_information_state(c, 1) == r.information_state(c, 1)
    sk = gt.make_rules("die_roll_poker", skew=0.5)
    t = _play(sk, [0, 5, 1, 1, 1, 0, 1, 1])  # P1 second die 2 (even), loses pot 2
    assert sk.returns(t) == (-1 + 0.5 * 2, 1 - 0.5 * 2)
    t = _play(sk, [0, 5, 1, 1, 2, 0, 1, 1])  # second die 3 (odd): no bonus
    assert sk.returns(t) == (-1, 1)
    t = _play(sk, [0, 5, 1, 1, 1, 0, 2, 0])  # no bonus after a fold
    assert sk.returns(t) == (1, -1)


# ---------------------------------------------------------------- parameters

BAD_PARAMS = [
    ("leduc_poker", {"suits": 1}, "suits"),
    ("generic_poker", {"num_types": 1}, "num_types"),
    ("generic_poker", {"num_types": 14}, "num_types"),
    ("generic_poker", {"num_types": 2.0}, "num_types"),
    ("generic_poker", {"cards_per_type": 0}, "cards_per_type"),
    ("generic_poker", {"num_types": 2, "cards_per_type": 1}, "cards_per_type"),
    ("generic_poker", {"max_raises": -1}, "max_raises"),
    ("generic_poker", {"max_raises": 5}, "max_raises"),
    ("generic_poker", {"num_bet_sizes": 0}, "num_bet_sizes"),
    ("generic_poker", {"num_bet_sizes": 5}, "num_bet_sizes"),
    ("die_roll_poker", {"skew": -0.1}, "skew"),
    ("die_roll_poker", {"skew": float("nan")}, "skew"),
    ("die_roll_poker", {"skew": "0"}, "skew"),
    ("die_roll_poker", {"abstraction": "sum"}, "abstraction"),
    ("die_roll_poker", {"fold_always_legal": None}, "fold_always_legal"),
    ("kuhn_poker", {"cards": 4}, "cards"),
]


@pytest.mark.parametrize("name,params,word", BAD_PARAMS, ids=[f"{n}-{w}" for n, _, w in BAD_PARAMS])
def test_invalid_parameters(name, params, word):
    with pytest.raises(ValueError, match=word):
        gt.make_rules(name, **params)


def test_parameters_listed():
    av = gt.available()
    assert av["kuhn_poker"] == {} and av["leduc5"] == {}
    assert av["leduc_poker"] == {"suits": True}
    assert av["generic_poker"] == {
        "num_types": 3,
        "cards_per_type": 3,
        "max_raises": 2,
        "num_bet_sizes": 2,
    }
    assert av["die_roll_poker"] == {"skew": 0.0, "abstraction": None, "fold_always_legal": False}
    assert gt.make_rules("generic_poker").params() == av["generic_poker"]
    assert gt.make_rules("die_roll_poker", skew=1).params()["skew"] == 1.0
