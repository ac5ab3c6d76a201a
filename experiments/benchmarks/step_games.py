"""Step-form games: uniformly random playouts per second on LD(2,2), II-GS(13), GP(4,6,4,4).

``python -m experiments.benchmarks step_games [--batch 1 256] [--repeat 20]``

Times ``jax.jit(jax.vmap(games_tensor.step.random_playout))`` over B keys (one call =
B playouts of ``max_depth`` scan steps; steps after a terminal are no-ops but still
run), best of 3 after the compile. Reported: playouts/s, visited nodes/s (non-terminal
steps, i.e. the work a search iteration's playout does) and the speedup of B playouts
at once over B = 1, measured in the same run (the reference). Shared machines are noisy.
"""

from __future__ import annotations

import time

import jax
import numpy as np

from experiments.benchmarks._cli import Parser
from experiments.sizes import format_table
from games_tensor import step

GAMES = step.LARGE_GAMES


def measure(label: str, batch: int, repeat: int) -> tuple[float, float]:
    name, params = GAMES[label]
    sg = step.load(name, **params)
    run = jax.jit(jax.vmap(lambda k: step.random_playout(sg, k)))
    keys = jax.random.split(jax.random.key(0), batch)
    traj = jax.block_until_ready(run(keys))
    nodes_per_playout = float(np.mean(np.sum(np.asarray(traj.players) >= -1, axis=1)))
    best = np.inf
    for _ in range(3):
        t0 = time.perf_counter()
        for _ in range(repeat):
            jax.block_until_ready(run(keys))
        best = min(best, (time.perf_counter() - t0) / repeat)
    return batch / best, batch * nodes_per_playout / best


def main(argv=None):
    parser = Parser(prog="python -m experiments.benchmarks step_games")
    parser.add_argument(
        "--batch", type=int, nargs="*", default=[1, 256], help="playouts B per call"
    )
    parser.add_argument("--repeat", type=int, default=20, help="calls per timing")
    args = parser.parse_args(argv)
    rows = []
    for label in GAMES:
        base = None
        for b in args.batch:
            playouts, nodes = measure(label, b, args.repeat)
            base = base or playouts
            rows.append([label, b, f"{playouts:,.0f}", f"{nodes:,.0f}", f"{playouts / base:.1f}"])
    print(
        format_table(
            ["game", "playouts at once", "playouts/s", "nodes/s", f"speedup vs B={args.batch[0]}"],
            rows,
        )
    )
    print(f"device: {jax.devices()[0].device_kind}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
