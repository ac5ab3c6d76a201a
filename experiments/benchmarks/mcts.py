"""Benchmark UCT / Smooth UCT self-play episodes/s against outcome sampling's trajectories/s.

``python -m experiments.benchmarks mcts [--games kuhn_poker leduc_poker] [--batches 1 64 1024]``

For each game and batch size B (independent runs, ``jax.vmap`` over keys of ``lax.scan``
over updates: the runner's program without the evaluation): Smooth UCT (the chapter's
constants for the game), UCT, and outcome sampling (alternating, epsilon 0.5) timed
interleaved in the same process (best of R). One MCTS update is one episode; one OS
iteration is two trajectories, so OS is reported in trajectories/s and the ratio is
cost per episode / cost per trajectory (< 1.5 is the issue's goal at B = 1024).
"""

from __future__ import annotations

import argparse

import jax

import games_tensor as gt
import jaxcfr
from experiments.benchmarks.mccfr import _Case
from experiments.sizes import format_table

CONSTANTS = {  # the chapter's calibrated constants
    "kuhn_poker": (dict(c=1.75, gamma=0.1, eta0=0.9, d=0.001), dict(c=2.0)),
    "leduc_poker": (dict(c=18.0, gamma=0.1, eta0=0.9, d=0.002), dict(c=20.0)),
}


def solvers(game_name):
    smooth, uct = CONSTANTS.get(game_name, (dict(), dict()))
    return {
        "smooth_uct": (jaxcfr.smooth_uct(**smooth), 1),
        "uct": (jaxcfr.uct(**uct), 1),
        "outcome_sampling": (jaxcfr.outcome_sampling(epsilon=0.5), 2),
    }


def table(game_name, batches, updates, repeats):
    game = gt.load(game_name)
    cases = []
    for name, (solver, per_update) in solvers(game_name).items():
        for b in batches:
            length = max(8, updates // b)  # fixed work per call (no noisy probe)
            case = _Case(game, solver, b, length)
            cases.append((name, per_update, case))
            print(f"{game_name} {name} B={b}: compile {case.compile_s:.2f} s, {length}/call")
    for _ in range(repeats):  # interleaved
        for _, _, case in cases:
            case.time_once()
    os_rate = {c.batch: c.rate * p for n, p, c in cases if n == "outcome_sampling"}
    rows = []
    for name, per_update, case in cases:
        rate = case.rate * per_update  # episodes (trajectories) per second, all runs
        rows.append(
            [
                game_name,
                name,
                case.batch,
                f"{case.compile_s:.2f}",
                f"{rate:,.0f}",
                f"{rate / case.batch:,.0f}",
                f"{os_rate[case.batch] / rate:.2f}",
            ]
        )
    return rows


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--games", nargs="+", default=["kuhn_poker", "leduc_poker"])
    parser.add_argument("--batches", nargs="+", type=int, default=[1, 64, 1024])
    parser.add_argument(
        "--updates", type=int, default=2**16, help="updates per call, all runs together"
    )
    parser.add_argument("--repeats", type=int, default=5)
    args = parser.parse_args(argv)
    rows = []
    for g in args.games:
        rows += table(g, args.batches, args.updates, args.repeats)
    print(
        f"\n{jax.devices()[0].platform}, {jax.device_count()} device(s), float32; best of "
        f"{args.repeats} interleaved timings; episodes = MCTS updates = OS trajectories "
        "(2 per OS iteration)."
    )
    print(
        format_table(
            [
                "game",
                "solver",
                "B",
                "compile s",
                "episodes/s (all runs)",
                "per run",
                "cost / OS trajectory",
            ],
            rows,
        )
    )


if __name__ == "__main__":
    main()
