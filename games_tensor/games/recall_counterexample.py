"""A smallest game whose imperfect-recall abstraction breaks only condition (iii).

See :class:`RecallCounterexample` for the rules, the abstractions and the stall.
"""

from __future__ import annotations

from games_tensor._registry import register
from games_tensor._rules import CHANCE, TERMINAL, Rules

ABSTRACTIONS = (None, "forget_side", "forget_signal")
# P1's utility by side (0 = L, 1 = R), P1's action (a, b) and P2's action (c, d).
# R is L with P2's columns swapped in row a, so u agrees under the bijection
# (a, c) <-> (a, d), (b, x) <-> (b, x): conditions (i), (ii) and (iv) hold.
_PAYOFF = (((1.0, -1.0), (0.0, 3.0)), ((-1.0, 1.0), (0.0, 3.0)))


@register("recall_counterexample")
class RecallCounterexample(Rules):
    """Section 7 of Lanctot, Gibson, Burch, Zinkevich, Bowling, "No-Regret Learning in
    Extensive-Form Games with Imperfect Recall" (ICML 2012): an abstraction breaking only
    condition (iii) of well-formedness (the opponent's sequences differ) can stall CFR
    at a constant full-game regret. This is our own smallest instance (the paper's
    Fig. 2 game is not recovered; ALGORITHMS.md 2.9).

    Rules (utilities are P1's, P2 gets the negation):
      * Chance picks the side L or R and a signal s in {0, 1}, uniformly (one node, four
        outcomes ``2 * side + s``). P1 sees both; P2 sees only the side.
      * P1 chooses a (0) or b (1); P2, not seeing it, chooses c (0) or d (1).
      * u_1 on side L: (a, c) 1, (a, d) -1, (b, c) 0, (b, d) 3;
        on side R: (a, c) -1, (a, d) 1, (b, c) 0, (b, d) 3.

    Abstractions of P1 (P2 keeps perfect recall):
      * ``"forget_side"``: P1 remembers s, forgets the side. Merged infosets (L, s) and
        (R, s) satisfy (i) u equal (k = 1), (ii) chance equal (l = 1) and (iv) own
        future equal under the bijection above, but not (iii): P2's infosets differ.
        Chance-free CFR from the uniform profile reaches, at iteration 2, the profile
        P1 = b, P2 = c on both sides and stays there (every instantaneous regret is
        then 0), while P1 in the full game gains 1/2 by playing a on side L: the
        full-game regret stays at 1/2.
      * ``"forget_signal"``: P1 remembers the side, forgets s, which nothing depends on:
        well-formed (k = l = 1), and CFR converges.

    Value 0.3 for P1 (side L is worth 0.6: P1 plays a with 0.6 on average, P2 c with
    0.8; on side R, b dominates a and the value is 0; ``jaxcfr.solve_lp``). 4 P1
    infosets, 2 P2 infosets, 12 (infoset, action) pairs, 16 terminals, 29 histories.

    Args:
      abstraction: None, ``"forget_side"`` or ``"forget_signal"``.
    """

    num_actions = 2

    def __init__(self, abstraction: str | None = "forget_side"):
        if abstraction not in ABSTRACTIONS:
            raise ValueError(f"abstraction must be one of {ABSTRACTIONS}, got {abstraction!r}")
        self.abstraction = abstraction

    def params(self):
        return {"abstraction": self.abstraction}

    # state: () chance; (o,) P1 to move; (o, a1) P2 to move; (o, a1, a2) terminal.
    def initial_state(self):
        return ()

    def current_player(self, state):
        return (CHANCE, 0, 1, TERMINAL)[len(state)]

    def chance_outcomes(self, state):
        return tuple((o, 0.25) for o in range(4))

    def legal_actions(self, state):
        return (0, 1)

    def apply(self, state, action):
        return state + (action,)

    def returns(self, state):
        outcome, a1, a2 = state
        u = _PAYOFF[outcome // 2][a1][a2]
        return (u, -u)

    def information_state(self, state, player):
        side = "LR"[state[0] // 2]
        return f"P1 {side}{state[0] % 2}" if player == 0 else f"P2 {side}"

    def abstract_information_state(self, state, player):
        if self.abstraction is None:
            return None
        if player == 1:
            return self.information_state(state, player)
        side, signal = "LR"[state[0] // 2], state[0] % 2
        return f"P1 s{signal}" if self.abstraction == "forget_side" else f"P1 {side}"

    def action_name(self, action):
        return "ab"[action]
