"""Online Outcome Sampling (Lisý, Lanctot, Bowling, AAMAS 2015; ALGORITHMS.md 2.5).

Each iteration samples one trajectory with the fixed-depth walk of
``jaxcfr._sampling`` (:func:`jaxcfr._sampling.walk`), for update player
i = iteration mod 2 (Algorithm 1's two calls per iteration are two iterations here).
With probability delta the trajectory is *targeted*: at every node above the
target set T (IST: the histories of the searcher's infoset; PST: the player histories
of its public state) it samples from Phi (chance: rho) renormalised on the children
that lead into T. s1 and s2 are the probabilities of the sample under the targeted
and the untargeted scheme (both start at 1/w_T), l = delta s1 + (1 - delta) s2 at the
leaf, and at the update player's in-tree infoset I on the trajectory (history h,
sampled a, tail c = pi(ha, z), x = sigma(I, a) c):

    r(I, a) += (c - x) u_i pi_{-i}(h) / l,   r(I, a') -= x u_i pi_{-i}(h) / l,
    s(I', .) += pi_{-i}(h') sigma(I', .) / (delta s1(h') + (1 - delta) s2(h'))

at the opponent's in-tree infosets I'. sigma is gamma-explorative regret matching
``gamma / |A| + (1 - gamma) RM_tau(r)`` (positive regrets at or below
tau = ``jaxcfr._solver.regret_tolerance`` count as 0: rounding noise). Incremental
tree building: the first infoset reached that is not in memory is added (sigma
uniform there), then a uniform playout runs to the end; playout infosets are
neither stored nor updated.

w_T (which definition): the verbal one of the paper, as GTLibrary's ISTargeting
implements it (ALGORITHMS.md 2.5 [code]), with T the target set:
``1 / w_T = (1 - delta) + delta / pi_bar(T)``, pi_bar(T) the probability of reaching T
under the current mean profile (mean strategy in memory, uniform elsewhere; chance
included), computed once per ``search`` call (floored at 1e-6). IST: pi_bar(I(m));
PST: pi_bar of the public state. Without a target (root search) w_T = 1.

Step form (``games_tensor.step.StepGame``, games too large to compile): the same
code, walking game states instead of node ids (``jaxcfr._sampling.walk``), with the
rows from a hashed key table of ``capacity`` rows (``jaxcfr.search._table``; a new
infoset the full table refuses is treated as playout and counted in
``state.table.refusals``). Targeting restricts the trajectory to the children that
stay consistent with T (``StepGame.consistent_children`` /
``public_consistent_children`` at the nodes above T), and pi_bar(T) is estimated, not
enumerated: the mean of ``prod_d tsum_d`` over :data:`REACH_SAMPLES` walks under the mean profile
restricted to T (tsum_d the profile's mass on the consistent children at depth d;
an unbiased importance-sampling estimate of pi_bar(T) since every restricted walk
ends in T).

Shapes: R table rows (= I infosets, or ``capacity``; ``_table``), A actions, D depth,
M the largest target set, K child slots.
"""

from __future__ import annotations

from typing import NamedTuple

import jax
import jax.numpy as jnp

from games_tensor import Game
from games_tensor._game import CHANCE, TERMINAL
from jaxcfr import _sampling as smp
from jaxcfr._solver import check_game, check_number, regret_matching, regret_tolerance
from jaxcfr.search import _bots
from jaxcfr.search import _table as tbl

TARGETINGS = ("ist", "pst", None)
_PI_FLOOR = 1e-6
REACH_SAMPLES = 16  # step form: walks estimating pi_bar(T) per search call


class _OOSFields(NamedTuple):
    stats: jax.Array
    in_memory: jax.Array
    iteration: jax.Array
    table: object = None


class OOSState(tbl.StatsViews, _OOSFields):
    """One OOS searcher (one match).

    stats: [R, 2, A] a row's regrets and mean-strategy sums side by side (one row read
    per trip, one scatter per backup; ``jaxcfr.search._table.StatsViews``), read as
    the views ``regrets``: [R, A] cumulative sampled regrets and ``strategy_sum``:
    [R, A] mean-strategy sums s_I; in_memory: [R] bool, infosets added to the tree;
    iteration: [] int32 trajectories sampled so far (the update player is
    ``iteration % 2``); table: the key -> row hash table (step form; its ``refusals``
    counts infosets a full table refused), None for a compiled game.
    """

    __slots__ = ()
    VIEWS = ("regrets", "strategy_sum")


class _Carry(NamedTuple):
    s1: jax.Array  # targeted-scheme probability of the sample so far (times 1/w_T)
    s2: jax.Array  # untargeted-scheme probability
    pi_o: jax.Array  # pi_{-i}(h): opponent and chance reach
    playout: jax.Array  # bool: below the infoset added this iteration
    added: jax.Array  # int32 row added this iteration (R: none)
    lo: jax.Array  # int32 [lo, hi): target histories below the current node
    hi: jax.Array
    reached: jax.Array  # bool (step form): the trajectory has reached T
    inside: jax.Array  # bool (step form): the trajectory is still consistent with T
    added_key: jax.Array  # the added infoset's key (step form)
    refused: jax.Array  # bool: a new infoset was refused (full table)


class _Rec(NamedTuple):
    regret: jax.Array  # bool: update player's in-tree infoset (regret row)
    average: jax.Array  # bool: opponent's in-tree infoset (mean-strategy row)
    row: jax.Array  # int32
    action: jax.Array  # int32 sampled child slot
    legal: jax.Array  # [A] bool
    sigma: jax.Array  # [A] strategy at the node (uniform when new or in the playout)
    sigma_k: jax.Array  # its probability of the sampled action
    pi_o: jax.Array  # pi_{-i}(h)
    q: jax.Array  # delta s1(h) + (1 - delta) s2(h)
    f: jax.Array  # this step's factor of the tail probability x


class _Target(NamedTuple):
    depth: jax.Array  # [] int32 depth of the target set (0: root)
    counts: jax.Array  # [D, M + 1, K] int32 (jaxcfr.search._table.slot_counts)


def _sample(game, tables, state, u, i, targeted, target, inv_w, hyper):
    """One trajectory: (records, final carry, u_0). ``target`` None: root search."""
    epsilon, delta, gamma = hyper
    R = state.in_memory.shape[0]
    step_form = smp.is_step(game)
    dtype = state.stats.dtype
    one = jnp.ones((), dtype)

    def step(d, kinds, v, c):
        W = kinds.width
        chance = v.code == CHANCE
        terminal = v.code == TERMINAL
        added_key, refused = c.added_key, c.refused
        if any(kinds.players):
            nr = tbl.read_node(game, state, v, dtype)
            player_node, row, mem, uniform = nr.player_node, nr.row, nr.mem, nr.uniform
            r = tbl.read_rows(state.stats, row)[0]  # the whole [2, A] row: one read
            rm = regret_matching(r, v.legal, uniform, tolerance=regret_tolerance(game, dtype))
            sig_tree = gamma * uniform + (1.0 - gamma) * rm
            tree = player_node & mem & ~c.playout
            reach_new = player_node & ~mem & ~c.playout  # first infoset not in memory
            new = reach_new & nr.can_add
            refused = refused | (reach_new & ~nr.can_add)
            added_key = jnp.where(new, nr.key, added_key)
            sigma = jnp.where(tree, sig_tree, uniform)
            own = v.player == i
            phi = jnp.where(tree & own, smp.explore(sigma, v.legal, epsilon), sigma)
            base = smp.pad_actions(phi, W)
            if kinds.chance:
                base = jnp.where(chance, v.row, base)
        else:
            player_node = tree = new = reach_new = own = jnp.zeros((), bool)
            row = jnp.zeros((), jnp.int32)
            sigma = jnp.zeros((game.num_actions,), dtype)
            base = v.row
        lo, hi, reached, inside = c.lo, c.hi, c.reached, c.inside
        if target is not None:
            if step_form:
                reached = c.reached | tbl.step_member(game, target, v)
                # the children checks matter above T while the trajectory is inside it
                consistent = tbl.step_children_where(game, target, v, W, ~reached & c.inside)
                before = ~reached
                allowed = jnp.where(before, consistent, True)
                in_part = c.inside
            else:
                before = d < target.depth
                cd = target.counts[d]
                cnt = (cd[hi] - cd[lo])[:W]
                allowed = jnp.where(before, cnt > 0, True)
                in_part = hi > lo
            masked = jnp.where(allowed, base, 0.0)
            tsum = jnp.sum(masked)
            use_t = targeted & in_part & ~c.playout & ~reach_new & (tsum > 0)
            probs = jnp.where(use_t, masked, base)
        else:
            probs = base
        probs = smp.materialize(probs)  # once, not W times in the cdf's [B, W, W] operand
        k = smp.sample_index(probs, u[d])
        p_k = jnp.where(terminal, one, smp.select(base, k))
        s2 = c.s2 * p_k
        if target is not None:
            ok = (smp.select(allowed, k) > 0) & in_part
            s1_tree = jnp.where(ok, c.s1 * p_k / jnp.where(tsum > 0, tsum, 1.0), 0.0)
            s1 = jnp.where(c.playout | reach_new | terminal, c.s1 * p_k, s1_tree)
            move = before & ~terminal
            if step_form:
                inside = jnp.where(move, ok, in_part)
            else:
                # the target histories in the slots before k: a masked sum (one small
                # reduction; int32, exact) instead of a cumsum's reduce-window
                lo_k = lo + jnp.sum(jnp.where(jnp.arange(W) < k, cnt, 0))
                lo, hi = jnp.where(move, lo_k, lo), jnp.where(move, lo_k + smp.select(cnt, k), hi)
            q = delta * c.s1 + (1.0 - delta) * c.s2
        else:
            s1, q = s2, c.s2
        if any(kinds.players):
            sig_k = smp.select(smp.pad_actions(sigma, W), k)
            f = jnp.where(player_node, sig_k, p_k)
            pi_o = c.pi_o * jnp.where(player_node, jnp.where(own, one, sig_k), p_k)
        else:
            sig_k, f, pi_o = one, p_k, c.pi_o * p_k
        node = tree | new
        rec = _Rec(node & own, node & ~own, row, k, v.legal, sigma, sig_k, c.pi_o, q, f)
        added = jnp.where(new, row, c.added)
        carry = _Carry(
            s1, s2, pi_o, c.playout | reach_new, added, lo, hi, reached, inside, added_key, refused
        )
        return k, smp.materialize(carry), rec

    start = jnp.asarray(inv_w, dtype)
    zero = jnp.zeros((), jnp.int32)
    hi0 = (
        zero if target is None or step_form else jnp.asarray(target.counts.shape[1] - 1, jnp.int32)
    )
    reached0 = target.player < 0 if step_form and target is not None else jnp.ones((), bool)
    key0 = jnp.zeros((game.key_words,) if step_form else (1,), jnp.uint32)
    false = jnp.zeros((), bool)
    carry = _Carry(
        start, start, one, false, jnp.asarray(R, jnp.int32), zero, hi0, reached0,
        jnp.ones((), bool), key0, false,
    )  # fmt: skip
    return smp.walk(game, tables, step, carry, stacked=step_form, loop=not step_form)


def _rows(game, records, carry, utility, i, delta, targeted_game: bool, R=None):
    """Table rows of one trajectory: (regret rows, values, mean rows, values, added row)."""
    R = tbl.num_rows(game) if R is None else R
    A = game.num_actions
    kinds = smp.level_kinds(game)
    u_i = jnp.where(i == 0, utility, -utility)
    leaf = delta * carry.s1 + (1.0 - delta) * carry.s2 if targeted_game else carry.s2
    safe = jnp.where(leaf > 0, leaf, 1.0)
    if smp.is_step(game):  # records stacked [D, ...]: the same arithmetic, vectorised
        r = records

        def back(run, f):  # tail[j] = f[j+1] ... f[D-1], multiplied in the list's order
            return run * f, run

        _, tail = jax.lax.scan(back, jnp.ones((), utility.dtype), r.f, reverse=True)
        w = jnp.where(leaf > 0, u_i * r.pi_o / safe, 0.0) * tail
        onehot = (jnp.arange(A)[None, :] == r.action[:, None]).astype(utility.dtype)
        rv = jnp.where(r.legal, w[:, None] * (onehot - r.sigma_k[:, None]), 0.0)
        av = r.pi_o[:, None] * r.sigma / jnp.where(r.q > 0, r.q, 1.0)[:, None]
        rr, ar = jnp.where(r.regret, r.row, R), jnp.where(r.average, r.row, R)
        return rr, rv, ar, av, carry.added
    tail, run = [None] * len(records), jnp.ones((), utility.dtype)
    for j in range(len(records) - 1, -1, -1):
        tail[j] = run
        run = run * records[j].f
    rr, rv, ar, av = [], [], [], []
    onehot_cache = jnp.arange(A)
    for j, r in enumerate(records):
        if not any(kinds[j].players):
            continue
        w = jnp.where(leaf > 0, u_i * r.pi_o / safe, 0.0) * tail[j]
        onehot = (onehot_cache == r.action).astype(utility.dtype)
        rr.append(jnp.where(r.regret, r.row, R))
        rv.append(jnp.where(r.legal, w * (onehot - r.sigma_k), 0.0))
        ar.append(jnp.where(r.average, r.row, R))
        av.append(r.pi_o * r.sigma / jnp.where(r.q > 0, r.q, 1.0))
    return jnp.stack(rr), jnp.stack(rv), jnp.stack(ar), jnp.stack(av), carry.added


def _check_hyper(targeting, delta, epsilon, gamma):
    if targeting not in TARGETINGS:
        raise ValueError(f"targeting must be one of {TARGETINGS!r}, got {targeting!r}")
    check_number("delta", delta, 0.0, 1.0)
    check_number("epsilon", epsilon, 0.0, 1.0, lo_open=True)
    check_number("gamma", gamma, 0.0, 1.0)


def oos(
    targeting="ist", delta=0.9, epsilon=0.4, gamma=0.01, capacity=tbl.DEFAULT_CAPACITY
) -> _bots.Bot:
    """Online Outcome Sampling, a search bot (ALGORITHMS.md 2.5; see the module docstring).

    Args:
      targeting: ``"ist"`` (information-set targeting), ``"pst"`` (public-subgame
        targeting; needs a game whose actions are public, not II-Goofspiel) or ``None``
        (search from the root, OOS = outcome sampling with incremental tree building).
      delta: probability of a targeted iteration, in [0, 1]. 0: outcome sampling.
      epsilon: exploration of the update player's sampling, in (0, 1].
      gamma: exploration mixed into regret matching, in [0, 1] (paper: 0.01).
      capacity: step-form games only: slots (= rows R) of the hashed key table, a
        power of two; when it is full, new infosets are played out and counted
        (``state.table.refusals``).

    Returns:
      A :class:`~jaxcfr.search.Bot`: ``init(game) -> OOSState`` (statistics [R, 2, A], mask
      [R]); ``search(game, state, view, key, num_iterations)`` samples
      ``num_iterations`` trajectories (update players alternating) targeted at
      ``view``; ``policy(game, state, view) -> [A]`` the mean strategy s_I normalised
      (uniform outside memory); matches sample the move from it (the paper does not
      say how OOS picks its move; ALGORITHMS.md 2.5 [inferred]).

    Example::

        bot = jaxcfr.oos(targeting="pst")
        state = bot.init(game)
        view = jaxcfr.view_of(game, history)     # what the acting player knows
        state = jax.jit(bot.search, static_argnums=4)(game, state, view, key, 20_000)
        probs = bot.policy(game, state, view)   # [A]
    """
    _check_hyper(targeting, delta, epsilon, gamma)
    capacity = tbl.check_capacity(capacity)
    hyper = (epsilon, delta, gamma)

    def init(game: Game) -> OOSState:
        check_game(game, step_form=True)
        smp.level_kinds(game)
        if smp.is_step(game) or tbl.concrete(game):
            _sets(game, targeting)  # host tables, before any trace
        stats, in_memory, table = tbl.init_tables(game, 2, capacity)
        return OOSState(stats, in_memory, jnp.zeros((), jnp.int32), table)

    def search(game: Game, state: OOSState, view: _bots.View, key, num_iterations) -> OOSState:
        _bots.check_search(game, view, key, num_iterations, need_public=targeting == "pst")
        seed = smp.stream_seed(key)
        if smp.is_step(game):
            _sets(game, targeting)
            target, inv_w = _prepare_step(game, state, view, targeting, delta, seed)
            tables = None
        else:
            target, inv_w = _prepare(game, state, view, _sets(game, targeting), targeting, delta)
            tables = smp.node_tables(game)  # outside the loop: XLA does not hoist it here

        def body(t, st):
            return _iterate(game, tables, st, (seed, t), target, inv_w, hyper)

        return jax.lax.fori_loop(0, num_iterations, body, state)

    def policy(game: Game, state: OOSState, view: _bots.View) -> jax.Array:
        check_game(game, step_form=True)
        return _bots.normalized_row(game, state.strategy_sum, state, view)

    def strategy(game: Game, state: OOSState):
        check_game(game, step_form=True)
        return state.strategy_sum, state.in_memory

    return _bots.Bot(init, search, policy, strategy, f"oos({targeting}, d={delta}, e={epsilon})")


def _sets(game: Game, targeting):
    """The game's target sets for ``targeting`` (None: root search; step form: None
    after checking that the game supports the targeting)."""
    if smp.is_step(game):
        if targeting == "pst" and not tbl.has_public_consistency(game):
            raise ValueError(
                f"targeting='pst' needs a game whose actions are public; {game!r} has "
                "private actions (use targeting='ist')"
            )
        return None
    if targeting == "pst":
        if not tbl.has_public_actions(game):
            raise ValueError(
                f"targeting='pst' needs a game whose actions are public; {game.name} has "
                "private actions (use targeting='ist')"
            )
        return tbl.public_sets(game)
    if targeting == "ist":
        return tbl.infoset_sets(game)
    return None


def _prepare(game, state, view, sets, targeting, delta):
    """Target tables and 1/w_T for one search call ((None, 1.0) without targeting)."""
    if sets is None:
        return None, 1.0
    _bots.check_view(game, view, need_public=targeting == "pst")
    set_id = view.public_state if targeting == "pst" else view.infoset
    set_id = jnp.where(view.infoset < 0, -1, set_id)
    paths = tbl.target_paths(game, sets, set_id)
    target = _Target(paths.depth, tbl.slot_counts(game, paths))

    def mean(infosets):  # the mean profile's rows on the target's paths only
        return _bots.table_policy(
            game, state.strategy_sum, state.in_memory, game.legal_uniform, infosets
        )

    reach = jnp.maximum(tbl.path_reach(game, paths, mean), _PI_FLOOR)
    return target, (1.0 - delta) + delta / reach


def _prepare_step(game, state, view, targeting, delta, seed):
    """Step form: (StepTarget, 1/w_T) for one search call ((None, 1.0) without
    targeting); pi_bar(T) estimated from :data:`REACH_SAMPLES` restricted walks under
    the mean profile (module docstring), at stream counters past the iterations'."""
    if targeting is None:
        return None, 1.0
    key = view.public_state if targeting == "pst" else view.infoset
    target = tbl.StepTarget(jnp.asarray(view.player, jnp.int32), key, targeting == "pst")
    D = smp.max_depth(game)
    dtype = state.stats.dtype

    def one(n):
        u = smp.stream_uniforms(seed, jnp.uint32(1 << 31) + n * jnp.uint32(D), (D,), dtype)

        def step(d, kinds, v, c):
            weight, reached = c
            nr = tbl.read_node(game, state, v, dtype)
            w = jnp.where(
                v.legal & nr.mem, state.stats.at[nr.row, 1].get(mode="fill", fill_value=0), 0.0
            )
            total = jnp.sum(w)
            mean = jnp.where(total > 0, w / jnp.where(total > 0, total, 1.0), nr.uniform)
            base = jnp.where(v.code == CHANCE, v.row, smp.pad_actions(mean, kinds.width))
            reached = reached | tbl.step_member(game, target, v)
            live = ~reached & (v.code != TERMINAL)
            consistent = tbl.step_children_where(game, target, v, kinds.width, live)
            masked = jnp.where(consistent, base, 0.0)
            tsum = jnp.sum(masked)
            probs = jnp.where(live & (tsum > 0), masked, base)
            k = smp.sample_index(probs, u[d])
            return k, (jnp.where(live, weight * tsum, weight), reached), None

        _, (weight, reached), _ = smp.walk(
            game, None, step, (jnp.ones((), dtype), target.player < 0)
        )
        return jnp.where(reached, weight, 0.0)

    reach = jnp.mean(jax.vmap(one)(jnp.arange(REACH_SAMPLES, dtype=jnp.uint32)))
    inv_w = (1.0 - delta) + delta / jnp.maximum(reach, _PI_FLOOR)
    return target, jnp.where(view.player < 0, 1.0, inv_w)


def _iterate(game, tables, state, stream, target, inv_w, hyper):
    """One OOS iteration (one trajectory) from ``state``; ``stream = (seed, t)``: the
    iteration's D + 1 uniforms are numbers t (D + 1) ... of the seed's stream."""
    delta = hyper[1]
    D = smp.max_depth(game)
    seed, t = stream
    u = smp.materialize(smp.stream_uniforms(seed, t * (D + 1), (D + 1,), state.stats.dtype))
    i = state.iteration % 2
    targeted = u[D] < delta
    records, carry, utility = _sample(game, tables, state, u, i, targeted, target, inv_w, hyper)
    R = state.in_memory.shape[0]
    rr, rv, ar, av, added = _rows(game, records, carry, utility, i, delta, target is not None, R)
    in_memory, table = tbl.commit(game, state, added, added, carry.added_key, carry.refused)
    # one scatter-add of [n, 2, A] records: a record updates its row's regrets (update
    # player) or its mean-strategy sums (opponent), never both; the other part adds
    # zeros, which leaves a table entry's bits unchanged (entries start at +0 and a sum
    # is -0 only when both terms are)
    upd = rr < R
    rows = jnp.where(upd, rr, ar)
    zero = jnp.zeros((), rv.dtype)
    vals = jnp.stack([jnp.where(upd[:, None], rv, zero), jnp.where(upd[:, None], zero, av)], -2)
    return OOSState(smp.add_rows(state.stats, rows, vals), in_memory, state.iteration + 1, table)
