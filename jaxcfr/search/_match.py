"""Matches between two bots, many at once.

The engine holds each match's true history (a node id of the compiled tree) and,
at each of the game's D depths, samples chance, or lets the acting player's bot
search from its :class:`~jaxcfr.search.View` and samples the move from its policy.
Both bots keep their state for the whole match (the OOS paper's bots keep their
trees). The matches of a chunk advance together: a depth step runs a bot's search
(``jax.vmap`` over the matches, masked where another player acts) only if that bot
acts in at least one match of the chunk (an unbatched ``lax.cond``), so in games
where the acting player is a function of depth (Liar's Dice, II-Goofspiel) every
step runs one search.

Step-form games (``games_tensor.step.StepGame``): the engine holds each match's game
state instead and hands the acting bot :func:`~jaxcfr.search._bots.step_view_of` (its
information-state key, the public-state key and the legal mask); it runs up to
``game.max_depth`` steps. The result then also carries each bot's table refusals
(infosets its full hash table could not add, ``jaxcfr.search._table``). Their search
is costly to compile, so these matches are driven from the host one depth step at a
time through small jitted pieces that each depend on one bot (``_play_chunk_step``):
a bot's search compiles once per (bot object, game, chunk size) and is reused by both
seats, by later calls of ``play`` with the same bot object and by any iteration
budget (the count is traced); the steps stop once every match of the chunk is over.
The arithmetic and the keys are those of the one-program engine (``_chunk``, used for
compiled games), so the results are the same.

Randomness: match m uses ``fold_in(key, m)`` alone, so its result does not depend
on the chunk size or on the other matches.
"""

from __future__ import annotations

import functools
from typing import NamedTuple

import jax
import jax.numpy as jnp
import numpy as np

from games_tensor import Game
from games_tensor._game import CHANCE, TERMINAL
from jaxcfr import _sampling as smp
from jaxcfr._shard import shard_batch, split_devices
from jaxcfr._solver import check_game, check_key
from jaxcfr.search import _bots
from jaxcfr.search import _table as tbl

DEFAULT_MEMORY = 2 << 30  # bytes of bot states per chunk on the CPU


def default_chunk_bytes() -> int:
    """Bytes of bot states one chunk of matches may hold by default: 2 GiB on the CPU;
    on an accelerator a quarter of the memory its allocator may use (``memory_stats()
    ["bytes_limit"]``), so a GPU runs a cell's matches in one chunk instead of four
    (II-GS(6) OOS: 15.5 MiB of states per match). The chunk size never changes a
    match's result (match m depends only on ``fold_in(key, m)``)."""
    device = jax.devices()[0]
    if device.platform == "cpu":
        return DEFAULT_MEMORY
    try:
        limit = int((device.memory_stats() or {}).get("bytes_limit", 0))
    except Exception:  # a backend without memory statistics
        limit = 0
    return max(DEFAULT_MEMORY, limit // 4)


def _where_tree(mask, new, old):
    def pick(n, o):
        m = mask.reshape(mask.shape + (1,) * (n.ndim - 1))
        return jnp.where(m, n, o)

    return jax.tree_util.tree_map(pick, new, old)


def _node_player(game, h):
    """[B] int32 player at each match's node (node ids, or step-form states)."""
    if smp.is_step(game):
        return jax.vmap(game.current_player)(h)
    return game.node_player[h]


def _split_keys(keys, s):
    """[B, 3] keys of depth step ``s``: seat 0's search, seat 1's search, the move."""
    step_keys = jax.vmap(jax.random.fold_in, (0, None))(keys, s)
    return jax.vmap(lambda k: jax.random.split(k, 3))(step_keys)  # [B, 3, 2]


def _views(game, h):
    """(player [B], the acting players' views) at the matches' nodes ``h``."""
    player = _node_player(game, h)
    if smp.is_step(game):
        views = jax.vmap(_bots.step_view_of, (None, 0))(game, h)
    else:
        views = _bots.View(player, game.node_infoset[h], game.node_public_state[h])
    return player, views


def _advance(game, h, player, pol0, pol1, move_keys):
    """Each match one step on: chance samples its outcome, the acting seat's policy
    (``pol0``/``pol1`` [B, A]) its move; terminals stay."""
    K = smp.num_slots(game)
    pol = smp.pad_actions(jnp.where((player == 0)[:, None], pol0, pol1), K)
    if smp.is_step(game):
        chance = smp.pad_actions(jax.vmap(game.chance_probs)(h), K)
    else:
        chance = game.node_chance_probs[h]
    probs = jnp.where((player == CHANCE)[:, None], chance, pol)
    probs = jnp.where((player == TERMINAL)[:, None], jnp.ones_like(probs), probs)
    u = jax.vmap(lambda k: jax.random.uniform(k, (), probs.dtype))(move_keys)
    k = smp.sample_index(probs, u)
    if smp.is_step(game):
        return jax.vmap(game.apply)(h, k)  # unchanged at terminals
    child = jnp.take_along_axis(game.node_children[h], k[:, None], axis=1)[:, 0]
    return jnp.where(player == TERMINAL, h, child)


def _seat_search(bot, game, st, views, keys, acts, iterations):
    """One seat's searches, vmapped over the matches; kept only where it acts."""
    searched = jax.vmap(bot.search, (None, 0, 0, 0, None))(game, st, views, keys, iterations)
    return _where_tree(acts, searched, st)


def _seat_policy(bot, game, st, views):
    return jax.vmap(bot.policy, (None, 0, 0))(game, st, views)


def _step_match(game, bots, iterations, states, h, keys, s, collect=None, acc=None):
    """One depth step of every match of a chunk: (states, h[, acc]); ``h`` the matches'
    node ids (compiled) or game states (step form).

    ``collect`` (a seat) adds, after each of that seat's searches at infoset I, the
    change of its bot's strategy weights in the rows at or below I
    (:func:`~jaxcfr.search._table.at_or_below`) to ``acc`` [B, R, A] (the aggregate
    method)."""
    player, views = _views(game, h)
    split = _split_keys(keys, s)
    new_states = []
    for p, (bot, st) in enumerate(zip(bots, states, strict=True)):
        acts = player == p

        def run(st, bot=bot, acts=acts, p=p):
            return _seat_search(bot, game, st, views, split[:, p], acts, iterations)

        new = jax.lax.cond(jnp.any(acts), run, lambda st: st, st)
        if collect == p:
            before = jax.vmap(bot.strategy, (None, 0))(game, st)[0]
            after = jax.vmap(bot.strategy, (None, 0))(game, new)[0]
            below = jax.vmap(tbl.at_or_below, (None, 0))(game, views.infoset)  # [B, R]
            acc = acc + jnp.where((acts[:, None] & below)[..., None], after - before, 0.0)
        new_states.append(new)
    pols = [_seat_policy(bot, game, st, views) for bot, st in zip(bots, new_states, strict=True)]
    h = _advance(game, h, player, pols[0], pols[1], split[:, 2])
    return (tuple(new_states), h) if collect is None else (tuple(new_states), h, acc)


# ---------------------------------------------------------------- step-form engine
# The step form's search is large to compile (the rules, targeting and the hash table
# inside a loop over iterations inside a loop over depth), so its matches are driven
# from the host, one depth step at a time, through small jitted pieces that depend on
# one bot each: a bot's search is compiled once per (bot, game, chunk shape) and
# shared by both seats, all cells and any iteration budget (a traced count). Same
# arithmetic and keys as the fused engine (``_chunk``), so the same results.
def _start(game, key, match_ids):
    keys = jax.vmap(jax.random.fold_in, (None, 0))(key, match_ids)
    h = jax.vmap(lambda _: game.init())(match_ids)
    return keys, h


def _prep(game, h, keys, s):
    player, views = _views(game, h)
    return player, views, _split_keys(keys, s)


def _finish(game, h, refusals0, refusals1):
    return jax.vmap(game.returns)(h)[:, 0], jnp.stack([refusals0, refusals1], axis=1)


def _seat_init(bot, game, match_ids):
    return jax.vmap(lambda _: bot.init(game))(match_ids)


def _seat_refusals(st):
    return jax.vmap(tbl.refusals)(st)


class _EngineFns(NamedTuple):
    start: object
    prep: object
    advance: object
    finish: object


class _SeatFns(NamedTuple):
    init: object
    search: object
    policy: object
    refusals: object


@functools.lru_cache(maxsize=None)
def _engine_fns(options, devs: tuple) -> _EngineFns:
    """The engine's jitted pieces, each split over ``devs`` (``split_devices``'s tuple,
    the cache key; ``shard_batch``: every device its own rows; the game, static, and
    scalars shared)."""
    opts = dict(options) or None

    def jit(fn, axes):
        return jax.jit(shard_batch(fn, axes, devs), static_argnums=0, compiler_options=opts)

    return _EngineFns(
        jit(_start, (None, None, 0)),
        jit(_prep, (None, 0, 0, None)),
        jit(_advance, (None, 0, 0, 0, 0, 0)),
        jit(_finish, (None, 0, 0, 0)),
    )


@functools.lru_cache(maxsize=None)
def _seat_fns(bot, options, devs: tuple) -> _SeatFns:
    """The jitted pieces of one bot (cached per bot object: reuse a bot across calls
    of ``jaxcfr.play`` to reuse its compiled search), split over ``devs``
    (``split_devices``'s tuple)."""
    opts = dict(options) or None

    def split(fn, axes):
        return shard_batch(functools.partial(fn, bot), axes, devs)

    return _SeatFns(
        jax.jit(split(_seat_init, (None, 0)), static_argnums=0, compiler_options=opts),
        jax.jit(
            split(_seat_search, (None, 0, 0, 0, 0, None)),
            static_argnums=0,
            donate_argnums=1,
            compiler_options=opts,
        ),
        jax.jit(split(_seat_policy, (None, 0, 0)), static_argnums=0, compiler_options=opts),
        jax.jit(shard_batch(_seat_refusals, 0, devs), compiler_options=opts),
    )


def _options(game):
    return tuple(sorted((_bots.compiler_options(game) or {}).items()))


def _play_chunk_step(game, bot_p1, bot_p2, iterations, match_ids, key, devs: tuple):
    """One chunk of step-form matches, driven from the host: (u_0 [B], refusals [B, 2]);
    B a multiple of the number of ``devs`` keeps every piece's rows on their device."""
    opts = _options(game)
    eng = _engine_fns(opts, devs)
    seats = [_seat_fns(b, opts, devs) for b in (bot_p1, bot_p2)]
    keys, h = eng.start(game, key, match_ids)
    states = [seat.init(game, match_ids) for seat in seats]
    iters = jnp.asarray(iterations, jnp.int32)
    for s in range(smp.max_depth(game)):
        player, views, split = eng.prep(game, h, keys, jnp.asarray(s, jnp.int32))
        acting = np.asarray(player)
        if np.all(acting == TERMINAL):
            break  # every match is over: the remaining steps change nothing
        for p, seat in enumerate(seats):
            if np.any(acting == p):
                states[p] = seat.search(game, states[p], views, split[:, p], player == p, iters)
        pols = [seat.policy(game, st, views) for seat, st in zip(seats, states, strict=True)]
        h = eng.advance(game, h, player, pols[0], pols[1], split[:, 2])
    refused = [seat.refusals(st) for seat, st in zip(seats, states, strict=True)]
    return eng.finish(game, h, *refused)


def compile_step_engine(game, bot_p1, bot_p2, iterations: int, batch: int, devices=None) -> list:
    """Lower and compile every piece the step-form engine runs for one chunk of
    ``batch`` matches of ``bot_p1`` vs ``bot_p2`` (a bot playing both seats is compiled
    once); returns the ``Compiled`` objects (benchmarks: compile time and size)."""
    opts = _options(game)
    devs = split_devices(devices)
    eng = _engine_fns(opts, devs)
    ids = jnp.arange(batch, dtype=jnp.int32)
    key = jax.random.key(0)
    out = [eng.start.lower(game, key, ids).compile()]
    keys, h = eng.start(game, key, ids)
    s = jnp.asarray(0, jnp.int32)
    out.append(eng.prep.lower(game, h, keys, s).compile())
    player, views, split = eng.prep(game, h, keys, s)
    iters = jnp.asarray(iterations, jnp.int32)
    pols, refused, seen = [], [], set()
    for p, bot in enumerate((bot_p1, bot_p2)):
        seat = _seat_fns(bot, opts, devs)
        st = jax.eval_shape(seat.init, game, ids)
        if bot not in seen:
            out.append(seat.init.lower(game, ids).compile())
            out.append(
                seat.search.lower(game, st, views, split[:, p], player == p, iters).compile()
            )
            out.append(seat.policy.lower(game, st, views).compile())
            out.append(seat.refusals.lower(st).compile())
            seen.add(bot)
        pols.append(jax.eval_shape(seat.policy, game, st, views))
        refused.append(jax.eval_shape(seat.refusals, st))
    out.append(eng.advance.lower(game, h, player, *pols, split[:, 2]).compile())
    out.append(eng.finish.lower(game, h, *refused).compile())
    return out


def _play_chunk(game, bot_p1, bot_p2, iterations, match_ids, key, collect, devs: tuple):
    """One chunk of matches: compiled form one jitted call (``_chunk``); step form
    driven from the host (``_play_chunk_step``); both split over ``devs``."""
    if smp.is_step(game):
        return _play_chunk_step(game, bot_p1, bot_p2, iterations, match_ids, key, devs)
    fn = _jitted(_options(game), devs)
    return fn(game, bot_p1, bot_p2, iterations, match_ids, key, collect)


def _chunk_split(devices, game, bot_p1, bot_p2, iterations, match_ids, key, collect=None):
    """``_chunk`` with its matches split over ``devices`` (each device runs its own
    depth loop, and its own "does this bot act here" conditions, on its matches)."""

    def local(ids):
        return _chunk(game, bot_p1, bot_p2, iterations, ids, key, collect)

    return shard_batch(local, 0, devices)(match_ids)


@functools.lru_cache(maxsize=None)
def _jitted(options, devs: tuple):
    return jax.jit(
        functools.partial(_chunk_split, devs),
        static_argnums=(1, 2, 3, 6),
        compiler_options=dict(options) or None,
    )


def _chunk(game, bot_p1, bot_p2, iterations, match_ids, key, collect=None):
    bots = (bot_p1, bot_p2)
    B = match_ids.shape[0]
    keys = jax.vmap(jax.random.fold_in, (None, 0))(key, match_ids)
    states = tuple(jax.vmap(lambda _, b=b: b.init(game))(jnp.arange(B)) for b in bots)
    if smp.is_step(game):
        h = jax.vmap(lambda _: game.init())(jnp.arange(B))
    else:
        h = jnp.zeros((B,), jnp.int32)
    if collect is None:

        def body(s, carry):
            states, h = carry
            return _step_match(game, bots, iterations, states, h, keys, s)

        states, h = jax.lax.fori_loop(0, smp.max_depth(game), body, (states, h))
        if smp.is_step(game):
            refusals = jnp.stack([jax.vmap(tbl.refusals)(st) for st in states], axis=1)
            return jax.vmap(game.returns)(h)[:, 0], refusals
        return game.node_utility[h]
    acc = jnp.zeros((B, tbl.num_rows(game), game.num_actions), game.node_utility.dtype)

    def body_acc(s, carry):
        states, h, acc = carry
        return _step_match(game, bots, iterations, states, h, keys, s, collect, acc)

    _, h, acc = jax.lax.fori_loop(0, game.meta.max_depth, body_acc, (states, h, acc))
    return game.node_utility[h], acc


def _check_bots(bot_p1, bot_p2) -> None:
    for name, b in (("bot_p1", bot_p1), ("bot_p2", bot_p2)):
        if not isinstance(b, _bots.Bot):
            hint = (
                " (call the factory: jaxcfr.oos())"
                if callable(b) and not hasattr(b, "init")
                else ""
            )
            raise ValueError(
                f"{name} must be a Bot (jaxcfr.oos(), ismcts(), random_bot()), got "
                f"{type(b).__name__} {b!r:.60}{hint}"
            )


def bytes_per_match(game: Game, bot_p1: _bots.Bot, bot_p2: _bots.Bot) -> int:
    """Bytes of both bots' states for one match."""
    _check_bots(bot_p1, bot_p2)
    return sum(tbl.bytes_per_state(jax.eval_shape(b.init, game)) for b in (bot_p1, bot_p2))


def play(
    game: Game,
    bot_p1: _bots.Bot,
    bot_p2: _bots.Bot,
    num_matches: int,
    iterations_per_move: int,
    key: jax.Array,
    *,
    chunk_size: int | None = None,
    collect: int | None = None,
    devices=None,
):
    """Play ``num_matches`` matches of ``bot_p1`` (first player) against ``bot_p2``.

    Each bot runs ``iterations_per_move`` search iterations before each of its moves
    and samples its move from its policy (ISMCTS-UCT: the most-visited action). Matches
    run ``chunk_size`` at a time (default: as many as fit :func:`default_chunk_bytes`
    of bot states, at most 512: 2 GiB on the CPU), each a jitted, vmapped call whose
    matches are split over ``devices`` (default: all local devices, as ``jaxcfr.run``;
    see ``jaxcfr.sharded_vmap``): each device plays its share as its own program. On a
    CPU, ``XLA_FLAGS=--xla_force_host_platform_device_count=<cores>``
    (set before importing jax) makes one device per core; one device is the unsplit
    engine. The default chunk is a multiple of the device count; a chunk that is not
    (an explicit ``chunk_size``, or fewer matches) is padded up to one with repeats of
    its last match, whose results are dropped.

    ``collect`` (0 or 1): also return the aggregate method's global strategy weights
    of that seat's bot, ``[R, A]`` (OOS paper, Sec. 5; ALGORITHMS.md 2.6): after each
    of its searches at infoset I, the change that search made to its strategy weights
    (OOS: s_J; ISMCTS-UCT: visit counts; ISMCTS-RM: mean-strategy sums) in I and in
    every infoset J of its own below I, summed over its moves and matches. Raw
    weights, so each J enters with its sampled mass (UCT and RM: its visits in that
    search) as the paper's "weight proportional to the number of visits"; rows the
    search changed outside I's subtree (other branches sampled from I) are not added.

    ``game`` may be the step form of a game (``games_tensor.step.load``): the engine
    holds the game state and each bot sees its information-state key
    (:func:`~jaxcfr.search._bots.step_view_of`); ``collect`` is not supported there.
    Its matches run as small jitted pieces per bot: pass the same bot objects to
    later calls (other seats, other opponents, other budgets) to reuse their compiled
    searches; a new ``jaxcfr.oos(...)`` object compiles again.

    Returns:
      ``[num_matches]`` utilities of the first player (u_0); match m depends only on
      ``fold_in(key, m)`` (not on the chunk size or the devices). Win rate (ties
      half) = mean of ``(u > 0) + 0.5 (u == 0)``.
      With ``collect``: ``(utilities, weights [R, A])``. Step form:
      ``(utilities, refusals [num_matches, 2] int32)``, each seat's count of infosets
      its full table refused in that match (never silently dropped).
    """
    check_game(game, step_form=True)
    check_key(key)
    if collect not in (None, 0, 1):
        raise ValueError(f"collect must be None, 0 or 1, got {collect!r}")
    step_form = smp.is_step(game)
    if step_form and collect is not None:
        raise ValueError(
            f"collect={collect!r} is not supported for step-form games (no infoset ids to "
            "aggregate over); use collect=None"
        )
    for name, v, lo in (
        ("num_matches", num_matches, 1),
        ("iterations_per_move", iterations_per_move, 0),
    ):
        if not isinstance(v, (int, np.integer)) or isinstance(v, (bool, np.bool_)) or v < lo:
            raise ValueError(f"{name} must be an integer >= {lo}, got {v!r}")
    _check_bots(bot_p1, bot_p2)
    devs = split_devices(devices)
    for b in (bot_p1, bot_p2):
        b.init(game)  # host-side tables (target sets, level layout) before tracing
    if collect is not None:
        tbl.infoset_forest(game)  # host-side, for at_or_below inside the trace
    per_match = max(bytes_per_match(game, bot_p1, bot_p2), 1)
    n_dev = len(devs)
    if chunk_size is None:
        chunk_size = int(max(1, min(512, default_chunk_bytes() // per_match)))
        chunk_size = max(n_dev, chunk_size - chunk_size % n_dev)  # every device a share
    if (
        not isinstance(chunk_size, (int, np.integer))
        or isinstance(chunk_size, (bool, np.bool_))
        or chunk_size < 1
    ):
        raise ValueError(f"chunk_size must be an integer >= 1, got {chunk_size!r}")
    chunk_size = int(chunk_size)
    out, total, refused = [], None, []
    for start in range(0, num_matches, chunk_size):
        used = min(chunk_size, num_matches - start)
        ids = jnp.arange(start, start + used, dtype=jnp.int32)
        # a later chunk keeps the first one's (compiled) size; every chunk is split
        # evenly over the devices: padded with repeats of its last match, dropped below
        size = chunk_size if start > 0 else used
        if size > n_dev:  # (fewer matches than devices: one match per device)
            size += -size % n_dev
        if used < size:
            ids = jnp.concatenate([ids, jnp.full((size - used,), ids[-1])])
        res = _play_chunk(game, bot_p1, bot_p2, int(iterations_per_move), ids, key, collect, devs)
        if collect is not None:
            res, acc = res
            part = jnp.sum(acc[:used], axis=0)
            total = part if total is None else total + part
        if step_form:
            res, ref = res
            refused.append(ref[:used])
        out.append(res[:used])
    utilities = jnp.concatenate(out)
    if step_form:
        refusals = jnp.concatenate(refused)
        return utilities, refusals
    return utilities if collect is None else (utilities, total)
