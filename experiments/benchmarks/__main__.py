"""``python -m experiments.benchmarks <name> [options]``: run one benchmark module."""

from __future__ import annotations

import importlib
import sys

from experiments.benchmarks import names, summary


def main(argv=None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    available = names()
    if not argv or argv[0] in ("-h", "--help", "--list"):
        print("usage: python -m experiments.benchmarks <name> [options]\n")
        for name in available:
            print(f"  {name:<16} {summary(name)}")
        return 0
    if argv[0] not in available:
        print(f"unknown benchmark {argv[0]!r}; valid: {', '.join(available)}", file=sys.stderr)
        return 2
    return importlib.import_module(f"experiments.benchmarks.{argv[0]}").main(argv[1:]) or 0


if __name__ == "__main__":
    sys.exit(main())
