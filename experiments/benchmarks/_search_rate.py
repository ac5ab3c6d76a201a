"""One timed call of vmapped search bots: the rate helper of the search benchmarks
(``search`` and ``step_bots``)."""

from __future__ import annotations

import statistics
import time

import jax
import jax.numpy as jnp

import games_tensor as gt
import jaxcfr
from jaxcfr._shard import batch_sharding
from jaxcfr.search import _table as tbl
from jaxcfr.search import compiler_options


def search_rate(game, bot, batch: int, n: int, view, repeats: int = 1):
    """``batch`` searchers of ``bot`` on ``game`` (compiled or step form), each from
    ``view`` with fresh tables and its own key, ``n`` iterations in one jitted call of
    ``jaxcfr.sharded_vmap(bot.search)`` (split over the host devices,
    ``--host-devices``; ``jaxcfr.search.compiler_options(game)``). A compiled game is
    an argument of the call, as in ``jaxcfr.play``; a step-form game is static. The
    first call compiles and runs; each of the ``repeats`` timed calls runs the same work
    on a fresh batch (the calls donate their states: no copy of the tables), and the
    rates are their medians (one call of 512 Leduc searchers x 500 iterations is about
    0.1 s, which one descheduling of a device's thread can halve).

    Returns (compile seconds: the first call less the median timed call, iterations/s
    summed over the batch per wall second, bytes per searcher, iterations per CPU second
    of this process: all threads, so on a shared machine the comparable figure)."""
    if repeats < 1:
        raise ValueError(f"repeats must be at least 1, got {repeats}")
    state0 = bot.init(game)
    where = batch_sharding(batch)  # the batch on its devices before a timed call

    def place(x):
        return x if where is None else jax.device_put(x, where)

    def states():
        tiled = jax.tree_util.tree_map(
            lambda x: jnp.tile(x[None], (batch,) + (1,) * x.ndim), state0
        )
        return place(tiled)

    static = (4,) if isinstance(game, gt.Game) else (0, 4)
    run = jax.jit(
        jaxcfr.sharded_vmap(bot.search, (None, 0, None, 0, None)),
        static_argnums=static,
        donate_argnums=1,
        compiler_options=compiler_options(game),
    )
    t0 = time.perf_counter()
    jax.block_until_ready(
        run(game, states(), view, place(jax.random.split(jax.random.key(0), batch)), n)
    )
    first = time.perf_counter() - t0
    walls, cpus = [], []
    for r in range(repeats):
        s1 = jax.block_until_ready(states())
        k1 = jax.block_until_ready(place(jax.random.split(jax.random.key(1 + r), batch)))
        t0, c0 = time.perf_counter(), time.process_time()
        jax.block_until_ready(run(game, s1, view, k1, n))
        walls.append(time.perf_counter() - t0)
        cpus.append(time.process_time() - c0)
    steady, cpu = statistics.median(walls), statistics.median(cpus)
    return first - steady, batch * n / steady, tbl.bytes_per_state(state0), batch * n / cpu
