"""The algorithms a study can name: jaxcfr's solver factories, found by name.

Every lower-case factory exported by ``jaxcfr`` whose parameters all have defaults
and which returns a ``jaxcfr.Solver`` is an algorithm (``cfr``, ``cfr_plus``,
``linear_cfr``, ``dcfr``, ``pcfr_plus``, and the sampling solvers
``outcome_sampling`` / ``external_sampling`` once they are exported), so a new
solver becomes available to studies without touching this file.
"""

from __future__ import annotations

import inspect
from typing import Any, Callable

import jaxcfr

# Looked up even if a future __init__ forgets them in __all__.
KNOWN = (
    "cfr",
    "cfr_plus",
    "linear_cfr",
    "dcfr",
    "pcfr_plus",
    "outcome_sampling",
    "external_sampling",
    "uct",
    "smooth_uct",
)


class ConfigError(ValueError):
    """A study's configuration is invalid; the message names the offending field."""


def _is_factory(name: str, obj) -> bool:
    if not inspect.isfunction(obj) or name != name.lower() or name.startswith("_"):
        return False
    sig = inspect.signature(obj)
    if any(
        p.default is p.empty and p.kind not in (p.VAR_POSITIONAL, p.VAR_KEYWORD)
        for p in sig.parameters.values()
    ):
        return False
    ret = sig.return_annotation
    return ret is jaxcfr.Solver or ret == "Solver" or name in KNOWN


def available() -> dict[str, Callable[..., jaxcfr.Solver]]:
    """Algorithm name -> solver factory, sorted by name."""
    names = set(KNOWN) | set(getattr(jaxcfr, "__all__", ()))
    found = {n: getattr(jaxcfr, n, None) for n in names}
    return {n: f for n, f in sorted(found.items()) if f is not None and _is_factory(n, f)}


def parameters(name: str) -> dict[str, Any]:
    """The factory's parameters and their defaults."""
    factory = available()[name]
    return {
        p.name: p.default
        for p in inspect.signature(factory).parameters.values()
        if p.kind in (p.POSITIONAL_OR_KEYWORD, p.KEYWORD_ONLY)
    }


def describe() -> str:
    """One line per algorithm: ``name(param=default, ...)``."""
    return "\n".join(
        f"  {n}(" + ", ".join(f"{k}={v!r}" for k, v in parameters(n).items()) + ")"
        for n in available()
    )


def build(name: str, params: dict[str, Any]) -> jaxcfr.Solver:
    """Call the factory ``name(**params)`` on the host, so bad values fail before any work.

    Raises:
      ConfigError: unknown algorithm (listing the valid ones), unknown parameter
        (naming it and listing the valid ones), or a value the factory rejects
        (its message names the parameter).
    """
    algos = available()
    if name not in algos:
        raise ConfigError(f"unknown algorithm {name!r}; valid algorithms: {', '.join(algos)}")
    valid = parameters(name)
    unknown = sorted(set(params) - set(valid))
    if unknown:
        listing = ", ".join(f"{k}={v!r}" for k, v in valid.items()) or "(none)"
        raise ConfigError(
            f"unknown parameter(s) {unknown} for algorithm {name!r}; valid parameters: {listing}"
        )
    try:
        solver = algos[name](**params)
    except (ValueError, TypeError) as exc:
        raise ConfigError(f"algorithm {name!r}: {exc}") from exc
    if not isinstance(solver, jaxcfr.Solver):
        raise ConfigError(f"algorithm {name!r} did not return a jaxcfr.Solver")
    return solver
