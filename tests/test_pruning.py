"""Regret-based pruning (jaxcfr.pruning): partial pruning, Interval RBP, Total RBP."""

import dataclasses
import math

import jax
import numpy as np
import pytest

import games_tensor as gt
import jaxcfr
from games_tensor import TERMINAL, Rules
from jaxcfr import pruning
from jaxcfr.pruning import _subgame


class Dominated(Rules):
    """P1 picks Safe (0) or Risky (1) at 'root'. After Safe, P2 picks h/t: P1 gets +1 / -1.
    After Risky, P1 picks again at 'deep' (0/1), then P2 picks h/t: P1 gets -2 / -3 after
    deep 0 and -3 / -2 after deep 1. P2 sees nothing ('p2', one infoset). Every payoff
    after Risky (<= -2) is below every payoff after Safe (>= -1): Risky is strictly
    dominated. The equilibrium: P1 Safe, P2 t, value -1; against it P2's h is worse
    too (CBV -1 vs +1 for P2). 11 histories, 3 infosets."""

    name = "dominated"
    num_actions = 2

    def initial_state(self):
        return ()

    def current_player(self, s):
        if s == () or s == (1,):
            return 0
        if (s[0] == 0 and len(s) == 2) or (s[0] == 1 and len(s) == 3):
            return TERMINAL
        return 1

    def legal_actions(self, s):
        return (0, 1)

    def apply(self, s, a):
        return s + (a,)

    def returns(self, s):
        if s[0] == 0:
            u = 1.0 if s[1] == 0 else -1.0
        else:
            u = -2.0 if s[1] == s[2] else -3.0
        return (u, -u)

    def information_state(self, s, player):
        if player == 1:
            return "p2"
        return "root" if s == () else "deep"


def _dominated():
    return gt.compile(Dominated())


def _ids(game):
    return {k: i for i, k in enumerate(game.infoset_keys)}


_STEPS = {}


def _iterate(solver, game, n, state=None):
    """``n`` iterations, one jitted update per solver (compiled once per solver)."""
    state = solver.init(game) if state is None else state
    if solver not in _STEPS:
        _STEPS[solver] = jax.jit(solver.update)
    for _ in range(n):
        state = _STEPS[solver](game, state)
    return state


@pytest.mark.parametrize(
    "base",
    ["cfr", pytest.param("cfr_plus", marks=pytest.mark.slow), "pcfr_plus"],
)
def test_partial_pruning_is_bit_identical(base):
    """Partial pruning only skips zero-reach work: regrets and sums equal bit for bit."""
    game = gt.load("leduc_poker", suits=False)
    plain = getattr(jaxcfr, base)()
    pruned = pruning.regret_pruning(plain, "partial")
    a = _iterate(plain, game, 60)
    b = _iterate(pruned, game, 60)
    for name in ("regrets", "strategy_sum", "prediction"):
        assert np.array_equal(np.asarray(getattr(a, name)), np.asarray(getattr(b, name))), name
    # nodes: simultaneous iteration 1 is uniform (every reach positive), so both
    # traversals enter all H histories; later zero-reach subtrees are skipped
    H = game.meta.num_histories
    simultaneous = getattr(jaxcfr, base)(alternating=False)
    one = _iterate(pruning.regret_pruning(simultaneous, "partial"), game, 1)
    assert int(one.nodes_last) == 2 * H
    assert 0 < int(b.nodes_last) < 2 * H
    none = _iterate(pruning.regret_pruning(plain, "none"), game, 5)
    assert pruning.nodes_touched(none) == 5 * 2 * H


def test_dominated_branch_pruned_for_good_and_freed():
    """Theorem 2 / Corollary 1: the strictly dominated branch (root, Risky) is pruned
    from some iteration on and stays pruned; the regrets of 'deep' (in D(root, Risky))
    are freed, and its average sums and those of (root, Risky) discarded, so P1 stores
    only root's 2 regrets + root's Safe average (3 of 8 own entries). P2's h (a leaf
    action, nothing below to free) is pruned too and its average discarded: 3 of 4."""
    game = _dominated()
    ids = _ids(game)
    root, deep = ids["root"], ids["deep"]
    solver = jaxcfr.cfr(pruning="total", threshold=0.1, check_every=1)
    state = _iterate(solver, game, 20)
    seen = []
    for _ in range(10):
        state = _iterate(solver, game, 20, state)
        seen.append(bool(state.pruned[root, 1]))
        assert np.all(np.asarray(state.regrets[deep]) == 0)
        assert np.all(np.asarray(state.strategy_sum[deep]) == 0)
        assert float(state.strategy_sum[root, 1]) == 0.0
        assert bool(state.discarded[root, 1])
    assert all(seen)
    assert bool(state.pruned[ids["p2"], 0]) and bool(state.discarded[ids["p2"], 0])
    # P1: root's 2 regrets + 1 average entry; P2: 2 + 1
    assert np.asarray(state.stored).tolist() == [3, 3]
    assert pruning.space_fraction(game, state) == pytest.approx(6 / 12)
    # P2 moves last and 'p2' holds the Safe history: no infoset is opponent-frozen
    assert pruning.space_fraction(game, state, count="both") == pytest.approx(6 / 12)
    # nodes on a non-check iteration, counted by hand: P1's traversal enters root, the P2
    # node after Safe and its t terminal (P2 never plays h: zero reach); P2's enters
    # root, the P2 node and its t terminal (h is P2's own pruned action; P1 never plays
    # Risky) -> 3 + 3 = 6
    solver_k = jaxcfr.cfr(pruning="total", threshold=0.1, check_every=1000)
    state_k = _iterate(solver_k, game, 1, state._replace(iteration=np.int32(1)))
    assert int(state_k.nodes_last) == 6
    avg = np.asarray(jaxcfr.average_policy(game, state))
    assert avg[root].tolist() == [1.0, 0.0]
    assert float(jaxcfr.exploitability(game, avg)) < 0.05


def test_space_count_both_by_hand():
    """``count="both"`` on Kuhn poker (actions 0 pass, 1 bet), masks set by hand.
    Pruned: P1's bet at root with J and Q, P2's bet after a pass with Q and K;
    discarded: P1's J bet, P2's Q and K bets. ``own``: no own infoset lies below any of
    these (P1's bet and P2's bet end P1's / P2's own moves), so all 12 regrets of each
    player stay, averages 12 - 1 (P1) and 12 - 2 (P2): 45 of 48. ``both`` also drops:
    regrets of P1's 'J | pb' (facing P2 Q or K, both pruned bets; 'Q | pb' and 'K | pb'
    can face J's live bet) and of P2's 'K | b' (facing P1's J or Q bet, both pruned);
    averages of 'J | pb' (Q and K bets discarded), not of 'K | b' (Q's bet not
    discarded): P1 10 + 9, P2 10 + 10 = 39 of 48."""
    game = gt.load("kuhn_poker")
    ids = _ids(game)
    solver = jaxcfr.cfr(pruning="total", threshold=0.1, check_every=1)
    init = solver.init(game)
    pruned = np.zeros(init.pruned.shape, bool)
    discarded = np.zeros(init.pruned.shape, bool)
    for key in ("P0 card:J | ", "P0 card:Q | ", "P1 card:Q | p", "P1 card:K | p"):
        pruned[ids[key], 1] = True
    for key in ("P0 card:J | ", "P1 card:Q | p", "P1 card:K | p"):
        discarded[ids[key], 1] = True
    state = init._replace(pruned=pruned, discarded=discarded)
    assert np.asarray(pruning.stored_entries(game, state)).tolist() == [23, 22]
    assert np.asarray(pruning.stored_entries(game, state, "both")).tolist() == [19, 20]
    state = state._replace(stored=pruning.stored_entries(game, state))
    assert pruning.space_fraction(game, state) == pytest.approx(45 / 48)
    batch = jax.tree.map(lambda a, b: np.stack([a, b]), state, init)
    both = pruning.space_fraction(game, batch, count="both")
    np.testing.assert_allclose(both, [39 / 48, 1.0])
    with pytest.raises(ValueError, match="count"):
        pruning.space_fraction(game, state, count="mine")


@pytest.mark.parametrize("plus", [False, True])
def test_reset_7_8_by_hand(plus):
    """Pruning of (root, Risky) ends at t = 4 and the branch is reset by (7)/(8).

    Set up before iteration 4: P2's plans faced so far sum to (h 2, t 1), its regrets
    (1, 0) make it play h at t = 4, so the plans faced over t = 1..4 sum to (3, 1) and
    the opponent average is (3/4, 1/4). P1: (root, Risky) pruned with bound 100 (so (9)
    fails), V(root) = -12, R(root) = (3, -5). At t = 4 P1 plays Safe, v(root) = +1, so
    V(root) = -11. CBVs against (3/4, 1/4): CBV(deep, 0) = -3/2 - 3/4 = -2.25,
    CBV(deep, 1) = -9/4 - 1/2 = -2.75, CBV(deep) = CBV(root, Risky) = -2.25.
    (7): R(root, Risky) = 4 (-2.25) - (-11) = 2.
    (8): R(deep, 0) = 4 (-2.25 + 2.25) = 0, R(deep, 1) = 4 (-2.75 + 2.25) = -2,
         V(deep) = 4 (-2.25) = -9.
    Then (5) at once: (root, Risky): 4 (-2.25) = -9 >= V(root) = -11, not pruned;
    (deep, 1): 4 (-2.75) = -11 < V(deep) = -9 and not the CBR: pruned, bound -11.
    With CFR+ (RM+) the reset regrets are floored at 0: R(deep, 1) = 0.
    """
    game = _dominated()
    ids = _ids(game)
    root, deep, p2 = ids["root"], ids["deep"], ids["p2"]
    solver = (jaxcfr.cfr_plus if plus else jaxcfr.cfr)(
        pruning="total", threshold=0.0, check_every=1
    )
    s = solver.init(game)
    regrets = np.zeros((3, 2), np.float32)
    regrets[root] = (3.0, -5.0)
    regrets[p2] = (1.0, 0.0)
    pruned_mask = np.zeros((3, 2), bool)
    pruned_mask[root, 1] = True
    bound = np.zeros((3, 2), np.float32)
    bound[root, 1] = 100.0
    values = np.zeros(3, np.float32)
    values[root] = -12.0
    faced = np.zeros((3, 2), np.float32)
    faced[p2] = (2.0, 1.0)
    s = s._replace(
        regrets=regrets,
        pruned=pruned_mask,
        bound=bound,
        values_sum=values,
        plan_sum=faced,
        iteration=np.int32(3),
    )
    s = jax.jit(solver.update)(game, s)
    np.testing.assert_allclose(float(s.values_sum[root]), -11.0, atol=1e-6)
    np.testing.assert_allclose(float(s.regrets[root, 1]), 2.0, atol=1e-5)
    np.testing.assert_allclose(np.asarray(s.regrets[deep]), [0.0, 0.0 if plus else -2.0], atol=1e-5)
    np.testing.assert_allclose(float(s.values_sum[deep]), -9.0, atol=1e-5)
    assert np.asarray(s.pruned[root]).tolist() == [False, False]
    assert np.asarray(s.pruned[deep]).tolist() == [False, True]
    np.testing.assert_allclose(float(s.bound[deep, 1]), -11.0, atol=1e-5)


def test_discard_uses_the_whole_history_average():
    """The discard test pi_i^{avg}(I, a) <= C / sqrt(t) must hold for the average over
    all iterations (the faced-plan sums) and for the stored average sums (which, after an
    earlier discard, hold only the play since the branch re-expanded).

    Before iteration t = 4 (C = 0.5, threshold 0.5 / sqrt(4) = 0.25, checks every
    iteration): P2's (p2, h) is pruned with bound -100 (so (9) holds: U(p2, h) = 3,
    pi_{-2}(p2) = 1, -97 <= V(p2)); its regrets (-50, 1) make it play t. Its average sums
    are (sum_h, 3), its faced-plan sums (faced_h, 2). At t = 4 P2 plays t: sums
    (sum_h, 4), plans faced (faced_h, 3). Cases (faced_h, sum_h):
    * (2, 0.5): whole-history reach of h 2 / 5 = 0.4 > 0.25: kept, S(p2, h) stays 0.5
      (the stored average alone, 0.5 / 4.5 = 0.11 <= 0.25, discarded it before session 25).
    * (0.2, 0.5): 0.2 / 3.2 = 0.0625 and 0.11, both <= 0.25: discarded, S(p2, h) = 0.
    * (0.2, 2): stored reach 2 / 6 = 0.33 > 0.25: kept.
    P1 (regrets (5, 0): plays Safe) is not asserted."""
    game = _dominated()
    ids = _ids(game)
    root, p2 = ids["root"], ids["p2"]
    solver = jaxcfr.cfr(pruning="total", threshold=0.5, check_every=1)
    step = jax.jit(solver.update)
    for faced_h, sum_h, discard in [(2.0, 0.5, False), (0.2, 0.5, True), (0.2, 2.0, False)]:
        s = solver.init(game)
        regrets = np.zeros((3, 2), np.float32)
        regrets[root] = (5.0, 0.0)
        regrets[p2] = (-50.0, 1.0)
        pruned_mask = np.zeros((3, 2), bool)
        pruned_mask[p2, 0] = True
        bound = np.zeros((3, 2), np.float32)
        bound[p2, 0] = -100.0
        ssum = np.zeros((3, 2), np.float32)
        ssum[root] = (3.0, 0.0)
        ssum[p2] = (sum_h, 3.0)
        faced = np.zeros((3, 2), np.float32)
        faced[root] = (3.0, 0.0)
        faced[p2] = (faced_h, 2.0)
        s = s._replace(
            regrets=regrets,
            strategy_sum=ssum,
            pruned=pruned_mask,
            bound=bound,
            plan_sum=faced,
            iteration=np.int32(3),
        )
        s = step(game, s)
        assert bool(s.pruned[p2, 0])  # (9) held
        np.testing.assert_allclose(np.asarray(s.plan_sum[p2]), [faced_h, 3.0])
        assert bool(s.discarded[p2, 0]) == discard, (faced_h, sum_h)
        expect = [0.0 if discard else sum_h, 4.0]
        np.testing.assert_allclose(np.asarray(s.strategy_sum[p2]), expect)


@pytest.mark.parametrize(
    "base,mode,rule",
    [
        ("cfr", "total", "worst_case"),
        pytest.param("cfr", "total", "paper", marks=pytest.mark.slow),
        pytest.param("cfr_plus", "total", "worst_case", marks=pytest.mark.slow),
        pytest.param("cfr", "interval", "worst_case", marks=pytest.mark.slow),
        pytest.param("cfr_plus", "interval", "worst_case", marks=pytest.mark.slow),
    ],
)
def test_rbp_converges_on_rank_only_leduc(base, mode, rule, x64):
    """Total / Interval RBP reach the LP value, with exploitability within 2x of the
    unpruned solver at the same iteration (Theorem 1: the same bound), over 3 seeds
    (random initial regrets); checks every 10 iterations under either check rule."""
    game = gt.load("leduc_poker", suits=False)
    lp = jaxcfr.solve_lp(game)
    plain = getattr(jaxcfr, base)()
    solver = getattr(jaxcfr, base)(pruning=mode, threshold=0.01, check_rule=rule)
    n = 600
    ref = jaxcfr.run(plain, game, n, n, num_seeds=3, init_scale=1.0)
    res = jaxcfr.run(solver, game, n, n, num_seeds=3, init_scale=1.0)
    assert np.all(res.exploitability[:, -1] <= 2.0 * ref.exploitability[:, -1] + 1e-4)
    for i in range(3):
        state = jax.tree_util.tree_map(lambda x, i=i: x[i], res.state)
        value = float(jaxcfr.expected_value(game, jaxcfr.average_policy(game, state))[0])
        assert abs(value - lp.value) <= res.exploitability[i, -1] + 1e-6
        assert int(state.pruned.sum()) > 0  # it did prune


@pytest.mark.slow
@pytest.mark.parametrize("base", ["cfr", "cfr_plus"])
def test_total_rbp_converges_on_drp(base, x64):
    game = gt.load("die_roll_poker")
    lp = jaxcfr.solve_lp(game)
    n = 1000
    ref = jaxcfr.run(getattr(jaxcfr, base)(), game, n, n, num_seeds=2, init_scale=1.0)
    res = jaxcfr.run(
        getattr(jaxcfr, base)(pruning="total", threshold=0.01),
        game,
        n,
        n,
        num_seeds=2,
        init_scale=1.0,
    )
    assert np.all(res.exploitability[:, -1] <= 2.0 * ref.exploitability[:, -1] + 1e-4)
    for i in range(2):
        state = jax.tree_util.tree_map(lambda x, i=i: x[i], res.state)
        value = float(jaxcfr.expected_value(game, jaxcfr.average_policy(game, state))[0])
        assert abs(value - lp.value) <= res.exploitability[i, -1] + 1e-6
    assert pruning.space_fraction(game, res.state).max() < 1.0


def _p2_branch_state(solver, game, t0):
    """The dominated game before iteration t0 + 1: P1's (root, Risky) pruned for good
    (bound -1000, V(root) = 0), P2's (p2, h) pruned with V(p2) = -20, bound -27 (slack 7)."""
    ids = _ids(game)
    root, p2 = ids["root"], ids["p2"]
    s = solver.init(game)
    regrets = np.zeros((3, 2), np.float32)
    regrets[root] = (3.0, -5.0)
    pruned_mask = np.zeros((3, 2), bool)
    pruned_mask[root, 1] = pruned_mask[p2, 0] = True
    bound = np.zeros((3, 2), np.float32)
    bound[root, 1], bound[p2, 0] = -1000.0, -27.0
    values = np.zeros(3, np.float32)
    values[p2] = -20.0
    return s._replace(
        regrets=regrets,
        pruned=pruned_mask,
        bound=bound,
        values_sum=values,
        iteration=np.int32(t0),
    )


@pytest.mark.parametrize(
    "rule,k,end",
    [
        ("paper", 3, 4),
        ("worst_case", 3, 3),
        pytest.param("paper", 1, 4, marks=pytest.mark.slow),
        pytest.param("eager", 3, 4, marks=pytest.mark.slow),
    ],
)
def test_branch_ends_exactly_when_9_fails(rule, k, end):
    """By hand on the dominated game, from iteration 1 (state :func:`_p2_branch_state`):
    P1 plays Safe (Risky pruned), P2 plays t ((p2, h) pruned), so per iteration P2's
    v(p2) = +1 and (9)'s left side grows by pi_{-2}(p2) U(p2, h) = 1 x 3 (U(p2, h) = 3,
    P2's best payoff after h): the slack V(p2) - B = 7 - 2t is 5, 3, 1, -1 after
    iterations 1-4, so (9) fails at iteration 4. The paper rule keeps the branch through
    the scheduled check at 3 (k = 3) and ends it at 4 (a forced check), as the k = 1
    rule does; the worst-case rule ends it at the check at 3 (slack 1 < (k - 1) x
    m(p2) (U(p2, h) - L(p2)) = 2 x (3 - (-1)) = 8). At the end the reset (7) gives
    R(p2, h) = 4 CBV(p2, h) - V(p2) = 4 (-1) - (-16) = 12 (the opponent's faced average
    is Safe), and (5) 4 (-1) < -16 fails: not pruned again. (root, Risky) stays pruned."""
    game = _dominated()
    ids = _ids(game)
    root, p2 = ids["root"], ids["p2"]
    assert pruning.tables(game).upper[1][:, p2 - game.meta.infosets_per_player[0]][0] == 3.0
    solver = jaxcfr.cfr(pruning="total", threshold=0.0, check_every=k, check_rule=rule)
    s = _p2_branch_state(solver, game, 0)
    step = jax.jit(solver.update)
    kept = []
    for _ in range(5):
        s = step(game, s)
        kept.append(bool(s.pruned[p2, 0]))
        assert bool(s.pruned[root, 1])
        if int(s.iteration) == end:
            np.testing.assert_allclose(float(s.values_sum[p2]), -20.0 + end, atol=1e-5)
            np.testing.assert_allclose(float(s.regrets[p2, 0]), -end - (-20.0 + end), atol=1e-5)
    assert kept == [t < end for t in range(1, 6)]


def test_live_stretch_stops_where_9_fails():
    """``run_live`` under the paper rule (k = 10) on the hand-checked state of
    :func:`test_branch_ends_exactly_when_9_fails`: the stretch stops before iteration 4,
    which runs as a forced check on the full game, so the branch ends at 4 and the
    iterates are the dense solver's."""
    game = _dominated()
    p2 = _ids(game)["p2"]
    solver = jaxcfr.cfr(pruning="total", threshold=0.0, check_every=10, check_rule="paper")
    start = _p2_branch_state(solver, game, 0)
    dense = _iterate(solver, game, 3, start)
    assert bool(dense.pruned[p2, 0])
    dense = _iterate(solver, game, 1, dense)
    assert not bool(dense.pruned[p2, 0])
    stats = {}
    live = pruning.run_live(solver, game, 4, start, stats=stats)
    assert stats["forced"] == 1
    assert int(live.iteration) == 4
    for name in ("regrets", "strategy_sum", "values_sum", "bound", "plan_sum"):
        np.testing.assert_allclose(
            np.asarray(getattr(live, name)), np.asarray(getattr(dense, name)), atol=1e-5
        )
    assert np.array_equal(np.asarray(live.pruned), np.asarray(dense.pruned))
    assert stats["dense"] == 1  # the forced iteration 4 ran in the dense loop


@pytest.mark.slow
def test_live_dense_loop_after_a_forced_check():
    """After the forced check at 4 (state of :func:`test_live_stretch_stops_where_9_fails`)
    ``run_live`` runs the window through the check at 10 in the dense loop (7
    iterations), then stretches to 12: the dense iterates, as without the loop."""
    game = _dominated()
    solver = jaxcfr.cfr(pruning="total", threshold=0.0, check_every=10, check_rule="paper")
    start = _p2_branch_state(solver, game, 0)
    dense = _iterate(solver, game, 12, start)
    stats = {}
    live = pruning.run_live(solver, game, 12, start, stats=stats)
    assert stats["forced"] >= 1 and stats["dense"] >= 7
    for name in ("regrets", "strategy_sum", "values_sum", "bound", "plan_sum"):
        np.testing.assert_allclose(
            np.asarray(getattr(live, name)), np.asarray(getattr(dense, name)), atol=1e-5
        )
    assert np.array_equal(np.asarray(live.pruned), np.asarray(dense.pruned))
    # without the dense loop: one host check per forced iteration, the same iterates
    stats = {}
    host = pruning.run_live(solver, game, 12, start, stats=stats, dense_after_forced=False)
    assert stats["dense"] == 0
    np.testing.assert_allclose(np.asarray(host.regrets), np.asarray(dense.regrets), atol=1e-5)


_KUHN_PRUNED = ("P0 card:J | ", "P0 card:Q | ", "P1 card:Q | p", "P1 card:K | p")


def _kuhn_pruned(game):
    """Kuhn's mask of :func:`test_space_count_both_by_hand`: P1's bet with J and Q, P2's
    bet after a pass with Q and K."""
    ids = _ids(game)
    pruned = np.zeros((game.num_infosets, game.num_actions), bool)
    for key in _KUHN_PRUNED:
        pruned[ids[key], 1] = True
    return pruned


def test_opponent_frozen_by_hand():
    """Under :func:`_kuhn_pruned`, by hand: P1's 'J | pb' holds the histories (J, Q)
    and (J, K) after pass-bet, both below a pruned P2 bet (Q | p, K | p); P2's 'K | b'
    holds (J, K) and (Q, K) after a bet, both below a pruned P1 bet (J, Q). Every other
    infoset holds a history with no pruned opponent sequence on its path ('Q | pb': (Q,
    J) after J's live bet; 'J | b', 'Q | b': K's live bet; the first moves: none). The
    layout leaving them out keeps the other 10 rows (none is below an own pruned
    sequence: each pruned bet ends its owner's moves) and hangs their catch-up on
    their parent sequences: P1's (J, pass) and P2's empty sequence."""
    game = gt.load("kuhn_poker")
    keys = game.infoset_keys
    pruned = _kuhn_pruned(game)
    frozen = pruning.opponent_frozen(game, pruned)
    assert sorted(keys[i] for i in np.nonzero(frozen)[0]) == ["P0 card:J | pb", "P1 card:K | b"]
    lay = pruning.layout(game, pruned, leave_out_frozen=True)
    kept = sorted(keys[i] for i in lay.rows if i < game.num_infosets)
    assert kept == sorted(set(keys) - {"P0 card:J | pb", "P1 card:K | b"})
    ids = _ids(game)
    p1, p2 = lay.frozen
    assert p1["rows"].tolist() == [ids["P0 card:J | pb"]]
    assert p2["rows"].tolist() == [ids["P1 card:K | b"]]
    for bad in (pruned.T, pruned[:-1]):  # action-major, or not the game's infosets
        with pytest.raises(ValueError, match="pruned"):
            pruning.opponent_frozen(game, bad)
        with pytest.raises(ValueError, match="pruned"):
            pruning.dead_infosets(game, bad)
    # P1's front: (J, pass) in its compact [A, n'] block (row of 'J | ', action 0); P2's
    # front: the empty sequence, A n_2' (take_near reads 1 there)
    n1 = lay.game.meta.infosets_per_player[0]
    row_j = int(np.nonzero(lay.rows == ids["P0 card:J | "])[0][0])
    assert int(lay.extra["front"][0][p1["front"][0]]) == 0 * n1 + row_j
    n2 = lay.game.meta.infosets_per_player[1]
    assert int(lay.extra["front"][1][p2["front"][0]]) == 2 * n2
    assert pruning.layout(game, pruned).frozen == ()  # the default keeps them


def _kuhn_catch_up_setup():
    """The layout of :func:`test_opponent_frozen_by_hand` with a master copy and window
    sums set by hand (see :func:`test_frozen_catch_up_by_hand`)."""
    game = gt.load("kuhn_poker")
    ids = _ids(game)
    pruned = _kuhn_pruned(game)
    lay = pruning.layout(game, pruned, leave_out_frozen=True)
    jpb, kb = ids["P0 card:J | pb"], ids["P1 card:K | b"]
    shape = pruned.shape
    regrets = np.ones(shape, np.float32)
    regrets[jpb], regrets[kb] = (3.0, 1.0), (0.0, -2.0)
    master = pruning.regret_pruning(jaxcfr.cfr(), "total").init(game)
    master = jax.tree.map(np.array, master)._replace(
        regrets=regrets,
        pruned=pruned,
        strategy_sum=np.full(shape, 10.0, np.float32),
        plan_sum=np.full(shape, 20.0, np.float32),
    )
    master = _subgame.host_blocks(game, master)  # run_live's master copy: [A, n_p] blocks
    c = {}
    for acc, (v1, v2) in (("aS", (2.0, 4.0)), ("aX", (6.0, 8.0))):
        fronts = [np.zeros(f.shape, np.float32) for f in lay.extra["front"]]
        fronts[0][lay.frozen[0]["front"][0]] = v1
        fronts[1][lay.frozen[1]["front"][0]] = v2
        c[acc] = tuple(fronts)
    c["dec"] = np.ones((), np.float32)
    return game, lay, master, c, jpb, kb


def _catch_up_on(master, game, lay, c, tolerance):
    """run_live's catch-up of the left-out frozen rows on a host master copy: the device
    copy's frozen columns (``_gather``), the host pass (``_catch_up``), the write
    (``_write_frozen``, as ``_scatter`` does); returns the new host master copy."""
    from jaxcfr.pruning import _subgame

    dev = _subgame._device(master)
    _, at = _subgame._gather(dev, lay)
    sums = _subgame._catch_up(dev, game, lay, c, at, tolerance)
    fcols = _subgame._device_indices(dev, lay)["fcols"]
    return _subgame._host(_subgame._write_frozen(dev, fcols, sums))


def test_frozen_catch_up_by_hand():
    """``_catch_up`` on the layout of :func:`test_opponent_frozen_by_hand`, window sums
    set by hand: P1's front (J, pass) A_S = 2, A_X = 6; P2's front (empty) A_S = 4,
    A_X = 8. 'J | pb' has regrets (3, 1): sigma (3/4, 1/4), so S += 2 sigma = (1.5,
    0.5), X += 6 sigma = (4.5, 1.5); 'K | b' has regrets (0, -2): uniform (1/2, 1/2),
    S += (2, 2), X += (4, 4). Every other row is left as it was."""
    from jaxcfr.pruning._solver import from_blocks

    game, lay, blocks, c, jpb, kb = _kuhn_catch_up_setup()
    master = from_blocks(_catch_up_on(blocks, game, lay, c, 0.0), np)
    shape = master.regrets.shape
    want_s = np.full(shape, 10.0)
    want_x = np.full(shape, 20.0)
    want_s[jpb] += (1.5, 0.5)
    want_x[jpb] += (4.5, 1.5)
    want_s[kb] += (2.0, 2.0)
    want_x[kb] += (4.0, 4.0)
    np.testing.assert_array_equal(master.strategy_sum, want_s)
    np.testing.assert_array_equal(master.plan_sum, want_x)


def test_catch_up_cache_follows_its_inputs():
    """rho (the frozen rows' plan below their front) is cached on the layout: reused while
    the frozen rows' regrets, their pruned bits and the tolerance are those it came from,
    recomputed when one changes. By hand, on :func:`test_frozen_catch_up_by_hand`'s
    setup (P1's front A_S = 2): 'J | pb' regrets (3, 1) give sigma (3/4, 1/4) at
    tolerance 0, (1, 0) at tolerance 2 (only 3 > 2); then regrets (0, 5): (0, 1)."""
    game, lay, master, c, jpb, _ = _kuhn_catch_up_setup()
    steps = [(0.0, None, (1.5, 0.5), 1), (0.0, None, (1.5, 0.5), 1)]
    steps += [(2.0, None, (2.0, 0.0), 2), (2.0, (0.0, 5.0), (0.0, 2.0), 3)]
    n0 = master.blocks[0]["R"].shape[1]
    col = jpb - n0 if jpb >= n0 else jpb
    blk = master.blocks[int(jpb >= n0)]
    for tol, regrets, add, computed in steps:
        if regrets is not None:
            blk["R"][:, col] = regrets
        out = _catch_up_on(master, game, lay, c, tol).blocks[int(jpb >= n0)]
        np.testing.assert_array_equal(out["S"][:, col] - blk["S"][:, col], add)
        assert lay.cache["computed"] == computed


def _kuhn_stretch_start(solver, game, plus):
    """Kuhn before iteration 11 (k = 10: the next 9 iterations are one stretch), mask
    :func:`_kuhn_pruned` with bounds -1000 (nothing ends), random regrets (>= 0 under
    CFR+), average and faced-plan sums."""
    pruned = _kuhn_pruned(game)
    rng = np.random.default_rng(0)
    shape = pruned.shape
    regrets = rng.uniform(-1.0 if not plus else 0.0, 3.0, shape).astype(np.float32)
    regrets[pruned] = 0.0
    return solver.init(game)._replace(
        regrets=regrets,
        pruned=pruned,
        bound=np.where(pruned, -1000.0, 0.0).astype(np.float32),
        strategy_sum=rng.uniform(0.0, 5.0, shape).astype(np.float32),
        plan_sum=rng.uniform(0.0, 5.0, shape).astype(np.float32),
        iteration=np.int32(10),
    )


@pytest.mark.slow  # 12-16 s at load 7 (a dense update and two stretch shapes compile)
@pytest.mark.parametrize("plus", [False, True])
def test_live_stretch_without_frozen_rows(plus):
    """One stretch (iterations 11-19) of ``run_live`` leaving out Kuhn's two
    opponent-frozen rows (:func:`test_opponent_frozen_by_hand`) against the dense solver
    over the same iterations, CFR (uniform averaging) and CFR+ (linear): the regrets,
    V and bounds are bit-identical to the stretch that keeps the rows (and the frozen
    rows' regrets to the dense solver's: unchanged); the average and faced-plan sums
    equal the dense ones to float32 rounding (|diff| <= 2e-6 + 1e-6 |S|: one product of
    window sums against nine rounded adds), the frozen rows' included, which the window
    moved by more than 0.5 (so a missing catch-up fails)."""
    game = gt.load("kuhn_poker")
    solver = (jaxcfr.cfr_plus if plus else jaxcfr.cfr)(
        pruning="total", threshold=0.0, check_every=10, check_rule="paper"
    )
    start = _kuhn_stretch_start(solver, game, plus)
    dense = _iterate(solver, game, 9, start)
    frozen = pruning.opponent_frozen(game, start.pruned)
    stats = {}
    out = pruning.run_live(solver, game, 19, start, stats=stats)
    assert stats["frozen_rows"] == 2 and stats["checks"] == 1 and int(out.iteration) == 19
    kept = pruning.run_live(solver, game, 19, start, leave_out_frozen=False)
    for name in ("regrets", "values_sum", "bound"):
        np.testing.assert_array_equal(getattr(out, name), getattr(kept, name))
    np.testing.assert_array_equal(out.regrets[frozen], np.asarray(dense.regrets)[frozen])
    np.testing.assert_array_equal(out.regrets[frozen], start.regrets[frozen])
    for name in ("strategy_sum", "plan_sum"):
        want = np.asarray(getattr(dense, name))
        assert np.abs(want - getattr(start, name))[frozen].max() > 0.5
        np.testing.assert_allclose(getattr(out, name), want, rtol=1e-6, atol=2e-6)
    np.testing.assert_allclose(out.regrets, np.asarray(dense.regrets), rtol=0, atol=1e-5)


@pytest.mark.slow  # about 30 s per base at load 7
@pytest.mark.parametrize("base", ["cfr", "cfr_plus"])
def test_live_stretch_without_frozen_rows_leduc(base, x64):
    """Rank-only Leduc, float64: 300 dense Total RBP iterations (C = 0.1, k = 5,
    worst-case rule: no stretch stops early), then one stretch (301-304) of ``run_live``
    leaving the opponent-frozen rows out, against the dense solver over the same
    iterations: regrets, V and bounds bit-identical to the stretch keeping the rows,
    the frozen rows' regrets bit-identical to the dense ones; all regrets within
    1e-12 and the average and faced-plan sums within 1e-12 relative of the dense ones
    (float64 rounding), the frozen rows' sums included, which the window moved."""
    game = gt.load("leduc_poker", suits=False)
    solver = getattr(jaxcfr, base)(pruning="total", threshold=0.1, check_every=5)
    start = _iterate(solver, game, 300)
    dense = _iterate(solver, game, 4, start)
    frozen = pruning.opponent_frozen(game, start.pruned) & ~pruning.dead_infosets(
        game, start.pruned
    )
    assert frozen.sum() > 0
    stats = {}
    out = pruning.run_live(solver, game, 304, start, stats=stats)
    assert stats["frozen_rows"] == frozen.sum() and stats["forced"] == 0
    kept = pruning.run_live(solver, game, 304, start, leave_out_frozen=False)
    for name in ("regrets", "values_sum", "bound"):
        np.testing.assert_array_equal(getattr(out, name), getattr(kept, name))
    np.testing.assert_array_equal(out.regrets[frozen], np.asarray(dense.regrets)[frozen])
    np.testing.assert_allclose(out.regrets, np.asarray(dense.regrets), rtol=0, atol=1e-12)
    for name in ("strategy_sum", "plan_sum"):
        want = np.asarray(getattr(dense, name))
        assert np.abs(want - np.asarray(getattr(start, name)))[frozen].max() > 0.5
        np.testing.assert_allclose(getattr(out, name), want, rtol=1e-12, atol=1e-12)


def _leduc_nested_start(solver, game, plus):
    """Rank-only Leduc before iteration 11 (k = 10: iterations 11-19 are one stretch),
    a hand-set mask: P2's raise after P1's check pruned with every card. Bounds -1000 at
    the pruned entries (nothing ends: 9 iterations move B or V by at most 9 x 13),
    random regrets (>= 0 under CFR+; 0 at the pruned entries), average and faced-plan
    sums."""
    keys = game.infoset_keys
    pruned = np.zeros((game.num_infosets, game.num_actions), bool)
    for i, key in enumerate(keys):
        if key.startswith("P1") and key.endswith("round1: c"):
            pruned[i, 2] = True  # raise
    rng = np.random.default_rng(1)
    shape = pruned.shape
    regrets = rng.uniform(-1.0 if not plus else 0.0, 3.0, shape)
    regrets[pruned] = 0.0
    return solver.init(game)._replace(
        regrets=regrets,
        pruned=pruned,
        bound=np.where(pruned, -1000.0, 0.0),
        strategy_sum=rng.uniform(0.0, 5.0, shape),
        plan_sum=rng.uniform(0.0, 5.0, shape),
        iteration=np.int32(10),
    )


@pytest.mark.parametrize("plus", [False, pytest.param(True, marks=pytest.mark.slow)])
def test_live_stretch_with_nested_frozen_rows(plus, x64):
    """Nested opponent-frozen rows (a frozen row whose parent sequence lies in a frozen
    row), which Total RBP's own masks on rank-only Leduc at 300 iterations did not
    produce (session 27). Under :func:`_leduc_nested_start`'s mask, by hand: every
    history of P1's infosets whose first round starts check-raise ('cr', 'crc | ...',
    'crrc | ...') passes P2's pruned raise, and every other P1 infoset holds a history
    that does not; no P2 infoset is frozen (P1 prunes nothing) and P2's infosets below
    its pruned raise are below its own pruned sequence (left out as such). So the frozen
    rows are P1's 57 'cr...' infosets, of which all but the three 'X | cr' are nested
    (their parent sequence, e.g. ('X | cr', call), is a frozen row's), down to the
    second round's 'cr' rows (two frozen rows above). One stretch (11-19) of ``run_live``
    leaving them out, against the dense Total RBP solver over the same 9 iterations
    (float64): the frozen rows' regrets unchanged (bit-identical to the dense ones), all
    regrets within 1e-12, and the average and faced-plan sums within 1e-12 relative of
    the dense ones, the nested rows' included, which the window moved (so a catch-up
    that dropped a parent's sigma from rho fails)."""
    game = gt.load("leduc_poker", suits=False)
    solver = (jaxcfr.cfr_plus if plus else jaxcfr.cfr)(
        pruning="total", threshold=0.1, check_every=10, check_rule="paper"
    )
    start = _leduc_nested_start(solver, game, plus)
    keys = game.infoset_keys
    want = np.array([k.startswith("P0") and "round1: cr" in k for k in keys])
    frozen = pruning.opponent_frozen(game, start.pruned)
    np.testing.assert_array_equal(frozen, want)
    assert not (frozen & pruning.dead_infosets(game, start.pruned)).any()
    lay = pruning.layout(game, start.pruned, leave_out_frozen=True)
    p1, p2 = lay.frozen
    assert p1["rows"].size == 57 and p2["rows"].size == 0
    nested = p1["rows"][p1["par"] >= 0]
    roots = sorted(keys[i] for i in p1["rows"][p1["par"] < 0])
    assert roots == [f"P0 card:{c} | round1: cr" for c in "JKQ"] and nested.size == 54
    dense = _iterate(solver, game, 9, start)
    stats = {}
    out = pruning.run_live(solver, game, 19, start, stats=stats)
    assert stats["frozen_rows"] == 57 and stats["checks"] == 1 and stats["forced"] == 0
    assert int(out.iteration) == 19
    np.testing.assert_array_equal(out.regrets[frozen], start.regrets[frozen])
    np.testing.assert_array_equal(out.regrets[frozen], np.asarray(dense.regrets)[frozen])
    np.testing.assert_allclose(out.regrets, np.asarray(dense.regrets), rtol=0, atol=1e-12)
    for name in ("strategy_sum", "plan_sum"):
        want_sum = np.asarray(getattr(dense, name))
        moved = np.abs(want_sum - getattr(start, name))[nested].max(axis=1)
        np.testing.assert_allclose(getattr(out, name), want_sum, rtol=1e-12, atol=1e-12)
        assert (moved > 1e-3).sum() >= nested.size // 2 and moved.max() > 1.0


def test_bad_input():
    with pytest.raises(ValueError, match="threshold"):
        jaxcfr.cfr(pruning="total", threshold=-0.1)
    for bad in (math.nan, math.inf):
        with pytest.raises(ValueError, match="threshold"):
            jaxcfr.cfr_plus(pruning="total", threshold=bad)
    with pytest.raises(ValueError, match="pruning"):
        jaxcfr.cfr(pruning="everything")
    with pytest.raises(ValueError, match="pcfr_plus"):
        pruning.regret_pruning(jaxcfr.pcfr_plus(), "total")
    with pytest.raises(ValueError, match="base"):
        pruning.regret_pruning(jaxcfr.outcome_sampling(), "partial")
    with pytest.raises(ValueError, match="check_every"):
        jaxcfr.cfr(pruning="total", check_every=0)
    with pytest.raises(ValueError, match="check_rule"):
        jaxcfr.cfr(pruning="total", check_rule="sometimes")
    with pytest.raises(ValueError, match="Total RBP only"):
        jaxcfr.cfr(check_rule="paper")  # no pruning at all
    with pytest.raises(ValueError, match="Total RBP only"):
        jaxcfr.cfr_plus(pruning="interval", check_rule="eager")
    with pytest.raises(ValueError, match="interval"):
        pruning.run_live(jaxcfr.cfr(pruning="interval"), _dominated(), 10)
    total = jaxcfr.cfr(pruning="total")
    with pytest.raises(ValueError, match="shrink"):
        pruning.run_live(total, _dominated(), 10, shrink=0.5)
    with pytest.raises(ValueError, match="stable"):
        pruning.run_live(total, _dominated(), 10, stable=0)
    with pytest.raises(ValueError, match="leave_out_frozen"):
        pruning.run_live(total, _dominated(), 10, leave_out_frozen=1)


def test_compact_bytes_by_hand():
    """A compact master copy's bytes, counted by hand on the 3-infoset game (A = 2,
    float32; a row set is a bitmask of ceil(3 / 8) = 1 byte). (root, Risky) and
    (p2, h) pruned, so 'deep' is dead: live rows root, p2. Faced plans non-zero at root
    and deep only. Unpruned R + S: 2 x 3 x 2 x 4 = 48.
    (a) (root, Risky) also discarded: deep's sums go too, average rows root, p2.
        R 2x2x4 = 16, V 2x4 = 8, S 2x2x4 = 16, X 2x2x4 = 16, pruned 2 x (4 + 4) = 16,
        discarded 1 x 4 = 4, 3 masks: exact 79; paper (no X, 2 masks) 16 + 8 + 16 + 16
        + 4 + 2 = 62. Legal entries only (paper_legal): S keeps root's Safe and p2's 2
        entries, 3 x 4 = 12 instead of 16: 58; unpruned_legal 2 x 6 x 4 = 48.
    (b) nothing discarded: deep's frozen sums stay, average rows 3:
        paper 16 + 8 + 24 + 16 + 0 + 2 = 66 (paper_legal the same: every infoset has
        both actions legal)."""
    game = _dominated()
    ids = _ids(game)
    root, deep, p2 = ids["root"], ids["deep"], ids["p2"]
    state = jaxcfr.cfr(pruning="total").init(game)
    pruned_mask = np.zeros((3, 2), bool)
    pruned_mask[root, 1] = pruned_mask[p2, 0] = True
    faced = np.zeros((3, 2), np.float32)
    faced[root] = (2.0, 1.0)
    faced[deep] = (0.5, 0.5)
    disc = np.zeros((3, 2), bool)
    disc[root, 1] = True
    acc = pruning.compact_bytes(
        game, state._replace(pruned=pruned_mask, plan_sum=faced, discarded=disc)
    )
    assert (acc["live_rows"], acc["average_rows"], acc["plan_rows"]) == (2, 2, 2)
    assert (acc["exact"], acc["paper"], acc["unpruned"]) == (79, 62, 48)
    assert (acc["paper_legal"], acc["unpruned_legal"]) == (58, 48)
    acc = pruning.compact_bytes(game, state._replace(pruned=pruned_mask, plan_sum=faced))
    assert (acc["average_rows"], acc["paper"], acc["paper_legal"]) == (3, 66, 66)
    batched = jax.tree.map(lambda x: np.stack([x, x]), state)
    with pytest.raises(ValueError, match="pruned"):
        pruning.compact_bytes(game, batched)


def test_unused_tables_not_allocated():
    """Each mode allocates only the [I, A] tables it reads; the others are [0, A].
    Bytes by hand on the 3-infoset game (A = 2, float32 / bool / int32 scalars):
    regrets 24, strategy_sum 24, iteration 4, values_sum 12, pruned 6, bound 24,
    discarded 6, stored 8, nodes 3 x 4 = 12: 120 common; Total adds plan_sum 24 = 144
    (before: + prediction, window, window_value 3 x 24 = 216); Interval adds window and
    window_value 2 x 24 = 168; partial keeps the base's prediction and drops both."""
    game = _dominated()
    nbytes = lambda s: sum(np.asarray(x).nbytes for x in s)  # noqa: E731
    total = jaxcfr.cfr(pruning="total", check_every=1)
    state = _iterate(total, game, 3)
    assert nbytes(state) == 144
    assert pruning.compact_bytes(game, state)["dense"] == 144
    for name in ("prediction", "window", "window_value"):
        assert getattr(state, name).shape == (0, 2), name
    assert state.plan_sum.shape == (3, 2)
    policy = np.asarray(jaxcfr.current_policy(game, state))  # no prediction: R only
    assert np.allclose(policy.sum(axis=1), 1.0)
    interval = _iterate(jaxcfr.cfr_plus(pruning="interval", check_every=1), game, 3)
    assert nbytes(interval) == 168
    assert interval.plan_sum.shape == (0, 2)
    assert interval.prediction.shape == (0, 2)
    partial = _iterate(jaxcfr.cfr(pruning="partial"), game, 3)
    assert nbytes(partial) == 120 + 24
    assert partial.prediction.shape == (3, 2)
    assert partial.window.shape == (0, 2)


def test_tables_upper_lower_by_hand():
    game = _dominated()
    ids = _ids(game)
    tab = pruning.tables(game)
    n0 = game.meta.infosets_per_player[0]
    root, deep = ids["root"], ids["deep"]
    assert root < n0 and deep < n0
    assert tab.upper[0][:, root].tolist() == [1.0, -2.0]  # U(root, Safe), U(root, Risky)
    assert tab.upper[0][:, deep].tolist() == [-2.0, -2.0]
    assert tab.lower[0][root] == -3.0 and tab.lower[0][deep] == -3.0
    assert tab.lower[1][ids["p2"] - n0] == -1.0  # P2's payoffs are 1, -1, 2, 3


@pytest.mark.slow
def test_compacted_payoff_list_gives_the_same_iterates(x64):
    """Total RBP between checks on the re-compacted game (live payoff entries only) gives
    the iterates of the full game (up to summation order), with fewer payoff entries."""
    game = gt.load("leduc_poker", suits=False)
    k = 5
    solver = jaxcfr.cfr(pruning="total", threshold=0.05, check_every=k)
    step = jax.jit(solver.update)
    full = compacted = solver.init(game)
    sizes = []
    for _ in range(8):
        for _ in range(k):
            full = step(game, full)
        small = pruning.compact_game(game, compacted.pruned)  # padded: one shape
        sizes.append(int(pruning.live_payoff_entries(game, compacted.pruned).sum()))
        for _ in range(k - 1):
            compacted = step(small, compacted)
        compacted = step(game, compacted)  # the check, on the full game
    for name in ("regrets", "strategy_sum", "values_sum", "bound"):
        np.testing.assert_allclose(
            np.asarray(getattr(compacted, name)), np.asarray(getattr(full, name)), atol=1e-9
        )
    assert np.array_equal(np.asarray(compacted.pruned), np.asarray(full.pruned))
    assert sizes[0] == game.meta.num_sf_terminals and sizes[-1] < sizes[0]


def test_pruning_with_abstraction_keying():
    """Pruning keys its tables by the full game: 'abstract' raises at construction,
    'auto' raises on a game with an abstraction (each naming the keying), and 'full'
    prunes the full game: partial pruning then gives the iterates of full-keyed CFR on
    the same game bit for bit (it only skips zero-reach work)."""
    game = gt.load("recall_counterexample", abstraction="forget_signal")
    assert game.meta.has_abstraction
    for mode in ("partial", "total"):
        with pytest.raises(ValueError, match="keying='abstract'"):
            jaxcfr.cfr(pruning=mode, keying="abstract")
        auto = jaxcfr.cfr(pruning=mode)
        with pytest.raises(ValueError, match="keying='auto'"):
            auto.init(game)
    full = _iterate(jaxcfr.cfr(pruning="partial", keying="full"), game, 30)
    ref = _iterate(jaxcfr.cfr(keying="full"), game, 30)
    assert full.regrets.shape == (game.num_infosets, game.num_actions)
    np.testing.assert_array_equal(np.asarray(full.regrets), np.asarray(ref.regrets))
    np.testing.assert_array_equal(np.asarray(full.strategy_sum), np.asarray(ref.strategy_sum))
    total = _iterate(jaxcfr.cfr(pruning="total", keying="full"), game, 30)
    assert total.regrets.shape == (game.num_infosets, game.num_actions)


@pytest.mark.slow
@pytest.mark.parametrize("rule", ["worst_case", "paper"])
@pytest.mark.parametrize("base,n,atol", [("cfr", 200, 1e-8), ("cfr_plus", 40, 1e-8)])
def test_live_subgame_gives_the_dense_iterates(base, n, atol, rule, x64):
    """Total RBP with the k - 1 iterations between checks on the live sub-game
    (pruning.run_live) gives the dense solver's iterates up to summation order, with
    fewer payoff entries than the full game once branches are pruned, both from rebuilt
    layouts and from layouts kept while the pruned set changed (``shrink=1.1``: rebuilt
    when the live part shrank by 10% or a branch ended). (CFR+ over fewer
    iterations: its regrets sit at the regret-matching noise floor, where summation
    order flips the policy and differences grow, 1e-8 after ~55 iterations.) Under the
    paper's check rule the stretches stop where (9) fails and forced checks occur."""
    game = gt.load("leduc_poker", suits=False)
    solver = getattr(jaxcfr, base)(pruning="total", threshold=0.05, check_every=5, check_rule=rule)
    dense = _iterate(solver, game, n)
    stats = {}
    host = jax.tree.map(np.array, game)  # the full game kept on the host
    live = pruning.run_live(solver, host, n, stats=stats, shrink=1.1, stable=1000)
    assert int(live.iteration) == n
    assert isinstance(live.regrets, np.ndarray)  # the master copy is host numpy
    sub = stats["current"].game  # the device holds only the kernel's fields
    from jaxcfr.pruning._subgame import _KERNEL_FIELDS

    for f in dataclasses.fields(sub):
        if f.name not in _KERNEL_FIELDS and f.name != "meta":
            assert getattr(sub, f.name).shape[0] == 0, f.name
    for name in ("regrets", "strategy_sum", "values_sum", "bound", "plan_sum"):
        np.testing.assert_allclose(
            np.asarray(getattr(live, name)), np.asarray(getattr(dense, name)), atol=atol
        )
    for name in ("pruned", "discarded"):
        assert np.array_equal(np.asarray(getattr(live, name)), np.asarray(getattr(dense, name)))
    assert int(dense.pruned.sum()) > 0
    assert stats["live_entries"] < game.meta.num_sf_terminals
    assert stats["layouts"] >= 2  # rebuilt at least once after the first layout
    assert stats["layouts"] < stats["checks"]  # and kept across some checks
    assert stats["stale"] > 0
    if rule == "paper" and base == "cfr":
        assert stats["forced"] > 0  # stretches stopped where (9) failed


@pytest.mark.slow  # 9 s at load 11 (several small compiles)
def test_pruning_floor_counts_on_the_dominated_game(x64):
    """``pruning_floor``'s counts, by hand on the dominated game (its unique equilibrium
    for P2 is t, for P1 Safe at root): never a CBR are root Risky (CBV -2 vs -1) and deep 0
    (-3 vs -2) for P1, h for P2 (-1 vs +1). Our count keeps the regrets of root and p2
    (deep lies below Risky: 4 of 6 entries) and the average entries root Safe and p2 t (2 of
    6): floor (4 + 2) / 12. I_S: root and p2 hold a history with no flagged action on its
    path, deep does not: 4 of 6. No P1 infoset lies below a P2 action: below_opp 0."""
    from experiments.benchmarks.pruning_floor import _gaps, floor_counts

    game = _dominated()
    policy = np.asarray(jaxcfr.solve_lp(game).policy, np.float64)
    out = floor_counts(game, _gaps(game, policy), 0.0, 0.0)
    assert out["never_cbr"] == [2, 1]
    assert out["floor"] == pytest.approx(0.5, abs=1e-4)
    assert out["regrets"] == pytest.approx(4 / 6, abs=1e-4)
    assert out["averages"] == pytest.approx(2 / 6, abs=1e-4)
    assert out["I_S"] == pytest.approx(4 / 6, abs=1e-4)
    assert out["below_opp"] == 0.0


def test_live_resumed_at_a_larger_check_interval(x64):
    """A state last checked with k = 2 continued by ``run_live`` with k = 20 (worst-case
    rule): its branches were ended only for a 1-iteration stretch, so (9) fails inside the
    first 19-iteration stretch (session 28: this raised ``RuntimeError``). That window
    runs as the dense solver, and the run gives the dense k = 20 solver's iterates from the
    same state (up to summation order)."""
    game = gt.load("leduc_poker", suits=False)
    short = jaxcfr.cfr(pruning="total", threshold=0.05, check_every=2)
    long = jaxcfr.cfr(pruning="total", threshold=0.05, check_every=20)
    start = jax.tree.map(np.asarray, _iterate(short, game, 30))
    assert int(start.pruned.sum()) > 0
    stats = {}
    out = pruning.run_live(long, game, 70, start, stats=stats)
    assert stats.get("resumed_dense", 0) >= 1
    assert int(out.iteration) == 70
    dense = _iterate(long, game, 40, start)
    for name in ("regrets", "strategy_sum", "plan_sum", "bound"):
        np.testing.assert_allclose(
            np.asarray(getattr(out, name)), np.asarray(getattr(dense, name)), atol=1e-9
        )
    for name in ("pruned", "discarded"):
        np.testing.assert_array_equal(
            np.asarray(getattr(out, name)), np.asarray(getattr(dense, name))
        )


def test_run_live_refuses_what_update_refuses():
    """run_live runs the solver's step on blocks, not ``update``; it still refuses a
    state of another game and an abstraction keying the solver was not built for
    (review of session 29: both ran silently)."""
    game = gt.load("recall_counterexample", abstraction="forget_signal")
    full = jaxcfr.cfr(pruning="total", keying="full")
    solver = jaxcfr.cfr(pruning="total")
    with pytest.raises(ValueError, match="keying"):
        pruning.run_live(solver, game, 4, full.init(game))
    kuhn = gt.load("kuhn_poker")
    with pytest.raises(ValueError):
        pruning.run_live(solver, kuhn, 4, solver.init(gt.load("leduc_poker")))
