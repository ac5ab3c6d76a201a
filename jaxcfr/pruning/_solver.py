"""Regret-based pruning for the full-width CFR family (Brown & Sandholm).

Papers: Brown & Sandholm, "Regret-Based Pruning in Extensive-Form Games" (NIPS 2015,
Interval RBP) and "Reduced Space and Faster Convergence in Imperfect-Information Games
via Regret-Based Pruning" (2016, Total RBP); rules and constants in ALGORITHMS.md 2.8.
Notation: for the update player i at iteration t, v(I, a), v(I) counterfactual values,
V(I) = sum_t v^{sigma^t}(I), pi_{-i}(I) counterfactual reach, U(I, a) / L(I) the largest /
smallest payoff of i reachable after a at I / from I, D(I, a) the own infosets below
(I, a), CBV the counterfactual best-response value to the opponent's average.

* ``"partial"``: skip subtrees with pi_{-i}(h) = 0. Identical arithmetic (those
  subtrees contribute zeros); only the count of touched nodes changes.
* ``"interval"`` (NIPS 2015): prune (I, a) at t0 when R(I, a) < 0, keep pruning while
  B = R^{t0}(I, a) + V^{t0}(I) + sum_{t0 < t <= t1} pi_{-i}(I) U(I, a) <= V^{t1}(I);
  when it ends, every sequence of the branch gets the regret of the counterfactual best
  response to the opponent's plans summed over the skipped window, as if played on
  each skipped iteration: R(I, a) += W(I, a) - sum_window v(I), R(I', a') += W(I', a') -
  W(I') in D(I, a) (W = the kernel's max pass over the window's terminal values). With
  CFR+ the regrets follow the paper's modified RM+: negative values are kept but jump to
  0 as soon as they increase.
* ``"total"`` (2016): condition (5) t CBV(I, a) < V(I) starts pruning (bound B = t
  CBV(I, a)); (9) B + sum pi_{-i}(I) U(I, a) <= V(I) keeps it; when it ends, the reset
  (7) R(I, a) = t CBV(I, a) - V(I) and (8) R(I', a') = t (CBV(I', a') - CBV(I')),
  V(I') = t CBV(I') for I' in D(I, a). Regrets (and V) in D(I, a) are freed (zeroed)
  when pruning starts; the average-strategy sums of a pruned (I, a) and of D(I, a) are
  discarded when the average's own reach pi_i^{sigma-bar}(I, a) <= C / sqrt(t) both for
  sigma-bar the uniform average of *all* t iterations' plans (the normalized faced-plan
  sums ``plan_sum``, which are never discarded; for P1 under alternating updates they
  lack iteration 1) and for the stored average (normalized ``strategy_sum``: CFR+'s
  linear one). The first makes the sums lost at (I, a) over every discard so far at most
  C sqrt(t) plans, i.e. at most C / sqrt(T) of the average at any later T (CFR; 2 C /
  sqrt(T) of CFR+'s linear average), the paper's bound; the second keeps each discard
  within C / sqrt(t) of the reported average. (Until session 25 the test read the
  stored average only, which after a discard holds only the play since the branch last
  re-expanded, so a branch cycling through end and re-prune lost all of its average.)
  CBV is the kernel's ``combine_max`` pass against the opponent's average policy
  (normalized faced-plan sums ``plan_sum`` at the moment of the check). With CFR+ (RM+) the reset
  values are floored at 0 like every RM+ regret; the condition uses V and CBV, not
  the regrets. The paper's CFR+ curves report the best average found so far: the
  solver keeps only the current average; the experiments take the running minimum of
  exploitability (``experiments/reproduce/rbp.py``).

Checks every ``check_every`` = k iterations. The CBR pass (Total) and the made-up
update (Interval) are dense passes of the one kernel, run under ``lax.cond`` only on
check iterations (under ``vmap`` a batched ``cond`` runs both sides). (9) is tested
every iteration and a failure forces a check at that iteration (the reset (7)/(8) of the
ended branch and (5) re-tested inside it). Which branches a scheduled check starts and
ends is ``check_rule`` (k = 1: both rules are the papers' every-iteration rule, same
iterates):

* ``"worst_case"`` (sessions 20-23): so that no branch has to end between checks, a
  check also ends the branches whose slack V(I) - B could be used up within k - 1
  iterations (B - V grows by at most m(I) (U(I, a) - L(I)) per iteration, m(I) the
  chance mass of I), and starts only branches with at least that slack.
* ``"paper"`` (ALGORITHMS.md 2.8: (5) starts, (6) gives T' >= 1, (9) keeps): a check
  starts a branch when (5) holds with T' = floor(slack / (m(I) (U(I, a) - L(I)))) >= 1
  (slack = V(I) - t CBV(I, a) >= one iteration of worst-case growth; for k = 1 any
  slack > 0, as before), never ends one early; a branch ends exactly at the iteration
  where (9) fails (the forced check), so branches live as long as the actual growth
  pi_{-i}(I) U(I, a) allows, not k - 1 worst-case iterations less.
* ``"eager"``: as ``"paper"``, but a check starts every branch for which (5) holds with
  any slack > 0 (T' >= 0: the k = 1 rule applied at each check; a start with little
  slack may soon fail (9) and force a check).

Soundness (Theorem 1, all three rules): on every iteration t a branch is pruned, (9) held
after iteration t - 1, i.e. the branch's regret bound t0 CBV(I, a) + sum pi_{-i}(I)
U(I, a) - V(I) <= 0, so regret matching would have given (I, a) probability 0 at t
anyway, whatever was played below it; a branch is never kept past the iteration where
(9) fails (the forced check resets it by (7)/(8) at that iteration, before the next
strategy is computed). Pruning for fewer iterations than (9) allows (the worst-case
rule's early ends, or T' >= 1 refusing a start) only replaces pruned iterations by
ordinary CFR iterations, which is always sound.
Pruned branches are disjoint: a branch that starts absorbs (Total: frees; Interval:
first settles) the pruned branches below it.

Work and space, counted (``nodes_touched``, ``space_fraction``): nodes = history nodes
entered per iteration, summed over both players' traversals: all H for ``"none"``;
with pruning, histories with pi_{-i}(h) > 0 and no pruned own action on their path,
plus, on check iterations, the histories the CBR traversals enter (Total: below the
checked / reset branches, with positive chance x opponent-average reach; Interval: all
histories below the settled branches). Space = stored (infoset, action) entries of
regrets plus average sums (Total only frees entries): regrets of infosets outside pruned
branches, average sums outside discarded branches, as a fraction of 2 x legal pairs
(``count="own"``; ``count="both"`` also leaves out infosets frozen below the opponent's
pruned / discarded sequences, a working-set count: :func:`stored_entries`).

This is the *dense* implementation: the kernel still runs over every entry (pruned
ones are masked), so iterations per second do not rise; :func:`compact_game` cuts the
payoff list to the live branches between Total RBP checks; see docs/pruning.md.
Shapes: every table ``[I, A]``, ``values_sum`` ``[I]``, counters int32 scalars.
"""

from __future__ import annotations

from typing import NamedTuple

import jax
import jax.numpy as jnp
import numpy as np

from games_tensor import Game
from jaxcfr import _abstraction as abst
from jaxcfr import _cfr
from jaxcfr import _sequence_form as sf
from jaxcfr._solver import (
    Solver,
    builtin_cache_key,
    check_bool,
    check_game,
    check_number,
    check_state,
    normalize_rows,
    over_actions,
    regret_matching,
    regret_tolerance,
    rounded,
)
from jaxcfr.pruning._tables import tables

MODES = ("none", "partial", "interval", "total")
CHECK_RULES = ("worst_case", "paper", "eager")
_LO_BITS = 20


class PrunedState(NamedTuple):
    """CFR state plus pruning bookkeeping (``[I, A]`` unless noted).

    regrets, strategy_sum, prediction, iteration: as :class:`jaxcfr.CFRState`.
    values_sum: [I] V(I) = sum_t v^{sigma^t}(I) (zero where freed).
    pruned: bool, (I, a) pruned (its branch D(I, a) is not traversed).
    bound: left side of (9) (Total) / of the Interval condition, at pruned entries.
    discarded: bool, average sums of (I, a) and D(I, a) discarded (Total).
    window: Interval: sum of own terminal values g over the skipped window, per sequence.
    window_value: Interval: sum of v(I) over the window, at pruned (I, a).
    plan_sum: Total RBP: sum over iterations of each player's realization plan as the
      opponent faced it (with alternating updates P2 faces P1's updated policy); the
      opponent's CBR is computed against its normalization (unweighted, also for CFR+).
    stored: [2] int32 stored regret + average entries of each player.
    nodes_hi, nodes_lo: int32 cumulative nodes touched = hi * 2^20 + lo.
    nodes_last: int32 nodes touched in the last iteration.

    A table a mode never reads is a ``[0, A]`` placeholder (not allocated):
    ``prediction`` under Interval / Total RBP, ``window`` and ``window_value`` outside
    Interval RBP, ``plan_sum`` outside Total RBP.
    """

    regrets: jax.Array
    strategy_sum: jax.Array
    prediction: jax.Array
    iteration: jax.Array
    values_sum: jax.Array
    pruned: jax.Array
    bound: jax.Array
    discarded: jax.Array
    window: jax.Array
    window_value: jax.Array
    plan_sum: jax.Array
    stored: jax.Array
    nodes_hi: jax.Array
    nodes_lo: jax.Array
    nodes_last: jax.Array


def check_pruned_state(state, fields=("pruned",)) -> None:
    """Raise ``ValueError`` unless ``state`` is a :class:`PrunedState` (holds ``fields``)."""
    if not all(hasattr(state, f) for f in fields):
        raise ValueError(
            f"state must be a PrunedState (from a solver built with pruning=..., e.g. "
            f"jaxcfr.cfr(pruning='total')), got {type(state).__name__}"
        )


def nodes_touched(state) -> np.ndarray:
    """Cumulative nodes touched (float64, any batch shape) of a :class:`PrunedState`."""
    check_pruned_state(state, ("nodes_hi", "nodes_lo"))
    hi = np.asarray(state.nodes_hi, dtype=np.float64)
    return hi * float(1 << _LO_BITS) + np.asarray(state.nodes_lo, dtype=np.float64)


COUNTS = ("own", "both")


def _check_count(count) -> None:
    if count not in COUNTS:
        raise ValueError(f"count must be one of {COUNTS}, got {count!r}")


def space_fraction(game: Game, state, count: str = "own") -> np.ndarray:
    """Stored regret + average entries as a fraction of the unpruned solver's (host).

    ``state``: a :class:`PrunedState`, any leading batch shape (the result has it).
    ``count`` (:func:`stored_entries`): ``"own"`` (default; what Total RBP frees, kept
    in ``state.stored``) or ``"both"`` (the working set, also dropping infosets frozen
    below the opponent's pruned / discarded sequences; not a freeing of average sums).
    """
    _check_count(count)
    check_pruned_state(state, ("stored", "pruned", "discarded"))
    total = 2 * tables(game).num_legal
    if count == "own":
        stored = np.asarray(state.stored, dtype=np.float64)
    else:
        pr, dc = jnp.asarray(state.pruned), jnp.asarray(state.discarded)
        lead, shape = pr.shape[:-2], pr.shape[-2:]
        per = _both_entries(game, pr.reshape((-1, *shape)), dc.reshape((-1, *shape)))
        stored = np.asarray(per, dtype=np.float64).reshape((*lead, 2))
    return stored.sum(axis=-1) / total


def stored_entries(game: Game, state, count: str = "own") -> jax.Array:
    """``[2]`` int32 stored regret + average entries per player, from the state's masks
    (jittable; unbatched state).

    * ``"own"`` (Total RBP as implemented; the solver keeps the same numbers in
      ``state.stored``): the regrets of player p's legal (I, a) unless I lies strictly
      below a pruned *own* sequence of p (Brown & Sandholm 2016: D(I, a) is freed when
      pruning starts), and its average sums unless (I, a) is discarded or I lies below a
      discarded own sequence.
    * ``"both"``: as ``"own"``, and also without the entries of an infoset I every
      history of which lies below a pruned (regrets) / discarded (average sums) sequence
      of *either* player (docs/pruning.md, session 26). This is a *working-set* count:
      sound for regrets (I's cf reach is 0 while the opponent's branch is pruned, so its
      regrets are frozen; they are still needed, unchanged, when that branch ends), but
      not a freeing of average sums that keeps the C / sqrt(T) bound (the opponent's best
      response may deviate into the branch, where p's average must then be known).
      Always <= ``"own"``. On Leduc-5 (C = 0.1) it is the count that gives the paper's
      7-10x less space.
    """
    _check_count(count)
    check_game(game)
    check_pruned_state(state, ("pruned", "discarded"))
    pruned, discarded = jnp.asarray(state.pruned), jnp.asarray(state.discarded)
    if count == "both":
        return _both_entries(game, pruned[None], discarded[None])[0]
    out = []
    for p in (0, 1):
        sl = game.player_slice(p)
        mask = sf.legal_block(game, p)
        live = ~_below(game, p, pruned[sl].T)
        kept = ~(discarded[sl].T | over_actions(_below(game, p, discarded[sl].T), mask.shape))
        reg = jnp.sum(mask & over_actions(live, mask.shape))
        out.append((reg + jnp.sum(mask & kept)).astype(jnp.int32))
    return jnp.stack(out)


def _both_one(game: Game, pruned: jax.Array, discarded: jax.Array) -> jax.Array:
    """:func:`stored_entries` ``count="both"`` from the ``[I, A]`` masks."""
    blocks = {}
    for name, m in (("pruned", pruned), ("discarded", discarded)):
        blocks[name] = [m[game.player_slice(p)].T for p in (0, 1)]
    alive_r = _alive_histories(game, blocks["pruned"])
    alive_s = _alive_histories(game, blocks["discarded"])
    out = []
    for p in (0, 1):
        mask = sf.legal_block(game, p)
        shape = mask.shape
        pr, dc = blocks["pruned"][p], blocks["discarded"][p]
        live = ~_below(game, p, pr) & _holding(game, p, alive_r)
        kept = ~(dc | over_actions(_below(game, p, dc), shape))
        kept = kept & over_actions(_holding(game, p, alive_s), shape)
        reg = jnp.sum(mask & over_actions(live, shape))
        out.append((reg + jnp.sum(mask & kept)).astype(jnp.int32))
    return jnp.stack(out)


# ``[N, I, A]`` masks -> ``[N, 2]``: one compile serves a single state and a batch
_both_entries = jax.jit(jax.vmap(_both_one, in_axes=(None, 0, 0)))


def _alive_histories(game: Game, flags) -> jax.Array:
    """``[H]`` bool: no flagged sequence of either player on the path to the history
    (``flags[p]`` ``[A, n_p]`` bool)."""
    tab = tables(game)
    alive = jnp.ones((tab.num_histories,), bool)
    for q in (0, 1):
        free = _free_plan(game, q, jnp.asarray(flags[q]), jnp.float32)
        alive = alive & (_at_histories(free, tab.hist_own[q]) > 0)
    return alive


def _holding(game: Game, p: int, hist_mask: jax.Array) -> jax.Array:
    """``[n_p]`` bool: infosets of p holding at least one history in ``hist_mask [H]``."""
    tab = tables(game)
    sl = game.player_slice(p)
    hit = jnp.asarray(hist_mask)[jnp.asarray(tab.node_ids[p])].astype(jnp.int32)
    n = jax.ops.segment_sum(hit, jnp.asarray(tab.node_local[p]), num_segments=sl.stop - sl.start)
    return n > 0


# ------------------------------------------------------------------ small helpers
def _free_plan(game: Game, p: int, flags: jax.Array, dtype) -> jax.Array:
    """``[A, n_p]`` plan of the 0/1 'policy' ``~flags`` of player p (``flags [A, n_p]``):
    entry = 1 iff no flagged own sequence on the path, inclusive."""
    return sf.plan_block(game, (~flags).astype(dtype), p)


def _below(game: Game, p: int, flags: jax.Array) -> jax.Array:
    """``[n_p]`` bool: infosets strictly below a flagged own sequence (``flags [A, n_p]``)."""
    return sf.own_reach_block(game, _free_plan(game, p, flags, jnp.float32), p) == 0


def _at_histories(plan_p: jax.Array, hist_own: np.ndarray) -> jax.Array:
    """``[H]``: player p's ``[A, n_p]`` plan at the last own sequence on the path to each
    history (``tables(game).hist_own[p]``; 1 at the empty sequence)."""
    return sf.take(plan_p.reshape(-1), jnp.asarray(hist_own), 1.0)


def _count(mask: jax.Array) -> jax.Array:
    return jnp.sum(mask, dtype=jnp.int32)


def _add_nodes(hi, lo, n):
    lo = lo + n
    return hi + (lo >> _LO_BITS), lo & ((1 << _LO_BITS) - 1)


def _average_plan(game: Game, p: int, ssum: jax.Array) -> jax.Array:
    """Player p's realization plan ``[A, n_p]`` of its average policy (normalized sums)."""
    uniform = game.legal_uniform_t[:, game.player_slice(p)].astype(ssum.dtype)
    avg = normalize_rows(ssum, sf.legal_block(game, p), uniform, axis=0)
    return sf.plan_block(game, avg, p)


def _stacked_plans(game: Game, p: int, policies) -> jax.Array:
    """``[N, A, n_p]``: :func:`sf.plan_block` of each of player p's ``[A, n_p]``
    ``policies`` in one level loop (vmapped: the same products, one pass)."""
    return jax.vmap(lambda pol: sf.plan_block(game, pol, p))(jnp.stack(policies))


def _modified_plus(regrets, inst, t):
    """Interval RBP's CFR+ (NIPS 2015): regrets may go negative, but jump to 0 as soon
    as they increase: max(R, 0) + r where r > 0, else R + r."""
    del t
    return jnp.where(inst > 0, jnp.maximum(regrets, 0.0) + inst, regrets + inst)


# ------------------------------------------------------------------ the factory
# the [I, A] tables of PrunedState (block name in ``update``, field)
_BLOCKS = (
    ("R", "regrets"),
    ("S", "strategy_sum"),
    ("P", "prediction"),
    ("pruned", "pruned"),
    ("bound", "bound"),
    ("discarded", "discarded"),
    ("win", "window"),
    ("winv", "window_value"),
    ("X", "plan_sum"),
)


def _used_fields(pruning: str, predictive: bool) -> frozenset:
    """The ``[I, A]`` fields a mode reads; the others are allocated as ``[0, A]``
    placeholders: ``prediction`` under Interval / Total RBP (their bases, CFR and CFR+,
    are not predictive; ``"none"`` / ``"partial"`` keep the base's layout),
    ``window``, ``window_value`` outside Interval RBP, ``plan_sum`` outside Total RBP."""
    used = {"regrets", "strategy_sum", "pruned", "bound", "discarded"}
    if predictive or pruning in ("none", "partial"):  # the base's own layout
        used.add("prediction")
    if pruning == "interval":
        used |= {"window", "window_value"}
    if pruning == "total":
        used.add("plan_sum")
    return frozenset(used)


def allocated_fields(game: Game, state: PrunedState) -> frozenset:
    """The ``[I, A]`` fields ``state`` allocates (every other one is a ``[0, A]``
    placeholder, :func:`_used_fields`): the mode's own set, read from the state."""
    return frozenset(f for _, f in _BLOCKS if np.shape(getattr(state, f))[0] == game.num_infosets)


class BlockState(NamedTuple):
    """A :class:`PrunedState` in the kernel's layout (what ``update`` computes on):
    ``blocks`` per player p a dict of ``[A, n_p]`` action-major blocks named as in
    ``_BLOCKS`` (the fields the mode uses), ``V`` ``[n_p]`` and ``stored`` (int32
    scalar); the counters as in :class:`PrunedState`; ``rest`` the ``[0, A]``
    placeholders of the unused fields (passed through). ``run_live`` keeps its master
    copy in this layout, so a check transposes nothing."""

    blocks: tuple
    iteration: jax.Array
    nodes_hi: jax.Array
    nodes_lo: jax.Array
    nodes_last: jax.Array
    rest: dict


def to_blocks(game: Game, state: PrunedState, used: frozenset, xp=jnp) -> BlockState:
    """The :class:`BlockState` of ``state`` (``xp``: ``jnp`` inside ``jit``, ``np`` for a
    host copy with contiguous blocks)."""
    blocks = []
    for p in (0, 1):
        sl = game.player_slice(p)
        d = {n: xp.asarray(getattr(state, f))[sl].T for n, f in _BLOCKS if f in used}
        if xp is np:
            d = {n: np.ascontiguousarray(x) for n, x in d.items()}
        d["V"] = xp.asarray(state.values_sum)[sl]
        if xp is np:
            d["V"] = d["V"].copy()
        d["stored"] = xp.asarray(state.stored)[p]
        blocks.append(d)
    rest = {f: getattr(state, f) for _, f in _BLOCKS if f not in used}
    return BlockState(
        tuple(blocks), state.iteration, state.nodes_hi, state.nodes_lo, state.nodes_last, rest
    )


def from_blocks(bs: BlockState, xp=jnp) -> PrunedState:
    """The :class:`PrunedState` of a :class:`BlockState` (``xp`` as :func:`to_blocks`)."""
    b0, b1 = bs.blocks
    new = dict(bs.rest)
    for n, f in _BLOCKS:
        if n in b0:
            new[f] = xp.concatenate([b0[n], b1[n]], axis=1).T
    if xp is np:
        new = {f: np.ascontiguousarray(x) for f, x in new.items()}
    return PrunedState(
        new["regrets"],
        new["strategy_sum"],
        new["prediction"],
        bs.iteration,
        xp.concatenate([b0["V"], b1["V"]]),
        new["pruned"],
        new["bound"],
        new["discarded"],
        new["window"],
        new["window_value"],
        new["plan_sum"],
        xp.stack([b0["stored"], b1["stored"]]).astype(xp.int32),
        bs.nodes_hi,
        bs.nodes_lo,
        bs.nodes_last,
    )


_BASES = {
    # name -> (regret_update, weight, predictive), from the base's hyperparams
    "cfr": lambda hp: (_cfr.regret_sum, _cfr.weight_power(0), False),
    "cfr_plus": lambda hp: (_cfr.regret_plus, _cfr.weight_power(1), False),
    "linear_cfr": lambda hp: (
        _cfr.regret_discounted(1.0, 1.0),
        _cfr.weight_discounted(1.0),
        False,
    ),
    "dcfr": lambda hp: (
        _cfr.regret_discounted(hp["alpha"], hp["beta"]),
        _cfr.weight_discounted(hp["gamma"]),
        False,
    ),
    "pcfr_plus": lambda hp: (
        _cfr.regret_plus,
        _cfr.weight_power(hp["averaging_power"]),
        True,
    ),
}
_RBP_BASES = ("cfr", "cfr_plus")


def regret_pruning(
    base: Solver,
    pruning: str = "total",
    threshold: float = 0.05,
    check_every: int = 10,
    count_nodes: bool = True,
    check_rule: str = "worst_case",
) -> Solver:
    """A CFR-family solver with regret-based pruning (see the module docstring).

    Args:
      base: a full-width CFR solver built by the library: ``jaxcfr.cfr()`` or
        ``jaxcfr.cfr_plus()`` for every mode; ``linear_cfr``, ``dcfr``, ``pcfr_plus``
        take ``"none"`` / ``"partial"`` only. Tables are keyed by the full game:
        ``keying="abstract"`` raises ``ValueError`` here, ``keying="auto"`` on a game
        with an imperfect-recall abstraction raises it at ``init`` / ``update``.
      pruning: ``"none"`` (counting only), ``"partial"``, ``"interval"`` or ``"total"``.
      threshold: C >= 0, finite: Total RBP discards a pruned branch's average sums when
        its own reach in the average falls to C / sqrt(t) (the paper: 0.01 to 0.1).
      check_every: k >= 1, iterations between checks (1 = every iteration).
      check_rule: ``"worst_case"``, ``"paper"`` or ``"eager"`` (module docstring): which branches a
        check starts and ends when k > 1 (Total RBP only: any other value with another
        ``pruning`` raises; the same iterates for k = 1).
      count_nodes: count nodes touched per iteration (a few gathers over the H
        histories per iteration; off for speed measurements).
    Returns:
      A :class:`Solver`; ``init(game) -> PrunedState``, ``update(game, state)``.

    Example::

        solver = jaxcfr.cfr(pruning="total", threshold=0.1)   # same as
        solver = jaxcfr.pruning.regret_pruning(jaxcfr.cfr(), "total", threshold=0.1)
        res = jaxcfr.run(solver, game, 1000, 100)
    """
    if not isinstance(base, Solver) or base.name not in _BASES:
        raise ValueError(
            f"base must be a full-width CFR solver ({', '.join(_BASES)}), got {base!r}"
        )
    if pruning not in MODES:
        raise ValueError(f"pruning must be one of {MODES} or None, got {pruning!r}")
    if pruning in ("interval", "total") and base.name not in _RBP_BASES:
        raise ValueError(
            f"pruning={pruning!r} supports the bases {_RBP_BASES} (regret matching and "
            f"RM+); {base.name} supports only 'none' and 'partial'"
        )
    check_number("threshold", threshold, 0.0)
    if (
        isinstance(check_every, bool)
        or not isinstance(check_every, (int, np.integer))
        or (check_every < 1)
    ):
        raise ValueError(f"check_every must be an integer >= 1, got {check_every!r}")
    check_every = int(check_every)
    check_bool("count_nodes", count_nodes)
    if check_rule not in CHECK_RULES:
        raise ValueError(f"check_rule must be one of {CHECK_RULES}, got {check_rule!r}")
    if check_rule != "worst_case" and pruning != "total":
        raise ValueError(
            f"check_rule={check_rule!r} applies to Total RBP only (pruning='total'), "
            f"got pruning={pruning!r}"
        )
    hp = dict(base.hyperparams)
    keying = hp.get("keying", "auto")
    if keying == "abstract":
        raise ValueError(
            f"pruning={pruning!r} keys its tables by the full game's infosets; the base's "
            "keying='abstract' (imperfect-recall abstraction) is not supported: use "
            "keying='full' (or 'auto' on a game without an abstraction)"
        )

    def check_keying(game: Game) -> None:
        if abst.uses_abstraction(game, keying):
            raise ValueError(
                f"pruning={pruning!r} keys its tables by the full game's infosets, but "
                f"keying={keying!r} keys them by {game.name}'s imperfect-recall abstraction; "
                "pass keying='full' to prune on the full game"
            )

    alternating = hp.get("alternating", True)
    regret_update, weight, predictive = _BASES[base.name](hp)
    if pruning == "interval" and base.name == "cfr_plus":
        regret_update = _modified_plus
    floor = base.name == "cfr_plus"

    hyperparams = tuple(base.hyperparams) + (
        ("pruning", pruning),
        ("threshold", threshold),
        ("check_every", check_every),
        ("count_nodes", count_nodes),
    )
    if check_rule != "worst_case":  # the old hyperparams (and cache keys) unchanged
        hyperparams += (("check_rule", check_rule),)
    k = check_every
    paper = check_rule != "worst_case"  # "paper" or "eager": ends only where (9) fails
    # iterations of worst-case growth a start needs as slack: k - 1 (worst case), the
    # paper's T' >= 1, or none (eager) (k = 1: 0 under every rule, the every-iteration rule)
    margin = {"worst_case": k - 1, "paper": min(k - 1, 1), "eager": 0}[check_rule]

    def init(game: Game, key=None, *, scale: float = 0.0) -> PrunedState:
        """Zero regrets (or uniform in [0, scale) from ``key``), nothing pruned."""
        check_keying(game)
        cfr_state = base.init(game, key, scale=scale)  # the base's regrets and zeros
        # [I, A] (the base keeps compact-layout games' tables flat; pruning runs [A, n_p])
        regrets, zeros = (sf.infoset_table(game, x) for x in cfr_state[:2])
        shape, dtype = regrets.shape, regrets.dtype
        false = jnp.zeros(shape, bool)
        legal = [jnp.sum(sf.legal_block(game, p), dtype=jnp.int32) * 2 for p in (0, 1)]
        z = jnp.zeros((), jnp.int32)
        unused = jnp.zeros((0, shape[1]), dtype)  # a field this mode never reads
        used = _used_fields(pruning, predictive)
        return PrunedState(
            regrets,
            zeros,
            cfr_state.prediction if "prediction" in used else unused,
            z,
            jnp.zeros((game.num_infosets,), dtype),
            false,
            zeros,
            false,
            zeros if "window" in used else unused,
            zeros if "window_value" in used else unused,
            zeros if "plan_sum" in used else unused,
            jnp.stack(legal),
            z,
            z,
            z,
        )

    def policy_of(game, p, regrets, pred, pruned):
        if pruning in ("none", "partial"):
            return _cfr._policy(game, p, regrets, pred, predictive, abst.view(game, "full"))
        mask = sf.legal_block(game, p) & ~pruned
        tol = regret_tolerance(game, regrets.dtype)
        return regret_matching(regrets, mask, None, axis=0, tolerance=tol)

    def player_step(game, p, b, policy, plan_p, opp_plan, opp_ssum, t):
        """One update of player p against the opponent's ``[A, n_{-p}]`` plan ``opp_plan``
        (``plan_p``: p's own plan of ``policy``). ``b``: dict of its blocks. Returns
        (b, nodes)."""
        tab = tables(game)
        mask = sf.legal_block(game, p)
        dtype = b["R"].dtype
        shape = mask.shape
        pr = b["pruned"]
        tf = t.astype(dtype)
        check = (t % k) == 0
        free = _free_plan(game, p, pr, dtype)
        live = sf.own_reach_block(game, free, p) > 0
        live_a = over_actions(live, shape)
        g, g_root = sf.own_terminal_values(game, opp_plan, p)
        bu = sf.bottom_up(game, g, p, policy, sf.combine_policy, g_root)
        iv = bu.infoset_values
        inst = jnp.where(mask, bu.action_values - over_actions(iv, shape), 0.0)
        upd = mask & live_a & ~pr
        b = dict(b)
        b["R"] = jnp.where(upd, regret_update(b["R"], inst, t), b["R"]).astype(dtype)
        w, decay = weight(t)
        reach = sf.own_reach_block(game, plan_p, p)
        # the same rounding as the CFR family's update (rounded: no fused multiply-add)
        b["S"] = ((b["S"] + rounded(over_actions(w * reach, shape) * policy)) * decay).astype(dtype)
        if predictive:
            b["P"] = inst.astype(dtype)

        nodes = jnp.zeros((), jnp.int32)
        opp_reach = None
        if count_nodes or pruning in ("interval", "total"):
            chance = jnp.asarray(tab.chance, dtype)
            opp_reach = chance * _at_histories(opp_plan, tab.hist_own[1 - p])
        if count_nodes:
            if pruning == "none":
                nodes = jnp.asarray(tab.num_histories, jnp.int32)
            else:
                entered = opp_reach > 0
                if pruning != "partial":
                    entered = entered & (_at_histories(free, tab.hist_own[p]) > 0)
                nodes = _count(entered)
        if pruning in ("none", "partial"):
            return b, nodes

        b["V"] = jnp.where(live, b["V"] + iv, b["V"]).astype(dtype)
        ids = tab.node_ids[p]
        cf_reach = jax.ops.segment_sum(
            opp_reach[jnp.asarray(ids)], jnp.asarray(tab.node_local[p]), num_segments=shape[1]
        )
        upper = jnp.asarray(tab.upper[p], dtype)
        growth = over_actions(jnp.asarray(tab.chance_mass[p], dtype), shape) * (
            upper - over_actions(jnp.asarray(tab.lower[p], dtype), shape)
        )
        active = pr & live_a
        b["bound"] = jnp.where(
            active, b["bound"] + over_actions(cf_reach, shape) * upper, b["bound"]
        ).astype(dtype)
        V_a = over_actions(b["V"], shape)
        failed = active & (b["bound"] > V_a)
        if paper:  # a branch ends exactly when (9) fails
            ended = failed
        else:  # also end what worst-case growth could end before the next check
            ended = failed | (active & check & (V_a - b["bound"] < (k - 1) * growth))

        if pruning == "interval":
            frozen = (pr | ~live_a) & mask
            b["win"] = jnp.where(frozen, b["win"] + g, 0.0).astype(dtype)
            b["winv"] = jnp.where(active, b["winv"] + over_actions(iv, shape), 0.0).astype(dtype)
            r_max = jnp.max(jnp.where(mask, b["R"], -jnp.inf), axis=0)
            start = (
                check
                & upd
                & (b["R"] < 0)
                & (b["R"] < over_actions(r_max, shape))
                & (-b["R"] >= margin * growth)
            )
            below_start = _below(game, p, start)  # = below the top-most starts
            start = start & ~over_actions(below_start, shape)
            flush = ended | (pr & over_actions(below_start, shape))
            need = jnp.any(flush) | jnp.any(start)

            def settle(b):
                b = dict(b)
                zero = jnp.zeros((), dtype)
                made = sf.bottom_up(game, b["win"], p, policy, sf.combine_max, zero)
                flush_plan = _free_plan(game, p, flush, dtype)
                below_f = sf.own_reach_block(game, flush_plan, p) == 0
                below_fa = over_actions(below_f, shape) & mask
                inc_top = made.action_values - b["winv"]
                inc_sub = made.action_values - over_actions(made.infoset_values, shape)
                R = jnp.where(flush, regret_update(b["R"], inc_top, t), b["R"])
                b["R"] = jnp.where(below_fa, regret_update(R, inc_sub, t), R).astype(dtype)
                b["V"] = jnp.where(below_f, b["V"] + made.infoset_values, b["V"]).astype(dtype)
                region = flush | below_fa
                b["win"] = jnp.where(region, 0.0, b["win"]).astype(dtype)
                b["winv"] = jnp.where(region, 0.0, b["winv"]).astype(dtype)
                pruned = (b["pruned"] & ~flush) | start
                b["pruned"] = pruned
                b["bound"] = jnp.where(
                    start, b["R"] + over_actions(b["V"], shape), b["bound"]
                ).astype(dtype)
                n = jnp.zeros((), jnp.int32)
                if count_nodes:
                    n = _count(_at_histories(flush_plan, tab.hist_own[p]) == 0)
                return b, n

            def skip(b):
                return dict(b), jnp.zeros((), jnp.int32)

            b, extra = jax.lax.cond(need, settle, skip, b)
            return b, nodes + extra

        # ---- Total RBP: check (5), end (9), reset (7)/(8), discard averages
        need = check | jnp.any(ended)

        def total_check(b):
            b = dict(b)
            opp_avg = _average_plan(game, 1 - p, opp_ssum)
            g_avg, g_avg_root = sf.own_terminal_values(game, opp_avg, p)
            cb = sf.bottom_up(game, g_avg, p, policy, sf.combine_max, g_avg_root)
            cbv_a = cb.action_values
            cbv_i = over_actions(cb.infoset_values, shape)
            # one plan pass for three independent plans (session 30): the free plan of the
            # ended branches (_below) and the average plans of X and S (the discard
            # test), stacked; a product of the same factors, so the same bits
            uniform = game.legal_uniform_t[:, game.player_slice(p)].astype(dtype)
            plans = _stacked_plans(
                game,
                p,
                (
                    (~ended).astype(dtype),
                    normalize_rows(b["X"], mask, uniform, axis=0),
                    normalize_rows(b["S"], mask, uniform, axis=0),
                ),
            )
            below_end = sf.own_reach_block(game, plans[0], p) == 0
            below_end_a = over_actions(below_end, shape) & mask
            R = jnp.where(ended, tf * cbv_a - over_actions(b["V"], shape), b["R"])
            R = jnp.where(below_end_a, tf * (cbv_a - cbv_i), R)
            if floor:
                R = jnp.where(ended | below_end_a, jnp.maximum(R, 0.0), R)
            V = jnp.where(below_end, tf * cb.infoset_values, b["V"])
            region = ended | below_end_a
            # pruned branches are disjoint, so none lies inside an ended one
            pr2 = b["pruned"] & ~region
            disc = b["discarded"] & ~region
            live2 = live | below_end
            cand = mask & over_actions(live2, shape) & ~pr2 & (R <= 0) & (check | region)
            slack = over_actions(V, shape) - tf * cbv_a
            start = cand & (slack > 0) & (cbv_a < cbv_i) & (slack >= margin * growth)
            below_start = _below(game, p, start)  # = below the top-most starts
            below_start_a = over_actions(below_start, shape)
            start = start & ~below_start_a
            pr2 = (pr2 & ~below_start_a) | start
            b["bound"] = jnp.where(start, tf * cbv_a, b["bound"]).astype(dtype)
            b["R"] = jnp.where(below_start_a, 0.0, R).astype(dtype)
            b["V"] = jnp.where(below_start, 0.0, V).astype(dtype)
            b["pruned"] = pr2
            # discard average sums of pruned branches rare in the average: rare both in
            # the average over *all* iterations so far (the faced-plan sums X, never
            # discarded) and in the stored one (S: CFR+'s linear weights; P1's first
            # iteration, which X lacks). S alone, after an earlier discard, holds only
            # the play since the branch last re-expanded (session 25: a branch cycling
            # through end / re-prune then lost its whole average, far past C / sqrt(t))
            live3 = over_actions(live2 & ~below_start, shape)
            reach = jnp.maximum(plans[1], plans[2])
            cut = pr2 & live3 & ~disc & (reach <= threshold / jnp.sqrt(tf))
            disc = disc | cut
            gone = disc | over_actions(_below(game, p, disc), shape)
            b["S"] = jnp.where(gone, 0.0, b["S"]).astype(dtype)
            b["discarded"] = disc
            b["stored"] = _count(mask & live3) + _count(mask & ~gone)
            n = jnp.zeros((), jnp.int32)
            if count_nodes:
                marked = ended | cand
                under = _at_histories(_free_plan(game, p, marked, dtype), tab.hist_own[p]) == 0
                avg_reach = jnp.asarray(tab.chance, dtype) * _at_histories(
                    opp_avg, tab.hist_own[1 - p]
                )
                n = _count(under & (avg_reach > 0))
            return b, n

        def skip(b):
            return dict(b), jnp.zeros((), jnp.int32)

        b, extra = jax.lax.cond(need, total_check, skip, b)
        return b, nodes + extra

    used = _used_fields(pruning, predictive)

    def step(game: Game, bs: BlockState) -> BlockState:
        """One iteration on the kernel's layout (:class:`BlockState`); ``update`` is
        ``from_blocks(step(to_blocks(state)))``, the same arithmetic."""
        t = bs.iteration + 1
        blocks = [dict(b) for b in bs.blocks]
        for d in blocks:
            if "P" not in d:  # the policy of a non-predictive base ignores it
                d["P"] = None
        policy = [
            policy_of(game, p, blocks[p]["R"], blocks[p]["P"], blocks[p]["pruned"]) for p in (0, 1)
        ]
        plan0 = sf.plan_block(game, policy[0], 0)
        plan1 = sf.plan_block(game, policy[1], 1)
        faced = pruning == "total"
        if faced:  # P1 faces P2's current plan
            blocks[1]["X"] = (blocks[1]["X"] + plan1).astype(plan1.dtype)
        blocks[0], n0 = player_step(
            game, 0, blocks[0], policy[0], plan0, plan1, blocks[1].get("X"), t
        )
        if alternating:  # P2 faces P1's updated policy
            b0 = blocks[0]
            policy0 = policy_of(game, 0, b0["R"], b0["P"], b0["pruned"])
            plan0 = sf.plan_block(game, policy0, 0)
        if faced:  # P2 faces this plan of P1
            blocks[0]["X"] = (blocks[0]["X"] + plan0).astype(plan0.dtype)
        blocks[1], n1 = player_step(
            game, 1, blocks[1], policy[1], plan1, plan0, blocks[0].get("X"), t
        )
        for d in blocks:
            if d["P"] is None:
                del d["P"]
            d["stored"] = jnp.asarray(d["stored"]).astype(jnp.int32)
        nodes = n0 + n1
        hi, lo = _add_nodes(bs.nodes_hi, bs.nodes_lo, nodes)
        return BlockState(tuple(blocks), t, hi, lo, nodes, bs.rest)

    def check(game: Game, state: PrunedState) -> None:  # update's refusals (run_live too)
        check_keying(game)
        check_state(game, state)

    def update(game: Game, state: PrunedState) -> PrunedState:
        check(game, state)
        return from_blocks(step(game, to_blocks(game, state, used)))

    update.step_blocks = step  # run_live keeps its master copy in this layout
    update.check = check
    update.used_fields = used

    return Solver(
        init=init,
        update=update,
        name=base.name,
        needs_key=False,
        hyperparams=hyperparams,
        cache_key=builtin_cache_key("pruned_" + base.name, hyperparams),
    )
