"""Imperfect-information Goofspiel II-GS(N) as in the OOS paper (Lisy et al., AAMAS 2015).

See :class:`IIGoofspiel` for the rules and parameters.
"""

from __future__ import annotations

import functools
import math
from math import perm

from games_tensor._registry import register
from games_tensor._rules import TERMINAL, Rules, check_range

_WIN = (1.0, -1.0)
_LOSE = (-1.0, 1.0)
_TIE = (0.0, 0.0)


@register("ii_goofspiel")
class IIGoofspiel(Rules):
    """II-Goofspiel with ``num_cards`` cards, ascending point cards, win/loss utility.

    Paper: Lisy, Lanctot, Bowling, "Online Monte Carlo Counterfactual Regret
    Minimization for Search in Imperfect Information Games" (AAMAS 2015), the
    game "II-GS(N)"; GTLibrary ``IIGoofSpielGameState`` with the paper's settings.

    Rules:
      * Each player holds bid cards ``0..N-1``; the action is the card index.
      * A face-up stack of N point cards, strictly ascending:
        ``first_point, first_point + 1, ..., first_point + N - 1`` (no chance).
      * Each round P1 chooses a card, then P2 chooses without seeing P1's card.
        The higher bid takes the round's point card; on a tie it is discarded.
      * After N rounds, the higher total of points wins: utility +1 / -1, 0 on a tie.
      * Players observe only who won, lost or tied each round, never the
        opponent's cards. The infoset is (own cards played in order, sequence of
        round outcomes).

    [inferred] choices:
      * ``first_point=0`` follows the paper (points 0..N-1; the first round is
        worth nothing). OpenSpiel numbers point cards 1..N: ``first_point=1``,
        ``decide_last_card=False`` gives exactly OpenSpiel's
        ``goofspiel(imp_info=True, points_order="ascending", returns_type="win_loss")``
        tree (actions = bid card index, as in OpenSpiel).
      * ``decide_last_card=True`` (GTLibrary, GAMES.md counts) keeps the forced
        last-round decision nodes (one legal action each).
      * Public state: the round-outcome sequence from P1's view, plus a marker
        when P1 has already bid in the current round.

    Information-state strings: ``"P0 2W 0L 1T"`` is player 0 (P1) having played
    card 2 (won), 0 (lost), 1 (tied); outcomes are from the owner's point of view.

    Args:
      num_cards: N >= 1 (>= 2 when ``decide_last_card=False``). No fixed upper
        bound: sizes grow like (N!)^2, and the compiler's size guard refuses large
        N via :meth:`estimated_histories` (exact node count).
      first_point: value of the lowest point card (>= 0).
      decide_last_card: keep the forced last-card decisions (True) or play the
        last card automatically as OpenSpiel does (False).

    Sizes: II-GS(4): 738 infosets, 576 terminals; II-GS(6): 166,002 infosets,
    518,400 terminals, 2,006,323 histories. With ``decide_last_card=False``:
    81 infosets per player at 4 cards, 17,241 at 6.
    """

    def __init__(self, num_cards: int = 4, first_point: int = 0, decide_last_card: bool = True):
        check_range("num_cards", num_cards, 1)
        check_range("first_point", first_point, 0)
        if not isinstance(decide_last_card, bool):
            raise ValueError(f"decide_last_card must be a bool, got {decide_last_card!r}")
        if not decide_last_card and num_cards < 2:
            raise ValueError(
                f"num_cards must be in [2, inf] when decide_last_card=False, got {num_cards!r}"
            )
        self.num_cards = num_cards
        self.first_point = first_point
        self.decide_last_card = decide_last_card
        self.num_actions = num_cards
        # After the P2 move of this round the game either ends or auto-plays the last card.
        self._last_decided_round = num_cards - 1 if decide_last_card else num_cards - 2
        self._legal: dict[int, tuple[int, ...]] = {}

    @functools.cached_property
    def _card_str(self):  # built on first use: after the size check
        return tuple(f" {c}" for c in range(self.num_cards))

    def params(self):
        return {
            "num_cards": self.num_cards,
            "first_point": self.first_point,
            "decide_last_card": self.decide_last_card,
        }

    # state: (phase, round, pending P1 card, hand0 mask, hand1 mask, score diff P1-P2,
    #         P1 key, P2 key, outcomes from P1's view, public key)
    # phase: 0 = P1 to bid, 1 = P2 to bid, TERMINAL.
    def initial_state(self):
        full = (1 << self.num_cards) - 1
        return (0, 0, -1, full, full, 0, "P0", "P1", "", "")

    def current_player(self, state):
        return state[0]

    def legal_actions(self, state):
        hand = state[3 + state[0]]
        acts = self._legal.get(hand)
        if acts is None:
            acts = tuple(c for c in range(self.num_cards) if hand >> c & 1)
            self._legal[hand] = acts
        return acts

    def apply(self, state, action):
        phase, rnd, pending, h0, h1, diff, k0, k1, outs, pub = state
        bit = 1 << action
        if phase == 0:
            if not h0 & bit:
                raise ValueError(f"P1 does not hold card {action}")
            return (1, rnd, action, h0 & ~bit, h1, diff, k0, k1, outs, outs + "|P0 bid")
        if not h1 & bit:
            raise ValueError(f"P2 does not hold card {action}")
        h1 &= ~bit
        diff, k0, k1, outs = self._resolve(rnd, pending, action, diff, k0, k1, outs)
        if rnd == self._last_decided_round:
            if rnd < self.num_cards - 1:  # play the last card automatically
                c0 = h0.bit_length() - 1
                c1 = h1.bit_length() - 1
                diff, k0, k1, outs = self._resolve(rnd + 1, c0, c1, diff, k0, k1, outs)
            return (TERMINAL, self.num_cards, -1, 0, 0, diff, k0, k1, outs, outs + "|end")
        return (0, rnd + 1, -1, h0, h1, diff, k0, k1, outs, outs)

    def _resolve(self, rnd, c0, c1, diff, k0, k1, outs):
        if c0 > c1:
            diff += self.first_point + rnd
            return diff, k0 + self._card_str[c0] + "W", k1 + self._card_str[c1] + "L", outs + "W"
        if c0 < c1:
            diff -= self.first_point + rnd
            return diff, k0 + self._card_str[c0] + "L", k1 + self._card_str[c1] + "W", outs + "L"
        return diff, k0 + self._card_str[c0] + "T", k1 + self._card_str[c1] + "T", outs + "T"

    def returns(self, state):
        diff = state[5]
        return _WIN if diff > 0 else (_LOSE if diff < 0 else _TIE)

    # ---- what players know ------------------------------------------------
    def information_state(self, state, player):
        return state[6 + player]

    def public_state(self, state):
        return state[9]

    def action_name(self, action):
        return f"bid{action}"

    def estimated_histories(self):
        # Exact node count: round k has P(N,k)^2 P1 nodes, each followed by N-k P2 nodes.
        n = self.num_cards
        if n > 200 or 2 * math.lgamma(n + 1) > 700:  # (n!)^2 alone is past 1e304
            return math.inf
        rounds = n if self.decide_last_card else n - 1
        total = sum(perm(n, k) ** 2 * (1 + n - k) for k in range(rounds))
        return total + perm(n) ** 2
