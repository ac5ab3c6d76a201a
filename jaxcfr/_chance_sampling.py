"""Chance sampling for the full-width CFR family (option ``chance_sampling=True``).

Chance-sampled CFR (Zinkevich et al. 2007; Lanctot et al. 2009), the variant of
Lanctot et al. 2012's experiments (ALGORITHMS.md 2.2): each iteration samples one
outcome at every chance node from its distribution (one pure strategy of chance,
drawn as a recursive implementation draws it on reaching each chance node) and
traverses every action of both players. Terminal z is kept iff every chance choice
on its path was sampled, which happens with probability pi_c(z), so

    u~(z) = u(z) 1[z sampled]  replaces  pi_c(z) u(z)

in the sequence-form payoffs (``sf_payoff`` and the dense payoff blocks): the
counterfactual values (and regrets) computed by the unchanged kernel are unbiased
estimates of the exact ones. Every step is a gather (terminals into payoff entries
and block cells by :class:`jaxcfr._abstraction.SegmentSum`), no scatter, so seeds
batch well under ``vmap``. Shapes: C chance nodes, Z terminals, Zs payoff entries,
G*R*C block cells, Dc the most chance nodes on one path.
"""

from __future__ import annotations

import dataclasses

import jax
import jax.numpy as jnp
import numpy as np

from games_tensor import Game
from games_tensor._game import CHANCE, TERMINAL
from jaxcfr import _sampling as smp
from jaxcfr._abstraction import SegmentSum
from jaxcfr._solver import materialized


@dataclasses.dataclass(frozen=True)
class ChanceLayout:
    """Static host arrays (memoized in ``game.meta.host``).

    probs: [C, K] outcome probabilities of the chance nodes.
    ancestors: [Z, Dc] int32 index (into the C chance nodes) of each terminal's chance
      ancestors, padding C; slots: [Z, Dc] int32 the outcome taken there (padding -1).
    entries: sum of the terminals into the Zs payoff entries (``game.sf_payoff``).
    cells: sum of the terminals into the flat ``[G * R * C]`` payoff blocks (None: G = 0).
    utility: [Z] float64 u_0(z).
    """

    probs: np.ndarray
    ancestors: np.ndarray
    slots: np.ndarray
    entries: SegmentSum
    cells: SegmentSum | None
    utility: np.ndarray


def chance_layout(game: Game) -> ChanceLayout:
    """The :class:`ChanceLayout` of ``game`` from its host arrays (built once)."""
    host = game.meta.host
    layout = host.get("chance_layout")
    if layout is not None:
        return layout
    player = host["node_player"]
    children = host["node_children"]
    infoset = host["node_infoset"].astype(np.int64)
    H, K = children.shape  # noqa: N806
    A = game.num_actions
    empty = game.num_infosets * A
    chance_ids = np.nonzero(player == CHANCE)[0]
    chance_index = np.full(H, -1, np.int64)
    chance_index[chance_ids] = np.arange(chance_ids.size)
    # top-down over the breadth-first levels: own sequences and chance ancestry
    seq = np.full((2, H), empty, np.int64)
    anc: list[list[tuple[int, int]]] = [[] for _ in range(H)]
    for start, end in game.meta.node_levels:
        for h in range(start, end):
            for k in np.nonzero(children[h] >= 0)[0]:
                c = children[h, k]
                seq[:, c] = seq[:, h]
                if player[h] in (0, 1):
                    seq[player[h], c] = infoset[h] * A + k
                    anc[c] = anc[h]
                else:
                    anc[c] = anc[h] + [(int(chance_index[h]), int(k))]
    terminals = np.nonzero(player == TERMINAL)[0]
    depth = max((len(anc[z]) for z in terminals), default=0)
    ancestors = np.full((terminals.size, max(depth, 1)), chance_ids.size, np.int32)
    slots = np.full((terminals.size, max(depth, 1)), -1, np.int32)
    for i, z in enumerate(terminals):
        for d, (c, k) in enumerate(anc[z]):
            ancestors[i, d], slots[i, d] = c, k
    stride = empty + 1
    keys = host["sf_seq0"].astype(np.int64) * stride + host["sf_seq1"]
    tkeys = seq[0, terminals] * stride + seq[1, terminals]
    entry = np.searchsorted(keys, tkeys)
    if not np.array_equal(keys[entry], tkeys):
        raise AssertionError("a terminal's sequence pair is not a payoff entry")
    cells = None
    rows, cols = host["block_rows"], host["block_cols"]
    if game.meta.num_payoff_blocks:
        public = host["node_public_state"][terminals]
        g = np.searchsorted(np.unique(public), public)
        r = np.array(
            [np.searchsorted(rows[gi], s) for gi, s in zip(g, seq[0, terminals], strict=True)]
        )
        c = np.array(
            [np.searchsorted(cols[gi], s) for gi, s in zip(g, seq[1, terminals], strict=True)]
        )
        R, C = rows.shape[1], cols.shape[1]  # noqa: N806
        cells = SegmentSum.build((g * R + r) * C + c, rows.shape[0] * R * C)
    layout = ChanceLayout(
        host["node_chance_probs"][chance_ids],
        ancestors,
        slots,
        SegmentSum.build(entry, game.meta.num_sf_terminals),
        cells,
        host["node_utility"][terminals],
    )
    host["chance_layout"] = layout
    return layout


def sampled_game(game: Game, key: jax.Array) -> Game:
    """``game`` with the payoffs of one chance sample: ``sf_payoff`` (and
    ``block_payoff``) hold the sum over each entry's (cell's) sampled terminals of
    u_0(z) (see the module docstring)."""
    lay = chance_layout(game)
    dtype = game.sf_payoff.dtype
    util = jnp.asarray(lay.utility, dtype)
    if lay.probs.shape[0]:
        u = smp.uniforms(key, (lay.probs.shape[0],), dtype)
        k = smp.sample_index(jnp.asarray(lay.probs, dtype), u)
        k = jnp.concatenate([k, jnp.full((1,), -1, k.dtype)])
        # one 1-D gather per chance depth: a single [Z, Dc] gather of the vmapped draws
        # ran 30x slower on XLA:CPU (measured on DRP)
        kept = k[lay.ancestors[:, 0]] == lay.slots[:, 0]
        for d in range(1, lay.ancestors.shape[1]):
            kept = kept & (k[lay.ancestors[:, d]] == lay.slots[:, d])
        util = jnp.where(kept, util, 0.0)
    blocks = game.block_payoff
    if lay.cells is not None:
        blocks = lay.cells(util).reshape(blocks.shape)
    # materialized once: fused into the kernel's many reads of the payoffs, XLA:CPU
    # recomputes the gathers per read (measured 4x slower updates on DRP). An
    # optimization barrier does not do it (XLA:CPU strips barriers before fusion);
    # ``materialized`` does (``jaxcfr._solver.materialized``; docs/cfr.md, session 23)
    payoff = materialized(lay.entries(util))
    if lay.cells is not None:
        blocks = materialized(blocks)
    # the compiled fan-in groups hold the full payoffs: dropped (game.meta.payoff_groups)
    meta = dataclasses.replace(game.meta, payoff_groups=None)
    return dataclasses.replace(game, sf_payoff=payoff, block_payoff=blocks, meta=meta)
