"""Total RBP's live stretch without / with the opponent-frozen rows, against unpruned (A/B).

``python -m experiments.benchmarks pruning_frozen CHECKPOINT.npz --base cfr
[--game leduc5] [--check-every 10] [--check-rule worst_case] [--iterations 100]
[--rounds 3]``

From a saved Total RBP state (a ``pruning_live --checkpoint-dir`` checkpoint, C =
``--threshold``), in one process, interleaved round after round, each timed in CPU time
(``time.process_time``, this process and its threads) over ``--iterations`` iterations:

* ``unpruned``: the plain ``jaxcfr.cfr()`` / ``cfr_plus()`` update in one jitted loop
  (its cost per iteration does not depend on its state; it starts from zero);
* ``dense``: the Total RBP update in one jitted loop from the checkpoint;
* ``live``: ``jaxcfr.pruning.run_live`` from the checkpoint (full game on the host),
  leaving the opponent-frozen rows out of the stretch (``leave_out_frozen=True``,
  session 27) and ``live_kept`` keeping them (``False``, sessions 23-26); ``live_dev``
  (not in the default list) is ``live`` with the full game kept on the device (no
  transfer of the game at each check; the game's arrays then stay resident).

Every round repeats the same iterations from the same state, after one untimed round
that compiles every shape. With ``--check-every 1`` every iteration is a check: there
is no stretch, only ``unpruned`` and ``dense`` run. Also printed: the rows of the
current layouts, the frozen rows left out, the stretch's device bytes (live sub-game
arrays + compact state), the exploitability of the average at the end (pruned: at the
checkpoint's iteration + ``--iterations``; unpruned CFR / CFR+ at the same iteration:
``--unpruned-exploitability`` if given, from a separate run) and, for ``live``, the
largest differences to ``dense`` after the same iterations (regrets; average sums
relative to the row's largest entry), and after one stretch (the iterations to the next
check): whether the regrets, V and bounds equal those of ``live_kept`` bit for bit,
the frozen rows' regrets the dense ones, and the sums' largest relative differences.
"""

from __future__ import annotations

import json
import os
import statistics
import time

from experiments.benchmarks._cli import Parser


def main(argv=None):
    import jax
    import numpy as np

    import games_tensor as gt
    import jaxcfr
    from experiments.benchmarks.pruning import _parse_game
    from experiments.benchmarks.pruning_live import load
    from jaxcfr import pruning
    from jaxcfr.pruning import _subgame

    ap = Parser(description=__doc__.splitlines()[0])
    ap.add_argument("checkpoint", help="pruning_live .npz state")
    ap.add_argument("--game", default="leduc5", help="NAME[:key=value,...]")
    ap.add_argument("--base", default="cfr", choices=("cfr", "cfr_plus"))
    ap.add_argument("--check-every", type=int, default=10)
    ap.add_argument("--check-rule", default="worst_case", choices=("worst_case", "paper", "eager"))
    ap.add_argument("--threshold", type=float, default=0.1)
    ap.add_argument("--iterations", type=int, default=100)
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--configs", default="unpruned,dense,live,live_kept")
    args = ap.parse_args(argv)
    name, params = _parse_game(args.game)
    game = gt.load(name, **params)
    host_game = jax.tree.map(np.array, game)
    k = args.check_every
    factory = getattr(jaxcfr, args.base)
    solver = pruning.regret_pruning(
        factory(),
        "total",
        threshold=args.threshold,
        check_every=k,
        check_rule=args.check_rule,
        count_nodes=False,
    )
    start, done = load(args.checkpoint, solver.init(game))
    start = jax.tree.map(np.array, start)
    n = args.iterations
    plain = factory()
    loop = lambda upd: jax.jit(  # noqa: E731
        lambda g, s: jax.lax.fori_loop(0, n, lambda i, c: upd(g, c), s)
    )
    plain_fn, dense_fn = loop(plain.update), loop(solver.update)
    configs = args.configs.split(",")
    if k == 1:  # no stretch: every iteration is a check
        configs = [c for c in configs if not c.startswith("live")]
    stats = {c: {} for c in configs}

    def run(cfg):
        if cfg == "unpruned":
            return jax.block_until_ready(plain_fn(game, plain.init(game)))
        if cfg == "dense":
            return jax.block_until_ready(dense_fn(game, jax.tree.map(jax.numpy.asarray, start)))
        st = stats[cfg]
        st.clear()
        return _subgame.run_live(
            solver,
            game if cfg == "live_dev" else host_game,
            done + n,
            jax.tree.map(np.array, start),
            stats=st,
            leave_out_frozen=cfg != "live_kept",
        )

    out = {c: run(c) for c in configs}  # compiles every shape of these iterations
    times = {c: [] for c in configs}
    loads = []
    for _ in range(args.rounds):
        loads.append(os.getloadavg()[0])
        for c in configs:
            t0 = time.process_time()
            out[c] = run(c)
            times[c].append((time.process_time() - t0) / n * 1e3)
    loads.append(os.getloadavg()[0])
    ref = statistics.median(times["unpruned"]) if "unpruned" in times else None
    print(
        f"\n{args.game}, {args.base}, Total RBP C={args.threshold} k={k} "
        f"rule={args.check_rule}, from {done} (+{n}); CPU ms per iteration, median (range) "
        f"of {args.rounds} rounds; load {min(loads):.1f}-{max(loads):.1f}"
    )
    print(
        "| config | ms/it | range | it/s ratio to unpruned | rows kept | frozen left out "
        "| stretch device MB | exploitability |"
    )
    print("|---|---|---|---|---|---|---|---|")
    for c in configs:
        med = statistics.median(times[c])
        ratio = f"{ref / med:.2f}" if ref else "-"
        st = stats.get(c, {})
        rows = st.get("rows", "-")
        frozen = st.get("frozen_rows", "-")
        mb = "-"
        if st.get("current") is not None:
            cur = st["current"]
            master = _subgame._device(_subgame.host_blocks(game, out[c]))
            carry, _ = _subgame._gather(master, cur)  # run_live's compact state
            nbytes = sum(np.asarray(x).nbytes for x in jax.tree.leaves((cur.game, cur.extra)))
            nbytes += sum(np.asarray(x).nbytes for x in jax.tree.leaves(carry))
            mb = f"{nbytes / 2**20:.2f}"
        state = out[c]
        expl = float(jaxcfr.exploitability(game, jaxcfr.average_policy(game, state)))
        print(
            f"| {c} | {med:.2f} | {min(times[c]):.2f}-{max(times[c]):.2f} | {ratio} | {rows} "
            f"| {frozen} | {mb} | {expl:.4g} |"
        )
    m = k - 1 - done % k  # the iterations to the next check
    if k > 1 and m > 0 and "live" in configs:  # one stretch (no check) from the checkpoint
        one = jax.jit(lambda g, s: jax.lax.fori_loop(0, m, lambda i, c: solver.update(g, c), s))
        d = one(game, jax.tree.map(jax.numpy.asarray, start))
        st: dict = {}
        a = _subgame.run_live(solver, host_game, done + m, jax.tree.map(np.array, start), stats=st)
        b = _subgame.run_live(
            solver, host_game, done + m, jax.tree.map(np.array, start), leave_out_frozen=False
        )
        fz = np.zeros(game.num_infosets, bool)
        nested = 0
        for t in st["current"].frozen:
            fz[t["rows"]] = True
            nested += int((t["par"] >= 0).sum())

        def rel(x, y):
            x, y = np.asarray(x, np.float64), np.asarray(y, np.float64)
            scale = np.maximum(np.abs(y).max(axis=1, keepdims=True), 1e-30)
            return float((np.abs(x - y) / scale).max())

        print(
            json.dumps(
                {
                    "one_stretch": m,
                    "frozen_rows": int(fz.sum()),
                    "nested_frozen_rows": nested,
                    "R_V_B_equal_to_kept": all(
                        np.array_equal(getattr(a, f), getattr(b, f))
                        for f in ("regrets", "values_sum", "bound")
                    ),
                    "frozen_R_equal_to_dense": bool(
                        np.array_equal(a.regrets[fz], np.asarray(d.regrets)[fz])
                    ),
                    "max_abs_R_diff_to_dense": float(
                        np.abs(a.regrets - np.asarray(d.regrets)).max()
                    ),
                    "max_rel_S_diff_to_dense": rel(a.strategy_sum, d.strategy_sum),
                    "max_rel_S_diff_to_dense_kept": rel(b.strategy_sum, d.strategy_sum),
                    "max_rel_X_diff_to_dense": rel(a.plan_sum, d.plan_sum),
                    "max_rel_X_diff_to_dense_kept": rel(b.plan_sum, d.plan_sum),
                }
            )
        )
    if "dense" in out:
        d = out["dense"]
        for c in configs:
            if not c.startswith("live"):
                continue
            s = out[c]
            dr = np.abs(np.asarray(s.regrets) - np.asarray(d.regrets)).max()
            scale = np.maximum(np.abs(np.asarray(d.strategy_sum)).max(axis=1, keepdims=True), 1e-30)
            ds = (np.abs(np.asarray(s.strategy_sum) - np.asarray(d.strategy_sum)) / scale).max()
            same = bool(np.array_equal(np.asarray(s.pruned), np.asarray(d.pruned)))
            print(
                json.dumps(
                    {
                        "config": c,
                        "max_abs_regret_diff_to_dense": float(dr),
                        "max_rel_avg_sum_diff_to_dense": float(ds),
                        "pruned_equal": same,
                        "layouts": stats[c].get("layouts"),
                        "checks": stats[c].get("checks"),
                        "forced": stats[c].get("forced"),
                    }
                )
            )
    return 0


if __name__ == "__main__":
    main()
