"""The dense compiler's peak memory per history on DRP and LD, and what it projects for
DRP-3 (Lanctot et al. 2012, Appendix B's DRP-IR-3; docs/imperfect_recall.md).

``python -m experiments.benchmarks compile_bytes``. Each game compiles
(``games_tensor.load``) in a fresh subprocess (the children of ``compile``); its peak
resident memory above a process that only imports ``games_tensor`` and ``jax``, divided
by its number of histories, is the compiler's bytes per history. The projection for
DRP-3 (three betting rounds, a die per player per round: 17,789,227 histories by
``experiments.reproduce.imperfect_recall.drp_histories``) multiplies its history count
by the largest bytes per history measured on the DRP family, beside the compiler's own
estimate (``games_tensor._compile._BYTES_PER_HISTORY``) and the 4 GiB the issue allows.
Peak RSS does not depend on the machine's load.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys

from experiments.benchmarks.compile import _BASELINE_CHILD, _COMPILE_CHILD
from experiments.sizes import format_table

GAMES = (
    ("DRP", "die_roll_poker", {}),
    ("DRP-IR", "die_roll_poker", {"abstraction": "ir"}),
    ("LD(1,1) 4 faces", "liars_dice", {"faces": 4}),
    ("LD(1,1) 5 faces", "liars_dice", {"faces": 5}),
    ("LD(1,1)", "liars_dice", {}),
    ("LD(1,1) last 4 bids", "liars_dice", {"recall": 4}),
)


def _child(code: str, *args: str) -> dict:
    out = subprocess.run(
        [sys.executable, "-c", code, *args], check=True, capture_output=True, text=True
    )
    return json.loads(out.stdout.strip().splitlines()[-1])


def main(argv=None):
    from experiments.reproduce.imperfect_recall import MEMORY_LIMIT_GIB, drp_histories
    from games_tensor._compile import _BYTES_PER_HISTORY

    parser = argparse.ArgumentParser(prog="python -m experiments.benchmarks compile_bytes")
    parser.add_argument("--only", default="", help="';'-separated labels (default: all)")
    args = parser.parse_args(argv)
    only = {s.strip() for s in args.only.split(";") if s.strip()}
    base = _child(_BASELINE_CHILD)["peak_mib"]
    rows, drp_bytes = [], []
    for label, name, params in GAMES:
        if only and label not in only:
            continue
        r = _child(_COMPILE_CHILD, name, json.dumps(params))
        per = (r["peak_mib"] - base) * 2**20 / r["histories"]
        if name == "die_roll_poker":
            drp_bytes.append(per)
        rows.append(
            [
                label,
                f"{r['histories']:,}",
                f"{r['peak_mib']:.0f}",
                f"{r['peak_mib'] - base:.0f}",
                f"{per:.0f}",
                f"{r['seconds']:.1f}",
            ]
        )
        print(" | ".join(rows[-1]), flush=True)
    print()
    print(f"Peak RSS of a process that only imports games_tensor and jax: {base:.0f} MiB")
    print(
        format_table(
            ["game", "histories", "peak RSS MiB", "above import MiB", "bytes/history", "s"],
            rows,
        )
    )
    h3 = drp_histories(3)
    print(f"\nDRP-3: {h3:,} histories")
    for what, per in (
        ("measured on DRP (largest)", max(drp_bytes, default=float("nan"))),
        ("compiler's estimate", _BYTES_PER_HISTORY),
    ):
        gib = h3 * per / 2**30 + base / 1024
        print(
            f"  at {per:.0f} B/history ({what}): about {gib:.1f} GiB peak "
            f"(limit {MEMORY_LIMIT_GIB:g} GiB)"
        )


if __name__ == "__main__":
    sys.exit(main() or 0)
