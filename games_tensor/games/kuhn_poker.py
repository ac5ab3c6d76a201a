"""Kuhn poker."""

from __future__ import annotations

from games_tensor._registry import register
from games_tensor._rules import CHANCE, TERMINAL, Rules

PASS, BET = 0, 1
_CARDS = "JQK"
_TERMINAL_SEQS = {(0, 0), (1, 0), (1, 1), (0, 1, 0), (0, 1, 1)}


@register("kuhn_poker")
class KuhnPoker(Rules):
    """Kuhn poker (Kuhn 1950; used by Heinrich's Smooth UCT experiments).

    Deck {J, Q, K}; each player antes 1. Chance deals P1's card, then P2's card (uniform over
    the remaining). P1 acts first. Actions (OpenSpiel's convention): 0 = pass (check or fold),
    1 = bet (bet 1 or call). Terminal sequences: pp (showdown, pot 2), bp (P2 folds), bb
    (showdown, pot 4), pbp (P1 folds), pbb (showdown, pot 4). Higher card wins.
    12 infosets, 24 (infoset, action) pairs, 30 terminals, 58 histories. Value -1/18.
    No parameters.

    States are ``(cards, actions)``.
    """

    num_actions = 2

    def __init__(self):
        pass

    def initial_state(self):
        return ((), ())

    def current_player(self, state) -> int:
        cards, acts = state
        if len(cards) < 2:
            return CHANCE
        if acts in _TERMINAL_SEQS:
            return TERMINAL
        return len(acts) & 1

    def legal_actions(self, state):
        return (PASS, BET)

    def chance_outcomes(self, state):
        rest = [c for c in range(3) if c not in state[0]]
        return [(c, 1.0 / len(rest)) for c in rest]

    def apply(self, state, action: int):
        cards, acts = state
        if len(cards) < 2:
            return (cards + (action,), acts)
        return (cards, acts + (action,))

    def returns(self, state):
        cards, acts = state
        if acts[-2:] == (BET, PASS):  # the last player folded to a bet
            folder = (len(acts) - 1) & 1
            u0 = 1.0 if folder == 1 else -1.0
        else:
            stake = 2.0 if BET in acts else 1.0
            u0 = stake if cards[0] > cards[1] else -stake
        return (u0, -u0)

    def _seq(self, acts) -> str:
        return "".join("pb"[a] for a in acts)

    def information_state(self, state, player: int) -> str:
        cards, acts = state
        return f"P{player} card:{_CARDS[cards[player]]} | {self._seq(acts)}"

    def public_state(self, state) -> str:
        return self._seq(state[1])

    def action_name(self, action: int) -> str:
        return ("pass", "bet")[action]

    def estimated_histories(self) -> int:
        return 58
