"""Iterations each full-width CFR variant needs to reach a target exploitability.

``python -m experiments.cfr_budget [--games LABELS] [--target 1e-3] [--max-iterations N]``

Runs every algorithm on every GAMES.md instance that fits in memory (single
seed, float32 unless --x64), stopping at the first evaluation at or below the
target, and prints iterations, final exploitability, |value - LP value| and
seconds. The test suite asserts the budgets for the small games; this study
documents them for all. Every solver is keyed by the full infosets
(``keying="full"``): on a game that carries an imperfect-recall abstraction (DRP-IR)
the study solves the full game, whose exploitability and LP value it reports; the
abstraction-keyed solvers are measured by ``experiments.reproduce.imperfect_recall``.
"""

from __future__ import annotations

import argparse
import time

ALGORITHMS = ["cfr", "cfr_plus", "linear_cfr", "dcfr", "pcfr_plus"]


def main(argv=None):
    parser = argparse.ArgumentParser(
        prog="python -m experiments.cfr_budget",
        description=__doc__,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("--games", default="", help="';'-separated GAMES_MD labels (default: all)")
    parser.add_argument("--algorithms", default=",".join(ALGORITHMS))
    parser.add_argument("--target", type=float, default=1e-3)
    parser.add_argument("--max-iterations", type=int, default=200_000)
    parser.add_argument("--eval-every", type=int, default=500)
    parser.add_argument("--x64", action="store_true")
    parser.add_argument("--lp", action="store_true", help="also compare the value with solve_lp")
    args = parser.parse_args(argv)
    import jax

    if args.x64:
        jax.config.update("jax_enable_x64", True)
    import games_tensor as gt
    import jaxcfr
    from experiments.catalog import GAMES_MD
    from experiments.sizes import format_table

    labels = [s for s in args.games.split(";") if s]
    rows = []
    for label, name, params in GAMES_MD:
        if labels and label not in labels:
            continue
        game = gt.load(name, **params)
        lp = jaxcfr.solve_lp(game).value if args.lp else None
        for alg in args.algorithms.split(","):
            t0 = time.perf_counter()
            res = jaxcfr.run(
                getattr(jaxcfr, alg)(keying="full"),
                game,
                args.max_iterations,
                args.eval_every,
                target_exploitability=args.target,
            )
            state = jax.tree.map(lambda x: x[0], res.state)
            value = float(jaxcfr.expected_value(game, jaxcfr.average_policy(game, state))[0])
            expl = float(res.exploitability[0, -1])
            rows.append(
                [
                    label,
                    alg,
                    int(res.iterations[-1]),
                    f"{expl:.2e}",
                    "yes" if expl <= args.target else "NO",
                    f"{abs(value - lp):.1e}" if lp is not None else "-",
                    f"{time.perf_counter() - t0:.1f}",
                ]
            )
            print(" | ".join(map(str, rows[-1])), flush=True)
    print()
    print(
        format_table(
            [
                "game",
                "algorithm",
                "iterations",
                "exploitability",
                "reached",
                "|value - LP|",
                "seconds",
            ],
            rows,
        )
    )


if __name__ == "__main__":
    main()
