"""Outcome-sampling MCCFR (Lanctot, Waugh, Zinkevich, Bowling 2009; ALGORITHMS.md 2.4).

A trajectory samples one terminal history z with probability q(z): the update
player i samples from Phi = eps * Unif(A(I)) + (1 - eps) * sigma(I), the opponent
from sigma, chance from its distribution. With W = u_i(z) pi_{-i}(h) / q(z),
c = pi(ha, z) and x = sigma(I, a) c at i's infoset I on z (history h, sampled a):

    r(I, a) += (c - x) W,   r(I, a') += -x W  (a' != a),
    s(I', .) += pi_{-i}(h') sigma(I', .) / q(h')  at the opponent's infosets I' on z

(stochastically weighted averaging; pi_{-i} includes the opponent's own reach and
chance). Deviation from OpenSpiel's C++ ``OutcomeSamplingMCCFRSolver``, which
averages at the update player's own infosets with weight pi_i(h) / q(h): we
follow the paper and ALGORITHMS.md. Both estimators are unbiased.
"""

from __future__ import annotations

from typing import NamedTuple

import jax
import jax.numpy as jnp

from games_tensor import Game
from games_tensor._game import CHANCE
from jaxcfr import _abstraction as abst
from jaxcfr import _sampling as smp
from jaxcfr._solver import (
    Solver,
    builtin_cache_key,
    check_bool,
    check_game,
    check_key,
    check_number,
    check_state,
)


class _Step(NamedTuple):
    """One step of a trajectory (per-run scalars, [A] rows)."""

    kinds: smp.LevelKinds  # static: what the level can hold
    acting: jax.Array  # bool: a player node (not chance, not past the terminal)
    player: jax.Array  # int32 acting player
    infoset: jax.Array  # int32
    action: jax.Array  # int32 sampled child slot
    sigma: jax.Array  # [A] current policy at the infoset
    legal: jax.Array  # [A] bool
    sigma_k: jax.Array  # sigma of the sampled action (1 at chance)
    phi_k: jax.Array  # its sampling probability (1 at chance)


def _walk(game: Game, tables: smp.NodeTables, regrets, u, epsilon, explorers: tuple[int, ...]):
    """Sample one trajectory from the root, one step per depth.

    Args:
      tables: the packed tree (:func:`jaxcfr._sampling.node_tables`).
      regrets: [I, A] (the current policy is regret matching on it).
      u: [D] uniforms, one per depth.
      explorers: players that sample from the epsilon-exploring Phi (others from sigma).

    Returns:
      (steps, utility): a list of D :class:`_Step` and the terminal's u_0. Step d
      reads a node of depth d, or the terminal where the trajectory ended earlier.
      What a depth can hold (:func:`jaxcfr._sampling.level_kinds`) prunes the work
      statically: no policy at chance-only depths, no chance at player-only depths.
    """

    def step(d, kinds, v, carry):
        has_players = any(kinds.players)
        chance = v.code == CHANCE
        if has_players:
            sig = smp.pad_actions(v.sigma, kinds.width)
            explore = [p for p in explorers if kinds.players[p]]
            if explore:
                phi = smp.pad_actions(smp.explore(v.sigma, v.legal, epsilon), kinds.width)
                if len(explore) == 1 and kinds.players[1 - explore[0]]:
                    phi = jnp.where(v.player == explore[0], phi, sig)
            else:
                phi = sig
            probs = jnp.where(chance, v.row, phi) if kinds.chance else phi
        else:
            probs = v.row
        k = smp.sample_index(probs, u[d])
        if has_players:
            sigma_k = jnp.where(chance, 1.0, smp.select(sig, k))
            phi_k = jnp.where(chance, 1.0, smp.select(probs, k))
        else:
            sigma_k = phi_k = jnp.ones((), regrets.dtype)
        acting = v.code >= 0 if has_players else jnp.zeros((), bool)
        rec = _Step(kinds, acting, v.player, v.infoset, k, v.sigma, v.legal, sigma_k, phi_k)
        return k, carry, rec

    steps, _, utility = smp.walk(game, tables, step, (), regrets)
    return steps, utility


def _updates(game: Game, steps: list[_Step], utility, update_players: tuple[int, ...]):
    """Table rows to add from one trajectory (ALGORITHMS.md 2.4).

    For every update player i: regret rows at i's steps and average-strategy rows at
    the opponent's steps, both with pi_{-i} / q relative to i. The steps of one
    trajectory act at distinct infosets; in the parallel form (both players update)
    each acting step gets one regret row (as its own player i) and one average row
    (as the opponent of the other player).

    Returns (regret_rows [R], regret_values [R, A], avg_rows [Q], avg_values [Q, A]);
    R, Q count the depths that can hold the relevant player's nodes; rows not to
    update are ``I`` (dropped by the scatter).
    """
    I, A = game.num_infosets, game.num_actions  # noqa: E741
    one = jnp.ones((), utility.dtype)
    playing = [s for s in steps if any(s.kinds.players)]
    # pi_{-i}(h) / q(h) before each step: factors 1/phi at i's steps, sigma/phi at the
    # opponent's (exactly 1 unless the opponent explores too), 1 at chance.
    prefix = {}
    for i in update_players:
        run, out = one, []
        for s in playing:
            out.append(run)
            run = run * jnp.where(s.acting, jnp.where(s.player == i, 1.0, s.sigma_k) / s.phi_k, 1.0)
        prefix[i] = out
    # tail pi(ha, z) / q(ha, z) after each step: sigma/phi factors of the later steps
    run, tail = one, [None] * len(playing)
    for j in range(len(playing) - 1, -1, -1):
        tail[j] = run
        s = playing[j]
        run = run * jnp.where(s.acting, s.sigma_k / s.phi_k, 1.0)
    regret_rows, regret_vals, avg_rows, avg_vals = [], [], [], []
    for j, s in enumerate(playing):
        if len(update_players) == 2:
            r_prefix = jnp.where(s.player == 0, prefix[0][j], prefix[1][j])
            a_prefix = jnp.where(s.player == 0, prefix[1][j], prefix[0][j])
            u_i = jnp.where(s.player == 0, utility, -utility)
            r_step = a_step = s.acting
            r_here = a_here = True
        else:
            (i,) = update_players
            r_prefix = a_prefix = prefix[i][j]
            u_i = utility if i == 0 else -utility
            r_step, a_step = s.acting & (s.player == i), s.acting & (s.player != i)
            r_here, a_here = s.kinds.players[i], s.kinds.players[1 - i]
        if r_here:
            # W * pi(ha, z) / sigma(I, a) of ALGORITHMS.md: u pi_{-i}(h) pi(ha, z) / q(z)
            w = r_prefix * u_i * tail[j] / s.phi_k
            onehot = jnp.arange(A) == s.action
            regret_rows.append(jnp.where(r_step, s.infoset, I))
            regret_vals.append(jnp.where(s.legal, w * (onehot - s.sigma_k), 0.0))
        if a_here:
            avg_rows.append(jnp.where(a_step, s.infoset, I))
            avg_vals.append(a_prefix * s.sigma)

    def stack(rows, vals):
        # a player that never acts in this game contributes no rows at all
        if not rows:
            return jnp.zeros((0,), jnp.int32), jnp.zeros((0, A), utility.dtype)
        return jnp.stack(rows), jnp.stack(vals)

    return (*stack(regret_rows, regret_vals), *stack(avg_rows, avg_vals))


def _trajectory(game: Game, tables, regrets, u, epsilon, alternating: bool, player: int):
    """One trajectory's table rows: alternating for update player ``player``, or
    parallel (both explore, both update) when ``alternating`` is False."""
    players = (player,) if alternating else (0, 1)
    traj, utility = _walk(game, tables, regrets, u, epsilon, players)
    return _updates(game, traj, utility, players)


def _sampled_rows(game: Game, regrets, key, player: int, epsilon=0.6, alternating=True):
    """Test hook: the rows ``(regret_rows, regret_values, avg_rows, avg_values)`` one
    trajectory adds at fixed ``regrets`` (``player`` ignored when not alternating)."""
    u = smp.uniforms(key, (game.meta.max_depth,), regrets.dtype)
    return _trajectory(game, smp.node_tables(game), regrets, u, epsilon, alternating, player)


def outcome_sampling(
    epsilon=0.6, alternating: bool = True, keying: str = "auto", full_average: bool = False
) -> Solver:
    """Outcome-sampling MCCFR with epsilon-on-policy exploration (ALGORITHMS.md 2.4).

    One iteration samples two trajectories, as OpenSpiel's C++ solver counts:
    alternating, one per update player (P1's trajectory, then P2's with P1's new
    regrets); parallel (``alternating=False``), two trajectories in turn, each
    exploring at both players' infosets and updating both players' regrets and
    average strategies (Lanctot 2013's parallel form, as compared in Heinrich's
    thesis, whose "episodes" are 2 x iterations here).

    Args:
      epsilon: exploration in (0, 1]: the update player samples from
        ``epsilon * Unif(A(I)) + (1 - epsilon) * sigma(I)``. Default 0.6 (OpenSpiel).
      alternating: True (default) alternating updates; False parallel OS.
      keying: ``"auto"`` (default: tables keyed by the game's imperfect-recall
        abstraction when it has one, ``[J, A]``; ``jaxcfr._abstraction``), ``"abstract"``
        or ``"full"``.
      full_average: keyed by an abstraction, also add the average-strategy rows at the
        full infosets (state :class:`~jaxcfr._abstraction.AbstractMCCFRState` with a
        ``[I, A]`` ``full_strategy_sum``), for :func:`jaxcfr.full_game_regret`; the
        abstract tables are unchanged. Ignored when the tables are keyed by the full
        infosets (their ``strategy_sum`` is the full game's average).

    Returns:
      A :class:`Solver` with ``init(game) -> MCCFRState`` (zero ``regrets`` [I, A],
      ``strategy_sum`` [I, A], ``iteration`` int32) and
      ``update(game, state, key) -> MCCFRState`` (the key is consumed).

    Example::

        init, update = jaxcfr.outcome_sampling(epsilon=0.6)
        keys = jax.random.split(jax.random.PRNGKey(0), 256)          # 256 seeds
        state = jax.vmap(lambda k: init(game))(keys)
        step = jax.jit(jax.vmap(update, in_axes=(None, 0, 0)))
        for t in range(1000):
            state = step(game, state, jax.vmap(jax.random.fold_in, (0, None))(keys, t))
        policies = jax.vmap(jaxcfr.average_policy, (None, 0))(game, state)   # [256, I, A]
    """
    check_number("epsilon", epsilon, 0.0, 1.0, lo_open=True)
    check_bool("alternating", alternating)
    abst.check_keying(keying)
    check_bool("full_average", full_average)

    def init(game: Game) -> smp.MCCFRState:
        check_game(game)
        keyed = abst.keyed_game(game, keying)
        smp.level_kinds(keyed)  # remember what each depth holds (static pruning of the walk)
        state = smp.init_state(keyed)
        if full_average and keyed is not game:
            smp.level_kinds(game)
            full = jnp.zeros((game.num_infosets, game.num_actions), state.regrets.dtype)
            return abst.AbstractMCCFRState(*state, full)
        return state

    def update(game: Game, state: smp.MCCFRState, key: jax.Array) -> smp.MCCFRState:
        check_game(game)
        check_key(key)
        if isinstance(state, abst.AbstractMCCFRState):
            check_state(game, state, abst.view(game, keying).num_rows(game))
            tables = smp.node_tables(game)
            u = smp.uniforms(key, (2, game.meta.max_depth), state.regrets.dtype)

            def draw(p, regrets):
                return _trajectory(game, tables, regrets, u[p], epsilon, alternating, p)

            return abst.sampled_update(game, state, draw, smp.add_rows)
        game = abst.keyed_game(game, keying)
        check_state(game, state)
        D = game.meta.max_depth
        regrets, strategy_sum = state.regrets, state.strategy_sum
        tables = smp.node_tables(game)
        u = smp.uniforms(key, (2, D), regrets.dtype)
        for p in (0, 1):
            rr, rv, ar, av = _trajectory(game, tables, regrets, u[p], epsilon, alternating, p)
            regrets = smp.add_rows(regrets, rr, rv)
            strategy_sum = smp.add_rows(strategy_sum, ar, av)
        return smp.MCCFRState(regrets, strategy_sum, state.iteration + 1)

    hyper = (("epsilon", epsilon), ("alternating", alternating))
    if keying != "auto":
        hyper += (("keying", keying),)
    if full_average:
        hyper += (("full_average", True),)
    return Solver(
        init=init,
        update=update,
        name="outcome_sampling",
        needs_key=True,
        hyperparams=hyper,
        cache_key=builtin_cache_key("outcome_sampling", hyper),
    )
