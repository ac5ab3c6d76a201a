"""Peak memory of refusing absurd parameters, each in a fresh process under a memory limit.

``python -m experiments.benchmarks refusal_memory [--limit-gib 2] [--cases NAME,...]``

Issue 17: a size or memory estimate must come before any allocation, so an absurd
parameter is refused in milliseconds with little memory instead of being OOM-killed.
Each case runs in its own Python process with ``RLIMIT_AS`` (``ulimit -v``) set to
``--limit-gib`` GiB before anything is imported; the process prints the exception it got
and its peak resident set (``VmHWM`` of ``/proc/self/status``: the process image's own
peak, imports of NumPy and JAX included), and the wall seconds of the call alone.
Linux only. Wall times are noisy on a loaded machine; the peak RSS is the number.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

from experiments.benchmarks._cli import Parser

ROOT = Path(__file__).resolve().parents[2]

# name -> Python statements run after the imports; each must raise.
CASES = {
    "liars_dice faces=10**6": 'gt.load("liars_dice", faces=10**6)',
    "liars_dice faces=10**4": 'gt.load("liars_dice", faces=10**4)',
    "liars_dice dice0=10**9": 'gt.load("liars_dice", dice0=10**9)',
    "ii_goofspiel num_cards=10**6": 'gt.load("ii_goofspiel", num_cards=10**6)',
    "ii_goofspiel num_cards=10**9": 'gt.load("ii_goofspiel", num_cards=10**9)',
    "nonlocality left_leaf=1e39": 'gt.load("nonlocality", left_leaf=1e39)',
    "die_roll_poker skew=1e308": 'gt.load("die_roll_poker", skew=1e308)',
    "run cfr leduc num_seeds=150000": (
        'jaxcfr.run(jaxcfr.cfr(), gt.load("leduc_poker"), 20, 10, num_seeds=150000)'
    ),
    "run cfr leduc num_seeds=10**6": (
        'jaxcfr.run(jaxcfr.cfr(), gt.load("leduc_poker"), 20, 10, num_seeds=10**6)'
    ),
    "CLI --seeds 150000": "cli('--seeds', '150000')",
    "CLI --seeds 1000000": "cli('--seeds', '1000000')",
    "CLI --bootstrap 1000000000": "cli('--bootstrap', '1000000000')",
}

_CHILD = """
import json, resource, sys, tempfile, time
limit = int(sys.argv[2])
resource.setrlimit(resource.RLIMIT_AS, (limit, limit))
import games_tensor as gt
import jaxcfr

def cli(*extra):
    from experiments import convergence_cli
    out = tempfile.mkdtemp()
    argv = ["--game", "leduc_poker", "--algorithms", "cfr", "--iterations", "20",
            "--eval-every", "10", "--out", out + "/study", *extra]
    code = convergence_cli.main(argv)
    raise SystemExit(code)

t0 = time.perf_counter()
try:
    exec(sys.argv[1])
    got = "no error"
except SystemExit as exc:
    got = f"SystemExit({exc.code})"
except BaseException as exc:
    got = f"{type(exc).__name__}: {str(exc)[:160]}"
seconds = time.perf_counter() - t0
hwm = [ln for ln in open("/proc/self/status") if ln.startswith("VmHWM:")]
print(json.dumps({"got": got, "seconds": seconds, "peak_mb": int(hwm[0].split()[1]) / 1024}))
"""


def measure(statement: str, limit: int) -> dict:
    env = dict(os.environ, PYTHONPATH=str(ROOT), JAX_PLATFORMS="cpu")
    proc = subprocess.run(
        [sys.executable, "-c", _CHILD, statement, str(limit)],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=600,
    )
    lines = proc.stdout.strip().splitlines()
    if proc.returncode != 0 or not lines:
        return {"got": f"exit {proc.returncode}: {proc.stderr[-300:]}", "seconds": 0, "peak_mb": 0}
    return json.loads(lines[-1])


def main(argv=None) -> None:
    parser = Parser(description=__doc__.splitlines()[0])
    parser.add_argument("--limit-gib", type=float, default=2.0)
    parser.add_argument("--cases", default=",".join(CASES))
    args = parser.parse_args(argv)
    limit = int(args.limit_gib * 2**30)
    print(f"RLIMIT_AS = {args.limit_gib:g} GiB per process")
    print("case | peak RSS (MB) | call seconds | outcome")
    for name in args.cases.split(","):
        r = measure(CASES[name], limit)
        print(f"{name} | {r['peak_mb']:.0f} | {r['seconds']:.2f} | {r['got'][:110]}")
