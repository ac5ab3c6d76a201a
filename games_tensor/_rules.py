"""The rules protocol: how a game is written, once, as plain Python.

A game is a subclass of :class:`Rules`. Its states are any immutable Python
values (tuples are the usual choice); ``apply`` returns a new state and never
mutates the old one. The compiler (:func:`games_tensor.compile`) walks these
rules once, depth first, in the order ``legal_actions`` / ``chance_outcomes``
return, and lays the result out as dense arrays.

Players are ``0`` (P1, moves first unless the rules say otherwise) and ``1``;
``CHANCE`` and ``TERMINAL`` mark the other node kinds. Utilities are zero-sum:
``returns(state)[1] == -returns(state)[0]``.

Minimal example (matching pennies, P2 does not see P1's coin)::

    class Pennies(Rules):
        name = "pennies"
        num_actions = 2
        def initial_state(self): return ()
        def current_player(self, s): return TERMINAL if len(s) == 2 else len(s)
        def legal_actions(self, s): return (0, 1)
        def apply(self, s, a): return s + (a,)
        def returns(self, s): u = 1.0 if s[0] == s[1] else -1.0; return (u, -u)
        def information_state(self, s, player): return f"p{player}"
"""

from __future__ import annotations

import abc
from collections.abc import Hashable, Sequence
from typing import Any

CHANCE = -1
TERMINAL = -4

State = Any


class Rules(abc.ABC):
    """Plain-Python rules of a finite two-player zero-sum extensive-form game.

    Class attributes a game sets:
      name: registry name, e.g. ``"kuhn_poker"``.
      num_actions: size of the game's global action space ``A``; every legal
        action is an int in ``[0, A)`` and policies are ``[I, A]`` arrays.

    The information-state keys must give perfect recall (the compiler checks it and
    refuses keys that do not); express imperfect recall as an abstraction with
    :meth:`abstract_information_state`.
    """

    name: str = "rules"
    num_actions: int = 0

    # ---- parameters -------------------------------------------------------
    def params(self) -> dict[str, Any]:
        """The parameters this instance was built with (for names and reprs)."""
        return {}

    # ---- the tree ---------------------------------------------------------
    @abc.abstractmethod
    def initial_state(self) -> State:
        """The root state."""

    @abc.abstractmethod
    def current_player(self, state: State) -> int:
        """``0``, ``1``, ``CHANCE`` or ``TERMINAL``."""

    def legal_actions(self, state: State) -> Sequence[int]:
        """Legal actions of the player to move, ascending, non-empty."""
        raise NotImplementedError

    def chance_outcomes(self, state: State) -> Sequence[tuple[int, float]]:
        """``(outcome, probability)`` pairs at a chance node; probabilities sum to 1."""
        raise NotImplementedError

    @abc.abstractmethod
    def apply(self, state: State, action: int) -> State:
        """The successor state (a new value; ``state`` is left unchanged)."""

    @abc.abstractmethod
    def returns(self, state: State) -> tuple[float, float]:
        """Utilities ``(u0, u1)`` at a terminal state, with ``u1 == -u0``."""

    # ---- what players know ------------------------------------------------
    @abc.abstractmethod
    def information_state(self, state: State, player: int) -> Hashable:
        """Key of ``player``'s information set at ``state`` (called where ``player`` moves).

        Two states with equal keys are in the same infoset. A string is best:
        it becomes the human-readable name of the infoset.
        """

    def public_state(self, state: State) -> Hashable:
        """Key of the public state (what both players observe). Default: one public state."""
        return ""

    def abstract_information_state(self, state: State, player: int) -> Hashable | None:
        """Key of the (imperfect-recall) abstract infoset, or ``None`` if the game has no
        abstraction. Must be coarser than ``information_state``."""
        return None

    def action_name(self, action: int) -> str:
        return str(action)

    # ---- size guard -------------------------------------------------------
    def estimated_histories(self) -> int | float | None:
        """An estimate of the number of histories (nodes), checked before compiling.

        Return ``None`` when unknown. Games that can be instantiated too large to
        unroll (Liar's Dice, Goofspiel) must implement it from closed forms, in
        milliseconds for any parameters, before anything is enumerated (``__init__``
        must not build per-action tables either: build them lazily); a ``float``
        (``math.inf`` past the float range) is fine for astronomically large games.
        """
        return None

    def __repr__(self) -> str:
        args = ", ".join(f"{k}={v!r}" for k, v in self.params().items())
        return f"{type(self).__name__}({args})"


def check_range(name: str, value, lo=None, hi=None, *, integer: bool = True) -> None:
    """Raise ``ValueError`` naming ``name`` unless ``lo <= value <= hi``."""
    if integer and (isinstance(value, bool) or not isinstance(value, int)):
        raise ValueError(f"{name} must be an integer, got {value!r}")
    if not integer and not isinstance(value, (int, float)):
        raise ValueError(f"{name} must be a number, got {value!r}")
    if (lo is not None and value < lo) or (hi is not None and value > hi):
        lo_s = "-inf" if lo is None else lo
        hi_s = "inf" if hi is None else hi
        raise ValueError(f"{name} must be in [{lo_s}, {hi_s}], got {value!r}")
