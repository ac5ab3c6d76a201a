"""Benchmark full-width CFR: ``python -m experiments.benchmarks cfr``.

Iterations per second of ``lax.scan``-compiled CFR / CFR+ (no evaluation inside
the timed loop), compile time separately, and batched instance-iterations/s
(B independent runs vmapped), against OpenSpiel C++ ``CFRSolver`` /
``CFRPlusSolver`` timed in the same process on the same game. Timings are
best-of-3 steady-state wall clock; on shared machines compare the ratios. A B = 1 call
runs ``--call-scale`` (default 10) times as many updates as a batched one (II-GS(6): 9
instead of 2, LD(1,1) 67 instead of 6) on a donated state, so its fixed cost per call is
spread as in ``jaxcfr.run``'s chunks; ``--call-scale 1`` times the short calls of earlier
sessions.
Solvers are keyed by the full infosets (``keying="full"``), so a game carrying an
imperfect-recall abstraction (DRP-IR) is timed as the full game; abstract keying is
timed by ``python -m experiments.benchmarks abstraction``.

OpenSpiel counterparts (``OPENSPIEL_GAMES``): Kuhn, Leduc (suits), LD(1,1), and for
II-GS(6) ``turn_based_simultaneous_game(goofspiel(num_cards=6, imp_info=True,
points_order=ascending, returns_type=win_loss))``, the same tree except that OpenSpiel
plays the last card automatically (GAMES.md 1.7: 17,241 infosets per player against our
83,001, which count the forced one-action last-card infosets), so its tree is the
smaller one. Rank-only Leduc, GP(3,3,2,2), Leduc-5 and DRP have no OpenSpiel version.
"""

from __future__ import annotations

import argparse
import time

import jax
import jax.numpy as jnp
import numpy as np

import games_tensor as gt
import jaxcfr
from experiments.benchmarks._cli import Parser
from experiments.catalog import GAMES_MD
from experiments.sizes import format_table

DEFAULT_GAMES = [
    "Kuhn",
    "Leduc (suits, OpenSpiel)",
    "Leduc (rank-only)",
    "GP(3,3,2,2)",
    "LD(1,1)",
    "DRP",
    "II-GS(6)",
]
OPENSPIEL = {"cfr": "CFRSolver", "cfr_plus": "CFRPlusSolver"}
OPENSPIEL_GAMES = {  # GAMES_MD label -> pyspiel.load_game string of the same game
    "Kuhn": "kuhn_poker",
    "Leduc (suits, OpenSpiel)": "leduc_poker",
    "LD(1,1)": "liars_dice",
    "II-GS(6)": "turn_based_simultaneous_game(game=goofspiel(num_cards=6,imp_info=True,"
    "points_order=ascending,returns_type=win_loss))",
}


def _scan_fn(solver, length):
    def many(game, state):
        return jax.lax.scan(
            lambda s, _: (solver.update(game, s), None), state, None, length=length
        )[0]

    return many


def measure_jax(solver, game, batch, length, repeats=3):
    """(compile seconds, instance-iterations/s): one jitted call runs ``length`` updates
    (``lax.scan``) on a donated state, as ``jaxcfr.run``'s chunks do."""
    init = solver.init(game)
    if batch == 1:
        fn = jax.jit(_scan_fn(solver, length), donate_argnums=1)
        state = jax.tree.map(jnp.array, init)
    else:
        fn = jax.jit(jax.vmap(_scan_fn(solver, length), in_axes=(None, 0)), donate_argnums=1)
        state = jax.tree.map(lambda x: jnp.array(np.broadcast_to(x, (batch, *x.shape))), init)
    t0 = time.perf_counter()
    state = jax.block_until_ready(fn(game, state))
    first = time.perf_counter() - t0
    best = np.inf
    for _ in range(repeats):
        t0 = time.perf_counter()
        state = jax.block_until_ready(fn(game, state))
        best = min(best, time.perf_counter() - t0)
    return first - best, batch * length / best


def measure_openspiel(game_name, algorithm, seconds=2.0, min_iterations=3):
    import pyspiel

    os_game = pyspiel.load_game(game_name)
    solver = getattr(pyspiel, OPENSPIEL[algorithm])(os_game)
    solver.evaluate_and_update_policy()
    n, t0 = 0, time.perf_counter()
    while time.perf_counter() - t0 < seconds or n < min_iterations:
        solver.evaluate_and_update_policy()
        n += 1
    return n / (time.perf_counter() - t0)


def main(argv=None):
    parser = Parser(
        prog="python -m experiments.benchmarks cfr",
        description=__doc__,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument(
        "--games", default=";".join(DEFAULT_GAMES), help="';'-separated labels of GAMES_MD"
    )
    parser.add_argument("--algorithms", default="cfr,cfr_plus")
    parser.add_argument("--batches", default="1,16,256")
    parser.add_argument(
        "--max-batch-elements",
        type=float,
        default=3e7,
        help="skip batches whose B * I * A exceeds this (memory)",
    )
    parser.add_argument(
        "--call-scale",
        type=float,
        default=10.0,
        help="B = 1 calls run this many times the batched calls' updates (2e7 x scale / "
        "(10 histories), 2 to 2,000), so a call's fixed cost (dispatch, the loop's copy of "
        "the state) is spread as in a long run; 1 = the batched length (before session 27)",
    )
    args = parser.parse_args(argv)
    if not args.call_scale > 0:
        parser.error(f"--call-scale must be > 0, got {args.call_scale}")
    labels = args.games.split(";")
    batches = [int(b) for b in args.batches.split(",")]
    rows = []
    for label, name, params in GAMES_MD:
        if label not in labels:
            continue
        game = gt.load(name, **params)
        size = game.num_infosets * game.num_actions
        histories = max(game.sizes["histories"], 1)
        length = int(np.clip(2e7 / histories / 10, 2, 2000))  # updates per batched call
        single_length = int(np.clip(2e7 * args.call_scale / histories / 10, 2, 2000))
        for alg in args.algorithms.split(","):
            solver = getattr(jaxcfr, alg)(keying="full")
            os_rate = None
            if label in OPENSPIEL_GAMES and alg in OPENSPIEL:
                try:
                    os_rate = measure_openspiel(OPENSPIEL_GAMES[label], alg)
                except ImportError:
                    pass
            cells = []
            compile_s = None
            for b in batches:
                if b * size > args.max_batch_elements:
                    cells.append("-")
                    continue
                c, rate = measure_jax(solver, game, b, single_length if b == 1 else length)
                compile_s = c if compile_s is None else compile_s
                cells.append(f"{rate:,.0f}")
                if b == 1:
                    single = rate
            ratio = f"{single / os_rate:,.0f}x" if os_rate else "-"
            rows.append(
                [
                    label,
                    alg,
                    f"{compile_s:.2f}",
                    *cells,
                    (f"{os_rate:,.0f}" if os_rate >= 100 else f"{os_rate:.3g}") if os_rate else "-",
                    ratio,
                ]
            )
            print(" | ".join(map(str, rows[-1])), flush=True)
    print()
    print(f"device: {jax.devices()[0].platform} ({jax.devices()[0].device_kind}), float32")
    print(
        format_table(
            [
                "game",
                "algorithm",
                "compile s",
                *[f"B={b} inst-it/s" for b in batches],
                "OpenSpiel C++ it/s",
                "B=1 vs OpenSpiel",
            ],
            rows,
        )
    )


if __name__ == "__main__":
    main()
