"""Biased Rock-Paper-Scissors (Bosansky, Lisy, Lanctot et al., AIJ 2016; OpenSpiel ``matrix_brps``).

See :class:`BiasedRPS` for the rules.
"""

from __future__ import annotations

from games_tensor._registry import register
from games_tensor._rules import TERMINAL, Rules

# Row player's (P1's) payoffs, rows and columns R, P, S.
_PAYOFF = (
    (0.0, -25.0, 50.0),
    (25.0, 0.0, -5.0),
    (-50.0, 5.0, 0.0),
)
_NAMES = ("R", "P", "S")


@register("biased_rps")
class BiasedRPS(Rules):
    """Biased Rock-Paper-Scissors as a two-step extensive-form game.

    Paper: mentioned in Lisy, Lanctot, Bowling (AAMAS 2015) citing Shafiei et al.
    (2009); the matrix is the one of Bosansky, Lisy, Lanctot et al. (AIJ 2016,
    Fig. 7) and OpenSpiel ``matrix_brps``. Whether Shafiei et al. used exactly this
    matrix is not recovered.

    Rules: P1 picks R, P or S (actions 0, 1, 2); P2 then picks R, P or S without
    seeing P1's choice. P1 receives the row payoff below, P2 its negation::

              R    P    S
        R     0  -25   50
        P    25    0   -5
        S   -50    5    0

    The unique equilibrium is (1/16, 10/16, 5/16) for both players, value 0.
    2 infosets, 6 (infoset, action) pairs, 9 terminals.

    [inferred] the simultaneous move is written sequentially (P1 first), and the
    public state only says whose turn it is (choices are not revealed).

    No parameters.
    """

    num_actions = 3

    def __init__(self):
        pass

    def initial_state(self):
        return ()

    def current_player(self, state):
        return TERMINAL if len(state) == 2 else len(state)

    def legal_actions(self, state):
        return (0, 1, 2)

    def apply(self, state, action):
        return state + (action,)

    def returns(self, state):
        u = _PAYOFF[state[0]][state[1]]
        return (u, -u)

    def information_state(self, state, player):
        return f"P{player}"

    def public_state(self, state):
        return ("P0 to move", "P1 to move", "end")[len(state)]

    def action_name(self, action):
        return _NAMES[action]
