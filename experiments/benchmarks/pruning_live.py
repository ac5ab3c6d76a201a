"""How much of a game Total RBP keeps live: what a live sub-game can save.

``python -m experiments.benchmarks pruning_live --game leduc5 --check-every 10
--iterations 1000,10000,100000 [--base cfr_plus] [--checkpoint-dir DIR]``

Runs Total RBP (C = --threshold, nodes counted) and prints, at each checkpoint, the
fraction of infosets not below a pruned own sequence (the rows of
``jaxcfr.pruning.layout``), the fraction of payoff entries with both sequences live, the
counted space fraction, the pruned (infoset, action) entries, the nodes touched by the
last iteration and in total (history nodes, CBR passes included; unpruned: 2 H per
iteration), the exploitability of the average and, since the last checkpoint, how many
iterations changed the pruned set. The dense kernel's work per iteration is proportional
to the full sizes; a live sub-game's to these fractions (plus the checks).

With ``--checkpoint-dir`` the state is saved there (``<base>-k<k>-C<C>.npz``) every
``--save-every`` iterations and a later run resumes from it (long horizons on a shared
machine); the JSON lines are appended to ``<same>.jsonl``.
"""

from __future__ import annotations

import json
import os
import time

from experiments.benchmarks._cli import Parser


def checkpoint_stem(directory, game, base, k, threshold, rule="worst_case") -> str:
    """Path stem of the checkpoint (``.npz``) and log (``.jsonl``) of one run (the
    default check rule keeps the old names)."""
    tail = "" if rule == "worst_case" else f"-{rule}"
    return os.path.join(directory, f"{game.replace(':', '_')}-{base}-k{k}-C{threshold}{tail}")


def _save(path, state, done):
    import numpy as np

    tmp = path + ".tmp.npz"
    np.savez(tmp, done=done, **{f: np.asarray(getattr(state, f)) for f in state._fields})
    os.replace(tmp, path)


def load(path, like):
    import jax.numpy as jnp
    import numpy as np

    def field(z, f):  # a table the state no longer allocates ([0, A]) stays unallocated
        old = getattr(like, f)
        return old if old.ndim == 2 and old.shape[0] == 0 else jnp.asarray(z[f])

    with np.load(path) as z:
        return type(like)(*(field(z, f) for f in like._fields)), int(z["done"])


def main(argv=None):
    import jax
    import jax.numpy as jnp
    import numpy as np

    import games_tensor as gt
    import jaxcfr
    from experiments.benchmarks.pruning import _parse_game
    from jaxcfr import pruning

    ap = Parser(description=__doc__.splitlines()[0])
    ap.add_argument("--game", default="leduc5", help="NAME[:key=value,...]")
    ap.add_argument("--base", default="cfr", choices=("cfr", "cfr_plus"))
    ap.add_argument("--check-every", type=int, default=10)
    ap.add_argument("--threshold", type=float, default=0.1)
    ap.add_argument("--iterations", default="100,300,1000")
    ap.add_argument("--chunk", type=int, default=100, help="iterations per jitted call")
    ap.add_argument("--checkpoint-dir", default=None)
    ap.add_argument("--save-every", type=int, default=1000)
    ap.add_argument(
        "--check-rule",
        default="worst_case",
        choices=("worst_case", "paper", "eager"),
        help="Total RBP's check rule (jaxcfr.pruning.regret_pruning)",
    )
    args = ap.parse_args(argv)
    name, params = _parse_game(args.game)
    game = gt.load(name, **params)
    k = args.check_every
    solver = pruning.regret_pruning(
        getattr(jaxcfr, args.base)(),
        "total",
        threshold=args.threshold,
        check_every=k,
        check_rule=args.check_rule,
    )
    chunk = max(args.chunk, k)

    def body(c, _):
        new = solver.update(game, c)
        # pruned set changed; a check forced by (9) failing off schedule
        forced = jnp.any(new.pruned != c.pruned) & (new.iteration % k != 0)
        return new, (jnp.any(new.pruned != c.pruned), forced)

    f = jax.jit(lambda s: jax.lax.scan(body, s, None, length=chunk))
    state, done = solver.init(game), 0
    ckpt = log = None
    if args.checkpoint_dir:
        os.makedirs(args.checkpoint_dir, exist_ok=True)
        stem = checkpoint_stem(
            args.checkpoint_dir, args.game, args.base, k, args.threshold, args.check_rule
        )
        ckpt, log = stem + ".npz", stem + ".jsonl"
        if os.path.exists(ckpt):
            state, done = load(ckpt, state)
            print(f"resumed at {done} iterations from {ckpt}", flush=True)
    t0, changes, forced, last_save = time.perf_counter(), 0, 0, done
    prev_nodes, prev_done = float(pruning.nodes_touched(state)), done
    H = game.meta.num_histories
    for mark in (int(x) for x in args.iterations.split(",")):
        if mark <= done:
            continue
        while done < mark:
            state, (changed, off) = f(state)
            changes += int(np.asarray(changed).sum())
            forced += int(np.asarray(off).sum())
            done += chunk
            if ckpt and done - last_save >= args.save_every:
                _save(ckpt, jax.block_until_ready(state), done)
                last_save = done
        state = jax.block_until_ready(state)
        dead = pruning.dead_infosets(game, state.pruned)
        live_z = int(pruning.live_payoff_entries(game, state.pruned).sum())
        nodes = float(pruning.nodes_touched(state))
        row = {
            "game": args.game,
            "base": args.base,
            "k": k,
            "C": args.threshold,
            "iterations": done,
            "live_infosets": round(1 - float(dead.mean()), 4),
            "live_payoff_entries": round(live_z / game.meta.num_sf_terminals, 4),
            "space": round(float(pruning.space_fraction(game, state)), 4),
            "pruned_entries": int(state.pruned.sum()),
            "nodes_last_iteration": int(state.nodes_last),
            "nodes_last_over_2H": round(int(state.nodes_last) / (2 * H), 4),
            "nodes_cumulative_over_unpruned": round(nodes / (2 * H * done), 4),
            "nodes_per_iteration_since_last_over_2H": round(
                (nodes - prev_nodes) / (2 * H * (done - prev_done)), 4
            ),
            "iterations_changing_pruned_set": changes,
            "off_schedule_changes": forced,
            "check_rule": args.check_rule,
            "exploitability": float(
                jaxcfr.exploitability(game, jaxcfr.average_policy(game, state))
            ),
            "seconds": round(time.perf_counter() - t0, 1),
        }
        changes, forced, prev_nodes, prev_done = 0, 0, nodes, done
        print(json.dumps(row), flush=True)
        if ckpt:
            _save(ckpt, state, done)
            last_save = done
            with open(log, "a") as fh:
                fh.write(json.dumps(row) + "\n")
    return 0


if __name__ == "__main__":
    main()
