"""Name -> rules-class registry behind ``games_tensor.load`` and ``available``."""

from __future__ import annotations

import inspect
from typing import Any

import numpy as np

from games_tensor._rules import Rules

_REGISTRY: dict[str, type[Rules]] = {}


def register(name: str):
    """Class decorator: make a :class:`Rules` subclass loadable as ``name``.

    The class's ``__init__`` keyword arguments (with defaults) are the game's parameters.
    """

    def deco(cls: type[Rules]) -> type[Rules]:
        if name in _REGISTRY:
            raise ValueError(f"game {name!r} is already registered")
        cls.name = name
        _REGISTRY[name] = cls
        return cls

    return deco


def available() -> dict[str, dict[str, Any]]:
    """Registered game names, each with its parameters and their defaults."""
    out = {}
    for name in sorted(_REGISTRY):
        sig = inspect.signature(_REGISTRY[name].__init__)
        out[name] = {
            p.name: p.default
            for p in sig.parameters.values()
            if p.name != "self" and p.kind in (p.KEYWORD_ONLY, p.POSITIONAL_OR_KEYWORD)
        }
    return out


def _plain(value):
    """NumPy scalars -> the Python bool/int/float they hold (games check Python types)."""
    if isinstance(value, np.bool_):
        return bool(value)
    if isinstance(value, np.integer):
        return int(value)
    if isinstance(value, np.floating):
        return float(value)
    return value


def make_rules(name: str, **params) -> Rules:
    """Instantiate the rules of game ``name``; unknown names list the valid ones.

    NumPy scalar parameters (``np.int64(3)``) are taken as the Python values they hold."""
    if not isinstance(name, str):
        raise ValueError(
            f"the game name must be a string, got {name!r} ({type(name).__name__}); "
            f"valid games: {', '.join(sorted(_REGISTRY))}"
        )
    if name not in _REGISTRY:
        valid = ", ".join(sorted(_REGISTRY))
        raise ValueError(f"unknown game {name!r}; valid games: {valid}")
    cls = _REGISTRY[name]
    allowed = available()[name]
    unknown = sorted(set(params) - set(allowed))
    if unknown:
        raise ValueError(
            f"unknown parameter(s) {unknown} for game {name!r}; valid parameters: "
            + ", ".join(f"{k}={v!r}" for k, v in allowed.items())
        )
    return cls(**{k: _plain(v) for k, v in params.items()})
