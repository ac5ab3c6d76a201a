"""The non-locality example of the OOS paper (Lisy, Lanctot, Bowling, AAMAS 2015, Fig. 1).

See :class:`NonLocality` for the rules and parameter.
"""

from __future__ import annotations

import math

from games_tensor._registry import register
from games_tensor._rules import CHANCE, TERMINAL, Rules, check_range

_CHANCE = ((0, 0.5), (1, 0.5))


@register("nonlocality")
class NonLocality(Rules):
    """The OOS paper's example of non-locality (Fig. 1).

    Paper: Lisy, Lanctot, Bowling, "Online Monte Carlo Counterfactual Regret
    Minimization for Search in Imperfect Information Games" (AAMAS 2015), Fig. 1.

    Rules (utilities are P1's, P2 gets the negation):
      * Chance picks left (outcome 0) or right (outcome 1), 1/2 each; nobody
        observes it.
      * P1 (the maximizer) chooses L (0) or R (1); its two decision nodes form
        one infoset.
      * Left branch: L ends with ``left_leaf``, R ends with 0.
      * Right branch: L leads to P2's node A (L: 3, R: 0); R leads to P2's node B
        (L: 0, R: 3). P2 (the minimizer) does not see P1's action: A and B form
        one infoset I.

    Equilibrium: P1 (1/2, 1/2), P2 at I (1/3, 2/3), value 1 (``left_leaf=1``);
    with ``left_leaf=2``: P2 (1/6, 5/6), value 1.25.
    2 infosets, 4 (infoset, action) pairs, 6 terminals.

    [inferred] the public state names only the stage (P1 to move, P2 to move,
    end); reaching P2's infoset implies the right chance branch.

    Args:
      left_leaf: P1's payoff for L in the left branch (any finite number; the
        paper uses 1).
    """

    num_actions = 2

    def __init__(self, left_leaf: float = 1):
        check_range("left_leaf", left_leaf, integer=False)
        if isinstance(left_leaf, bool) or not math.isfinite(left_leaf):
            raise ValueError(f"left_leaf must be a finite number, got {left_leaf!r}")
        self.left_leaf = left_leaf

    def params(self):
        return {"left_leaf": self.left_leaf}

    # state: () root chance; (c,) P1 to move; (1, a1) P2 to move; terminal otherwise.
    def initial_state(self):
        return ()

    def current_player(self, state):
        n = len(state)
        if n == 0:
            return CHANCE
        if n == 1:
            return 0
        if n == 2 and state[0] == 1:
            return 1
        return TERMINAL

    def chance_outcomes(self, state):
        return _CHANCE

    def legal_actions(self, state):
        return (0, 1)

    def apply(self, state, action):
        return state + (action,)

    def returns(self, state):
        if state[0] == 0:
            u = float(self.left_leaf) if state[1] == 0 else 0.0
        else:
            u = 3.0 if state[1] == state[2] else 0.0
        return (u, -u)

    def information_state(self, state, player):
        return "P0" if player == 0 else "P1 I"

    def public_state(self, state):
        p = self.current_player(state)
        return {CHANCE: "chance", 0: "P0 to move", 1: "P1 to move"}.get(p, "end")

    def action_name(self, action):
        return ("L", "R")[action]
