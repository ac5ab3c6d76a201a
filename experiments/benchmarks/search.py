"""Search throughput: OOS and ISMCTS iterations/s, 1 and many matches at once, beside OpenSpiel.

``python -m experiments.benchmarks search [--batches 1,512] [--games ld,iigs6,leduc]
[--openspiel build/openspiel_ref] [--view root] [--bots oos,uct,rm]``

For each game and bot, one jitted call of ``jaxcfr.sharded_vmap(bot.search)`` over B
independent searchers (split over the host devices, ``--host-devices N``: default one
per core, each device its own share of the searchers; the count is printed), each
from the root view, fresh tables, its own key (``--view deep``: from
the view at the first history of the largest target set, as
``search_step --view deep``) runs N iterations;
the first call (compile + N) is reported apart from the steady state (the median of
``--repeats`` further calls, default 3, each on a fresh batch: every call does the same
work; ``_search_rate.search_rate``).
iterations/s counts trajectories (one OOS iteration = one trajectory for one update
player; one ISMCTS iteration = one simulation) summed over the B searchers, per wall
second and per CPU second of the process (all threads: on a shared machine the
comparable figure). The
OpenSpiel C++ ISMCTS (``ismcts_speed``) and OOS (``oos_speed``, warm) of the
reference harness (``../shared/reference``) run in the same process invocation,
before ours, and the ratio is ours / OpenSpiel ISMCTS. OpenSpiel's OOS counts one
iteration as two trajectories (one per player); we report its trajectories/s.
"""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import games_tensor as gt
import jaxcfr
from experiments import host_devices
from experiments.benchmarks._cli import Parser
from experiments.benchmarks._search_rate import search_rate
from experiments.benchmarks.search_step import deep_view

GAMES = {
    "ld": (
        "liars_dice",
        {},
        "liars_dice(numdice=1)",
        "pst",
    ),
    "iigs6": (
        "ii_goofspiel",
        {"num_cards": 6},
        "goofspiel(imp_info=True,num_cards=6,points_order=ascending,returns_type=win_loss)",
        "ist",
    ),
    "leduc": ("leduc_poker", {}, "leduc_poker", "pst"),
}


def _openspiel(binary: str, mode: str, game: str, n: int) -> float | None:
    """trajectories/s of OpenSpiel's C++ ISMCTS or OOS (None if it fails)."""
    if not binary or not Path(binary).exists():
        return None
    key = "sims" if mode == "ismcts_speed" else "iters"
    cmd = [binary, mode, f"game={game}", f"{key}={n}", "reps=3"]
    if mode == "oos_speed":
        cmd += ["delta=0.9", "epsilon=0.4"]
    out = subprocess.run(cmd, capture_output=True, text=True, timeout=600)
    for line in out.stdout.splitlines():
        rec = json.loads(line)
        if rec.get("status") == "error":
            return None
        if rec.get("record") == "summary":
            if mode == "ismcts_speed":
                return float(rec["median_sims_per_sec"])
            return 2.0 * float(rec.get("warm_iters_per_sec", rec.get("median_warm_iters_per_sec")))
    return None


def main(argv=None) -> int:
    ap = Parser(description=__doc__.splitlines()[0])
    ap.add_argument("--batches", default="1,512")
    ap.add_argument("--games", default="ld,iigs6,leduc")
    ap.add_argument("--iterations", type=int, default=2000, help="per searcher at B = 1")
    ap.add_argument("--batched-iterations", type=int, default=500, help="per searcher at B > 1")
    ap.add_argument("--openspiel", default="build/openspiel_ref")
    ap.add_argument("--view", default="root", choices=("root", "deep"))
    ap.add_argument("--bots", default="oos,uct,rm")
    ap.add_argument("--repeats", type=int, default=3, help="steady calls timed per cell (median)")
    args = ap.parse_args(argv)
    unknown = [g for g in args.games.split(",") if g not in GAMES]
    if unknown:
        ap.error(f"--games: unknown {', '.join(unknown)}; choose from {', '.join(GAMES)}")
    if args.repeats < 1:
        ap.error(f"--repeats must be at least 1, got {args.repeats}")
    print(f"searchers split over {host_devices.describe()}", flush=True)
    rows = []
    for name in args.games.split(","):
        gname, params, os_name, targeting = GAMES[name]
        game = gt.load(gname, **params)
        ref_ismcts = _openspiel(args.openspiel, "ismcts_speed", os_name, 20000)
        ref_oos = _openspiel(args.openspiel, "oos_speed", os_name, 20000)
        makers = {
            "oos": lambda t=targeting: jaxcfr.oos(t),
            "uct": lambda: jaxcfr.ismcts("uct"),
            "rm": lambda: jaxcfr.ismcts("rm"),
        }
        for which in args.bots.split(","):
            bot = makers[which]()
            bot.init(game)  # host tables
            kind = "pst" if which == "oos" and targeting == "pst" else "ist"
            view = jaxcfr.root_view() if args.view == "root" else deep_view(game, kind)
            for batch in (int(b) for b in args.batches.split(",")):
                n = args.iterations if batch == 1 else args.batched_iterations
                comp, ips, nbytes, cps = search_rate(game, bot, batch, n, view, args.repeats)
                ratio = ips / ref_ismcts if ref_ismcts else float("nan")
                rows.append(
                    (name, bot.name, batch, comp, ips, cps, nbytes, ref_ismcts, ref_oos, ratio)
                )
                print(
                    f"{name:6s} {bot.name:28s} B={batch:4d} view={args.view} "
                    f"compile {comp:6.1f} s  "
                    f"{ips:12,.0f} it/s {cps:12,.0f} it/CPU-s  {nbytes / 2**20:7.2f} MiB/searcher  "
                    f"OpenSpiel ISMCTS {ref_ismcts or float('nan'):10,.0f}  "
                    f"OOS {ref_oos or float('nan'):10,.0f} traj/s  ratio {ratio:6.2f}x",
                    flush=True,
                )
    print()
    print(
        "| game | bot | B | compile s | it/s | it/CPU-s | MiB/searcher "
        "| OpenSpiel C++ ISMCTS sims/s "
        "| OpenSpiel C++ OOS traj/s | ours / OS ISMCTS |"
    )
    print("|---|---|---|---|---|---|---|---|---|---|")
    for name, bot, batch, comp, ips, cps, nbytes, ri, ro, ratio in rows:
        ro_s = f"{ro:,.0f}" if ro else "fails"
        ri_s = f"{ri:,.0f}" if ri else "-"
        print(
            f"| {name} | {bot} | {batch} | {comp:.1f} | {ips:,.0f} | {cps:,.0f} | "
            f"{nbytes / 2**20:.2f} | "
            f"{ri_s} | {ro_s} | {ratio:.2f}x |"
        )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
