"""The float32 precision floor of the CFR family on Leduc (docs/cfr.md).

``python -m experiments.precision_floor [--iterations 4000] [--game leduc_poker]``

Runs each algorithm in float32 and in float64 (``jax_enable_x64``) from the same start
and prints: the float32 run's exploitability computed in float32, the same policy's
exploitability computed in float64 (the evaluation error), the float64 run's
exploitability, and the largest policy difference between the two runs.
"""

from __future__ import annotations

import argparse

import jax
import numpy as np


def _run(name, algorithm, iterations, x64):
    jax.config.update("jax_enable_x64", x64)
    try:
        import games_tensor as gt
        import jaxcfr

        game = gt.load(name)
        res = jaxcfr.run(getattr(jaxcfr, algorithm)(), game, iterations, iterations)
        state = jax.tree.map(lambda x: x[0], res.state)
        policy = np.asarray(jaxcfr.average_policy(game, state), np.float64)
        return float(res.exploitability[0, -1]), policy
    finally:
        jax.config.update("jax_enable_x64", False)


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--iterations", type=int, default=4000)
    parser.add_argument("--game", default="leduc_poker")
    parser.add_argument("--algorithms", default="cfr,cfr_plus,dcfr")
    parser.add_argument(
        "--tolerance-eps",
        type=float,
        default=None,
        help="override the regret-matching floor tau = X eps U (default 16; 0: textbook RM)",
    )
    args = parser.parse_args(argv)
    import games_tensor as gt
    import jaxcfr
    from jaxcfr import _solver

    if args.tolerance_eps is not None:
        _solver.REGRET_TOLERANCE_EPS = args.tolerance_eps
        print(f"regret tolerance: {args.tolerance_eps} eps U")

    print(f"{args.game}, {args.iterations} iterations")
    print("algorithm | expl f32 (in f32) | same policy in f64 | expl f64 run | max |pi32 - pi64|")
    for algorithm in args.algorithms.split(","):
        e32, p32 = _run(args.game, algorithm, args.iterations, False)
        e64, p64 = _run(args.game, algorithm, args.iterations, True)
        jax.config.update("jax_enable_x64", True)
        try:
            exact = float(jaxcfr.exploitability(gt.load(args.game), p32))
        finally:
            jax.config.update("jax_enable_x64", False)
        diff = np.abs(p32 - p64).max()
        print(f"{algorithm} | {e32:.3e} | {exact:.3e} | {e64:.3e} | {diff:.2e}", flush=True)


if __name__ == "__main__":
    main()
