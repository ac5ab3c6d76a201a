"""Multi-tree extensive-form MCTS self-play: UCT and Smooth UCT (Heinrich, PhD thesis ch. 3,
"Smooth UCT Search"; Heinrich & Silver, IJCAI 2015; ALGORITHMS.md 2.7).

Each player i grows a tree over its own information states u. One episode samples a
history from the root (chance inside the simulator); at player i's node with infoset u:
out of i's tree -> uniform rollout; u not in i's tree -> expand u, uniform action, i is
out of its tree for the rest of the episode; else SELECT. At the end every node that
expanded or selected gets UPDATE with the terminal return r_i:

    N(u) += 1,  N(u, a) += 1,  Q(u, a) += (r_i - Q(u, a)) / N(u, a)   (compensated, below)
    UCB(u) = argmax_a Q(u, a) + c sqrt(log N(u) / N(u, a))          (UCT: always)
    Smooth UCT: UCB(u) with prob. eta = max(gamma, eta0 / (1 + d sqrt(N(u)))),
                else a ~ N(u, a) / N(u)

The output strategy is the average policy N(u, a) / N(u) (all selections counted).

Layout (one run; ``jax.vmap`` over keys for many). The statistics of infoset u are one
row of an integer table ``stats [I, 3A]``: ``N(u, .)`` in the first A columns, then the
bits (float32 bitcast to int32; float64 to int64 under x64) of ``Q(u, .)`` and of its
compensation ``Q_lo(u, .)``, so a step reads them with one gather and an episode writes
them with one scatter.

Q is a compensated incremental mean (:func:`mean_update`): the mean is the unevaluated
sum ``Q + Q_lo`` of two floats, each increment ``(r - Q - Q_lo) / N`` is added with an
error-free two-sum and the rounding error is kept in ``Q_lo``. The plain float32
``Q += (r - Q) / N`` loses up to half an ulp of Q per update in a systematic direction
once the increment is a few ulps (N ~ 1e6), and the lost amounts add up linearly in N
(docs/mcts.md: 1.6e-5 after 4e6 updates of a mean -1/7 sequence); compensated, the error
stays about one rounding of ``(r - Q) / N``, which later updates shrink by n / N, so it
is bounded by ~1 ulp of |r - Q| whatever N (``tests/test_mcts.py``). Selection reads Q
(the float nearest the mean).

``N(u) = sum_a N(u, a)``; u is in its player's tree iff ``N(u) > 0`` (the expanded
node is updated in the same episode), so the in-tree mask is derived, not stored. The walk
is the shared trajectory walk of ``jaxcfr._sampling`` (the one outcome sampling uses):
two node gathers and one statistics gather per depth.

Randomness: per depth one uniform for the sampled child (chance outcome, rollout,
UCB with random tie-breaking among the maximizers, or the average-policy draw; all
inverse-CDF draws) and one uniform ``z`` for Smooth UCT's branch (z < eta -> UCB).
With perfect recall an infoset occurs at most once on a trajectory, so deferring
UPDATE to after the walk equals the recursive algorithm's update on the way back.

Shapes: I infosets, A actions, D depth (``game.meta.max_depth``).
"""

from __future__ import annotations

from typing import NamedTuple

import jax
import jax.numpy as jnp

from games_tensor import Game
from games_tensor._game import CHANCE
from jaxcfr import _sampling as smp
from jaxcfr._solver import Solver, builtin_cache_key, check_game, check_key, check_number, rounded

_INT_OF = {jnp.dtype(jnp.float32): jnp.int32, jnp.dtype(jnp.float64): jnp.int64}


class MCTSState(NamedTuple):
    """State of UCT / Smooth UCT self-play (one run; ``jax.vmap`` over keys for many).

    stats: [I, 3A] int32 (int64 for float64 games): ``N(u, a)`` in columns ``:A``,
      the bits of ``Q(u, a)`` in columns ``A:2A`` and of its compensation ``Q_lo(u, a)``
      in ``2A:`` (read them with ``.visits``, ``.q``, ``.q_lo``).
    iteration: [] int32, completed episodes.

    Derived views: ``visits`` [I, A] ``N(u, a)``; ``q`` [I, A] ``Q(u, a)`` (game float
    dtype); ``in_tree`` [I] bool, ``N(u) > 0``; ``strategy_sum`` [I, A] float, ``N(u, a)``
    (so :func:`jaxcfr.average_policy` gives ``N(u, a) / N(u)``, uniform where ``N(u) = 0``).
    """

    stats: jax.Array
    iteration: jax.Array

    @property
    def visits(self) -> jax.Array:
        return self.stats[..., : self.stats.shape[-1] // 3]

    @property
    def q(self) -> jax.Array:
        A = self.stats.shape[-1] // 3
        return _q_of(self.stats[..., A : 2 * A])

    @property
    def q_lo(self) -> jax.Array:
        A = self.stats.shape[-1] // 3
        return _q_of(self.stats[..., 2 * A :])

    @property
    def in_tree(self) -> jax.Array:
        return jnp.sum(self.visits, axis=-1) > 0

    @property
    def strategy_sum(self) -> jax.Array:
        return self.visits.astype(_FLOAT_OF[jnp.dtype(self.stats.dtype)])


_FLOAT_OF = {jnp.dtype(jnp.int32): jnp.float32, jnp.dtype(jnp.int64): jnp.float64}


def _q_of(bits: jax.Array) -> jax.Array:
    return jax.lax.bitcast_convert_type(bits, _FLOAT_OF[jnp.dtype(bits.dtype)])


def _bits_of(q: jax.Array) -> jax.Array:
    return jax.lax.bitcast_convert_type(q, _INT_OF[jnp.dtype(q.dtype)])


def init_state(game: Game) -> MCTSState:
    """Empty trees: all-zero ``stats [I, 3A]`` (N = 0, Q = Q_lo = 0.0), iteration 0."""
    dtype = _INT_OF[jnp.dtype(game.node_utility.dtype)]
    stats = jnp.zeros((game.num_infosets, 3 * game.num_actions), dtype)
    return MCTSState(stats, jnp.zeros((), jnp.int32))


def _check_state(game: Game, state: MCTSState) -> None:
    if not hasattr(getattr(state, "stats", None), "shape"):
        raise ValueError(
            f"state must be an MCTSState (from the solver's init), got {type(state).__name__}"
        )
    want = (game.num_infosets, 3 * game.num_actions)
    got = tuple(state.stats.shape)
    if got != want:
        raise ValueError(f"state.stats has shape {got}, expected [I, 3A] = {want} for {game.name}")


class _Pick(NamedTuple):
    """What a player step keeps for UPDATE."""

    update: jax.Array  # bool: the node expanded or selected (its player was in-tree)
    expand: jax.Array  # bool: the node was added to its player's tree
    n: jax.Array  # [A] N(u, .) before the episode
    q: jax.Array  # [A] Q(u, .) before the episode
    q_lo: jax.Array  # [A] its compensation Q_lo(u, .)


def _episode(game: Game, tables, stats, u, z, c, eta, smooth: bool):
    """One episode's walk. Returns (steps, utility): the walk's steps, whose ``aux`` is a
    :class:`_Pick` at depths that hold player nodes, and the terminal's u_0."""
    A = game.num_actions
    dtype = tables.dtype

    def choose(d, kinds, v, out):
        if not any(kinds.players):
            return v.row, out, None
        row = stats.at[v.infoset].get(mode="promise_in_bounds")
        n, q, q_lo = row[:A], _q_of(row[A : 2 * A]), _q_of(row[2 * A :])
        n_u = jnp.sum(n)
        nf = n.astype(dtype)
        if kinds.players[0] and kinds.players[1]:
            out_p = jnp.where(v.player == 0, out[0], out[1])
        else:
            out_p = out[0] if kinds.players[0] else out[1]
        update = (v.code >= 0) & ~out_p
        expand = update & (n_u == 0)
        # UCB with random tie-breaking: the maximizers get weight 1 (unvisited: +inf)
        log_n = jnp.log(jnp.maximum(n_u, 1).astype(dtype))
        score = q + rounded(c * jnp.sqrt(log_n / jnp.maximum(nf, 1.0)))
        score = jnp.where(n == 0, jnp.inf, score)
        score = jnp.where(v.legal, score, -jnp.inf)
        best = (score == jnp.max(score)).astype(dtype)
        if smooth:
            use_ucb = z[d] < eta(n_u.astype(dtype))
            best = jnp.where(use_ucb, best, nf)
        legal = v.row  # the legal mask (as 1.0 / 0.0) at player nodes: uniform rollout
        probs = jnp.where(update & ~expand, smp.pad_actions(best, kinds.width), legal)
        if kinds.chance:
            probs = jnp.where(v.code == CHANCE, v.row, probs)
        out = (out[0] | (expand & (v.player == 0)), out[1] | (expand & (v.player == 1)))
        # computed once each (same bits): XLA:CPU would otherwise fuse the UCB scores into
        # every element of the [W, W] cdf reduction and the out-of-tree flags of all the
        # depths above into every later kernel (docs/mcts.md, "Session 23")
        probs, out = smp.materialize((probs, jnp.stack(out)))
        return probs, (out[0], out[1]), _Pick(update, expand, n, q, q_lo)

    no = jnp.zeros((), bool)
    steps, utility, _ = smp.sample_walk(game, tables, u, choose, carry=(no, no))
    return steps, utility


def _two_sum(a, b):
    """(s, e) with s = fl(a + b) and a + b = s + e exactly (Knuth's TwoSum)."""
    s = a + b
    bp = s - a
    return s, (a - (s - bp)) + (b - bp)


def mean_update(q, q_lo, r, n):
    """One step of the compensated incremental mean: the mean ``q + q_lo`` of n - 1
    values, the n-th value ``r`` -> the mean of n values as ``(q', q_lo')``, ``q'`` the
    float nearest to ``q' + q_lo'``. Elementwise; ``n`` >= 1 in ``q``'s dtype.

    inc = (r - q - q_lo) / n; (s, e) = TwoSum(q, inc); (q', q_lo') = TwoSum(s, q_lo + e).
    With ``q_lo = 0`` kept at 0 this would be the plain ``q += (r - q) / n``.
    """
    inc = ((r - q) - q_lo) / n
    s, e = _two_sum(q, inc)
    return _two_sum(s, q_lo + e)


def _rows(game: Game, steps, utility):
    """UPDATE as rows to write: (rows [R] int32, new stats rows [R, 3A]); rows not to
    write are ``I`` (dropped)."""
    I, A = game.num_infosets, game.num_actions  # noqa: E741
    rows, values = [], []
    for s in steps:
        if s.aux is None:
            continue
        v, pick = s.view, s.aux
        r = jnp.where(v.player == 0, utility, -utility)
        hit = jnp.arange(A, dtype=s.k.dtype) == s.k
        n = pick.n + hit.astype(pick.n.dtype)
        hi, lo = mean_update(pick.q, pick.q_lo, r, jnp.maximum(n, 1).astype(pick.q.dtype))
        q, q_lo = jnp.where(hit, hi, pick.q), jnp.where(hit, lo, pick.q_lo)
        rows.append(jnp.where(pick.update, v.infoset, I))
        values.append(jnp.concatenate([n, _bits_of(q), _bits_of(q_lo)]))
    return jnp.stack(rows), jnp.stack(values)


def _make(c, gamma, eta0, d, smooth: bool, name: str, hyper) -> Solver:
    def eta(n_u):
        return jnp.maximum(gamma, eta0 / (1.0 + rounded(d * jnp.sqrt(n_u))))

    def init(game: Game) -> MCTSState:
        check_game(game)
        smp.level_kinds(game)  # remember what each depth holds (static pruning of the walk)
        return init_state(game)

    def update(game: Game, state: MCTSState, key: jax.Array) -> MCTSState:
        check_game(game)
        check_key(key)
        _check_state(game, state)
        D = game.meta.max_depth
        tables = smp.node_tables(game)
        dtype = tables.dtype
        uz = smp.uniforms(key, (2, D), dtype)
        steps, utility = _episode(game, tables, state.stats, uz[0], uz[1], c, eta, smooth)
        rows, values = _rows(game, steps, utility)
        stats = state.stats.at[rows].set(values, mode="drop")
        return MCTSState(stats, state.iteration + 1)

    return Solver(
        init=init,
        update=update,
        name=name,
        needs_key=True,
        hyperparams=hyper,
        cache_key=builtin_cache_key(name, hyper),
        compiler_options=tuple(sorted(smp.sampling_compiler_options().items())),
    )


def uct(c=2.0) -> Solver:
    """UCT self-play: multi-tree extensive-form MCTS with UCB selection (Heinrich ch. 3,
    Algorithms 1-2; ALGORITHMS.md 2.7). Smooth UCT with eta = 1.

    SELECT(u) = argmax_a Q(u, a) + c sqrt(log N(u) / N(u, a)) (unvisited actions first,
    ties broken uniformly at random); UPDATE as in the module docstring.

    Args:
      c: exploration constant >= 0 (the chapter: 2 on Kuhn, 20 on Leduc; default 2).

    Returns:
      A :class:`Solver` (``needs_key``): ``init(game) -> MCTSState`` (empty trees) and
      ``update(game, state, key) -> MCTSState``, one episode. The average policy
      ``N(u, a) / N(u)`` is ``jaxcfr.average_policy(game, state)`` [I, A]; infosets
      never reached play uniformly.

    Example::

        game = games_tensor.load("kuhn_poker")
        res = jaxcfr.run(jaxcfr.uct(c=2.0), game, 100_000, 10_000, num_seeds=64)
    """
    check_number("c", c, 0.0)
    hyper = (("c", c),)
    return _make(c, 1.0, 1.0, 0.0, False, "uct", hyper)


def smooth_uct(c=1.75, gamma=0.1, eta0=0.9, d=0.001) -> Solver:
    """Smooth UCT self-play (Heinrich ch. 3, Algorithms 1 and 3, Eq. 3.1; ALGORITHMS.md 2.7).

    SELECT(u): with probability eta = max(gamma, eta0 (1 + d sqrt(N(u)))^-1) the UCB
    action argmax_a Q(u, a) + c sqrt(log N(u) / N(u, a)), otherwise a ~ N(u, a) / N(u);
    UPDATE as UCT's. ``gamma = 1`` (or ``eta0 = 1, d = 0``) is UCT.

    Args:
      c: exploration constant >= 0 (the chapter: 1.75 on Kuhn, 18 on Leduc).
      gamma: lower bound of eta, in [0, 1] (0.1).
      eta0: initial eta, in [0, 1] (0.9).
      d: decay rate >= 0 of eta (0.001 on Kuhn, 0.002 on Leduc).

    Returns:
      A :class:`Solver` as :func:`uct`'s (``MCTSState``, one episode per update).

    Example::

        game = games_tensor.load("leduc_poker")
        res = jaxcfr.run(jaxcfr.smooth_uct(c=18.0, d=0.002), game, 10**6, 10**5,
                         num_seeds=16)
        res.exploitability                      # [16, 10]
    """
    check_number("c", c, 0.0)
    check_number("gamma", gamma, 0.0, 1.0)
    check_number("eta0", eta0, 0.0, 1.0)
    check_number("d", d, 0.0)
    hyper = (("c", c), ("gamma", gamma), ("eta0", eta0), ("d", d))
    return _make(c, gamma, eta0, d, True, "smooth_uct", hyper)
