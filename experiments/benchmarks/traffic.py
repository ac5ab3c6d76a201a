"""Memory traffic of one CFR update against the machine's bandwidth:
``python -m experiments.benchmarks traffic``.

For each game and algorithm: XLA's own estimate of the bytes one compiled update
accesses (``jax.jit(update).lower(game, state).compile().cost_analysis()``, key
``"bytes accessed"``; one update, not the scan, whose loop body XLA counts once), the
update rate of a ``lax.scan`` of updates (best of 3, wall clock and CPU time of the
process), and the achieved bandwidth ``bytes x it/s`` as a fraction of this machine's
copy bandwidth, measured in the same process (best of 5 copies of a 256 MiB float32
array, numpy and jax, counting read + write). Run it under several source trees with
``cd <tree> && python -m experiments.benchmarks traffic``; on a loaded machine only the
CPU-time columns and ratios in one run mean anything.

The CPU-time fraction (``bytes x it/CPU-s`` against the copy's bytes per CPU-second,
the copy re-measured right after each game's rate, so both come from the same
minute: ``np.copyto`` into a preallocated array, see :func:`cpu_copy_bandwidth`) is the
one that survives load: both sides are CPU time of this process.
``--bandwidth`` prints only the copy bandwidths (several sizes, wall and CPU time).
"""

from __future__ import annotations

import argparse
import os
import time

import jax
import jax.numpy as jnp
import numpy as np

import games_tensor as gt
import jaxcfr
from experiments.benchmarks._cli import Parser
from experiments.catalog import GAMES_MD
from experiments.sizes import format_table


def cpu_copy_bandwidth(mib: int = 256, repeats: int = 5) -> tuple[float, float]:
    """(wall bytes/s, bytes per CPU-second) of ``np.copyto`` of a ``mib`` MiB float32
    array into a preallocated one (read + write counted), best of ``repeats``. (A jitted
    jax copy allocates its output each call, so it times page faults, not bandwidth;
    docs/cfr.md, session 25, gives both figures and the command.)"""
    src = np.ones(mib * 2**20 // 4, np.float32)
    dst = np.empty_like(src)
    np.copyto(dst, src)
    wall = cpu = np.inf
    for _ in range(repeats):
        t0, c0 = time.perf_counter(), time.process_time()
        np.copyto(dst, src)
        wall = min(wall, time.perf_counter() - t0)
        cpu = min(cpu, time.process_time() - c0)
    return 2 * src.nbytes / wall, 2 * src.nbytes / cpu


def copy_bandwidth(mib: int = 256, repeats: int = 5) -> tuple[float, float]:
    """Bytes/s of a copy (read + write) of a ``mib`` MiB float32 array: (numpy, jax)."""
    n = mib * 2**20 // 4
    src = np.ones(n, np.float32)
    dst = np.empty_like(src)
    best = np.inf
    for _ in range(repeats):
        t0 = time.perf_counter()
        np.copyto(dst, src)
        best = min(best, time.perf_counter() - t0)
    np_bw = 2 * src.nbytes / best
    x = jnp.ones(n, jnp.float32)
    f = jax.jit(lambda x: x * 2.0)
    jax.block_until_ready(f(x))
    best = np.inf
    for _ in range(repeats):
        t0 = time.perf_counter()
        jax.block_until_ready(f(x))
        best = min(best, time.perf_counter() - t0)
    return np_bw, 2 * x.nbytes / best


def update_bytes(solver, game) -> float:
    """XLA's estimate of the bytes one compiled update accesses."""
    state = solver.init(game)
    cost = jax.jit(solver.update).lower(game, state).compile().cost_analysis()
    cost = cost[0] if isinstance(cost, (list, tuple)) else cost
    return float(cost["bytes accessed"])


def update_rate(solver, game, length: int, repeats: int = 3) -> tuple[float, float]:
    """(wall it/s, it per CPU-second) of a scanned chunk of ``length`` updates."""

    def many(game, state):
        return jax.lax.scan(lambda s, _: (solver.update(game, s), None), state, None, length)[0]

    fn = jax.jit(many)
    state = jax.block_until_ready(fn(game, solver.init(game)))
    wall = cpu = np.inf
    for _ in range(repeats):
        t0, c0 = time.perf_counter(), time.process_time()
        state = jax.block_until_ready(fn(game, state))
        wall = min(wall, time.perf_counter() - t0)
        cpu = min(cpu, time.process_time() - c0)
    return length / wall, length / cpu


def main(argv=None):
    parser = Parser(
        prog="python -m experiments.benchmarks traffic",
        description=__doc__,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("--games", default="Leduc (suits, OpenSpiel);LD(1,1);II-GS(6)")
    parser.add_argument("--algorithms", default="cfr,cfr_plus")
    parser.add_argument("--bandwidth", action="store_true", help="only measure the copy bandwidth")
    args = parser.parse_args(argv)
    print(f"load before: {os.getloadavg()}")
    np_bw, jax_bw = copy_bandwidth()
    print(f"copy bandwidth: numpy {np_bw / 1e9:.2f} GB/s, jax {jax_bw / 1e9:.2f} GB/s")
    if args.bandwidth:
        for mib in (16, 64, 256, 1024):
            wall, cpu = cpu_copy_bandwidth(mib)
            print(f"numpy copy {mib} MiB: wall {wall / 1e9:.2f} GB/s, {cpu / 1e9:.2f} GB/CPU-s")
        print(f"load after: {os.getloadavg()}")
        return
    rows = []
    for label, name, params in GAMES_MD:
        if label not in args.games.split(";"):
            continue
        game = gt.load(name, **params)
        length = int(np.clip(2e7 / max(game.sizes["histories"], 1) / 10, 2, 2000))
        for alg in args.algorithms.split(","):
            solver = getattr(jaxcfr, alg)(keying="full")
            nbytes = update_bytes(solver, game)
            wall, cpu = update_rate(solver, game, length)
            bw = max(np_bw, jax_bw)
            _, cpu_bw = cpu_copy_bandwidth()  # the same minute as the rate
            rows.append(
                [
                    label,
                    alg,
                    f"{nbytes / 2**20:.2f}",
                    f"{wall:,.0f}",
                    f"{cpu:,.0f}",
                    f"{nbytes * wall / 1e9:.2f}",
                    f"{nbytes * wall / bw:.1%}",
                    f"{cpu_bw / 1e9:.2f}",
                    f"{nbytes * cpu / cpu_bw:.1%}",
                ]
            )
            print(" | ".join(rows[-1]), flush=True)
    print(f"load after: {os.getloadavg()}")
    print(
        format_table(
            [
                "game",
                "algorithm",
                "MiB / update (XLA)",
                "wall it/s",
                "it / CPU-s",
                "GB/s achieved (wall)",
                "of copy bandwidth",
                "copy GB/CPU-s",
                "of copy (CPU time)",
            ],
            rows,
        )
    )


if __name__ == "__main__":
    main()
