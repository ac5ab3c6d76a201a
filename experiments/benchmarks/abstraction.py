"""Abstraction-keyed CFR against full CFR on the same game: speed ratios and state bytes.

``python -m experiments.benchmarks abstraction``. For each game with an imperfect-recall
abstraction (DRP-IR; LD(1,1) with the last-r-bids abstraction, r = 1..4) it times, in
the same process, CFR keyed by the full infosets (``keying="full"``), by the abstract
ones (``keying="abstract"``: ``[J, A]`` tables) and abstract with the full-game average
for the measure (``full_average=True``: one extra ``[I, A]`` table). Single-run
compiled steady state: one ``fori_loop`` per variant, compiled once, run in chunks of
``--length`` iterations (by default as many as take ``--chunk-cpu`` CPU seconds). The
variants' chunks are interleaved A/B round by round (``--rounds``; the order rotates
every round, so a change of machine load hits every variant alike); each chunk is timed
in CPU time of the process (``time.process_time``: all its threads; less sensitive to
other processes than wall-clock) and in wall-clock. Reported per variant: the ratio of
its speed to full keying's, paired within each round (full's chunk time / its chunk
time), as median (with the distribution-free 95% confidence interval of the median,
``_stats.median_ci``) [min, max] over the rounds, in CPU time and in wall-clock; the median
rate; compile time (the first call, one iteration); state bytes (the solver state's
arrays) and XLA's own cost model of one update (flops, bytes accessed: independent of
the load). The machine's load average is printed before and after. On a shared machine
compare the ratios, not the rates."""

from __future__ import annotations

import argparse
import os
import time

import jax
import numpy as np

import games_tensor as gt
import jaxcfr
from experiments.benchmarks._cli import Parser
from experiments.benchmarks._stats import median_ci
from experiments.sizes import format_table

GAMES = {
    "DRP-IR": ("die_roll_poker", {"abstraction": "ir"}),
    "LD(1,1) r=1": ("liars_dice", {"recall": 1}),
    "LD(1,1) r=2": ("liars_dice", {"recall": 2}),
    "LD(1,1) r=3": ("liars_dice", {"recall": 3}),
    "LD(1,1) r=4": ("liars_dice", {"recall": 4}),
}
VARIANTS = (
    ("full", {"keying": "full"}),
    ("abstract", {"keying": "abstract"}),
    ("abstract+full avg", {"keying": "abstract", "full_average": True}),
)


def _loop_fn(solver):
    """``fn(game, state, n)``: n updates in one compiled loop (n dynamic: one compile)."""

    def many(game, state, n):
        return jax.lax.fori_loop(0, n, lambda _, s: solver.update(game, s), state)

    return jax.jit(many)


def xla_cost(solver, game) -> dict:
    """XLA's cost model of one compiled update: ``flops`` and ``bytes accessed``
    (deterministic: independent of the machine's load, unlike the rates)."""
    cost = jax.jit(solver.update).lower(game, solver.init(game)).compile().cost_analysis()
    cost = cost[0] if isinstance(cost, list) else cost
    return {k: float(cost.get(k, 0.0)) for k in ("flops", "bytes accessed")}


def state_bytes(solver, game) -> int:
    """Bytes of the arrays of ``solver``'s state on ``game``."""
    return sum(int(np.asarray(x).nbytes) for x in jax.tree.leaves(solver.init(game)))


def _ratio(base, other) -> str:
    """Median (95% CI of the median) [min, max] of the per-round speed ratios
    ``base / other`` (chunk times)."""
    r = np.asarray(base) / np.asarray(other)
    med, lo, hi = median_ci(r)
    return f"{med:.2f} ({lo:.2f}-{hi:.2f}) [{r.min():.2f}, {r.max():.2f}]"


def _load() -> str:
    return "load average " + " ".join(f"{x:.2f}" for x in os.getloadavg())


def main(argv=None):
    parser = Parser(
        prog="python -m experiments.benchmarks abstraction",
        description=__doc__,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("--games", default=";".join(GAMES), help="';'-separated labels")
    parser.add_argument("--algorithm", default="cfr", help="a CFR-family factory of jaxcfr")
    parser.add_argument(
        "--alternating",
        action=argparse.BooleanOptionalAction,
        default=True,
        help="alternating updates (one player per iteration) or simultaneous",
    )
    parser.add_argument("--rounds", type=int, default=9, help="timed chunks per variant")
    parser.add_argument(
        "--length", type=int, default=0, help="iterations per chunk (0: from --chunk-cpu)"
    )
    parser.add_argument(
        "--chunk-cpu", type=float, default=0.5, help="CPU seconds per chunk when --length 0"
    )
    parser.add_argument(
        "--variants",
        default=";".join(v for v, _ in VARIANTS),
        help="';'-separated keyings to time (the first is the reference)",
    )
    args = parser.parse_args(argv)
    chosen = [v for v in VARIANTS if v[0] in args.variants.split(";")]
    print(f"start: {_load()}", flush=True)
    rows = []
    for label in args.games.split(";"):
        name, params = GAMES[label]
        game = gt.load(name, **params)
        runs = {}
        for variant, opts in chosen:
            solver = getattr(jaxcfr, args.algorithm)(alternating=args.alternating, **opts)
            fn = _loop_fn(solver)
            t0 = time.perf_counter()
            state = jax.block_until_ready(fn(game, solver.init(game), 1))
            runs[variant] = {
                "fn": fn,
                "state": state,
                "compile": time.perf_counter() - t0,
                "cpu": [],
                "wall": [],
                "solver": solver,
            }
        length = args.length
        if not length:  # about --chunk-cpu seconds of CPU time per chunk of the reference
            first = runs[chosen[0][0]]
            c0 = time.process_time()
            first["state"] = jax.block_until_ready(first["fn"](game, first["state"], 10))
            length = int(np.clip(10 * args.chunk_cpu / (time.process_time() - c0), 2, 100_000))
        names = list(runs)
        for r in range(args.rounds):
            shift = r % len(names)
            for variant in names[shift:] + names[:shift]:
                run = runs[variant]
                c0, t0 = time.process_time(), time.perf_counter()
                run["state"] = jax.block_until_ready(run["fn"](game, run["state"], length))
                run["wall"].append(time.perf_counter() - t0)
                run["cpu"].append(time.process_time() - c0)
        base = runs[names[0]]
        base_bytes = state_bytes(base["solver"], game)
        base_cost = xla_cost(base["solver"], game)
        for variant, run in runs.items():
            compile_s = run["compile"]
            nbytes = state_bytes(run["solver"], game)
            cost = xla_cost(run["solver"], game)
            rows.append(
                [
                    label,
                    variant,
                    f"{length}",
                    f"{compile_s:.2f}",
                    f"{length / np.median(run['cpu']):,.0f}",
                    _ratio(base["cpu"], run["cpu"]),
                    _ratio(base["wall"], run["wall"]),
                    f"{nbytes:,}",
                    f"{nbytes / base_bytes:.3f}",
                    f"{cost['flops'] / base_cost['flops']:.3f}",
                    f"{cost['bytes accessed'] / base_cost['bytes accessed']:.3f}",
                ]
            )
            print(" | ".join(rows[-1]), flush=True)
    print()
    dev = jax.devices()[0]
    print(
        f"device: {dev.platform} ({dev.device_kind}), algorithm {args.algorithm}, float32, "
        f"{'alternating' if args.alternating else 'simultaneous'} updates, "
        f"{args.rounds} rounds; end: {_load()}"
    )
    print(
        format_table(
            [
                "game",
                "keying",
                "chunk",
                "compile s",
                "it/s (CPU time, median)",
                "speed vs full, CPU time: median (95% CI) [range]",
                "speed vs full, wall: median (95% CI) [range]",
                "state bytes",
                "bytes vs full",
                "XLA flops vs full",
                "XLA bytes accessed vs full",
            ],
            rows,
        )
    )


if __name__ == "__main__":
    main()
