"""Re-compacting the sequence-form payoff list to the live branches (host, Total RBP).

Between two checks of Total RBP (``check_every = k``, ``check_rule="worst_case"``) the
pruned set cannot change: a check ends every branch that could fail (9) before the next
one and starts branches only there (under ``"paper"`` / ``"eager"`` a branch may end
between scheduled checks, at a forced check: use ``run_live``, whose stretches stop
there). So the k - 1 iterations between checks can run on a copy of the game whose
payoff list keeps only the terminals whose two sequences are both *live* (no pruned
sequence of their owner on the path, inclusive): a terminal under the opponent's pruned
branch contributes x_{-i} = 0, and one under one's own pruned branch feeds only frozen
infosets (or a pruned action, weighted 0). The iterates are unchanged; the check itself
(the CBR of a reset branch needs its dropped terminals) runs on the full game.

Only the payoff list shrinks: the infoset levels, the plan passes and the per-history
tables stay full size (see docs/pruning.md for what a full compaction needs). Interval
RBP accumulates terminal values of its frozen sequences, so it cannot use this.
"""

from __future__ import annotations

import dataclasses

import jax.numpy as jnp
import numpy as np

from games_tensor import Game
from jaxcfr.pruning._subgame import live_payoff_entries


def compact_game(game: Game, pruned, *, min_size: int = 1024) -> Game:
    """A copy of ``game`` whose payoff list holds only the live entries (see the module
    docstring), padded with zero-payoff entries to a power of two >= ``min_size`` so
    that few distinct shapes (compiles) occur; the payoff-block layout is dropped."""
    keep = live_payoff_entries(game, pruned)
    n = int(keep.sum())
    size = max(min_size, 1 << max(n - 1, 0).bit_length())

    def cut(x):
        x = np.asarray(x)
        return jnp.asarray(np.concatenate([x[keep], np.zeros(size - n, x.dtype)]))

    # the fan-in groups describe the full payoff list: dropped (the segment sum runs)
    meta = dataclasses.replace(
        game.meta, num_payoff_blocks=0, num_sf_terminals=size, payoff_groups=None
    )
    no_i = jnp.zeros((0, 1), jnp.int32)
    return dataclasses.replace(
        game,
        sf_seq0=cut(game.sf_seq0),
        sf_seq1=cut(game.sf_seq1),
        sf_payoff=cut(game.sf_payoff),
        sf_own0=cut(game.sf_own0),
        sf_own1=cut(game.sf_own1),
        compact_sf_own0=cut(game.compact_sf_own0),
        compact_sf_own1=cut(game.compact_sf_own1),
        compact_block_row_own=no_i,
        compact_block_col_own=no_i,
        block_rows=no_i,
        block_cols=no_i,
        block_payoff=jnp.zeros((0, 1, 1), game.sf_payoff.dtype),
        block_row_own=no_i,
        block_col_own=no_i,
        compact_group_opp=jnp.zeros((0,), jnp.int32),
        compact_group_payoff=jnp.zeros((0,), game.sf_payoff.dtype),
        compact_group_slot=jnp.zeros((0,), jnp.int32),
        meta=meta,
    )
