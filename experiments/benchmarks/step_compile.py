"""Compile seconds of the step-form search pieces and of the match engine, per game.

``python -m experiments.benchmarks step_compile [--games ld22,iigs13,gp4644]
[--pieces apply,children,counts,table,oos,uct,engine,fused] [--batch 16] [--capacity 4096]``

Where the compile time of a step-form match (``jaxcfr.play`` on ``games_tensor.step``
games, the ``oos-fig4-large`` reproduction) goes. Each piece is one ``jax.jit`` of a
``jax.vmap`` over ``--batch`` matches, lowered and compiled here (no run), with the
match engine's XLA options (``jaxcfr._sampling.step_compiler_options``):

* ``apply``: ``game.apply`` (one step of the rules);
* ``children``: OOS targeting's membership and consistent children (``step_member``
  and ``step_children``: IST in II-GS, PST otherwise);
* ``counts``: ISMCTS's start-history weights (``step_completions``:
  ``num_completions`` of every child);
* ``table``: one hash-table insert (``jaxcfr.search._table``'s table);
* ``oos`` / ``uct``: one bot's whole ``search`` (the iterations loop, the walk,
  targeting, the table), as the engine runs it for one seat;
* ``engine``: everything ``jaxcfr.play`` compiles for one OOS-vs-UCT cell (the
  sum over its compiled pieces: per-seat searches and policies, the move step);
* ``fused``: the whole match of OOS vs UCT as one jitted program (the engine before
  session 22: a ``fori_loop`` over depth holding both searches), the reference.

Columns: CPU seconds of the compile (``time.process_time``: this process, all
threads; the comparable figure on a shared machine), wall seconds, and the number of
instructions in the optimized HLO module (all computations). The load average is
printed with every row. Nothing is cached between pieces except what the engine
itself shares (one compile per bot and game, reused by both seats and all cells).
"""

from __future__ import annotations

import os
import time

import jax
import jax.numpy as jnp

import games_tensor.step as gs
import jaxcfr
from experiments.benchmarks._cli import Parser
from experiments.benchmarks.step_bots import GAMES, _first_decision
from jaxcfr import _sampling as smp
from jaxcfr.search import _bots, _match
from jaxcfr.search import _table as tbl

PIECES = ("apply", "children", "counts", "table", "oos", "uct", "engine", "fused")


def _tile(x, batch):
    return jax.tree_util.tree_map(lambda a: jnp.tile(a[None], (batch,) + (1,) * a.ndim), x)


def _ops(compiled) -> int:
    """Instructions of the optimized HLO module (lines ``name = op(...)``)."""
    return sum(" = " in line for line in compiled.as_text().splitlines())


def _compile(fn, *args, static=()):
    """(CPU s, wall s, HLO instructions) of lowering + compiling ``fn`` on ``args``."""
    opts = smp.step_compiler_options() or None
    jitted = jax.jit(fn, static_argnums=static, compiler_options=opts)
    c0, t0 = time.process_time(), time.perf_counter()
    compiled = jitted.lower(*args).compile()
    return time.process_time() - c0, time.perf_counter() - t0, _ops(compiled)


def _pieces(game, targeting, batch, capacity, wanted):
    s0 = _first_decision(game)
    view = _bots.step_view_of(game, s0)
    states = _tile(s0, batch)
    views = _tile(view, batch)
    keys = jax.random.split(jax.random.key(0), batch)
    W = smp.num_slots(game)
    oos = jaxcfr.oos(targeting, 0.9, 0.4, capacity=capacity)
    uct = jaxcfr.ismcts("uct", capacity=capacity)
    target_i = tbl.StepTarget(view.player, view.infoset, False)
    target_c = tbl.StepTarget(
        view.player, view.public_state if targeting == "pst" else view.infoset, targeting == "pst"
    )
    out = {}
    if "apply" in wanted:
        acts = jnp.zeros((batch,), jnp.int32)
        out["apply"] = _compile(jax.vmap(game.apply), states, acts)
    if "children" in wanted:

        def children(s):
            v = smp.read_step(game, s, W)
            return tbl.step_member(game, target_c, v), tbl.step_children(game, target_c, v, W)

        out["children"] = _compile(jax.vmap(children), states)
    if "counts" in wanted:

        def counts(s):
            return tbl.step_completions(game, target_i, smp.read_step(game, s, W), W)

        out["counts"] = _compile(jax.vmap(counts), states)
    if "table" in wanted:
        fns = tbl._fns(capacity)
        tables = _tile(fns.init(), batch)
        out["table"] = _compile(jax.vmap(fns.insert), tables, views.infoset)
    for name, bot in (("oos", oos), ("uct", uct)):
        if name in wanted:
            st = _tile(bot.init(game), batch)
            run = jax.vmap(bot.search, (None, 0, 0, 0, None))
            out[name] = _compile(run, game, st, views, keys, 200, static=(0, 4))
    ids = jnp.arange(batch, dtype=jnp.int32)
    key = jax.random.key(0)
    if "engine" in wanted:
        c0, t0 = time.process_time(), time.perf_counter()
        compiled = _match.compile_step_engine(game, oos, uct, 200, batch)
        cpu, wall = time.process_time() - c0, time.perf_counter() - t0
        out["engine"] = (cpu, wall, sum(_ops(c) for c in compiled))
    if "fused" in wanted:
        for b in (oos, uct):
            b.init(game)
        out["fused"] = _compile(
            _match._chunk, game, oos, uct, 200, ids, key, None, static=(0, 1, 2, 3, 6)
        )
    return out


def main(argv=None) -> int:
    ap = Parser(description=__doc__.splitlines()[0])
    ap.add_argument("--games", default="ld22,iigs13,gp4644", help="','-separated step games")
    ap.add_argument("--pieces", default=",".join(PIECES), help="','-separated pieces to compile")
    ap.add_argument("--batch", type=int, default=16, help="matches compiled for (vmap)")
    ap.add_argument("--capacity", type=int, default=1 << 12, help="hash-table slots per bot")
    args = ap.parse_args(argv)
    wanted = [p for p in args.pieces.split(",") if p]
    bad = [p for p in wanted if p not in PIECES]
    if bad:
        raise SystemExit(f"unknown pieces {bad}; valid: {', '.join(PIECES)}")
    rows = []
    for name in args.games.split(","):
        label, targeting = GAMES[name]
        gname, params = gs.LARGE_GAMES[label]
        game = gs.load(gname, **params)
        res = _pieces(game, targeting, args.batch, args.capacity, wanted)
        for piece in wanted:
            cpu, wall, ops = res[piece]
            load = os.getloadavg()[0]
            rows.append((label, piece, cpu, wall, ops, load))
            print(
                f"{label:12s} {piece:9s} compile {cpu:7.1f} CPU-s {wall:7.1f} s wall "
                f"{ops:7d} HLO instr  (load {load:.1f})",
                flush=True,
            )
    print()
    print("| game | piece | compile CPU-s | wall s | HLO instructions | load (1 min) |")
    print("|---|---|---|---|---|---|")
    for label, piece, cpu, wall, ops, load in rows:
        print(f"| {label} | {piece} | {cpu:.1f} | {wall:.1f} | {ops:,} | {load:.1f} |")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
