"""The one sequence-form traversal kernel shared by evaluation and full-width CFR.

Everything is a top-down product or a bottom-up sum over the levels of each
player's sequence tree (``game.meta.infoset_levels``), with static slices, so
the passes unroll into a handful of gathers, segment sums and reductions per
level. Written for one policy; callers ``jax.vmap`` over a batch.

Layout. The kernel computes in **action-major** layout: a player's policy, plan
and values are ``[A, n_p]`` blocks (action first, then the player's infosets in
``game.player_slice(p)`` order), so every sum or max over actions reduces the
major axis, which XLA:CPU vectorizes; over a minor axis of 2 or 3 actions it runs
about 4x slower (``python -m experiments.benchmarks layout`` measures both). The
public API keeps ``[I, A]``; :func:`policy_blocks` transposes once at the boundary.

Each player's plan and values stay in its own ``[A, n_p]`` block: the compiler stores
the position of every sequence the kernel gathers or scatters in its owner's flattened
block (``game.parent_own``, ``sf_own0/1``, ``block_row_own/col_own``; the empty
sequence at ``A * n_p``, out of the block; see ``games_tensor._table.block_positions``),
so no index arithmetic runs in the loop and no joint table of both players is built.

* ``plan_block``: x[a, i] = x(parent_seq[i]) * policy[a, i], x(empty) = 1.
* ``own_terminal_values``: g_p(s) = sum over payoff entries z with seq_p(z) = s of
  x_{-p}(seq_{-p}(z)) * u_p(z) (chance reach already in the payoff), on p's block.
* ``bottom_up``: v(i, a) = g_p(i, a) + sum over p's infosets j with parent
  sequence (i, a) of value(j), deepest level first, where value(j) is either
  sum_a policy(j, a) v(j, a) (counterfactual values of the policy) or
  max over legal a of v(j, a) (counterfactual best response).
  The v(i, a) are counterfactual values: weighted by the opponent's and chance's
  reach, not by p's own reach to i.
"""

from __future__ import annotations

from typing import Callable, NamedTuple

import jax
import jax.numpy as jnp

from games_tensor import Game
from jaxcfr._solver import (
    materialized,
    normalize_rows,
    over_actions,
    rounded,
    sum_actions,
    tree_sum,
)

NEG_INF = -jnp.inf


def take(x: jax.Array, index: jax.Array, fill_value=None) -> jax.Array:
    """``x[index]`` for compiled, non-negative positions: no negative-index wrapping
    (a select over the whole index array that XLA re-runs every iteration); positions
    out of bounds read ``fill_value`` (they must be in bounds when it is None)."""
    if fill_value is None:
        return x.at[index].get(mode="promise_in_bounds", wrap_negative_indices=False)
    if x.shape[0] == 0:  # a player without infosets: every position is out of bounds
        return jnp.full(jnp.shape(index) + x.shape[1:], fill_value, x.dtype)
    return x.at[index].get(mode="fill", fill_value=fill_value, wrap_negative_indices=False)


def _levels(game: Game, player: int):
    return game.meta.infoset_levels[player]


def _local(game: Game, player: int, start: int, end: int) -> slice:
    """Columns of infosets ``start:end`` inside ``player``'s ``[A, n_p]`` block."""
    offset = game.player_slice(player).start
    return slice(start - offset, end - offset)


def policy_blocks(game: Game, policy: jax.Array) -> tuple[jax.Array, jax.Array]:
    """``[I, A]`` profile -> the two players' action-major blocks ``[A, n_0]``, ``[A, n_1]``."""
    policy_t = policy.T
    return tuple(policy_t[:, game.player_slice(p)] for p in (0, 1))


def legal_block(game: Game, player: int) -> jax.Array:
    """``[A, n_p]`` legal mask of ``player``'s infosets."""
    return game.legal_mask_t[:, game.player_slice(player)]


def plan_block(game: Game, policy_p: jax.Array, player: int) -> jax.Array:
    """``player``'s realization plan ``[A, n_p]`` from its policy block ``[A, n_p]``."""
    pieces = []
    prev = None  # the previous level's [A, n] plan, flattened
    for start, end in _levels(game, player):
        pol = policy_p[:, _local(game, player, start, end)]
        if prev is None:
            cur = pol
        else:
            cur = over_actions(take(prev, game.parent_local[start:end]), pol.shape) * pol
        pieces.append(cur)
        prev = cur.reshape(-1)
    if not pieces:
        return jnp.zeros((game.num_actions, 0), policy_p.dtype)
    return jnp.concatenate(pieces, axis=1)


def realization_plan(game: Game, policy: jax.Array) -> jax.Array:
    """The realization plan as a flat ``[S]`` vector over sequence ids ``i*A + a``
    (``x[I*A] = 1``) of the ``[I, A]`` profile ``policy`` (standard order, for callers
    outside the kernel)."""
    blocks = policy_blocks(game, policy)
    plans = [plan_block(game, blocks[p], p) for p in (0, 1)]
    one = jnp.ones((1,), policy.dtype)
    return jnp.concatenate([jnp.concatenate(plans, axis=1).T.reshape(-1), one])


def own_reach_block(game: Game, plan_p: jax.Array, player: int) -> jax.Array:
    """``[n_p]``: ``player``'s own reach x_p(parent_seq(i)) to each of its infosets, read
    from its own ``[A, n_p]`` plan block (``game.parent_own``; the empty sequence: 1)."""
    return take(plan_p.reshape(-1), game.parent_own[game.player_slice(player)], 1.0)


def own_terminal_values(game: Game, opp_plan: jax.Array, player: int):
    """``g_p`` on ``player``'s own sequences, from the opponent's ``[A, n_{-p}]`` plan block
    alone: returns ``(g [A, n_p], g_root)``, ``g_root`` the sum over payoff entries at
    ``player``'s empty sequence. Gathers and scatters go through ``game.sf_own0`` /
    ``block_row_own`` ... (positions in each player's own block,
    ``games_tensor._table.block_positions``): the scatter fills only ``A * n_p + 1`` slots.

    With payoff blocks (``game.meta.num_payoff_blocks > 0``) this is G small dense
    matrix-vector products, unrolled over the small block axis (no dot: XLA:CPU runs
    tiny batched dots through its thread pool, slower here), and a scatter of G*R (or
    G*C) values; otherwise one segment sum over the Zs payoff entries."""
    A = game.num_actions
    n = game.meta.infosets_per_player[player]
    flat = opp_plan.reshape(-1)
    if game.meta.num_payoff_blocks:
        pay = game.block_payoff.astype(opp_plan.dtype)
        # padding rows / columns read 1 (the fill of the empty sequence); their payoff is 0
        if player == 0:
            opp = take(flat, game.block_col_own, 1.0)
            vals = sum(rounded(pay[:, :, c] * opp[:, c, None]) for c in range(pay.shape[2]))
            own = game.block_row_own
        else:
            opp = take(flat, game.block_row_own, 1.0)
            vals = -sum(rounded(pay[:, r, :] * opp[:, r, None]) for r in range(pay.shape[1]))
            own = game.block_col_own
        contrib, own = vals.reshape(-1), own.reshape(-1)
    else:
        if player == 0:
            own, opp, sign = game.sf_own0, game.sf_own1, 1.0
        else:
            own, opp, sign = game.sf_own1, game.sf_own0, -1.0
        contrib = rounded(take(flat, opp, 1.0) * (sign * game.sf_payoff).astype(flat.dtype))
    g = jax.ops.segment_sum(contrib, own, num_segments=A * n + 1)
    return g[: A * n].reshape(A, n), g[A * n]


def _child_table_offset(game: Game, player: int, level: int) -> int:
    """Static start of level ``level``'s child table in ``game.level_children``."""
    offset = 0
    for p, fanout in enumerate(game.meta.child_fanout):
        for e, k in enumerate(fanout):
            if (p, e + 1) == (player, level):
                return offset
            pstart, pend = game.meta.infoset_levels[p][e]
            offset += k * game.num_actions * (pend - pstart)
    raise AssertionError("level not found")


def _child_sums(game: Game, player: int, d: int, val: jax.Array) -> jax.Array:
    """Sum the values ``val`` ([n]) of level ``d``'s infosets into the ``[A, n_prev]``
    parent-sequence slots of level ``d - 1``: ``K`` gathers from the compiled child
    lists where the fan-out ``K`` is small, else a segment sum (see
    ``games_tensor._table.level_children``)."""
    A = game.num_actions
    levels = _levels(game, player)
    start, end = levels[d]
    n_prev = levels[d - 1][1] - levels[d - 1][0]
    fanout = game.meta.child_fanout[player]
    K = fanout[d - 1]
    if K == 0:
        sums = jax.ops.segment_sum(val, game.parent_local[start:end], num_segments=A * n_prev)
        return sums.reshape(A, n_prev)
    offset = _child_table_offset(game, player, d)
    table = game.level_children[offset : offset + K * A * n_prev].reshape(K, A, n_prev)
    return sum(take(val, table[k], 0.0) for k in range(K))


class BottomUp(NamedTuple):
    """Result of a bottom-up pass for one player p, action-major.

    action_values: [A, n_p] counterfactual values v(i, a) on p's infosets
      (``game.player_slice(p)`` order), zero on illegal actions.
    infoset_values: [n_p] value(i) of each of p's infosets.
    root_value: scalar, p's expected value (policy) or best-response value (max).
    """

    action_values: jax.Array
    infoset_values: jax.Array
    root_value: jax.Array


Combine = Callable[[jax.Array, jax.Array, jax.Array], jax.Array]


def combine_policy(values, mask, policy):
    """value(i) = sum_a policy(a, i) v(a, i) (``[A, n]`` -> ``[n]``)."""
    return materialized(sum_actions(jnp.where(mask, rounded(values * policy), 0.0), axis=0))


def combine_max(values, mask, policy):
    """value(i) = max over legal a of v(a, i), the counterfactual best response."""
    del policy
    return jnp.max(jnp.where(mask, values, NEG_INF), axis=0)


def bottom_up(
    game: Game,
    g: jax.Array,
    player: int,
    policy_p: jax.Array,
    combine: Combine,
    root_g: jax.Array,
) -> BottomUp:
    """Accumulate terminal values ``g`` up the player's sequence tree: ``g`` is the
    player's own ``[A, n_p]`` block and ``root_g`` its empty-sequence sum
    (:func:`own_terminal_values`). ``policy_p`` is the player's ``[A, n_p]`` policy block.

    ``combine(v [A, n], mask [A, n], policy [A, n]) -> [n]`` turns action values
    into infoset values (:func:`combine_policy` or :func:`combine_max`).
    """
    A = game.num_actions
    levels = _levels(game, player)
    mask_p = legal_block(game, player)
    action_vals = [None] * len(levels)
    infoset_vals = [None] * len(levels)
    child = None  # [A, n_level] sums of child infoset values, from the level below
    for d in range(len(levels) - 1, -1, -1):
        start, end = levels[d]
        cols = _local(game, player, start, end)
        v = g[:, cols]
        if child is not None:
            v = v + child
        mask = mask_p[:, cols]
        v = jnp.where(mask, v, 0.0)
        val = combine(v, mask, policy_p[:, cols])
        action_vals[d], infoset_vals[d] = v, val
        if d > 0:
            child = _child_sums(game, player, d, val)
    root = root_g + (tree_sum(infoset_vals[0]) if levels else 0.0)
    if not levels:
        return BottomUp(jnp.zeros((A, 0), g.dtype), jnp.zeros((0,), g.dtype), root)
    return BottomUp(jnp.concatenate(action_vals, axis=1), jnp.concatenate(infoset_vals), root)


def to_full(game: Game, player: int, block: jax.Array) -> jax.Array:
    """Place a player's ``[n_p, ...]`` block into a zero ``[I, ...]`` array."""
    full = jnp.zeros((game.num_infosets, *block.shape[1:]), block.dtype)
    return full.at[game.player_slice(player)].set(block)


def normalize_policy(game: Game, policy: jax.Array) -> jax.Array:
    """Inside-jit policy hygiene: zero illegal mass, renormalize over legal actions,
    uniform where a row has no legal mass. ``[I, A] -> [I, A]``."""
    return normalize_rows(policy, game.legal_mask, game.legal_uniform)
