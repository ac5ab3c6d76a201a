"""Paper reproductions: ``python -m experiments reproduce <target> [--quick]``.

Each seed paper has one module here (``oos.py``, ``smooth_uct.py``, ``rbp.py``,
``imperfect_recall.py``, ...) that defines ``TARGETS``, a list of :class:`Target`.
The CLI discovers the modules, so a new target is a new entry in its paper's
module and a row in ``docs/reproduction.md``: nothing else to register.

A target's ``run(ctx)`` computes its figure or table, writes PNG plots under
``ctx.out`` and returns the markdown body of the report: the paper's numbers
beside ours, the settings, seeds, iteration budgets (wall-clock budgets of the
papers become stated iteration budgets), 95% confidence intervals and every
disagreement stated. The CLI wraps it in a header (command, mode, run time,
JAX version and backend) and writes ``ctx.out / "report.md"``.
"""

from __future__ import annotations

import dataclasses
import importlib
import pkgutil
from collections.abc import Callable
from pathlib import Path


@dataclasses.dataclass(frozen=True)
class Context:
    """What a target's ``run`` gets.

    out: the folder to write PNGs (and any data files) into; it exists.
    quick: the quick mode (minutes on the 2-core CPU): fewer seeds, matches, iterations.
    key: the base PRNG seed; every random choice of the run derives from it.
    """

    out: Path
    quick: bool
    key: int = 0


@dataclasses.dataclass(frozen=True)
class Target:
    """One figure or table of a paper.

    name: CLI name, lower-case with dashes, prefixed by the paper (``oos-fig4-small``).
    paper: the paper, short (``Lisý, Lanctot, Bowling, AAMAS 2015``).
    what: the figure or table and what it shows (``Fig. 4 (a)-(c): head-to-head matches``).
    run: ``run(ctx: Context) -> str``, the report's markdown body.
    """

    name: str
    paper: str
    what: str
    run: Callable[[Context], str]


def paper_modules() -> list[str]:
    """Names of the modules of this package that define targets, sorted."""
    return sorted(m.name for m in pkgutil.iter_modules(__path__) if not m.name.startswith("_"))


def targets() -> dict[str, Target]:
    """Every target of every paper module, by name (names are unique)."""
    found: dict[str, Target] = {}
    for module in paper_modules():
        for target in importlib.import_module(f"{__name__}.{module}").TARGETS:
            if target.name in found:
                raise RuntimeError(f"reproduction target {target.name!r} is defined twice")
            found[target.name] = target
    return found
