"""Static per-game tables for regret-based pruning (host, NumPy, once per game).

Computed from the compiled game's host copies (``game.meta.host``) and cached by
``game.meta``, so they are compile-time constants inside ``jit`` (the game itself is
a traced argument there). Nothing here runs per iteration.

Per player p (``n_p`` infosets, action-major ``[A, n_p]`` like the kernel):

* ``hist_own[p]`` ``[H]``: position of p's last sequence on the path to each history
  in p's own flattened ``[A, n_p]`` block (``a * n_p + local``; ``A * n_p`` for the
  empty sequence, the layout of ``game.parent_own``). With it, the reach of any history
  under p's realization plan is one gather: ``x_p(h) = sf.take(plan_p.reshape(-1),
  hist_own[p], 1.0)[h]``; ``pi_{-p}(h) = chance(h) * x_{-p}(h)``.
* ``node_ids[p]``, ``node_local[p]``: the histories where p moves and their infoset
  (local index in p's block), for counterfactual reach ``pi_{-p}(I) = sum_{h in I}
  pi_{-p}(h)`` as one segment sum.
* ``upper[p]`` ``[A, n_p]``: U(I, a), the largest payoff of p reachable after a at I;
  ``lower[p]`` ``[n_p]``: L(I), the smallest reachable from I (ALGORITHMS.md 2.8).
* ``chance_mass[p]`` ``[n_p]``: sum of chance reach over I's histories, an upper bound
  on pi_{-p}(I) for every opponent strategy.
"""

from __future__ import annotations

import dataclasses

import numpy as np

from games_tensor import TERMINAL, Game
from jaxcfr._solver import check_game

_CACHE: dict = {}


@dataclasses.dataclass(frozen=True)
class PruningTables:
    hist_own: tuple[np.ndarray, np.ndarray]
    chance: np.ndarray
    node_ids: tuple[np.ndarray, np.ndarray]
    node_local: tuple[np.ndarray, np.ndarray]
    upper: tuple[np.ndarray, np.ndarray]
    lower: tuple[np.ndarray, np.ndarray]
    chance_mass: tuple[np.ndarray, np.ndarray]
    num_histories: int
    num_legal: int  # legal (infoset, action) pairs of both players


def _host_node_infoset(game: Game) -> np.ndarray:
    host = game.meta.host
    if "node_infoset" in host:
        return np.asarray(host["node_infoset"])
    try:  # games compiled before the host copy existed: read the (concrete) array
        return np.asarray(game.node_infoset)
    except Exception as err:  # a tracer
        raise ValueError(
            "regret-based pruning needs the game's history tables on the host; compile "
            "the game with games_tensor.load / games_tensor.compile"
        ) from err


def tables(game: Game) -> PruningTables:
    """The pruning tables of ``game`` (cached by its tree's identity)."""
    check_game(game)
    m = game.meta  # the tree only: a compacted payoff list (_compact) shares the tables
    key = (m.name, m.params, m.fingerprint, m.num_histories, m.num_infosets, m.num_actions)
    if key not in _CACHE:
        _CACHE[key] = _build(game)
    return _CACHE[key]


def _build(game: Game) -> PruningTables:
    meta = game.meta
    host = meta.host
    player = np.asarray(host["node_player"])
    children = np.asarray(host["node_children"])
    infoset = _host_node_infoset(game)
    chance = np.asarray(host["node_chance_reach"], dtype=np.float64)
    util0 = np.asarray(host["node_utility"], dtype=np.float64)
    legal = np.asarray(host["legal_mask"])
    H, A = meta.num_histories, meta.num_actions
    levels = meta.node_levels
    offsets = (0, meta.infosets_per_player[0])
    sizes = meta.infosets_per_player

    hist_own = []
    for p in (0, 1):
        n_p = sizes[p]
        slot = np.full(H, A * n_p, dtype=np.int64)  # the empty sequence
        for start, end in levels:  # breadth-first: parents come before their children
            nodes = np.arange(start, end)
            own_node = player[start:end] == p
            for k in range(children.shape[1]):  # chance outcomes may use slots >= A
                kid = children[start:end, k]
                ok = kid >= 0
                slot[kid[ok]] = slot[nodes[ok]]
                own = ok & own_node
                slot[kid[own]] = k * n_p + infoset[nodes[own]] - offsets[p]
        hist_own.append(slot.astype(np.int32))

    upper, lower, node_ids, node_local, mass = [], [], [], [], []
    for p in (0, 1):
        u = util0 if p == 0 else -util0
        hi = np.where(player == TERMINAL, u, -np.inf)
        lo = np.where(player == TERMINAL, u, np.inf)
        for start, end in reversed(levels):
            kids = children[start:end]
            ok = kids >= 0
            if not ok.any():
                continue
            safe = np.maximum(kids, 0)
            khi = np.where(ok, hi[safe], -np.inf).max(axis=1)
            klo = np.where(ok, lo[safe], np.inf).min(axis=1)
            inner = ok.any(axis=1)
            idx = np.arange(start, end)[inner]
            hi[idx], lo[idx] = khi[inner], klo[inner]
        ids = np.nonzero(player == p)[0]
        local = infoset[ids] - offsets[p]
        n = sizes[p]
        up = np.full((A, n), -np.inf)
        for a in range(A):
            kid = children[ids, a]
            ok = kid >= 0
            np.maximum.at(up[a], local[ok], hi[kid[ok]])
        legal_p = legal[offsets[p] : offsets[p] + n].T
        up = np.where(legal_p & np.isfinite(up), up, 0.0)
        low = np.full(n, np.inf)
        np.minimum.at(low, local, lo[ids])
        low = np.where(np.isfinite(low), low, 0.0)
        m = np.zeros(n)
        np.add.at(m, local, chance[ids])
        upper.append(up)
        lower.append(low)
        node_ids.append(ids.astype(np.int32))
        node_local.append(local.astype(np.int32))
        mass.append(m)
    return PruningTables(
        hist_own=tuple(hist_own),
        chance=chance,
        node_ids=tuple(node_ids),
        node_local=tuple(node_local),
        upper=tuple(upper),
        lower=tuple(lower),
        chance_mass=tuple(mass),
        num_histories=H,
        num_legal=int(legal.sum()),
    )
