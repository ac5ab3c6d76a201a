"""Benchmark Total RBP against unpruned CFR / CFR+ on Leduc-5: it/s, nodes, space, peak RSS.

``python -m experiments.benchmarks pruning [--iterations 1000,10000] [--check-every 10]
[--from-checkpoint DIR]``

Each configuration runs in its own child process (one at a time), so its peak resident
memory (``ru_maxrss``) is its own. At each checkpoint the child reports: iterations per
second over the last stretch (``lax.scan`` chunks of ``--chunk`` iterations, node
counting off, evaluation excluded), nodes touched by one more iteration run with
counting on from a copy of the state (unpruned: 2 H), the counted space fraction, the
dense state's bytes, and the exploitability of the average. The unpruned reference is
the plain ``jaxcfr.cfr()`` / ``cfr_plus()`` solver. Ratios are against the unpruned
solver measured in the same invocation; on a shared machine compare ratios.

Device memory (``--device-bytes``, on by default): ``resident`` = the bytes of every live
JAX array (``jax.live_arrays()``) right after a timed chunk (unpruned / dense: the game
and the state; ``+live``: the live sub-game and whatever else is alive, the master state
and the full game being host numpy); and per jitted call, XLA's own account
(``compiled.memory_analysis()``): arguments (the arrays it reads: unused game fields are
dropped) + outputs - aliased + temporaries, for one iteration of the unpruned / dense
solver, and for ``+live`` for one stretch (k - 1 iterations on the sub-game) and for one
check (``solver.update`` on the full game and the master state, transferred for it).

``--from-checkpoint DIR`` starts every pruned configuration from the settled state a
``pruning_live --checkpoint-dir DIR`` run saved (same game, base, k and C), and counts
``--iterations`` from there (the unpruned reference, whose cost per iteration does not
depend on its state, starts from zero). ``+live`` runs ``jaxcfr.pruning.run_live``
(the live sub-game between checks; it reports layouts built per check).
"""

from __future__ import annotations

import argparse
import gc
import json
import resource
import subprocess
import sys
import time

from experiments.benchmarks._cli import Parser

CONFIGS = {
    "cfr": ("cfr", None),
    "cfr+total": ("cfr", "total"),
    "cfr_plus": ("cfr_plus", None),
    "cfr_plus+total": ("cfr_plus", "total"),
    "cfr+total+compact": ("cfr", "total"),
    "cfr_plus+total+compact": ("cfr_plus", "total"),
    "cfr+total+live": ("cfr", "total"),
    "cfr_plus+total+live": ("cfr_plus", "total"),
}


def _parse_game(spec: str):
    """``NAME[:key=value,...]`` -> (name, params), values int / bool / str."""
    name, _, rest = spec.partition(":")
    params = {}
    for item in filter(None, rest.split(",")):
        key, _, value = item.partition("=")
        low = value.lower()
        params[key] = (
            low == "true" if low in ("true", "false") else int(value) if value.isdigit() else value
        )
    return name, params


def _xla_bytes(fn, *args) -> dict:
    """XLA's memory account of the jitted ``fn`` on ``args`` (bytes; {} if the backend
    gives none): arguments, outputs, aliased, temporaries and their sum ``peak``."""
    m = fn.lower(*args).compile().memory_analysis()
    if m is None:
        return {}
    out = {
        "args": int(m.argument_size_in_bytes),
        "out": int(m.output_size_in_bytes),
        "alias": int(m.alias_size_in_bytes),
        "temp": int(m.temp_size_in_bytes),
    }
    out["peak"] = out["args"] + out["out"] - out["alias"] + out["temp"]
    return out


def _resident() -> int:
    """Bytes of every live JAX array of the process (after a garbage collection)."""
    import jax

    gc.collect()
    return sum(x.nbytes for x in jax.live_arrays())


def child(
    name: str,
    iterations: list[int],
    chunk: int,
    check_every: int,
    threshold: float,
    game_name: str,
    checkpoint: str | None = None,
    check_rule: str = "worst_case",
) -> dict:
    import jax
    import numpy as np

    import games_tensor as gt
    import jaxcfr
    from jaxcfr import pruning

    base, mode = CONFIGS[name]
    game_id, game_params = _parse_game(game_name)
    game = gt.load(game_id, **game_params)
    factory = getattr(jaxcfr, base)
    counter = None
    if mode is None:
        solver = factory()
    else:
        opts = dict(threshold=threshold, check_every=check_every, check_rule=check_rule)
        solver = pruning.regret_pruning(factory(), mode, count_nodes=False, **opts)
        counter = jax.jit(pruning.regret_pruning(factory(), mode, **opts).update)
    fn = jax.jit(
        lambda g, s: jax.lax.scan(lambda c, _: (solver.update(g, c), None), s, None, length=chunk)[
            0
        ]
    )
    compact = name.endswith("+compact")
    if compact:  # k - 1 iterations on the re-compacted game, the check on the full one
        if check_rule != "worst_case":  # a forced check needs the full game: run_live
            raise ValueError(
                f"+compact runs only --check-rule worst_case (a check forced by (9) between "
                f"scheduled ones would run on the compacted game); got {check_rule!r}: "
                "use the +live configurations"
            )
        if chunk % check_every:
            raise ValueError("--chunk must be a multiple of --check-every with +compact")
        one = jax.jit(solver.update)
        stretch = jax.jit(
            lambda g, s: jax.lax.scan(
                lambda c, _: (solver.update(g, c), None), s, None, length=check_every - 1
            )[0]
        )
        cache = {"key": None, "game": None, "sizes": []}

        def fn(g, s):  # noqa: F811  (one chunk of the compacted schedule)
            for _ in range(chunk // check_every):
                key = np.asarray(s.pruned).tobytes()
                if key != cache["key"]:
                    cache["key"], cache["game"] = key, pruning.compact_game(g, s.pruned)
                    cache["sizes"].append(cache["game"].meta.num_sf_terminals)
                before = np.asarray(s.pruned)
                s = stretch(cache["game"], s)
                if not np.array_equal(before, np.asarray(s.pruned)):
                    cache.setdefault("unexpected", 0)
                    cache["unexpected"] = cache.get("unexpected", 0) + 1
                s = one(g, s)
            return s

    live = name.endswith("+live")
    if live:  # k - 1 iterations on the live sub-game, the check on the full game
        from jaxcfr.pruning import _subgame

        if chunk % check_every:
            raise ValueError("--chunk must be a multiple of --check-every with +live")
        # the full game stays on the host (numpy): transferred for each check only
        game = jax.tree.map(np.array, game)  # copies: no device buffer kept alive
        gc.collect()
        stats: dict = {}

        def fn(g, s):  # noqa: F811  (one chunk of the live sub-game schedule)
            return _subgame.run_live(solver, g, int(s.iteration) + chunk, s, stats=stats)

    state = solver.init(game)
    offset = 0
    if checkpoint and mode is not None:
        from experiments.benchmarks.pruning_live import checkpoint_stem, load

        stem = checkpoint_stem(checkpoint, game_name, base, check_every, threshold, check_rule)
        path = stem + ".npz"
        state, offset = load(path, state)
    iterations = [offset + it for it in iterations]
    t0 = time.perf_counter()
    state = jax.block_until_ready(fn(game, state))
    compile_s = time.perf_counter() - t0
    out = {
        "name": name,
        "compile_s": compile_s,
        "num_infosets": game.num_infosets,
        "num_sf_terminals": game.meta.num_sf_terminals,
        "checkpoints": [],
        "start": offset,
    }
    done = offset + chunk
    last_t, last_it = time.perf_counter(), done
    for target in iterations:
        while done < target:
            state = jax.block_until_ready(fn(game, state))
            done += chunk
        now = time.perf_counter()
        resident = _resident()
        its = (done - last_it) / (now - last_t) if done > last_it else float("nan")
        expl = float(jaxcfr.exploitability(game, jaxcfr.average_policy(game, state)))
        state_bytes = sum(np.asarray(x).nbytes for x in jax.tree.leaves(state))
        if counter is None:
            space, nodes = 1.0, 2 * game.meta.num_histories
        else:  # one counting iteration from a copy of the state (the run is not touched)
            space = float(pruning.space_fraction(game, state))
            nodes = int(counter(game, state).nodes_last)
        out["checkpoints"].append(
            {
                "iterations": done,
                "its_per_s": its,
                "exploitability": expl,
                "space": space,
                "nodes_last": nodes,
                "state_bytes": state_bytes,
                "peak_rss_mb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024,
                "resident_bytes": resident,
            }
        )
        if compact:
            out["checkpoints"][-1]["live_entries"] = cache["game"].meta.num_sf_terminals
            out["checkpoints"][-1]["changed_between_checks"] = cache.get("unexpected", 0)
        if live:
            out["checkpoints"][-1]["checks"] = stats["checks"]
            out["checkpoints"][-1]["forced"] = stats["forced"]
            sub = stats["current"]
            out["checkpoints"][-1]["subgame_bytes"] = sum(
                np.asarray(x).nbytes for x in jax.tree.leaves((sub.game, sub.extra))
            )
            out["checkpoints"][-1]["live_entries"] = stats["live_entries"]
            out["checkpoints"][-1]["rows"] = stats["rows"]
            out["checkpoints"][-1]["layouts"] = stats["layouts"]
            out["checkpoints"][-1]["shapes"] = len(stats["shapes"])
        print(json.dumps(out["checkpoints"][-1]), file=sys.stderr, flush=True)
        last_t, last_it = time.perf_counter(), done
    # XLA's memory account of one call of each jitted piece, at the final state
    if live:
        from jaxcfr._solver import regret_tolerance

        cur = stats["current"]
        tol = regret_tolerance(game, game.sf_payoff.dtype)
        stretch = _subgame._stretch_fn(solver, tol)
        blocks = _subgame._device(_subgame.host_blocks(game, state))
        c, _ = _subgame._gather(blocks, cur)  # run_live's compact state
        out["xla"] = {
            "stretch": _xla_bytes(stretch, cur.game, cur.extra, c, np.int32(check_every - 1)),
            "check": _xla_bytes(jax.jit(solver.update.step_blocks), game, blocks),
        }
    else:
        out["xla"] = {"step": _xla_bytes(jax.jit(solver.update), game, state)}
    out["game_bytes"] = sum(np.asarray(x).nbytes for x in jax.tree.leaves(game))
    return out


def main(argv=None):
    ap = Parser(description=__doc__.splitlines()[0])
    ap.add_argument(
        "--iterations",
        default="1000,10000",
        help="checkpoints, comma-separated (the issue asks 1e3, 1e4, 1e5)",
    )
    ap.add_argument("--chunk", type=int, default=100)
    ap.add_argument("--check-every", type=int, default=10)
    ap.add_argument("--threshold", type=float, default=0.1)
    ap.add_argument("--game", default="leduc5", help="NAME[:key=value,...]")
    ap.add_argument("--configs", default=",".join(CONFIGS))
    ap.add_argument("--from-checkpoint", default=None, help="pruning_live checkpoint dir")
    ap.add_argument(
        "--check-rule",
        default="worst_case",
        choices=("worst_case", "paper", "eager"),
        help="Total RBP's check rule (jaxcfr.pruning.regret_pruning)",
    )
    ap.add_argument("--child", default=None, help=argparse.SUPPRESS)
    args = ap.parse_args(argv)
    iterations = [int(x) for x in args.iterations.split(",")]
    if args.child:
        res = child(
            args.child,
            iterations,
            args.chunk,
            args.check_every,
            args.threshold,
            args.game,
            args.from_checkpoint,
            args.check_rule,
        )
        print(json.dumps(res))
        return 0
    results = {}
    names = args.configs.split(",")
    if args.check_rule != "worst_case":  # +compact cannot run a forced check (see child)
        bad = [n for n in names if n.endswith("+compact")]
        if bad and args.configs != ap.get_default("configs"):
            raise SystemExit(f"--check-rule {args.check_rule}: {bad} run only worst_case")
        names = [n for n in names if not n.endswith("+compact")]
    for name in names:
        cmd = [
            sys.executable,
            "-m",
            "experiments.benchmarks",
            "pruning",
            "--child",
            name,
            "--iterations",
            args.iterations,
            "--chunk",
            str(args.chunk),
            "--check-every",
            str(args.check_every),
            "--threshold",
            str(args.threshold),
            "--game",
            args.game,
            "--check-rule",
            args.check_rule,
        ]
        if args.from_checkpoint:
            cmd += ["--from-checkpoint", args.from_checkpoint]
        print(f"running {name} ...", flush=True)
        proc = subprocess.run(cmd, capture_output=True, text=True, check=True)
        results[name] = json.loads(proc.stdout.strip().splitlines()[-1])
    print(
        f"\n{args.game}: Total RBP (C={args.threshold}, check_every={args.check_every}, "
        f"check_rule={args.check_rule}) "
        "vs unpruned, dense kernel; ratios pruned / unpruned"
    )
    print(
        "| config | iterations | it/s | it/s ratio | exploitability | space | "
        "nodes/iter | state MB | peak RSS MB | RSS ratio |"
    )
    print("|---|---|---|---|---|---|---|---|---|---|")
    for name, res in results.items():
        ref = results.get(CONFIGS[name][0])
        for c in res["checkpoints"]:
            if "layouts" in c:
                print(
                    f"  {name} at {c['iterations']}: live sub-game {c['rows']} infoset rows "
                    f"(padded) of {res['num_infosets']}, {c['live_entries']} live payoff "
                    f"entries of {res['num_sf_terminals']}; {c['layouts']} layouts built in "
                    f"{c['checks']} stretches, {c['forced']} forced checks, "
                    f"{c['shapes']} distinct shapes (compiles); "
                    f"sub-game arrays {c['subgame_bytes'] / 2**20:.1f} MB"
                )
            elif "live_entries" in c:
                print(
                    f"  {name} at {c['iterations']}: compacted payoff list "
                    f"{c['live_entries']} entries (padded), pruned set changed between "
                    f"checks {c['changed_between_checks']} times"
                )
        for i, c in enumerate(res["checkpoints"]):
            r = ref["checkpoints"][i] if ref else c
            print(
                f"| {name} | {c['iterations']} | {c['its_per_s']:.0f} | "
                f"{c['its_per_s'] / r['its_per_s']:.2f} | {c['exploitability']:.4g} | "
                f"{c['space']:.3f} | {c['nodes_last']} | {c['state_bytes'] / 2**20:.1f} | "
                f"{c['peak_rss_mb']:.0f} | {c['peak_rss_mb'] / r['peak_rss_mb']:.2f} |"
            )
    mb = lambda x: f"{x / 2**20:.2f}" if x is not None else "-"  # noqa: E731
    print(
        "\nDevice bytes (MB = 2^20 B): resident = live JAX arrays after the last chunk; "
        "per call = XLA's arguments + outputs - aliased + temporaries "
        "(step: one iteration; stretch: k - 1 sub-game iterations; check: one full-game "
        "update)"
    )
    print(
        "| config | resident MB | resident ratio | call | args MB | temp MB | peak MB | "
        "peak ratio |"
    )
    print("|---|---|---|---|---|---|---|---|")
    for name, res in results.items():
        ref = results.get(CONFIGS[name][0], res)
        r_res = ref["checkpoints"][-1]["resident_bytes"]
        r_peak = ref["xla"].get("step", {}).get("peak")
        c = res["checkpoints"][-1]
        for call, x in res["xla"].items():
            ratio = f"{x['peak'] / r_peak:.2f}" if x and r_peak else "-"
            print(
                f"| {name} | {mb(c['resident_bytes'])} | {c['resident_bytes'] / r_res:.2f} | "
                f"{call} | {mb(x.get('args'))} | {mb(x.get('temp'))} | {mb(x.get('peak'))} | "
                f"{ratio} |"
            )
    return 0


if __name__ == "__main__":
    main()
