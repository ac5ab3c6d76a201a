"""Breadth-first enumeration of a step-form game (for small instances: tests, measurements).

The compiled game's history tree is breadth first (by depth, then parent, then child
slot), and the step form numbers actions and chance outcomes in the same order, so
enumerating the step form level by level, each level's nodes expanded in order with
vmapped steps, lists the histories in exactly the compiled order: node ``h`` here is
the compiled history ``h`` (``tests/test_step_games.py`` checks the parent and slot
of every node against the compiled tree).
"""

from __future__ import annotations

from typing import NamedTuple

import jax
import jax.numpy as jnp
import numpy as np

from games_tensor._rules import CHANCE
from games_tensor.step._core import StepGame


class StepTree(NamedTuple):
    """Every history of a step-form game, breadth first (NumPy arrays; H histories).

    player: [H] int32 (0, 1, CHANCE, TERMINAL).
    parent: [H] int64, -1 at the root.
    slot: [H] int32: the compiled child slot (the action, or the rank of the chance
      outcome among the positive-probability outcomes).
    action: [H] int32: the step-form action or chance outcome index from the parent.
    legal: [H, A] bool. chance_probs: [H, K] float. returns: [H, 2] float.
    info_key: [H, W] uint32: the key of the player to move (player 0's elsewhere).
    public_key: [H, Wp] uint32.
    levels: ((start, end), ...) node slices by depth.
    states: the states themselves ([H, ...] leaves) with ``keep_states=True``, else None.
    """

    player: np.ndarray
    parent: np.ndarray
    slot: np.ndarray
    action: np.ndarray
    legal: np.ndarray
    chance_probs: np.ndarray
    returns: np.ndarray
    info_key: np.ndarray
    public_key: np.ndarray
    levels: tuple[tuple[int, int], ...]
    states: object = None


def _expander(game: StepGame):
    num_slots = max(game.num_actions, game.num_chance_outcomes)

    def pad(x):
        return jnp.concatenate([x, jnp.zeros((num_slots - x.shape[0],), x.dtype)])

    def one(state):
        player = game.current_player(state)
        legal = game.legal_mask(state)
        probs = game.chance_probs(state)
        valid = jnp.where(player == CHANCE, pad(probs > 0), pad(legal))
        kids = jax.vmap(game.apply, in_axes=(None, 0))(state, jnp.arange(num_slots))
        rank = jnp.cumsum(valid) - 1
        slot = jnp.where(player == CHANCE, rank, jnp.arange(num_slots))
        node = (
            player,
            legal,
            probs,
            game.returns(state),
            game.current_key(state),
            game.public_state_key(state),
        )
        return node, kids, valid, slot.astype(jnp.int32)

    return jax.jit(jax.vmap(one)), num_slots


def enumerate_tree(
    game: StepGame, *, max_histories: int = 5_000_000, chunk: int = 16384, keep_states=False
):
    """All histories of ``game`` breadth first, as a :class:`StepTree` (with the states
    themselves when ``keep_states``).

    Raises ``ValueError`` (naming ``max_histories``) when the tree has more histories.
    Each level is expanded in chunks of ``chunk`` states (one compilation).
    """
    expand, _ = _expander(game)
    frontier = jax.tree_util.tree_map(lambda x: np.asarray(x)[None], game.init())
    parent = [np.array([-1])]
    slot = [np.array([0], np.int32)]
    action = [np.array([0], np.int32)]
    nodes, levels, start, kept = [], [], 0, []
    while True:
        n = jax.tree_util.tree_leaves(frontier)[0].shape[0]
        if n == 0:
            break
        if start + n > max_histories:
            raise ValueError(
                f"{game!r} has more than max_histories={max_histories} histories; "
                "enumerate only small instances"
            )
        levels.append((start, start + n))
        if keep_states:
            kept.append(frontier)
        kids_p, kids_s, kids_a, kid_states = [], [], [], []
        for lo in range(0, n, chunk):
            hi = min(n, lo + chunk)
            idx = np.minimum(np.arange(lo, lo + chunk), hi - 1)
            batch = jax.tree_util.tree_map(lambda x, idx=idx: x[idx], frontier)
            node, kids, valid, kslot = jax.device_get(expand(batch))
            m = hi - lo
            nodes.append(tuple(x[:m] for x in node))
            valid = valid[:m]
            rows, cols = np.nonzero(valid)
            kids_p.append(start + lo + rows)
            kids_s.append(kslot[:m][rows, cols])
            kids_a.append(cols.astype(np.int32))
            kid_states.append(jax.tree_util.tree_map(lambda x, r=rows, c=cols: x[r, c], kids))
        parent.append(np.concatenate(kids_p))
        slot.append(np.concatenate(kids_s))
        action.append(np.concatenate(kids_a))
        frontier = jax.tree_util.tree_map(lambda *xs: np.concatenate(xs), *kid_states)
        start += n
    cols = [np.concatenate(c) for c in zip(*nodes, strict=True)]
    return StepTree(
        player=cols[0],
        parent=np.concatenate(parent),
        slot=np.concatenate(slot),
        action=np.concatenate(action),
        legal=cols[1],
        chance_probs=cols[2],
        returns=cols[3],
        info_key=cols[4],
        public_key=cols[5],
        levels=tuple(levels),
        states=jax.tree_util.tree_map(lambda *xs: np.concatenate(xs), *kept) if kept else None,
    )
