"""The one sequence-form traversal kernel shared by evaluation and full-width CFR.

Everything is a top-down product or a bottom-up sum over the levels of each
player's sequence tree (``game.meta.infoset_levels``), with static slices, so
the passes unroll into a handful of gathers, segment sums and reductions per
level. Written for one policy; callers ``jax.vmap`` over a batch.

Notation (see ``games_tensor._game``): I infosets, A actions, S = I*A + 1 flat
sequence slots (slot I*A is the empty sequence), Zs sequence-form payoff entries.

* ``realization_plan``: x[I*A] = 1, x[i*A + a] = x[parent_seq[i]] * policy[i, a]
  (both players in one vector; each slot belongs to the owner of its infoset).
* ``terminal_values``: g_p[s] = sum over payoff entries z with seq_p(z) = s of
  x_{-p}(seq_{-p}(z)) * u_p(z) (chance reach already in the payoff).
* ``bottom_up``: v(i, a) = g_p[i*A + a] + sum over p's infosets j with parent
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
from jaxcfr._solver import normalize_rows

NEG_INF = -jnp.inf


def _levels(game: Game, player: int):
    return game.meta.infoset_levels[player]


def player_plan(game: Game, policy: jax.Array, player: int) -> jax.Array:
    """``player``'s block of the realization plan: ``[n_p * A]`` over its infosets
    (``policy`` is the full ``[I, A]`` profile; only the player's rows are read)."""
    A = game.num_actions
    pieces = []
    prev = None  # flat reach of the previous level's sequences
    prev_start = 0
    for start, end in _levels(game, player):
        pol = policy[start:end]
        if prev is None:
            reach = jnp.ones((end - start,), policy.dtype)
        else:
            reach = prev[game.parent_seq[start:end] - prev_start * A]
        cur = (reach[:, None] * pol).reshape(-1)
        pieces.append(cur)
        prev, prev_start = cur, start
    if not pieces:
        return jnp.zeros((0,), policy.dtype)
    return jnp.concatenate(pieces)


def join_plans(plan0: jax.Array, plan1: jax.Array) -> jax.Array:
    """The ``[S]`` vector from the two players' blocks plus the empty sequence."""
    return jnp.concatenate([plan0, plan1, jnp.ones((1,), plan0.dtype)])


def realization_plan(game: Game, policy: jax.Array) -> jax.Array:
    """Both players' realization plans in one ``[S]`` vector (``policy``: ``[I, A]``)."""
    return join_plans(player_plan(game, policy, 0), player_plan(game, policy, 1))


def terminal_values(game: Game, plan: jax.Array, player: int) -> jax.Array:
    """``g_p``: ``[S]`` sum of ``x_{-p} * u_p`` over payoff entries ending in each sequence.

    With payoff blocks (``game.meta.num_payoff_blocks > 0``) this is G small dense
    matrix-vector products and a scatter of G*R (or G*C) values; otherwise one
    segment sum over the Zs payoff entries.
    """
    S = game.num_sequences
    if game.meta.num_payoff_blocks:
        pay = game.block_payoff.astype(plan.dtype)
        if player == 0:
            opp = plan.at[game.block_cols].get(mode="fill", fill_value=0.0)
            vals, own = jnp.einsum("grc,gc->gr", pay, opp), game.block_rows
        else:
            opp = plan.at[game.block_rows].get(mode="fill", fill_value=0.0)
            vals, own = -jnp.einsum("grc,gr->gc", pay, opp), game.block_cols
        return jax.ops.segment_sum(vals.reshape(-1), own.reshape(-1), num_segments=S)
    if player == 0:
        own, opp, sign = game.sf_seq0, game.sf_seq1, 1.0
    else:
        own, opp, sign = game.sf_seq1, game.sf_seq0, -1.0
    contrib = plan[opp] * (sign * game.sf_payoff).astype(plan.dtype)
    return jax.ops.segment_sum(contrib, own, num_segments=S, indices_are_sorted=(player == 0))


class BottomUp(NamedTuple):
    """Result of a bottom-up pass for one player p (its infosets only).

    action_values: [n_p, A] counterfactual values v(i, a) on p's infosets
      (``game.player_slice(p)``), zero on illegal actions.
    infoset_values: [n_p] value(i) of each of p's infosets.
    root_value: scalar, p's expected value (policy) or best-response value (max).
    """

    action_values: jax.Array
    infoset_values: jax.Array
    root_value: jax.Array


Combine = Callable[[jax.Array, jax.Array, jax.Array], jax.Array]


def combine_policy(values, mask, policy):
    """value(i) = sum_a policy(i, a) v(i, a)."""
    return jnp.sum(jnp.where(mask, values * policy, 0.0), axis=-1)


def combine_max(values, mask, policy):
    """value(i) = max over legal a of v(i, a) (the counterfactual best response)."""
    del policy
    return jnp.max(jnp.where(mask, values, NEG_INF), axis=-1)


def bottom_up(
    game: Game, g: jax.Array, player: int, policy: jax.Array, combine: Combine
) -> BottomUp:
    """Accumulate terminal values ``g`` ([S]) up the player's sequence tree.

    ``combine(v [n, A], mask [n, A], policy [n, A]) -> [n]`` turns action values
    into infoset values (:func:`combine_policy` or :func:`combine_max`).
    """
    A = game.num_actions
    levels = _levels(game, player)
    dtype = g.dtype
    action_vals = [None] * len(levels)
    infoset_vals = [None] * len(levels)
    child = None  # [n_level * A] sums of child infoset values, from the level below
    for d in range(len(levels) - 1, -1, -1):
        start, end = levels[d]
        n = end - start
        v = g[start * A : end * A]
        if child is not None:
            v = v + child
        v = v.reshape(n, A)
        mask = game.legal_mask[start:end]
        v = jnp.where(mask, v, 0.0)
        val = combine(v, mask, policy[start:end])
        action_vals[d], infoset_vals[d] = v, val
        if d > 0:
            pstart = levels[d - 1][0]
            n_prev = levels[d - 1][1] - pstart
            child = jax.ops.segment_sum(
                val,
                game.parent_seq[start:end] - pstart * A,
                num_segments=n_prev * A,
                indices_are_sorted=True,
            )
    root = g[game.empty_sequence] + (jnp.sum(infoset_vals[0]) if levels else 0.0)
    if not levels:
        return BottomUp(jnp.zeros((0, A), dtype), jnp.zeros((0,), dtype), root)
    return BottomUp(jnp.concatenate(action_vals), jnp.concatenate(infoset_vals), root)


def to_full(game: Game, player: int, block: jax.Array) -> jax.Array:
    """Place a player's ``[n_p, ...]`` block into a zero ``[I, ...]`` array."""
    full = jnp.zeros((game.num_infosets, *block.shape[1:]), block.dtype)
    return full.at[game.player_slice(player)].set(block)


def normalize_policy(game: Game, policy: jax.Array) -> jax.Array:
    """Inside-jit policy hygiene: zero illegal mass, renormalize over legal actions,
    uniform where a row has no legal mass. ``[I, A] -> [I, A]``."""
    return normalize_rows(policy, game.legal_mask, game.legal_uniform)
