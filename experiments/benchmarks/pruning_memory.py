"""Solver memory of Total RBP states: dense, a compact master copy, unpruned (bytes).

``python -m experiments.benchmarks pruning_memory --game leduc5 --base cfr
CHECKPOINT.npz [...]``

For each saved state (a ``pruning_live --checkpoint-dir`` checkpoint, any iteration)
prints the bytes of the dense :class:`jaxcfr.pruning.PrunedState` (what the solver holds
now), of a compact master copy holding only what Total RBP needs
(:func:`jaxcfr.pruning.compact_bytes`, with the faced-plan sums kept where non-zero,
``exact``, or left out, ``paper``), of the unpruned solver's regrets + average sums
(2 I A; with legal entries only, 2 x legal pairs), and, for scale, of the full
game's arrays and of the live sub-game's arrays (:func:`jaxcfr.pruning.layout` under
the state's pruned set: what a live stretch allocates on top), keeping the
opponent-frozen rows (sessions 23-26) and leaving them out (``run_live``'s default
since session 27; ``frozen`` = the rows left out). Host only: nothing is compiled.
"""

from __future__ import annotations

import json

from experiments.benchmarks._cli import Parser


def _mb(x: float) -> str:
    return f"{x / 2**20:.2f}"


def main(argv=None):
    import jax
    import numpy as np

    import games_tensor as gt
    import jaxcfr
    from experiments.benchmarks.pruning import _parse_game
    from experiments.benchmarks.pruning_live import load
    from jaxcfr import pruning

    ap = Parser(description=__doc__.splitlines()[0])
    ap.add_argument("checkpoints", nargs="+", help="pruning_live .npz states")
    ap.add_argument("--game", default="leduc5", help="NAME[:key=value,...]")
    ap.add_argument("--base", default="cfr", choices=("cfr", "cfr_plus"))
    ap.add_argument("--no-layout", action="store_true", help="skip the live sub-game build")
    args = ap.parse_args(argv)
    name, params = _parse_game(args.game)
    game = gt.load(name, **params)
    like = pruning.regret_pruning(getattr(jaxcfr, args.base)(), "total").init(game)
    game_bytes = sum(np.asarray(x).nbytes for x in jax.tree.leaves(game))
    plain = getattr(jaxcfr, args.base)().init(game)
    plain_bytes = sum(np.asarray(x).nbytes for x in plain)
    rows = []
    for path in args.checkpoints:
        state, done = load(path, like)
        acc = pruning.compact_bytes(game, state)
        row = {"checkpoint": path, "iterations": done, **acc}
        row["unpruned_state"] = plain_bytes
        row["game"] = game_bytes
        row["space"] = round(float(pruning.space_fraction(game, state)), 4)
        if not args.no_layout:
            for key, out in ((False, "live_subgame"), (True, "live_subgame_no_frozen")):
                lay = pruning.layout(game, np.asarray(state.pruned), leave_out_frozen=key)
                row[out] = sum(np.asarray(x).nbytes for x in jax.tree.leaves((lay.game, lay.extra)))
            row["frozen"] = sum(int(fz["rows"].size) for fz in lay.frozen)
        print(json.dumps(row), flush=True)
        rows.append(row)
    n_inf, n_act = game.num_infosets, game.num_actions
    print(
        f"\n{args.game} ({n_inf} infosets x {n_act} actions), Total RBP with {args.base}; MB "
        f"(2^20 bytes). Unpruned master copy (R + S, 2 I A) {_mb(rows[0]['unpruned'])}, "
        f"the library's unpruned state {_mb(plain_bytes)}, the game's arrays {_mb(game_bytes)}"
    )
    print(
        "| iterations | space | live rows | average rows | plan rows | dense state | "
        "compact, exact | compact, paper | exact / unpruned | paper / unpruned | "
        "legal entries only / unpruned's | live sub-game arrays | without frozen rows "
        "(rows left out) |"
    )
    print("|---|---|---|---|---|---|---|---|---|---|---|---|---|")
    for r in rows:
        sub = _mb(r["live_subgame"]) if "live_subgame" in r else "-"
        nof = f"{_mb(r['live_subgame_no_frozen'])} ({r['frozen']})" if "frozen" in r else "-"
        print(
            f"| {r['iterations']} | {r['space']:.3f} | {r['live_rows']} | {r['average_rows']} | "
            f"{r['plan_rows']} | {_mb(r['dense'])} | {_mb(r['exact'])} | {_mb(r['paper'])} | "
            f"{r['exact'] / r['unpruned']:.2f} | {r['paper'] / r['unpruned']:.2f} | "
            f"{r['paper_legal'] / r['unpruned_legal']:.2f} | {sub} | {nof} |"
        )
    return 0


if __name__ == "__main__":
    main()
