"""The dense compiler's peak memory per history on DRP and LD, and what it projects for
DRP-3 (Lanctot et al. 2012, Appendix B's DRP-IR-3; docs/imperfect_recall.md).

``python -m experiments.benchmarks compile_bytes``. Each game compiles
(``games_tensor.load``) in a fresh subprocess; its peak resident memory during ``load``
above its resident memory right before it (Linux: the peak mark is reset through
``/proc/self/clear_refs`` after the imports), divided by its number of histories, is the
compiler's bytes per history. The projection for DRP-3 (three betting rounds, a die per
player per round: 17,789,227 histories by
``experiments.reproduce.imperfect_recall.drp_histories``) uses the marginal bytes per
history of a least-squares fit over LD(1,1) with 4, 5 and 6 faces (fixed + slope *
histories), and DRP's measured bytes per history (its fixed part included: an upper
bound), beside the compiler's own estimate (``games_tensor._compile._BYTES_PER_HISTORY``)
and the 4 GiB the issue allows. Peak RSS does not depend on the machine's load.
"""

from __future__ import annotations

import json
import subprocess
import sys

import numpy as np

from experiments.benchmarks._cli import Parser
from experiments.benchmarks.compile import _BASELINE_CHILD
from experiments.sizes import format_table

# Resident memory right before ``load`` (VmRSS) and the peak during it: the peak mark
# (VmHWM) is reset first (``/proc/self/clear_refs``), so the import's own transient peak
# does not hide a small game's compile.
_COMPILE_CHILD = """
import json, sys, time
import games_tensor as gt

def status(field):
    for line in open("/proc/self/status"):
        if line.startswith(field + ":"):
            return int(line.split()[1]) / 1024  # kB -> MiB

name, params = sys.argv[1], json.loads(sys.argv[2])
with open("/proc/self/clear_refs", "w") as f:
    f.write("5")
before = status("VmRSS")
t0 = time.perf_counter()
game = gt.load(name, **params)
sec = time.perf_counter() - t0
print(json.dumps({"seconds": sec, "before_mib": before, "peak_mib": status("VmHWM"),
                  "histories": game.sizes["histories"]}))
"""

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

    parser = Parser(prog="python -m experiments.benchmarks compile_bytes")
    parser.add_argument("--only", default="", help="';'-separated labels (default: all)")
    args = parser.parse_args(argv)
    only = {s.strip() for s in args.only.split(";") if s.strip()}
    base = _child(_BASELINE_CHILD)["peak_mib"]
    rows, drp_bytes, ld = [], [], []
    for label, name, params in GAMES:
        if only and label not in only:
            continue
        r = _child(_COMPILE_CHILD, name, json.dumps(params))
        per = (r["peak_mib"] - r["before_mib"]) * 2**20 / r["histories"]
        if name == "die_roll_poker":
            drp_bytes.append(per)
        elif "recall" not in params:  # the LD(1,1) family by faces: the marginal cost
            ld.append((r["histories"], (r["peak_mib"] - r["before_mib"]) * 2**20))
        rows.append(
            [
                label,
                f"{r['histories']:,}",
                f"{r['peak_mib']:.0f}",
                f"{r['peak_mib'] - r['before_mib']:.0f}",
                f"{per:.0f}",
                f"{r['seconds']:.1f}",
            ]
        )
        print(" | ".join(rows[-1]), flush=True)
    print()
    print(f"Peak RSS of a process that only imports games_tensor and jax: {base:.0f} MiB")
    print(
        format_table(
            ["game", "histories", "peak RSS MiB", "above before load MiB", "bytes/history", "s"],
            rows,
        )
    )
    h3 = drp_histories(3)
    print(f"\nDRP-3: {h3:,} histories")
    projections = [
        ("measured on DRP, fixed part included (largest)", max(drp_bytes, default=np.nan), 0.0),
        ("compiler's estimate", _BYTES_PER_HISTORY, 0.0),
    ]
    if len(ld) >= 2:  # least squares over LD(1,1) by faces: bytes = fixed + slope * histories
        slope, fixed = np.polyfit(*np.asarray(ld, np.float64).T, 1)
        projections.insert(0, (f"LD(1,1) family fit, {fixed / 2**20:.0f} MiB fixed", slope, fixed))
    for what, per, fixed in projections:
        gib = (fixed + h3 * per) / 2**30 + base / 1024
        print(
            f"  at {per:.0f} B/history ({what}): about {gib:.1f} GiB peak, the "
            f"{base:.0f} MiB of the imports included (limit {MEMORY_LIMIT_GIB:g} GiB)"
        )


if __name__ == "__main__":
    sys.exit(main() or 0)
