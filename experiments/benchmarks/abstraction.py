"""Abstraction-keyed CFR against full CFR on the same game: iterations/s and state bytes.

``python -m experiments.benchmarks abstraction``. For each game with an imperfect-recall
abstraction (DRP-IR; LD(1,1) with the last-r-bids abstraction) it times, in the same
process, CFR keyed by the full infosets (``keying="full"``), by the abstract ones
(``keying="abstract"``: ``[J, A]`` tables) and abstract with the full-game average for
the measure (``full_average=True``: one extra ``[I, A]`` table). Single-run
``lax.scan``-compiled steady state (chunks of ``--length`` iterations), the variants'
chunks interleaved round by round (``--rounds``, order reversed every other round, so
a change of machine load hits every variant alike), best chunk of each; compile time
separately; state bytes are the solver state's array bytes. On a shared machine compare
the ratios, not the rates.
"""

from __future__ import annotations

import argparse
import time

import jax
import numpy as np

import games_tensor as gt
import jaxcfr
from experiments.sizes import format_table

GAMES = {
    "DRP-IR": ("die_roll_poker", {"abstraction": "ir"}),
    "LD(1,1) r=4": ("liars_dice", {"recall": 4}),
    "LD(1,1) r=1": ("liars_dice", {"recall": 1}),
}
VARIANTS = (
    ("full", {"keying": "full"}),
    ("abstract", {"keying": "abstract"}),
    ("abstract+full avg", {"keying": "abstract", "full_average": True}),
)


def _scan_fn(solver, length):
    def many(game, state):
        step = lambda s, _: (solver.update(game, s), None)  # noqa: E731
        return jax.lax.scan(step, state, None, length=length)[0]

    return many


def xla_cost(solver, game) -> dict:
    """XLA's cost model of one compiled update: ``flops`` and ``bytes accessed``
    (deterministic: independent of the machine's load, unlike the rates)."""
    cost = jax.jit(solver.update).lower(game, solver.init(game)).compile().cost_analysis()
    cost = cost[0] if isinstance(cost, list) else cost
    return {k: float(cost.get(k, 0.0)) for k in ("flops", "bytes accessed")}


def state_bytes(solver, game) -> int:
    """Bytes of the arrays of ``solver``'s state on ``game``."""
    return sum(int(np.asarray(x).nbytes) for x in jax.tree.leaves(solver.init(game)))


def main(argv=None):
    parser = argparse.ArgumentParser(
        prog="python -m experiments.benchmarks abstraction",
        description=__doc__,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("--games", default=";".join(GAMES), help="';'-separated labels")
    parser.add_argument("--algorithm", default="cfr", help="a CFR-family factory of jaxcfr")
    parser.add_argument("--alternating", action=argparse.BooleanOptionalAction, default=True)
    parser.add_argument("--rounds", type=int, default=7, help="timed chunks per variant")
    parser.add_argument(
        "--length", type=int, default=0, help="iterations per chunk (0: ~2e7 histories)"
    )
    args = parser.parse_args(argv)
    rows = []
    for label in args.games.split(";"):
        name, params = GAMES[label]
        game = gt.load(name, **params)
        length = args.length or int(np.clip(2e7 / game.sizes["histories"], 2, 2000))
        runs = {}
        for variant, opts in VARIANTS:
            solver = getattr(jaxcfr, args.algorithm)(alternating=args.alternating, **opts)
            fn = jax.jit(_scan_fn(solver, length))
            t0 = time.perf_counter()
            state = jax.block_until_ready(fn(game, solver.init(game)))
            runs[variant] = [fn, state, time.perf_counter() - t0, np.inf, solver]
        for r in range(args.rounds):
            for variant in list(runs)[:: 1 if r % 2 else -1]:
                run = runs[variant]
                t0 = time.perf_counter()
                run[1] = jax.block_until_ready(run[0](game, run[1]))
                run[3] = min(run[3], time.perf_counter() - t0)
        base_rate = base_bytes = base_cost = None
        for variant, (_, _, first, best, solver) in runs.items():
            compile_s, rate = first - best, length / best
            nbytes = state_bytes(solver, game)
            cost = xla_cost(solver, game)
            base_rate = base_rate or rate
            base_bytes = base_bytes or nbytes
            base_cost = base_cost or cost
            rows.append(
                [
                    label,
                    variant,
                    f"{compile_s:.2f}",
                    f"{rate:,.0f}",
                    f"{rate / base_rate:.2f}",
                    f"{nbytes:,}",
                    f"{nbytes / base_bytes:.3f}",
                    f"{cost['flops'] / base_cost['flops']:.3f}",
                    f"{cost['bytes accessed'] / base_cost['bytes accessed']:.3f}",
                ]
            )
            print(" | ".join(rows[-1]), flush=True)
    print()
    dev = jax.devices()[0]
    print(f"device: {dev.platform} ({dev.device_kind}), algorithm {args.algorithm}, float32")
    print(
        format_table(
            [
                "game",
                "keying",
                "compile s",
                "it/s",
                "it/s vs full",
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
