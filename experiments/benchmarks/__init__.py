"""Benchmarks: timings and ratios against a reference measured in the same run, never pass/fail.

``python -m experiments.benchmarks`` lists them;
``python -m experiments.benchmarks <name> [--help]`` runs the module
``experiments/benchmarks/<name>.py`` (its ``main(argv)``). A new benchmark is a new module
here with a one-line docstring summary and a ``main(argv=None)``: nothing else to register.
"""

from __future__ import annotations

import importlib
import pkgutil


def names() -> list[str]:
    """The benchmark modules of this package, sorted."""
    return sorted(m.name for m in pkgutil.iter_modules(__path__) if not m.name.startswith("_"))


def summary(name: str) -> str:
    """First line of the benchmark module's docstring."""
    doc = importlib.import_module(f"{__name__}.{name}").__doc__ or ""
    return doc.strip().splitlines()[0] if doc.strip() else ""
