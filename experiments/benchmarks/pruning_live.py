"""How much of a game Total RBP keeps live: what a live sub-game can save.

``python -m experiments.benchmarks pruning_live --game leduc5 --check-every 10
--iterations 100,300,1000,3000``

Runs Total RBP (C = --threshold) and prints, at each checkpoint, the fraction of infosets
not below a pruned own sequence (the rows of ``jaxcfr.pruning.layout``), the fraction of
payoff entries with both sequences live, the counted space fraction and the pruned
(infoset, action) entries. The dense kernel's work per iteration is proportional to the
full sizes; a live sub-game's to these fractions (plus the checks).
"""

from __future__ import annotations

import argparse
import json
import time


def main(argv=None):
    import jax

    import games_tensor as gt
    import jaxcfr
    from experiments.benchmarks.pruning import _parse_game
    from jaxcfr import pruning

    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--game", default="leduc5", help="NAME[:key=value,...]")
    ap.add_argument("--base", default="cfr", choices=("cfr", "cfr_plus"))
    ap.add_argument("--check-every", type=int, default=10)
    ap.add_argument("--threshold", type=float, default=0.1)
    ap.add_argument("--iterations", default="100,300,1000")
    args = ap.parse_args(argv)
    name, params = _parse_game(args.game)
    game = gt.load(name, **params)
    k = args.check_every
    solver = pruning.regret_pruning(
        getattr(jaxcfr, args.base)(),
        "total",
        threshold=args.threshold,
        check_every=k,
        count_nodes=False,
    )
    chunk = max(50, k)
    f = jax.jit(
        lambda g, s: jax.lax.scan(lambda c, _: (solver.update(g, c), None), s, None, length=chunk)[
            0
        ]
    )
    state, done, t0 = solver.init(game), 0, time.perf_counter()
    for mark in (int(x) for x in args.iterations.split(",")):
        while done < mark:
            state, done = f(game, state), done + chunk
        state = jax.block_until_ready(state)
        dead = pruning.dead_infosets(game, state.pruned)
        live_z = int(pruning.live_payoff_entries(game, state.pruned).sum())
        print(
            json.dumps(
                {
                    "game": args.game,
                    "base": args.base,
                    "k": k,
                    "iterations": done,
                    "live_infosets": round(1 - dead.mean(), 4),
                    "live_payoff_entries": round(live_z / game.meta.num_sf_terminals, 4),
                    "space": round(float(pruning.space_fraction(game, state)), 4),
                    "pruned_entries": int(state.pruned.sum()),
                    "seconds": round(time.perf_counter() - t0, 1),
                }
            ),
            flush=True,
        )
    return 0


if __name__ == "__main__":
    main()
