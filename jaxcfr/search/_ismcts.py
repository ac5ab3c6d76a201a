"""Information-set MCTS, the OOS paper's baseline (Cowling et al. 2012; ALGORITHMS.md 2.6).

Each iteration draws a history uniformly from the searcher's current infoset (no
belief; the root for a root search), follows its path from the root without
updating anything, and from there runs one simulation with the fixed-depth walk of
``jaxcfr._sampling``: in-tree infosets select an action, the first infoset reached
that is not in the tree is added (its action uniform: all its actions are untried),
then a uniform playout runs to the end. Each in-tree infoset I on the simulation
(history h, action a) is updated from the view of its player p = P(I):

* UCT: n(I, a) += 1, v(I, a) += u_p(z). Selection: untried legal actions first
  (uniformly), then argmax_a v(I, a) / n(I, a) + C sqrt(ln n(I) / n(I, a)),
  C = 2 x the game's maximal |outcome|. Play: the most-visited action;
  exploitability: the visit frequencies.
* RM (Hart & Mas-Colell regret matching as GTLibrary's ``RMSelector``): p = RM_tau(r)
  (regrets at or below tau = ``jaxcfr._solver.regret_tolerance`` count as 0),
  sample from (1 - gamma) p + gamma / |A| (gamma = 0.2); with v = (u_p + max) / (2 max)
  in [0, 1]: r(I, a) += v / sigma(a), r(I, b) -= v for every legal b; the mean
  strategy accumulates p. Play and exploitability: the mean strategy.

Step form (``games_tensor.step.StepGame``): the same code over game states, rows from
a hashed key table of ``capacity`` rows (``jaxcfr.search._table``; a new infoset the
full table refuses is played out and counted in ``state.table.refusals``). The start
history is not drawn from an enumerated infoset but by walking from the root, each
step choosing a child (chance outcome or action) with probability proportional to
the number of the searcher's infoset's histories at or below it
(``StepGame.num_completions``, exact; chance probabilities play no part, as in the
compiled form): the product telescopes to 1 / |I| for every history of I, the
compiled form's uniform draw (tests/test_step_games.py checks the counts against the
enumerated trees of the small games).

Shapes: R table rows (= I, or ``capacity``), A actions, D depth, M the largest
infoset (histories).
"""

from __future__ import annotations

from typing import NamedTuple

import jax
import jax.numpy as jnp
import numpy as np

from games_tensor import Game
from games_tensor._game import CHANCE
from jaxcfr import _sampling as smp
from jaxcfr._solver import check_game, check_number, regret_matching, regret_tolerance
from jaxcfr.search import _bots
from jaxcfr.search import _table as tbl

SELECTIONS = ("uct", "rm")


class _ISMCTSFields(NamedTuple):
    stats: jax.Array
    in_memory: jax.Array
    iteration: jax.Array
    table: object = None


class ISMCTSState(tbl.StatsViews, _ISMCTSFields):
    """One ISMCTS searcher (one match).

    stats: [R, k, A] the statistics of a row side by side (one row read per trip, one
    scatter per backup; ``jaxcfr.search._table.StatsViews``), k = 2 for UCT (visits,
    values), 3 for RM (visits, values, strategy_sum); read them as the views
    ``visits``: [R, A] n(I, a); ``values``: [R, A] UCT: summed outcomes v(I, a) from
    I's player's view, RM: regrets r(I, a); ``strategy_sum``: [R, A] RM's
    mean-strategy sums (zeros for UCT, not stored); in_memory: [R] bool (the rows
    updated by a simulation are the rows it marks, each with one visit, so a row is in
    memory iff its visits are not all 0; compiled selection reads its statistics row
    for that and not the mask); iteration: [] int32 simulations so far;
    table: the key -> row hash table (step form, with its ``refusals`` count), None
    for a compiled game.
    """

    __slots__ = ()
    VIEWS = ("visits", "values", "strategy_sum")
    ZERO_VIEWS = ()


class _UCTState(ISMCTSState):
    """:class:`ISMCTSState` of UCT: ``stats`` [R, 2, A] (visits, values)."""

    __slots__ = ()
    VIEWS = ("visits", "values")
    ZERO_VIEWS = ("strategy_sum",)


class _Rec(NamedTuple):
    update: jax.Array  # bool: in-tree (or just added) infoset
    row: jax.Array
    player: jax.Array
    action: jax.Array
    legal: jax.Array  # [A]
    p: jax.Array  # [A] RM's regret-matching distribution (uniform when new)
    sigma_k: jax.Array  # probability the sampled action was selected with (RM)


def max_outcome(game) -> float:
    """The game's largest |u| over terminals (host; step form: ``game.max_utility``)."""
    if smp.is_step(game):
        return float(game.max_utility)
    return float(np.max(np.abs(game.meta.host["node_utility"])))


class _Carry(NamedTuple):
    playout: jax.Array  # bool: below the infoset added this simulation
    reached: jax.Array  # bool (step form): at or below the start history
    added: jax.Array  # int32 row added this simulation (R: none)
    added_key: jax.Array  # its key (step form)
    refused: jax.Array  # bool: a new infoset was refused (full table)


def _sample(
    game, tables, state, u, path_slot, depth, selection, c_uct, gamma, target=None, root_row=None
):
    """One simulation; ``path_slot`` [D] the forced slots above the start history
    (compiled form), or ``target`` the searcher's key (step form: the walk is
    restricted to consistent children until it reaches the target infoset) with
    ``root_row`` the forced draw's row at the root (:func:`_root_row`, the same in
    every simulation of a search; computed here when not given)."""
    dtype = state.stats.dtype
    R = state.in_memory.shape[0]
    if target is not None and root_row is None:
        root_row = _root_row(game, target, dtype)

    def step(d, kinds, v, c):
        playout, reached = c.playout, c.reached
        W = kinds.width
        if target is not None:
            reached = reached | tbl.step_member(game, target, v)
            forced = ~reached
            # the forced draw's row (used only where forced): at the root (d == 0,
            # unbatched: a real branch) the one computed once per search; below it
            # from the node's counts, skipped once every simulation of the batch has
            # reached its start infoset (0/1 at the searcher's own decisions)
            forced_row = jax.lax.cond(
                d == 0,
                lambda: root_row,
                lambda: jax.lax.cond(
                    smp.batch_all(reached),
                    lambda: v.row,
                    lambda: _forced_row(
                        tbl.step_draw_weights(game, target, v, W, reached, dtype), v.row
                    ),
                ),
            )
        else:
            forced = d < depth
            forced_row = (jnp.arange(W) == path_slot[d]).astype(dtype)
        added, added_key, refused = c.added, c.added_key, c.refused
        if any(kinds.players):
            nr = tbl.read_node(game, state, v, dtype)
            player_node, row, mem, uniform = nr.player_node, nr.row, nr.mem, nr.uniform
            stats = tbl.read_rows(state.stats, row)  # [k, A]: one row read per trip
            n = stats[0]
            if target is None:
                # compiled: in memory <=> visited (see ISMCTSState), so the statistics
                # row read anyway replaces the mask read (one random row read less per
                # depth; the mask gather is then dead code)
                mem = jnp.any(n > 0)
            tree = player_node & mem & ~playout & ~forced
            reach_new = player_node & ~mem & ~playout & ~forced
            new = reach_new & nr.can_add
            refused = refused | (reach_new & ~nr.can_add)
            added = jnp.where(new, row, added)
            added_key = jnp.where(new, nr.key, added_key)
            if selection == "uct":
                val = stats[1]
                untried = v.legal & (n == 0)
                total = jnp.sum(jnp.where(v.legal, n, 0.0))
                safe_n = jnp.where(n > 0, n, 1.0)
                score = val / safe_n + c_uct * jnp.sqrt(jnp.log(jnp.maximum(total, 1.0)) / safe_n)
                masked = jnp.where(v.legal, score, -jnp.inf)
                # argmax as the first index of the max: two plain reductions instead of
                # one (value, index) pair reduction (the same index: the scores are not
                # NaN; paired 1.26x CPU per simulation, LD(1,1) B = 512, session 30)
                top = jnp.max(masked)
                iota = jnp.arange(game.num_actions)
                best = jnp.min(jnp.where(masked == top, iota, game.num_actions))
                greedy = (jnp.arange(game.num_actions) == best).astype(dtype)
                pick = jnp.where(jnp.any(untried), untried.astype(dtype), greedy)
                p = uniform
            else:
                r = stats[1]
                tol = regret_tolerance(game, dtype)
                p = jnp.where(tree, regret_matching(r, v.legal, uniform, tolerance=tol), uniform)
                pick = (1.0 - gamma) * p + gamma * uniform
            probs = smp.pad_actions(jnp.where(tree, pick, uniform), W)
            probs = jnp.where(forced, forced_row, probs)
            if kinds.chance:
                probs = jnp.where(v.code == CHANCE, jnp.where(forced, forced_row, v.row), probs)
        else:
            probs = jnp.where(forced, forced_row, v.row)
            player_node = tree = new = reach_new = jnp.zeros((), bool)
            row = jnp.zeros((), jnp.int32)
            p = jnp.zeros((game.num_actions,), dtype)
        # the distribution once, by a kernel of its own (materialize); otherwise
        # XLA:CPU fuses its producers (the UCT score, the forced draw's weights) into
        # the [B, W, W] masked operand of sample_index's cdf and computes them W times
        # over (II-GS(13) UCT at B = 256: about half the time; docs/large_games.md,
        # session 27; compiled LD(1,1) at B = 512: 1.04-1.06x per CPU-second, session 28)
        if selection == "uct" and target is None and not kinds.chance:
            # every UCT draw here is uniform over a set (the forced slot, the untried
            # actions, the greedy action or the legal actions): integer work instead
            # of the [B, W, W] cdf (smp.sample_set); sigma_k is unused by UCT
            k = smp.sample_set(smp.materialize(probs) > 0, u[d])
            sigma_k = jnp.ones((), dtype)
        else:
            probs = smp.materialize(probs)
            k = smp.sample_index(probs, u[d])
            sigma_k = smp.select(probs, k)
        rec = _Rec(tree | new, row, v.player, k, v.legal, p, sigma_k)
        carry = _Carry(playout | reach_new, reached, added, added_key, refused)
        return k, smp.materialize(carry), rec

    step_form = smp.is_step(game)
    false = jnp.zeros((), bool)
    carry = _Carry(
        false,
        target.player < 0 if target is not None else false,
        jnp.asarray(R, jnp.int32),
        jnp.zeros((game.key_words,) if step_form else (1,), jnp.uint32),
        false,
    )
    return smp.walk(game, tables, step, carry, stacked=step_form, loop=not step_form)


def _rows(game, records, utility, selection, max_u, R=None):
    """(rows [n], visit values [n, A], value values [n, A], mean values [n, A]) to add."""
    R = tbl.num_rows(game) if R is None else R
    A = game.num_actions
    kinds = smp.level_kinds(game)
    if smp.is_step(game):  # records stacked [D, ...]: the same arithmetic, vectorised
        r = records
        u_p = jnp.where(r.player == 0, utility, -utility)[:, None]
        onehot = (jnp.arange(A)[None, :] == r.action[:, None]).astype(utility.dtype)
        if selection == "uct":
            vv = onehot * u_p
        else:
            x = (u_p + max_u) / (2.0 * max_u)
            vv = jnp.where(r.legal, onehot * x / r.sigma_k[:, None] - x, 0.0)
        return jnp.where(r.update, r.row, R), onehot, vv, r.p
    rows, nv, vv, sv = [], [], [], []
    iota = jnp.arange(A)
    for j, r in enumerate(records):
        if not any(kinds[j].players):
            continue
        u_p = jnp.where(r.player == 0, utility, -utility)
        onehot = (iota == r.action).astype(utility.dtype)
        rows.append(jnp.where(r.update, r.row, R))
        nv.append(onehot)
        if selection == "uct":
            vv.append(onehot * u_p)
        else:
            x = (u_p + max_u) / (2.0 * max_u)
            vv.append(jnp.where(r.legal, onehot * x / r.sigma_k - x, 0.0))
        sv.append(r.p)
    return jnp.stack(rows), jnp.stack(nv), jnp.stack(vv), jnp.stack(sv)


def _forced_row(counts, row):
    """The step form's forced draw ``[W]``: the completion counts of the node's
    possible children (``row > 0``), or the node's row where none is positive (a
    trajectory that has reached its target; callers use the draw only where forced)."""
    masked = jnp.where(row > 0, counts, 0.0)
    return jnp.where(jnp.sum(masked) > 0, masked, row)


def _root_row(game, target, dtype):
    """:func:`_forced_row` at the root (``tbl.step_draw_weights`` at ``game.init()``,
    reached iff the search is from the root or the root is in the target set, as
    :func:`_sample`'s first trip has it): the same in every simulation of a search, so
    computed once per search instead of once per simulation (II-GS(13) mid-match: one
    counting DP of the few per simulation)."""
    W = smp.num_slots(game)
    v = smp.read_step(game, game.init(), W)
    reached = (target.player < 0) | tbl.step_member(game, target, v)
    counts = tbl.step_draw_weights(game, target, v, W, reached, dtype)
    return smp.materialize(_forced_row(counts, v.row))


# records a trip of the step form's span backup (smp.add_record_span); the in-tree
# part of a simulation is a few records
SPAN_CHUNK = 4


def _slice(records, s, n):
    """Records ``s .. s + n - 1`` of stacked step-form records."""
    return jax.tree_util.tree_map(lambda x: jax.lax.dynamic_slice_in_dim(x, s, n), records)


def ismcts(selection="uct", c=None, gamma=0.2, capacity=tbl.DEFAULT_CAPACITY) -> _bots.Bot:
    """Information-set MCTS with UCT or regret-matching selection (OOS paper's baselines).

    Args:
      selection: ``"uct"`` or ``"rm"``.
      c: UCT exploration constant, > 0; default (None) 2 x the game's maximal |outcome|
        (2 in Liar's Dice and II-Goofspiel, 74 in GP(3,3,2,2)).
      gamma: RM's exploration, in [0, 1] (paper: 0.2).
      capacity: step-form games only: slots (= rows R) of the hashed key table, a
        power of two; when it is full, new infosets are played out and counted.

    Returns:
      A :class:`~jaxcfr.search.Bot` over :class:`ISMCTSState` ([R, k, A] statistics, [R] mask):
      ``search(game, state, view, key, num_iterations)`` runs that many simulations
      from histories drawn uniformly from ``view.infoset`` (the root for
      ``jaxcfr.root_view()``); ``policy`` is the most-visited action (UCT, one-hot) or
      the mean strategy (RM); ``strategy`` gives visit counts (UCT) or mean-strategy
      sums (RM) for exploitability.

    Example::

        bot = jaxcfr.ismcts("uct")
        state = bot.search(game, bot.init(game), jaxcfr.view_of(game, h), key, 1000)
    """
    if selection not in SELECTIONS:
        raise ValueError(f"selection must be one of {SELECTIONS!r}, got {selection!r}")
    if c is not None:
        check_number("c", c, 0.0, np.inf, lo_open=True)
    check_number("gamma", gamma, 0.0, 1.0)
    capacity = tbl.check_capacity(capacity)
    State = _UCTState if selection == "uct" else ISMCTSState

    def init(game: Game) -> ISMCTSState:
        check_game(game, step_form=True)
        smp.level_kinds(game)
        if not smp.is_step(game) and tbl.concrete(game):
            tbl.infoset_sets(game)  # host tables, before any trace
        stats, in_memory, table = tbl.init_tables(game, len(State.VIEWS), capacity)
        return State(stats, in_memory, jnp.zeros((), jnp.int32), table)

    def search(game: Game, state: ISMCTSState, view: _bots.View, key, num_iterations):
        _bots.check_search(game, view, key, num_iterations)
        max_u = max_outcome(game)
        c_uct = 2.0 * max_u if c is None else c
        D = smp.max_depth(game)
        if smp.is_step(game):
            target = tbl.StepTarget(jnp.asarray(view.player, jnp.int32), view.infoset, False)
            tables = paths = None
            root_row = _root_row(game, target, state.stats.dtype)
        else:
            sets = tbl.infoset_sets(game)
            paths = tbl.target_paths(game, sets, jnp.where(view.infoset < 0, -1, view.infoset))
            tables, target, root_row = smp.node_tables(game), None, None

        seed = smp.stream_seed(key)

        def body(t, st):
            u = smp.stream_uniforms(seed, t * (D + 1), (D + 1,), st.stats.dtype)
            if paths is None:
                path_slot = depth = None
                u = smp.materialize(u)
            else:
                m = jnp.minimum((u[D] * paths.count).astype(jnp.int32), paths.count - 1)
                u, path_slot = smp.materialize((u, paths.slot[:, m]))  # once, not in every kernel
                depth = paths.depth
            records, carry, utility = _sample(
                game, tables, st, u, path_slot, depth, selection, c_uct, gamma, target, root_row
            )
            R = st.in_memory.shape[0]

            def values(recs):  # [n, k, A]: the rows are the same for every part
                rows, nv, vv, sv = _rows(game, recs, utility, selection, max_u, R)
                return rows, jnp.stack((nv, vv) if selection == "uct" else (nv, vv, sv), -2)

            if paths is None:  # step form: the span of in-tree records only
                rows = jnp.where(records.update, records.row, R)
                stats = smp.add_record_span(
                    st.stats, rows, lambda s, n: values(_slice(records, s, n))[1], SPAN_CHUNK
                )
            else:  # one scatter-add of [n, k, A] records
                rows, vals = values(records)
                stats = smp.add_rows(st.stats, rows, vals)
            in_memory, table = tbl.commit(
                game, st, rows, carry.added, carry.added_key, carry.refused
            )
            return State(stats, in_memory, st.iteration + 1, table)

        return jax.lax.fori_loop(0, num_iterations, body, state)

    def policy(game: Game, state: ISMCTSState, view: _bots.View) -> jax.Array:
        check_game(game, step_form=True)
        if selection == "rm":
            return _bots.normalized_row(game, state.strategy_sum, state, view)
        legal = _bots.legal_row(game, view)
        row, mem = tbl.view_row(game, state, view)
        n = jnp.where(mem, state.stats[row, 0], 0.0)
        best = jnp.argmax(jnp.where(legal, n, -1.0))
        return (jnp.arange(game.num_actions) == best).astype(state.stats.dtype)

    def strategy(game: Game, state: ISMCTSState):
        check_game(game, step_form=True)
        weights = state.visits if selection == "uct" else state.strategy_sum
        return weights, state.in_memory

    return _bots.Bot(init, search, policy, strategy, f"ismcts({selection})")
