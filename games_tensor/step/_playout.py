"""Uniformly random playouts of a step-form game (chance at its probabilities)."""

from __future__ import annotations

from typing import NamedTuple

import jax
import jax.numpy as jnp

from games_tensor._rules import CHANCE, TERMINAL
from games_tensor.step._core import StepGame


class Trajectory(NamedTuple):
    """One playout, padded to the game's ``max_depth`` D (W key words).

    state: the final (terminal) state.
    actions: [D] int32: action or chance outcome index taken at each step, -1 after the end.
    players: [D] int32: who moved at each step (0, 1, CHANCE), TERMINAL after the end.
    keys: [D, W] uint32: the information-state key of the player to move at each step.
    returns: [2] float: the terminal utilities.
    """

    state: NamedTuple
    actions: jax.Array
    players: jax.Array
    keys: jax.Array
    returns: jax.Array


def random_playout(game: StepGame, key: jax.Array) -> Trajectory:
    """Play ``game`` from the root to a terminal: players uniform over legal actions,
    chance at its probabilities. ``max_depth`` steps of a ``lax.scan``; ``jax.vmap``
    over keys for many playouts."""
    slots = max(game.num_actions, game.num_chance_outcomes)

    def pad(x):
        return jnp.concatenate([x, jnp.zeros((slots - x.shape[0],), x.dtype)])

    def body(state, k):
        player = game.current_player(state)
        probs = game.chance_probs(state)
        weights = jnp.where(
            player == CHANCE, pad(probs), pad(game.legal_mask(state).astype(probs.dtype))
        )
        # inverse CDF from one uniform (a Gumbel draw per slot costs A threefry numbers)
        cdf = jnp.cumsum(weights)
        u = jax.random.uniform(k, dtype=cdf.dtype) * cdf[-1]
        last = jnp.max(jnp.where(weights > 0, jnp.arange(slots), 0))
        action = jnp.minimum(jnp.sum(cdf <= u), last).astype(jnp.int32)
        action = jnp.where(player == TERMINAL, -1, action)
        record = (action, player, game.current_key(state))
        return game.apply(state, jnp.maximum(action, 0)), record

    steps = jax.random.split(key, game.max_depth)
    state, (actions, players, keys) = jax.lax.scan(body, game.init(), steps)
    return Trajectory(state, actions, players, keys, game.returns(state))
