"""A/B of two checkouts of the kernel: ``python -m experiments.benchmarks kernel_ab``.

Runs the same ``lax.scan`` of CFR updates (no evaluation) under two source trees
(``--roots``, e.g. a main checkout and a worktree), alternating the trees for
``--rounds`` rounds, each in a fresh subprocess (its working directory is the tree, so
``import jaxcfr`` loads that tree's code). Prints wall-clock iterations/s and CPU-time
iterations per CPU-second (all threads of the process): on a shared, overloaded machine
the CPU-time rate is the steadier of the two, and only the interleaved comparison
means anything.
"""

from __future__ import annotations

import argparse

from experiments.benchmarks._ab import in_trees
from experiments.benchmarks._cli import Parser

_CODE = r"""
import sys, time, jax, numpy as np, games_tensor as gt, jaxcfr
from experiments.catalog import GAMES_MD
for label, name, params in GAMES_MD:
    if label not in sys.argv[1].split(";"):
        continue
    g = gt.load(name, **params)
    L = int(np.clip(2e7 / max(g.sizes["histories"], 1) / 10, 2, 2000))
    for alg in sys.argv[2].split(","):
        s = getattr(jaxcfr, alg)(); st = s.init(g)
        step = lambda c, _: (s.update(g, c), None)
        f = jax.jit(lambda g, st: jax.lax.scan(step, st, None, length=L)[0])
        st = jax.block_until_ready(f(g, st)); wall = cpu = 1e9
        for _ in range(3):
            t0, c0 = time.perf_counter(), time.process_time()
            st = jax.block_until_ready(f(g, st))
            wall = min(wall, time.perf_counter() - t0); cpu = min(cpu, time.process_time() - c0)
        rates = f"wall {L / wall:,.0f} it/s | cpu {L / cpu:,.0f} it/cpu-s"
        print(f"{label} | {alg} | {rates}", flush=True)
"""


def main(argv=None):
    parser = Parser(
        prog="python -m experiments.benchmarks kernel_ab",
        description=__doc__,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("--roots", required=True, help="','-separated source trees")
    parser.add_argument("--games", default="Leduc (suits, OpenSpiel);LD(1,1);II-GS(6)")
    parser.add_argument("--algorithms", default="cfr")
    parser.add_argument("--rounds", type=int, default=2)
    args = parser.parse_args(argv)
    from experiments.catalog import GAMES_MD

    labels = [label for label, _, _ in GAMES_MD]
    unknown = [g for g in args.games.split(";") if g not in labels]
    if unknown:
        parser.error(f"--games: unknown {unknown} (';'-separated); choose from {labels}")
    roots = args.roots.split(",")
    for r, root, _, out in in_trees(roots, args.rounds, _CODE, [args.games, args.algorithms]):
        print(f"== round {r}: {root}")
        print(out.stdout if out.returncode == 0 else out.stderr[-2000:], flush=True)


if __name__ == "__main__":
    main()
