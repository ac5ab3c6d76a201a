"""``python -m experiments reproduce``: list, run one or all reproduction targets."""

from __future__ import annotations

import argparse
import datetime
import platform
import shlex
import sys
import time
from pathlib import Path

from experiments.reproduce import Context, Target, targets


def _header(target: Target, ctx: Context, argv: list[str], seconds: float) -> str:
    import jax

    mode = "quick" if ctx.quick else "full"
    command = "python -m experiments reproduce " + shlex.join(argv)
    lines = [
        f"# {target.paper}: {target.what}",
        "",
        f"- target: `{target.name}` ({mode} mode), key {ctx.key}",
        f"- command: `{command}`",
        f"- run time: {seconds:.1f} s on {platform.processor() or platform.machine()}, "
        f"JAX {jax.__version__} ({jax.default_backend()}, {jax.device_count()} device(s)), "
        f"{datetime.datetime.now().isoformat(timespec='seconds')}",
        "",
    ]
    return "\n".join(lines)


def run_target(target: Target, ctx: Context, argv: list[str]) -> Path:
    """Run one target into ``ctx.out`` and write its ``report.md``; return the report's path."""
    ctx.out.mkdir(parents=True, exist_ok=True)
    start = time.perf_counter()
    body = target.run(ctx)
    report = ctx.out / "report.md"
    tmp = report.with_suffix(".md.tmp")
    tmp.write_text(_header(target, ctx, argv, time.perf_counter() - start) + body.rstrip() + "\n")
    tmp.replace(report)
    return report


def main(argv=None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    parser = argparse.ArgumentParser(
        prog="python -m experiments reproduce",
        description="Regenerate a figure or table of a seed paper: PNG plots and report.md.",
    )
    parser.add_argument("targets", nargs="*", help="target names, or 'all' (see --list)")
    parser.add_argument("--list", action="store_true", help="list the targets and exit")
    parser.add_argument(
        "--quick",
        action="store_true",
        help="fewer seeds, matches and iterations: minutes per target (default: the "
        "paper's sizes, hours to days; docs/reproduction.md gives each target's times)",
    )
    parser.add_argument(
        "--out",
        default="results/reproduce",
        help="parent folder of the outputs, OUT/<target>/report.md; the oos-* (except "
        "oos-fig3-aggregate), smooth-uct-* and imperfect-recall-* targets keep finished "
        "cells / curves there and a rerun resumes them (rbp-* and oos-fig3-aggregate start "
        "over) (default: %(default)s)",
    )
    parser.add_argument(
        "--key", type=int, default=0, help="base PRNG seed, 0 <= key < 2**32 (default: %(default)s)"
    )
    args = parser.parse_args(argv)
    found = targets()
    if args.list or not args.targets:
        width = max((len(n) for n in found), default=0)
        for name, t in found.items():
            print(f"{name:<{width}}  {t.paper}: {t.what}")
        return 0
    if not 0 <= args.key < 2**32:
        parser.error(f"--key must be in [0, 2**32), got {args.key}")
    names = list(found) if args.targets == ["all"] else args.targets
    unknown = [n for n in names if n not in found]
    if unknown:
        parser.error(f"unknown target(s) {', '.join(unknown)}; valid: {', '.join(found)}, all")
    out = Path(args.out)
    if out.exists() and not out.is_dir():
        parser.error(f"--out {out} exists and is not a folder")
    for i, name in enumerate(names):
        ctx = Context(out=out / name, quick=args.quick, key=args.key)
        mode = "quick" if args.quick else "full"
        # a target may run for minutes (quick) to hours (full) before its report: say so
        print(
            f"[{i + 1}/{len(names)}] {name} ({mode} mode, key {args.key}) -> {ctx.out}: started "
            f"{time.strftime('%H:%M:%S')}; docs/reproduction.md gives its usual time",
            flush=True,
        )
        start = time.perf_counter()
        report = run_target(found[name], ctx, argv)
        print(f"{name}: {report} ({time.perf_counter() - start:.0f} s)", flush=True)
    return 0
