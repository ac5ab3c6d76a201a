"""One search bot's cost per simulation and compile cost, in process CPU time.

``python -m experiments.benchmarks search_step [--games ld,leduc] [--bots uct,rm,pst]
[--iterations 2000] [--batch 1] [--view root]``

For each game and bot: one ``jax.jit(bot.search)`` from the root on a single searcher
(``--batch B``: ``jaxcfr.sharded_vmap`` over B searchers from the root, split over the
host devices as the ``search`` benchmark; per simulation then divides by B x
iterations). ``--view deep``: from the
acting player's view at the first history of the game's largest target set (OOS-IST
and ISMCTS: the largest infoset; OOS-PST: the largest public state), the costliest
target for the per-call work.
Reports the compile CPU seconds, the CPU milliseconds of a call with 0 iterations (the
per-call work: node tables, target paths, w_T), the CPU microseconds per simulation
(``(t(N) - t(0)) / N``, min of 3 calls each) and the size of the compiled loop body
(fusion kernels and HLO lines inside them, the quantity the 2026-11 fix cut) and the
``copy`` ops in it whose result has the tables' R rows (a whole-table copy per
iteration: must be 0, see ``jaxcfr.search._table.read_rows``). CPU time
(``time.process_time``), not wall time, so a machine loaded by other jobs distorts it
less; run it at two commits to compare them.
"""

from __future__ import annotations

import re
import time

import jax
import jax.numpy as jnp
import numpy as np

import games_tensor as gt
import jaxcfr
from experiments import host_devices
from experiments.benchmarks._cli import Parser
from jaxcfr._shard import batch_sharding
from jaxcfr.search import _table as tbl
from jaxcfr.search import compiler_options as search_compiler_options

GAMES = {
    "ld": ("liars_dice", {}),
    "leduc": ("leduc_poker", {}),
    "iigs6": ("ii_goofspiel", {"num_cards": 6}),
}
BOTS = {
    "uct": lambda: jaxcfr.ismcts("uct"),
    "rm": lambda: jaxcfr.ismcts("rm"),
    "pst": lambda: jaxcfr.oos("pst"),
    "ist": lambda: jaxcfr.oos("ist"),
}


def loop_body_stats(hlo: str, rows: int) -> tuple[int, int, int]:
    """(fusion kernels, HLO lines inside them, copies of a ``rows``-row array) of the
    largest while-loop body."""
    comps = {
        m.group(1): m.group(2)
        for m in re.finditer(r"^(?:ENTRY )?(%[\w.\-]+) \(.*?\{\n(.*?)\n\}", hlo, re.S | re.M)
    }
    bodies = set(re.findall(r"body=(%[\w.\-]+)", hlo))
    body = max((comps.get(b, "") for b in bodies), key=len, default="")
    called = re.findall(r"calls=(%[\w.\-]+)", body)
    copies = len(re.findall(rf"= \w+\[(?:\d+,)?{rows}[,\]][^=]*? copy\(", body))
    return len(called), sum(comps.get(c, "").count("\n") + 1 for c in called), copies


def deep_view(game, bot: str):
    """The view at the first history of the game's largest target set (see above)."""
    sets = tbl.public_sets(game) if bot == "pst" else tbl.infoset_sets(game)
    largest = int(np.argmax(np.diff(sets.start)))
    return jaxcfr.view_of(game, int(sets.nodes[sets.start[largest]]))


def main(argv=None) -> int:
    ap = Parser(description=__doc__.splitlines()[0])
    ap.add_argument("--games", default="ld,leduc")
    ap.add_argument("--bots", default="uct,rm,pst")
    ap.add_argument("--iterations", type=int, default=2000)
    ap.add_argument("--batch", type=int, default=1)
    ap.add_argument("--view", default="root", choices=("root", "deep"))
    args = ap.parse_args(argv)
    print(
        f"batch {args.batch}, view {args.view}, {host_devices.describe()}\n"
        "| game | bot | compile CPU s | per call CPU ms | per simulation CPU us | "
        "body kernels | body HLO lines | body table copies |"
    )
    print("|---|---|---|---|---|---|---|---|")
    for g in args.games.split(","):
        name, params = GAMES[g]
        game = gt.load(name, **params)
        for b in args.bots.split(","):
            bot = BOTS[b]()
            if b == "pst" and g == "iigs6":
                continue
            state = bot.init(game)
            view = jaxcfr.root_view() if args.view == "root" else deep_view(game, b)
            B = args.batch
            if B == 1:
                run = jax.jit(bot.search, compiler_options=search_compiler_options(game))
                keys = [jax.random.key(r) for r in range(3)]
            else:
                state = jax.vmap(lambda _, b=bot, g=game: b.init(g))(jnp.arange(B))
                run = jax.jit(
                    jaxcfr.sharded_vmap(bot.search, (None, 0, None, 0, None)),
                    donate_argnums=1,
                    compiler_options=search_compiler_options(game),
                )
                keys = [jax.random.split(jax.random.key(r), B) for r in range(3)]
                where = batch_sharding(B)  # the batch on its devices before the calls
                if where is not None:
                    state, keys = jax.device_put((state, keys), where)
            t0 = time.process_time()
            compiled = run.lower(game, state, view, keys[0], jnp.int32(1)).compile()
            comp = time.process_time() - t0
            kernels, lines, copies = loop_body_stats(compiled.as_text(), game.num_infosets)
            cost = {}
            for n in (0, args.iterations):
                ts = []
                for r in range(3):
                    t0 = time.process_time()
                    state = jax.block_until_ready(
                        compiled(game, state, view, keys[r], jnp.int32(n))
                    )
                    ts.append(time.process_time() - t0)
                cost[n] = min(ts)
            per_sim = (cost[args.iterations] - cost[0]) / (args.iterations * B)
            print(
                f"| {g} | {bot.name} | {comp:.1f} | {cost[0] * 1e3:.1f} | {per_sim * 1e6:.1f} | "
                f"{kernels} | {lines:,} | {copies} |",
                flush=True,
            )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
