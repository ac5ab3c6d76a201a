"""games_tensor.step: games as pure, jittable step functions (for games too large to compile).

Public API::

    game = games_tensor.step.load("liars_dice", dice0=2, dice1=2)   # -> StepGame
    state = game.init()
    game.current_player(state)          # 0, 1, CHANCE (-1) or TERMINAL (-4)
    game.legal_mask(state)              # [A] bool
    game.chance_probs(state)            # [K] float
    state = game.apply(state, action)   # chance outcome index at chance nodes
    game.returns(state)                 # [2] float
    game.information_state_key(state, player)   # [W] uint32
    game.public_state_key(state)                 # [Wp] uint32
    game.consistent(state, info_key)             # prefix of that infoset? (targeting)
    game.public_consistent(state, public_key)    # prefix of that public state?
    games_tensor.step.enumerate_tree(game)       # all histories (small games only)
    games_tensor.step.random_playout(game, key)  # one uniformly random trajectory

See ``games_tensor/step/_core.py`` and docs/large_games.md.
"""

from __future__ import annotations

from games_tensor._registry import make_rules
from games_tensor.step._core import MAX_KEY_WORDS, KeyLayout, StepGame
from games_tensor.step._enumerate import StepTree, enumerate_tree
from games_tensor.step._playout import Trajectory, random_playout
from games_tensor.step.generic_poker import GenericPokerState, GenericPokerStep
from games_tensor.step.ii_goofspiel import IIGoofspielState, IIGoofspielStep
from games_tensor.step.liars_dice import LiarsDiceState, LiarsDiceStep

_STEP_GAMES: dict[str, type[StepGame]] = {
    "liars_dice": LiarsDiceStep,
    "ii_goofspiel": IIGoofspielStep,
    "generic_poker": GenericPokerStep,
}

# The OOS paper's instances too large to compile (Lisy, Lanctot, Bowling, AAMAS 2015, Fig. 4 d-f).
LARGE_GAMES: dict[str, tuple[str, dict]] = {
    "LD(2,2)": ("liars_dice", {"dice0": 2, "dice1": 2}),
    "II-GS(13)": ("ii_goofspiel", {"num_cards": 13}),
    "GP(4,6,4,4)": (
        "generic_poker",
        {"num_types": 4, "cards_per_type": 6, "max_raises": 4, "num_bet_sizes": 4},
    ),
}


def available() -> tuple[str, ...]:
    """Names of the games with a step form."""
    return tuple(sorted(_STEP_GAMES))


def load(name: str, **params) -> StepGame:
    """The step form of the registered game ``name`` with ``params``.

    Parameters, their defaults and their checks are the compiled rules' (see
    ``games_tensor.available()``), so ``load(name, **p)`` plays the tree of
    ``games_tensor.load(name, **p)``. Raises ``ValueError`` for a game without a
    step form (listing those with one), an invalid parameter (naming it and its
    range) and parameters the step form does not support (naming them: an
    abstraction, or keys wider than ``MAX_KEY_WORDS`` uint32 words).
    """
    if name not in _STEP_GAMES:
        raise ValueError(
            f"game {name!r} has no step form; games with one: {', '.join(available())}"
        )
    rules = make_rules(name, **params)  # validates names and ranges, no enumeration
    return _STEP_GAMES[name].from_rules_params(**rules.params())


__all__ = [
    "LARGE_GAMES",
    "MAX_KEY_WORDS",
    "GenericPokerState",
    "GenericPokerStep",
    "IIGoofspielState",
    "IIGoofspielStep",
    "KeyLayout",
    "LiarsDiceState",
    "LiarsDiceStep",
    "StepGame",
    "StepTree",
    "Trajectory",
    "available",
    "enumerate_tree",
    "load",
    "random_playout",
]
