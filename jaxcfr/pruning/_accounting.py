"""Bytes a compact master copy of Total RBP's state would hold (host accounting).

Brown & Sandholm (2016), Total RBP: the regrets of a pruned branch D(I, a) need no
storage while it is pruned (the reset (7)/(8) rebuilds them from the counterfactual best
response when pruning ends), and the average-strategy sums of a branch rare in the average
(pi_i^{avg}(I, a) <= C / sqrt(T)) are discarded. The dense :class:`PrunedState` keeps every
``[I, A]`` table at full size (freed entries are zeros), so its memory does not fall. This
module counts, from a state's masks, what a master copy holding only the entries Total RBP
needs would take, with each table stored as compact rows (``A`` entries per row, as the
live sub-game lays them out) and each set of rows as a bitmask over the I infosets
(ceil(I / 8) bytes; a row's place is the mask's prefix popcount):

* regrets ``R`` and ``V(I)``: the live rows (infosets not strictly below a pruned own
  sequence, :func:`dead_infosets`);
* average sums ``S``: the rows with an entry not in or below a discarded sequence (the live
  rows plus the frozen rows of pruned but not discarded branches);
* the faced-plan sums ``X`` (``plan_sum``, what the opponent's CBR is taken against):
  ``exact``: the rows where ``X`` is non-zero (dropping others changes no iterate);
  ``paper``: none (the paper takes the CBR against the stored average, i.e. ``S``);
* pruned entries: int32 index + the bound of (9); discarded entries: int32 index;
* not stored: ``prediction``, ``window``, ``window_value`` (unused under Total RBP with
  CFR / CFR+; the dense state allocates them as ``[0, A]`` placeholders since session 23).

``paper_legal`` stores only legal entries (the kept rows' legal entries in order; the
offsets follow from the legal mask, which the game holds) instead of ``A``-wide rows:
regrets at the legal entries of live rows, average sums at the kept legal entries; its
reference ``unpruned_legal`` is 2 x legal pairs.

Reference: the unpruned CFR / CFR+ master copy, regrets and average sums, 2 x I x A
entries. Returns byte counts (python ints) keyed by table. Shapes: ``state`` fields
``[I, A]`` / ``[I]`` (one run, no batch axis).
"""

from __future__ import annotations

import numpy as np

from games_tensor import Game
from jaxcfr.pruning._solver import check_pruned_state
from jaxcfr.pruning._subgame import dead_infosets


def compact_bytes(game: Game, state) -> dict:
    """Bytes of a compact master copy of the Total RBP ``state`` (see the module doc).

    Keys: ``regrets``, ``values_sum``, ``strategy_sum``, ``plan_sum``, ``row_masks``
    (``exact``: with the ``plan_sum`` rows' mask), ``pruned``, ``discarded``, ``exact`` and
    ``paper`` (totals, with and without ``plan_sum``), ``paper_legal`` (legal entries
    only), ``unpruned`` (2 x I x A x itemsize), ``unpruned_legal`` (2 x legal pairs),
    ``dense`` (every array of ``state``), and the row counts ``live_rows``,
    ``average_rows``, ``plan_rows``."""
    check_pruned_state(state, ("pruned", "discarded"))
    pruned = np.asarray(state.pruned, bool)
    if pruned.ndim != 2 or pruned.shape != (game.num_infosets, game.num_actions):
        raise ValueError(
            f"state.pruned must be [I, A] = {(game.num_infosets, game.num_actions)} "
            f"(one run, no batch axis), got shape {pruned.shape}"
        )
    discarded = np.asarray(state.discarded, bool)
    legal = np.asarray(game.legal_mask, bool)
    f = np.asarray(state.regrets).dtype.itemsize
    A = game.num_actions
    dead = dead_infosets(game, pruned)
    gone = discarded | dead_infosets(game, discarded)[:, None]
    live_rows = int((~dead).sum())
    average_rows = int((legal & ~gone).any(axis=1).sum())
    plan_rows = int((np.asarray(state.plan_sum) != 0).any(axis=1).sum())
    out = {
        "live_rows": live_rows,
        "average_rows": average_rows,
        "plan_rows": plan_rows,
        "regrets": live_rows * A * f,
        "values_sum": live_rows * f,
        "strategy_sum": average_rows * A * f,
        "plan_sum": plan_rows * A * f,
        "pruned": int(pruned.sum()) * (4 + f),
        "discarded": int(discarded.sum()) * 4,
    }
    bitmask = -(-game.num_infosets // 8)
    ids_paper = 2 * bitmask  # live rows, average rows
    common = out["regrets"] + out["values_sum"] + out["strategy_sum"]
    common += out["pruned"] + out["discarded"]
    out["row_masks"] = ids_paper + bitmask
    out["exact"] = common + out["plan_sum"] + out["row_masks"]
    out["paper"] = common + ids_paper
    out["unpruned"] = 2 * game.num_infosets * A * f
    legal_live = int((legal & ~dead[:, None]).sum())
    legal_kept = int((legal & ~gone).sum())
    out["paper_legal"] = (
        (legal_live + legal_kept) * f
        + out["values_sum"]
        + ids_paper
        + out["pruned"]
        + out["discarded"]
    )
    out["unpruned_legal"] = 2 * int(legal.sum()) * f
    out["dense"] = sum(np.asarray(x).nbytes for x in state)
    return out
