"""games_tensor: games written once as plain Python rules, compiled to dense arrays.

Public API::

    game = games_tensor.load("leduc_poker")          # -> Game pytree
    games_tensor.available()                          # names -> parameters and defaults
    games_tensor.uniform_policy(game)                 # [I, A]
    games_tensor.compile(MyRules())                   # compile your own rules
    games_tensor.from_openspiel("kuhn_poker")         # any small OpenSpiel game
    games_tensor.step.load("liars_dice", dice0=2, dice1=2)  # step form (too large to compile)

    games_tensor.check_abstraction(game)              # imperfect recall: well-formed?
"""

from games_tensor import games as _games  # noqa: F401  (registers the built-in games)
from games_tensor import step  # step form of the games too large to compile
from games_tensor._compile import (
    DEFAULT_MAX_HISTORIES,
    GameTooLargeError,
    ImperfectRecallError,
    compile,
)
from games_tensor._game import CHANCE, TERMINAL, Game, GameMeta, uniform_policy
from games_tensor._openspiel import from_openspiel, from_tabular_policy, to_tabular_policy
from games_tensor._registry import available, make_rules, register
from games_tensor._rules import Rules, check_range
from games_tensor._wellformed import AbstractionCheck, check_abstraction


def load(name: str, *, max_histories: int = DEFAULT_MAX_HISTORIES, **params) -> Game:
    """Compile the registered game ``name`` with ``params`` (see ``available()``).

    Raises ``ValueError`` for an unknown name (listing the valid ones), an invalid
    parameter (naming it and its range), or a game too large to unroll
    (``GameTooLargeError``, with its estimated size and memory).
    """
    return compile(make_rules(name, **params), max_histories=max_histories)


__all__ = [
    "AbstractionCheck",
    "CHANCE",
    "DEFAULT_MAX_HISTORIES",
    "TERMINAL",
    "Game",
    "GameMeta",
    "GameTooLargeError",
    "ImperfectRecallError",
    "Rules",
    "available",
    "check_abstraction",
    "check_range",
    "compile",
    "from_openspiel",
    "from_tabular_policy",
    "load",
    "make_rules",
    "register",
    "step",
    "to_tabular_policy",
    "uniform_policy",
]
