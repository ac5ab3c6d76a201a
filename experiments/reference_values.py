"""Reference values of every GAMES.md instance: the exact equilibrium value (sequence-form
LP, scipy HiGHS), the LP policy's NashConv (a check of the LP against the independent
traversal kernel), and the uniform policy's best-response values and NashConv.

``python -m experiments.reference_values [--games LABELS] [--skip-lp LABELS]``  (float64)
"""

from __future__ import annotations

import argparse
import time


def main(argv=None):
    parser = argparse.ArgumentParser(
        prog="python -m experiments.reference_values",
        description=__doc__,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("--games", default="", help="';'-separated GAMES_MD labels (default: all)")
    parser.add_argument(
        "--skip-lp", default="", help="';'-separated labels to evaluate without the LP"
    )
    args = parser.parse_args(argv)
    import jax

    jax.config.update("jax_enable_x64", True)
    import games_tensor as gt
    import jaxcfr
    from experiments.catalog import GAMES_MD, params_str
    from experiments.sizes import format_table

    labels = [s for s in args.games.split(";") if s]
    skip = {s for s in args.skip_lp.split(";") if s}
    rows = []
    for label, name, params in GAMES_MD:
        if labels and label not in labels:
            continue
        game = gt.load(name, **params)
        uniform = gt.uniform_policy(game)
        br = [float(v) for v in jaxcfr.best_response_values(game, uniform)]
        nc = sum(br)
        if label in skip:
            value = lp_nc = seconds = "-"
        else:
            t0 = time.perf_counter()
            sol = jaxcfr.solve_lp(game)
            seconds = f"{time.perf_counter() - t0:.1f}"
            value = f"{sol.value:.10f}"
            lp_nc = f"{float(jaxcfr.nash_conv(game, sol.policy)):.1e}"
        rows.append(
            [
                label,
                params_str(params),
                value,
                lp_nc,
                f"{br[0]:.6f}",
                f"{br[1]:.6f}",
                f"{nc:.6f}",
                seconds,
            ]
        )
        print(" | ".join(rows[-1]), flush=True)
    print()
    print(
        format_table(
            [
                "game",
                "parameters",
                "value (P1, LP)",
                "NashConv of LP policy",
                "uniform BR_1",
                "uniform BR_2",
                "uniform NashConv",
                "LP s",
            ],
            rows,
        )
    )


if __name__ == "__main__":
    main()
