"""Benchmarks: timings and ratios against a reference measured in the same run, never pass/fail.

``python -m experiments.benchmarks`` lists them;
``python -m experiments.benchmarks <name> [--help]`` runs the module
``experiments/benchmarks/<name>.py`` (its ``main(argv)``). A new benchmark is a new module
here with a one-line docstring summary and a ``main(argv=None)``: nothing else to register.
"""

from __future__ import annotations

import importlib
import pkgutil
import re


def names() -> list[str]:
    """The benchmark modules of this package, sorted."""
    return sorted(m.name for m in pkgutil.iter_modules(__path__) if not m.name.startswith("_"))


def summary(name: str) -> str:
    """First sentence of the benchmark module's docstring (its first paragraph up to the
    first full stop; a first line that runs on is not cut mid-sentence)."""
    doc = importlib.import_module(f"{__name__}.{name}").__doc__ or ""
    para = " ".join(doc.strip().split("\n\n")[0].split())
    end = re.search(r"\.\s+[A-Z]", para)  # not "et al. 2012"
    return para if end is None else para[: end.start() + 1]
