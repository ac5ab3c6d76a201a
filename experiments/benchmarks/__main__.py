"""``python -m experiments.benchmarks <name> [options]``: run one benchmark module."""

from __future__ import annotations

import importlib
import sys

from experiments import host_devices
from experiments.benchmarks import names, summary


def main(argv=None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    available = names()
    if not argv or argv[0] in ("-h", "--help", "--list"):
        print("usage: python -m experiments.benchmarks <name> [--host-devices N] [options]\n")
        for name in available:
            print(f"  {name:<16} {summary(name)}")
        print(
            f"\n--host-devices N: split the CPU into N XLA devices (XLA_FLAGS, set before jax "
            f"is imported); default: one per core for {', '.join(host_devices.SEARCH_BENCHMARKS)}"
            ", none for the others; 0 adds no flag; flags XLA_FLAGS already sets win"
        )
        return 0
    if argv[0] not in available:
        print(f"unknown benchmark {argv[0]!r}; valid: {', '.join(available)}", file=sys.stderr)
        return 2
    rest = host_devices.setup(argv[0], argv[1:])  # before the benchmark imports jax
    return importlib.import_module(f"experiments.benchmarks.{argv[0]}").main(rest) or 0


if __name__ == "__main__":
    sys.exit(main())
