"""Compile seconds and peak resident memory of every GAMES.md instance.

``python -m experiments.benchmarks compile``: each game compiles in a fresh subprocess, so
peaks do not mix.
"""

from __future__ import annotations

import json
import subprocess
import sys

from experiments.benchmarks._cli import Parser
from experiments.catalog import GAMES_MD, params_str
from experiments.sizes import format_table

_COMPILE_CHILD = """
import json, resource, sys, time
import games_tensor as gt
name, params = sys.argv[1], json.loads(sys.argv[2])
t0 = time.perf_counter()
game = gt.load(name, **params)
sec = time.perf_counter() - t0
peak_kib = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
print(json.dumps({"seconds": sec, "peak_mib": peak_kib / 1024, "histories": game.sizes["histories"],
                  "infosets": game.sizes["infosets"]}))
"""

_BASELINE_CHILD = """
import json, resource
import games_tensor, jax
print(json.dumps({"peak_mib": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024}))
"""


def main(argv=None):
    parser = Parser(prog="python -m experiments.benchmarks compile")
    parser.add_argument("--only", default="", help="';'-separated labels to run (default: all)")
    args = parser.parse_args(argv)
    only = {s.strip() for s in args.only.split(";") if s.strip()}
    base = json.loads(
        subprocess.run(
            [sys.executable, "-c", _BASELINE_CHILD], check=True, capture_output=True, text=True
        ).stdout
    )
    rows = []
    for label, name, params in GAMES_MD:
        if only and label not in only:
            continue
        out = subprocess.run(
            [sys.executable, "-c", _COMPILE_CHILD, name, json.dumps(params)],
            check=True,
            capture_output=True,
            text=True,
        )
        r = json.loads(out.stdout.strip().splitlines()[-1])
        rows.append(
            [
                label,
                params_str(params),
                r["infosets"],
                r["histories"],
                f"{r['seconds']:.2f}",
                f"{r['peak_mib']:.0f}",
                f"{r['peak_mib'] - base['peak_mib']:.0f}",
            ]
        )
        print(f"{label}: {r['seconds']:.2f} s, peak {r['peak_mib']:.0f} MiB", flush=True)
    print()
    print(
        f"Peak RSS of a process that only imports games_tensor and jax: {base['peak_mib']:.0f} MiB"
    )
    print(
        format_table(
            [
                "game",
                "parameters",
                "infosets",
                "histories",
                "compile s",
                "peak RSS MiB",
                "above import MiB",
            ],
            rows,
        )
    )


if __name__ == "__main__":
    sys.exit(main() or 0)
