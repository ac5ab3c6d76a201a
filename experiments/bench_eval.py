"""Benchmark exact evaluation: ``python -m experiments.bench exploitability``.

Reports, in one process (timings are noisy on shared machines; compare ratios):
  * Leduc (936 infosets): one jitted call on a batch of B random policies, per-policy
    time, and single-policy latency, against OpenSpiel C++ ``pyspiel.nash_conv`` on
    the same policies (OpenSpiel's ``exploitability`` is the same traversal / 2);
  * LD(1,1) and II-GS(6): single-policy exploitability after compilation, with the
    compile (first call) time separately;
  * ``solve_lp`` wall time per game.
"""

from __future__ import annotations

import argparse
import time

import jax
import jax.numpy as jnp
import numpy as np

import games_tensor as gt
import jaxcfr
from experiments.sizes import format_table


def _random_policies(game, batch, seed=0):
    rng = np.random.default_rng(seed)
    mask = game.meta.host["legal_mask"]
    pols = rng.random((batch, *mask.shape)) * mask
    return jnp.asarray(pols / pols.sum(-1, keepdims=True), dtype=game.sf_payoff.dtype)


def _time(fn, *args, repeat=5):
    out = fn(*args)
    jax.block_until_ready(out)
    best = float("inf")
    for _ in range(repeat):
        t0 = time.perf_counter()
        jax.block_until_ready(fn(*args))
        best = min(best, time.perf_counter() - t0)
    return best


def _first_call(fn, *args):
    t0 = time.perf_counter()
    jax.block_until_ready(fn(*args))
    return time.perf_counter() - t0


def batched_table(batches, os_repeats):
    game = gt.load("leduc_poker")
    single = jax.jit(jaxcfr.exploitability)
    pol1 = _random_policies(game, 1)[0]
    compile_s = _first_call(single, game, pol1)
    lat = _time(single, game, pol1, repeat=20)
    os_ms = None
    try:
        import pyspiel
        from open_spiel.python import policy as os_policy

        os_game = pyspiel.load_game("leduc_poker")
        adapted = gt.from_openspiel(os_game)
        pols = np.asarray(_random_policies(adapted, os_repeats, seed=1), dtype=np.float64)
        cpp = [
            os_policy.python_policy_to_pyspiel_policy(gt.to_tabular_policy(adapted, p))
            for p in pols
        ]
        t0 = time.perf_counter()
        for p in cpp:
            pyspiel.exploitability(os_game, p)
        os_ms = (time.perf_counter() - t0) / len(cpp) * 1e3
    except ImportError:
        pass
    rows = [
        [
            "single policy (latency)",
            1,
            f"{compile_s:.2f}",
            f"{lat * 1e3:.3f}",
            f"{lat * 1e3:.4f}",
            f"{os_ms / (lat * 1e3):.0f}x" if os_ms else "-",
        ]
    ]
    batched = jax.jit(jax.vmap(jaxcfr.exploitability, in_axes=(None, 0)))
    for b in batches:
        pols = _random_policies(game, b)
        c = _first_call(batched, game, pols)
        t = _time(batched, game, pols)
        per = t / b * 1e3
        rows.append(
            [
                f"batch of {b}",
                b,
                f"{c:.2f}",
                f"{t * 1e3:.2f}",
                f"{per:.4f}",
                f"{os_ms / per:.0f}x" if os_ms else "-",
            ]
        )
    print(
        f"\nLeduc poker (936 infosets), float32, {jax.devices()[0].platform}. "
        f"OpenSpiel C++ pyspiel.exploitability: {os_ms:.2f} ms/policy"
        if os_ms
        else ""
    )
    print(
        format_table(["what", "B", "compile s", "call ms", "ms/policy", "vs OpenSpiel C++"], rows)
    )


def large_games_table():
    rows = []
    for label, name, params in [
        ("LD(1,1)", "liars_dice", {}),
        ("II-GS(6)", "ii_goofspiel", {"num_cards": 6}),
    ]:
        t0 = time.perf_counter()
        game = gt.load(name, **params)
        load_s = time.perf_counter() - t0
        fn = jax.jit(jaxcfr.exploitability)
        pol = gt.uniform_policy(game)
        c = _first_call(fn, game, pol)
        t = _time(fn, game, pol, repeat=3)
        rows.append([label, game.sizes["infosets"], f"{load_s:.2f}", f"{c:.2f}", f"{t * 1e3:.1f}"])
    print()
    print(
        format_table(
            [
                "game",
                "infosets",
                "load (compile rules) s",
                "jit compile + first call s",
                "exploitability ms",
            ],
            rows,
        )
    )


def lp_table():
    rows = []
    for label, name, params in [
        ("Kuhn", "kuhn_poker", {}),
        ("Leduc (suits)", "leduc_poker", {}),
        ("Leduc (rank-only)", "leduc_poker", {"suits": False}),
        ("DRP", "die_roll_poker", {}),
        ("II-GS(4)", "ii_goofspiel", {"num_cards": 4}),
        ("GP(3,3,2,2)", "generic_poker", {}),
        ("LD(1,1)", "liars_dice", {}),
    ]:
        game = gt.load(name, **params)
        sol = jaxcfr.solve_lp(game)
        rows.append([label, game.sizes["infosets"], f"{sol.value:.10f}", f"{sol.seconds:.2f}"])
    print()
    print(format_table(["game", "infosets", "LP value (P1)", "solve_lp s"], rows))


def main(argv=None):
    parser = argparse.ArgumentParser(
        prog="python -m experiments.bench exploitability",
        description=__doc__,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("--batches", default="16,256,1024")
    parser.add_argument("--openspiel-policies", type=int, default=10)
    parser.add_argument("--skip-large", action="store_true")
    parser.add_argument("--skip-lp", action="store_true")
    args = parser.parse_args(argv)
    batched_table([int(b) for b in args.batches.split(",")], args.openspiel_policies)
    if not args.skip_large:
        large_games_table()
    if not args.skip_lp:
        lp_table()


if __name__ == "__main__":
    main()
