"""External-sampling MCCFR (Lanctot, Waugh, Zinkevich, Bowling 2009).

A traversal for update player i samples one outcome at every chance node (from
its distribution) and every opponent node (from sigma) it reaches and explores
all of i's actions. With v(h) the sampled value (u_i at a terminal; the sampled
child's value at chance and opponent nodes; sum_a sigma(I, a) v(ha) at i's nodes):

    r(I, a) += v(ha) - v(h)         at every reached h of i (history h in I),
    s(I', .) += sigma(I', .)        at every reached opponent node (simple averaging),

which are unbiased for the counterfactual regrets and (up to a per-infoset
constant) the opponent's reach-weighted average, as OpenSpiel's C++
``ExternalSamplingMCCFRSolver`` with its default ``SIMPLE`` averaging.

Layout (docs/mccfr.md): with chance and opponent outcomes fixed, a reached node
is identified by the tuple of i's actions on its path, so a traversal is a
breadth-first walk over static *slots* (the tuples that occur at each depth,
computed once per game on the host): the frontier at depth d is an ``[F_d]`` vector
of node ids, the next frontier is one static gather from the previous one's
sampled and branched children, and the values go back up by static gathers too.
For Leduc the slots number 59 (P1's traversal) and 33 (P2's), against 9,457
histories.
"""

from __future__ import annotations

import dataclasses

import jax
import jax.numpy as jnp
import numpy as np

from games_tensor import Game
from games_tensor._game import CHANCE, TERMINAL
from jaxcfr import _abstraction as abst
from jaxcfr import _sampling as smp
from jaxcfr._solver import (
    Solver,
    builtin_cache_key,
    check_bool,
    check_game,
    check_key,
    check_state,
    rounded,
    sum_actions,
)


@dataclasses.dataclass(frozen=True)
class _Level:
    """Static slot tables of one depth (NumPy int32). F slots here, F_prev / F_next at
    the neighbouring depths; a slot is a tuple of the update player's actions.

    src: [F, 2] where each slot's node comes from, as indices into the previous
      depth's candidates ``concat([sampled child [F_prev], children [F_prev * A], -1])``:
      column 0 the slot with the same tuple (its sampled chance / opponent child),
      column 1 ``slot * A + a`` of the tuple minus its last action a (the update
      player's child by a); the sentinel ``F_prev + F_prev * A`` when absent.
    child: [F, 1 + A] indices into the next depth's values ``concat([v [F_next], 0])``:
      column 0 the slot with the same tuple, columns 1.. the tuple extended by each
      action; F_next when absent.
    """

    size: int
    src: np.ndarray
    child: np.ndarray


@dataclasses.dataclass(frozen=True)
class _Layout:
    """A player's traversal layout: per-depth tables, and the flat slot ids (over the
    concatenation of all depths) where the update player's / the opponent's nodes
    can appear (the rows that may update regrets / the average strategy)."""

    levels: tuple[_Level, ...]
    player_slots: np.ndarray
    opponent_slots: np.ndarray

    @property
    def num_slots(self) -> int:
        return sum(lv.size for lv in self.levels)


def _tuple_ids(node_player, children, levels, player):
    """Tuple id of every node (0 = the empty tuple), with each tuple's parent and
    last action, interning (parent tuple, action) at the update player's nodes."""
    tid = np.zeros(node_player.size, dtype=np.int64)
    parent_of, last_of = [-1], [0]
    interned: dict[tuple[int, int], int] = {}
    for start, end in levels:
        hs = np.arange(start, end)
        for k in range(children.shape[1]):
            c = children[hs, k]
            has = c >= 0
            hk, ck = hs[has], c[has]
            mine = node_player[hk] == player
            tid[ck[~mine]] = tid[hk[~mine]]
            for h, ch in zip(hk[mine], ck[mine], strict=True):
                key = (int(tid[h]), k)
                t = interned.get(key)
                if t is None:
                    t = interned[key] = len(parent_of)
                    parent_of.append(key[0])
                    last_of.append(k)
                tid[ch] = t
    return tid, parent_of, last_of, interned


def _build_layout(game: Game, player: int) -> _Layout:
    tree = smp.host_tree(game)
    A = game.num_actions
    node_player = tree.node_player
    levels = game.meta.node_levels
    tid, parent_of, last_of, interned = _tuple_ids(node_player, tree.node_children, levels, player)
    slots = [np.unique(tid[s:e]) for s, e in levels]
    pos = [{int(t): j for j, t in enumerate(sl)} for sl in slots]
    out, mine_slots, their_slots, offset = [], [], [], 0
    for d, sl in enumerate(slots):
        F = sl.size
        F_prev = slots[d - 1].size if d > 0 else 0
        F_next = slots[d + 1].size if d + 1 < len(slots) else 0
        none_prev = F_prev + F_prev * A
        src = np.full((F, 2), none_prev, np.int32)
        child = np.full((F, 1 + A), F_next, np.int32)
        for j, t in enumerate(sl.tolist()):
            if d > 0:
                src[j, 0] = pos[d - 1].get(t, none_prev)
                if t != 0 and parent_of[t] in pos[d - 1]:
                    src[j, 1] = F_prev + pos[d - 1][parent_of[t]] * A + last_of[t]
            if d + 1 < len(slots):
                child[j, 0] = pos[d + 1].get(t, F_next)
                for a in range(A):
                    c = interned.get((t, a))
                    if c is not None:
                        child[j, 1 + a] = pos[d + 1].get(c, F_next)
        start, end = levels[d]
        kinds = node_player[start:end]
        slot_of = np.searchsorted(sl, tid[start:end]) + offset
        mine_slots.append(np.unique(slot_of[kinds == player]))
        their_slots.append(np.unique(slot_of[kinds == 1 - player]))
        out.append(_Level(F, src, child))
        offset += F
    return _Layout(
        tuple(out),
        np.concatenate(mine_slots).astype(np.int32),
        np.concatenate(their_slots).astype(np.int32),
    )


def layout(game: Game, player: int) -> _Layout:
    """The static slot layout of ``player``'s traversals (built once per game on the
    host, from :func:`jaxcfr._sampling.host_tree`; memoized in ``game.meta.host``)."""
    key = ("external_sampling_layout", player)
    if key not in game.meta.host:
        game.meta.host[key] = _build_layout(game, player)
    return game.meta.host[key]


def _take(x, idx, fill):
    """``x[idx]`` along axis 0 with static ``idx`` in ``[0, len(x)]``; index
    ``len(x)`` (the "none" sentinel of the layout) reads ``fill``."""
    padded = jnp.concatenate([x, jnp.full((1,) + x.shape[1:], fill, x.dtype)])
    return padded.at[jnp.asarray(idx)].get(mode="promise_in_bounds")


def _traverse(game: Game, tables: smp.NodeTables, regrets, u, player: int):
    """One external-sampling traversal for ``player``.

    Args:
      regrets: [I, A] (policy = regret matching on it, read at the start).
      u: [num_slots] uniforms, one per slot.

    Returns:
      (regret_rows [R], regret_values [R, A], avg_rows [Q], avg_values [Q, A]) with
      unused rows set to I; and the sampled root value (scalar) of ``player``.
    """
    I, A = game.num_infosets, game.num_actions  # noqa: E741
    lay = layout(game, player)
    sign = 1.0 if player == 0 else -1.0
    seen = []
    offset = 0
    # ---- top-down: sample chance and opponent, branch at the update player
    all_kinds = smp.level_kinds(game)
    for d, lv in enumerate(lay.levels):
        kinds = all_kinds[d]  # what depth d can hold (static pruning)
        if d == 0:
            frontier = jnp.zeros((1,), jnp.int32)  # the root
        else:
            prev = seen[-1]
            cand = jnp.concatenate([prev["sampled"], prev["children"].reshape(-1)])
            frontier = jnp.max(_take(cand, lv.src, -1), axis=1)
        valid = frontier >= 0
        has_players = any(kinds.players)
        v = smp.read_nodes(
            game, tables, regrets, jnp.maximum(frontier, 0), kinds.width, has_players, kinds.chance
        )
        acting = valid & (v.code >= 0)
        no = jnp.zeros(frontier.shape, bool)
        mine = acting & (v.player == player) if kinds.players[player] else no
        theirs = acting & (v.player != player) if kinds.players[1 - player] else no
        chance = valid & (v.code == CHANCE)
        if has_players:
            sig = smp.pad_actions(v.sigma, kinds.width)
            probs = jnp.where(chance[:, None], v.row, sig) if kinds.chance else sig
        else:
            probs = v.row
        k = smp.sample_index(probs, u[offset : offset + lv.size])
        offset += lv.size
        seen.append(
            dict(
                v=v,
                mine=mine,
                theirs=theirs,
                kinds=kinds,
                terminal=valid & (v.code == TERMINAL),
                sampled=jnp.where(chance | theirs, smp.select(v.children, k), -1),
                children=jnp.where(mine[:, None], v.children[:, :A], -1),
            )
        )
    # ---- bottom-up: values and regrets
    below = jnp.zeros((0,), regrets.dtype)
    regret_values = [None] * len(seen)
    for d in range(len(seen) - 1, -1, -1):
        lv, s = lay.levels[d], seen[d]
        v = s["v"]
        qq = _take(below, lv.child, 0.0)  # [F, 1 + A]
        value = qq[:, 0]
        if s["kinds"].players[player]:
            q = jnp.where(v.legal, qq[:, 1:], 0.0)
            mean = sum_actions(rounded(v.sigma * q))
            value = jnp.where(s["mine"], mean, value)
            regret_values[d] = jnp.where(v.legal, q - mean[:, None], 0.0)
        else:
            regret_values[d] = jnp.zeros((lv.size, A), regrets.dtype)
        if s["kinds"].terminal:
            value = jnp.where(s["terminal"], sign * v.utility, value)
        below = value
    cat = lambda f: jnp.concatenate([f(s) for s in seen])  # noqa: E731
    infoset = cat(lambda s: s["v"].infoset)
    mine_sl, their_sl = jnp.asarray(lay.player_slots), jnp.asarray(lay.opponent_slots)
    regret_rows = jnp.where(cat(lambda s: s["mine"])[mine_sl], infoset[mine_sl], I)
    avg_rows = jnp.where(cat(lambda s: s["theirs"])[their_sl], infoset[their_sl], I)
    regret_vals = jnp.concatenate(regret_values)[mine_sl]
    avg_vals = cat(lambda s: s["v"].sigma)[their_sl]
    return (regret_rows, regret_vals, avg_rows, avg_vals), below[0]


def num_uniforms(game: Game, player: int) -> int:
    """Uniforms one traversal of ``player`` consumes (one per slot)."""
    return layout(game, player).num_slots


def _sampled_rows(game: Game, regrets, key, player: int):
    """Test hook: the rows ``(regret_rows, regret_values, avg_rows, avg_values)`` one
    traversal for ``player`` adds at fixed ``regrets``."""
    u = smp.uniforms(key, (num_uniforms(game, player),), regrets.dtype)
    rows, _ = _traverse(game, smp.node_tables(game), regrets, u, player)
    return rows


def external_sampling(keying: str = "auto", full_average: bool = False) -> Solver:
    """External-sampling MCCFR with alternating updates and simple averaging.

    One iteration = one traversal per player (P1's, then P2's with P1's new
    regrets), as OpenSpiel's C++ solver counts.

    Args:
      keying: ``"auto"`` (default: tables keyed by the game's imperfect-recall
        abstraction when it has one, ``[J, A]``; ``jaxcfr._abstraction``), ``"abstract"``
        or ``"full"``.
      full_average: keyed by an abstraction, also add the average-strategy rows at the
        full infosets (state :class:`~jaxcfr._abstraction.AbstractMCCFRState` with a
        ``[I, A]`` ``full_strategy_sum``), for :func:`jaxcfr.full_game_regret`; the
        abstract tables are unchanged. Ignored when the tables are keyed by the full
        infosets.

    Returns:
      A :class:`Solver` with ``init(game) -> MCCFRState`` (zero ``regrets`` [I, A],
      ``strategy_sum`` [I, A], ``iteration`` int32) and
      ``update(game, state, key) -> MCCFRState`` (the key is consumed). The static
      traversal layout is built on the host from the game's metadata when first needed.

    Example::

        init, update = jaxcfr.external_sampling()
        state = init(game)
        step = jax.jit(update)
        for t in range(1000):
            state = step(game, state, jax.random.fold_in(key, t))
        jaxcfr.exploitability(game, jaxcfr.average_policy(game, state))
    """

    abst.check_keying(keying)
    check_bool("full_average", full_average)
    hyper = (("keying", keying),) if keying != "auto" else ()
    if full_average:
        hyper += (("full_average", True),)

    def init(game: Game) -> smp.MCCFRState:
        check_game(game)
        keyed = abst.keyed_game(game, keying)
        walked = (keyed, game) if full_average and keyed is not game else (keyed,)
        for g in walked:  # the static traversal layouts and level kinds, on the host
            layout(g, 0)
            layout(g, 1)
            smp.level_kinds(g)
        state = smp.init_state(keyed)
        if len(walked) == 2:
            full = jnp.zeros((game.num_infosets, game.num_actions), state.regrets.dtype)
            return abst.AbstractMCCFRState(*state, full)
        return state

    def update(game: Game, state: smp.MCCFRState, key: jax.Array) -> smp.MCCFRState:
        check_game(game)
        check_key(key)
        if isinstance(state, abst.AbstractMCCFRState):
            check_state(game, state, abst.view(game, keying).num_rows(game))
            tables = smp.node_tables(game)
            n0, n1 = num_uniforms(game, 0), num_uniforms(game, 1)
            u = smp.uniforms(key, (n0 + n1,), state.regrets.dtype)
            uu = (u[:n0], u[n0:])

            def draw(p, regrets):
                return _traverse(game, tables, regrets, uu[p], p)[0]

            return abst.sampled_update(game, state, draw, smp.add_rows)
        game = abst.keyed_game(game, keying)
        check_state(game, state)
        regrets, strategy_sum = state.regrets, state.strategy_sum
        tables = smp.node_tables(game)
        n0, n1 = num_uniforms(game, 0), num_uniforms(game, 1)
        u = smp.uniforms(key, (n0 + n1,), regrets.dtype)
        for p, uu in ((0, u[:n0]), (1, u[n0:])):
            (rr, rv, ar, av), _ = _traverse(game, tables, regrets, uu, p)
            regrets = smp.add_rows(regrets, rr, rv)
            strategy_sum = smp.add_rows(strategy_sum, ar, av)
        return smp.MCCFRState(regrets, strategy_sum, state.iteration + 1)

    return Solver(
        init=init,
        update=update,
        name="external_sampling",
        needs_key=True,
        hyperparams=hyper,
        cache_key=builtin_cache_key("external_sampling", hyper),
    )
