"""Interleaved A/B across source trees (the ``--roots`` modes of the benchmarks).

The same snippet runs in a fresh interpreter under each tree (working directory and
``PYTHONPATH`` = the tree, so ``import jaxcfr`` picks that tree's code), tree after tree,
round after round: on a shared, noisy machine the trees then see about the same load, and
ratios within one invocation are the figures to compare.
"""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Iterator, Sequence


def in_trees(
    roots: Sequence[str], rounds: int, code: str, args: Sequence[str]
) -> Iterator[tuple[int, str, float, subprocess.CompletedProcess]]:
    """Run ``python -c code *args`` under each of ``roots`` for ``rounds`` rounds; yield
    ``(round (1-based), root, 1-minute load average before the run, completed process)``
    in run order (stdout and stderr captured as text)."""
    for r in range(rounds):
        for root in roots:
            load = os.getloadavg()[0]
            out = subprocess.run(
                [sys.executable, "-c", code, *args],
                capture_output=True,
                text=True,
                cwd=root,
                env={**os.environ, "PYTHONPATH": root},
            )
            yield r + 1, root, load, out
