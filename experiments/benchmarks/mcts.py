"""Benchmark UCT / Smooth UCT self-play episodes/s against outcome sampling's trajectories/s.

``python -m experiments.benchmarks mcts [--games kuhn_poker leduc_poker] [--batches 1 64 1024]``

For each game and batch size B (independent runs, ``jax.vmap`` over keys of ``lax.scan``
over updates: the runner's program without the evaluation): Smooth UCT (the chapter's
constants for the game), UCT, and outcome sampling (alternating, epsilon 0.5) timed
interleaved in the same process (best of R). One MCTS update is one episode; one OS
iteration is two trajectories, so OS is reported in trajectories/s and the ratio is
cost per episode / cost per trajectory (< 1.5 is the issue's goal at B = 1024).

``--roots A,B [--rounds N]``: A/B of source trees (e.g. a main checkout and a worktree),
each round one fresh subprocess per tree in turn (working directory the tree, so
``import jaxcfr`` and the benchmark's chunk come from that tree), timing the same cases
there in wall-clock AND process CPU time (all threads); prints per tree and solver the
median and range over rounds and the CPU-time ratio to the first tree. On a machine
loaded by other jobs the CPU-time rate is the steadier one.
"""

from __future__ import annotations

import re
import statistics

import jax

import games_tensor as gt
import jaxcfr
from experiments.benchmarks._ab import in_trees
from experiments.benchmarks._cli import Parser
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


_AB_CODE = r"""
import sys, time, jax
import games_tensor as gt
from experiments.benchmarks.mccfr import _Case
from experiments.benchmarks.mcts import solvers
game_name, B, updates, repeats = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), int(sys.argv[4])
game = gt.load(game_name)
for name, (solver, per_update) in solvers(game_name).items():
    case = _Case(game, solver, B, max(8, updates // B))
    wall = cpu = 1e9
    for _ in range(repeats):
        t0, c0 = time.perf_counter(), time.process_time()
        case.state = jax.block_until_ready(case.compiled(game, case.state, case.keys))
        wall, cpu = min(wall, time.perf_counter() - t0), min(cpu, time.process_time() - c0)
    n = B * case.length * per_update
    print(f"AB {name} {n / wall:.0f} {n / cpu:.0f}", flush=True)
"""


def ab(roots, game_name, batch, updates, repeats, rounds):
    """A/B of source trees (module docstring): rates per tree and solver over rounds."""
    rates = {}  # (root, solver) -> [(wall, cpu)]
    args = [game_name, str(batch), str(updates), str(repeats)]
    for r, root, load, out in in_trees(roots, rounds, _AB_CODE, args):
        if out.returncode != 0:
            raise RuntimeError(f"{root}: {out.stderr[-2000:]}")
        got = re.findall(r"^AB (\S+) (\d+) (\d+)$", out.stdout, re.M)
        for name, wall, cpu in got:
            rates.setdefault((root, name), []).append((float(wall), float(cpu)))
        line = ", ".join(f"{n} {float(w):,.0f}/s wall {float(c):,.0f}/cpu-s" for n, w, c in got)
        print(f"round {r} {root} (load {load:.2f}): {line}", flush=True)
    rows = []
    names = sorted({n for _, n in rates}, key=list(solvers(game_name)).index)
    for name in names:
        ref = statistics.median(c for _, c in rates[(roots[0], name)])
        for root in roots:
            w = [x for x, _ in rates[(root, name)]]
            c = [x for _, x in rates[(root, name)]]
            rows.append(
                [
                    name,
                    root,
                    f"{statistics.median(w):,.0f} ({min(w):,.0f}-{max(w):,.0f})",
                    f"{statistics.median(c):,.0f} ({min(c):,.0f}-{max(c):,.0f})",
                    f"{statistics.median(c) / ref:.2f}",
                ]
            )
    header = ["solver", "tree", "wall episodes/s median (range)", "per CPU-s median (range)"]
    print(f"\n{game_name}, B = {batch}, {rounds} rounds, best of {repeats} per round")
    print(format_table(header + ["CPU-time rate / first tree"], rows))


def main(argv=None):
    parser = Parser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "--games", nargs="+", default=["kuhn_poker", "leduc_poker"], help="games_tensor game names"
    )
    parser.add_argument(
        "--batches", nargs="+", type=int, default=[1, 64, 1024], help="independent runs B at once"
    )
    parser.add_argument(
        "--updates", type=int, default=2**16, help="updates per call, all runs together"
    )
    parser.add_argument("--repeats", type=int, default=5, help="timed calls per cell (best of)")
    parser.add_argument("--roots", help="','-separated source trees: A/B mode (docstring)")
    parser.add_argument("--rounds", type=int, default=3, help="A/B rounds (with --roots)")
    args = parser.parse_args(argv)
    if args.roots:
        for g in args.games:
            for b in args.batches:
                ab(args.roots.split(","), g, b, args.updates, args.repeats, args.rounds)
        return
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
