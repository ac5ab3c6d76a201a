"""Exact equilibrium by the sequence-form linear program (Koller, Megiddo and
von Stengel 1996), solved on the host with scipy's HiGHS and sparse matrices.

With P1's realization plan x (E x = e, x >= 0), P2's y (F y = f, y >= 0) and the
sequence-form payoff matrix M (P1's utility, chance reach included), P1 solves

    max_{x, q}  f^T q   s.t.  F^T q <= M^T x,  E x = e,  x >= 0,

and P2 solves the mirror LP  min_{y, p} e^T p  s.t.  E^T p >= M y,  F y = f, y >= 0.
Both optimal values equal the game value (P1's expected utility). Realization
plans are turned into behaviour policies by x(i, a) / x(parent(i)), uniform
where the parent sequence is never played.
"""

from __future__ import annotations

import time
from typing import NamedTuple

import jax.numpy as jnp
import numpy as np

from games_tensor import Game
from jaxcfr._solver import check_game


class LPSolution(NamedTuple):
    """value: P1's game value; policy: [I, A] equilibrium profile (both players);
    values: (P1 LP optimum, P2 LP optimum), equal up to solver tolerance;
    seconds: wall time of both solves."""

    value: float
    policy: object
    values: tuple[float, float]
    seconds: float


def _constraints(game: Game, player: int):
    """Sparse E (rows: root + the player's infosets; cols: the player's sequences),
    and the map flat sequence slot -> column (-1 for other slots)."""
    import scipy.sparse as sp

    A = game.num_actions
    mask = game.meta.host["legal_mask"]
    sl = game.player_slice(player)
    infosets = np.arange(sl.start, sl.stop)
    flat = (infosets[:, None] * A + np.arange(A)[None, :])[mask[sl]]
    col = np.full(game.num_sequences, -1, dtype=np.int64)
    col[game.empty_sequence] = 0
    col[flat] = np.arange(1, flat.size + 1)
    parent = np.asarray(game.parent_seq)[sl]
    rows, cols, vals = [0], [0], [1.0]
    own_rows = np.repeat(np.arange(1, infosets.size + 1), mask[sl].sum(axis=1))
    rows += own_rows.tolist()
    cols += col[flat].tolist()
    vals += [1.0] * flat.size
    rows += list(range(1, infosets.size + 1))
    cols += col[parent].tolist()
    vals += [-1.0] * infosets.size
    E = sp.csr_matrix((vals, (rows, cols)), shape=(infosets.size + 1, flat.size + 1))
    return E, col


def _to_policy(game: Game, player: int, plan: np.ndarray, col: np.ndarray, out: np.ndarray):
    A = game.num_actions
    mask = game.meta.host["legal_mask"]
    sl = game.player_slice(player)
    parent = np.asarray(game.parent_seq)[sl]
    parent_reach = plan[col[parent]]
    flat = np.arange(sl.start, sl.stop)[:, None] * A + np.arange(A)[None, :]
    seq = np.where(mask[sl], plan[np.maximum(col[flat], 0)], 0.0)
    seq = np.maximum(seq, 0.0)
    uniform = mask[sl] / mask[sl].sum(axis=1, keepdims=True)
    reached = (parent_reach > 1e-12) & (seq.sum(axis=1) > 0)
    out[sl] = np.where(
        reached[:, None], seq / np.where(reached, seq.sum(axis=1), 1.0)[:, None], uniform
    )


def _maximin_plan(M, own, opp, who: str):
    """max_{x, q} q_root  s.t.  opp^T q <= M^T x,  own x = e_root,  x >= 0.

    ``M`` [n_own, n_opp] is the maximizer's payoff; returns (value, realization plan).
    """
    import scipy.sparse as sp
    from scipy.optimize import linprog

    n, m = own.shape[1], opp.shape[0]
    c = np.zeros(n + m)
    c[n] = -1.0
    A_ub = sp.hstack([-M.T, opp.T]).tocsr()
    A_eq = sp.hstack([own, sp.csr_matrix((own.shape[0], m))]).tocsr()
    b_eq = np.zeros(own.shape[0])
    b_eq[0] = 1.0
    bounds = [(0, None)] * n + [(None, None)] * m
    res = linprog(
        c,
        A_ub=A_ub,
        b_ub=np.zeros(opp.shape[1]),
        A_eq=A_eq,
        b_eq=b_eq,
        bounds=bounds,
        method="highs",
    )
    if res.status != 0:
        raise RuntimeError(f"LP for {who} failed: {res.message}")
    return -res.fun, res.x[:n]


def solve_lp(game: Game) -> LPSolution:
    """Exact equilibrium of a compiled game by the sequence-form LP (needs scipy).

    Returns an :class:`LPSolution` with the value for P1 and an ``[I, A]`` policy.
    """
    check_game(game)
    try:
        import scipy.sparse as sp
    except ImportError as exc:  # pragma: no cover
        raise ImportError("solve_lp needs scipy: pip install scipy") from exc
    t0 = time.perf_counter()
    E, col0 = _constraints(game, 0)
    F, col1 = _constraints(game, 1)
    n0, n1 = E.shape[1], F.shape[1]
    s0 = col0[np.asarray(game.sf_seq0)]
    s1 = col1[np.asarray(game.sf_seq1)]
    M = sp.csr_matrix((game.meta.host["sf_payoff"], (s0, s1)), shape=(n0, n1))

    v1, x = _maximin_plan(M, E, F, "P1")
    neg_v2, y = _maximin_plan(-M.T, F, E, "P2")  # P2 maximizes its own payoff -M^T
    v2 = -neg_v2

    policy = np.zeros((game.num_infosets, game.num_actions))
    _to_policy(game, 0, x, col0, policy)
    _to_policy(game, 1, y, col1, policy)
    return LPSolution(
        value=float(v1),
        policy=jnp.asarray(policy, dtype=game.sf_payoff.dtype),
        values=(float(v1), float(v2)),
        seconds=time.perf_counter() - t0,
    )
