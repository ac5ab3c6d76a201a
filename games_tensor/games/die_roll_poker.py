"""Die-Roll Poker (DRP), its imperfect-recall abstraction DRP-IR, and Skew-DRP."""

from __future__ import annotations

import math

from games_tensor._registry import register
from games_tensor._rules import check_range
from games_tensor.games._poker import PokerEngine

ABSTRACTIONS = (None, "ir")


@register("die_roll_poker")
class DieRollPoker(PokerEngine):
    """Die-Roll Poker (Lanctot, Gibson, Burch, Zinkevich, Bowling, "No-Regret Learning in
    Extensive-Form Games with Imperfect Recall", ICML 2012).

    Ante 1 each; two betting rounds. Each round starts with chance rolling P1's private die,
    then P2's (uniform 1..6). In a round a player may fold, call or raise by 2 chips (round 1)
    or 4 chips (round 2), at most two raises per round. If nobody folds, the larger sum of the
    player's two dice wins the pot.
    [inferred] At round start "call" is a check, and the opening raise counts as one of the two
    raises (Leduc-like betting with dice); P1 acts first in both rounds; equal sums split the
    pot; fold is legal only when facing a raise (``fold_always_legal=False``).
    Actions: 0 fold, 1 check/call, 2 raise. Outcome ``k`` of a roll is the face ``k + 1``.
    DRP: 1,116 infosets, 2,604 pairs (2,976 with fold always legal), 58,464 terminals.

    Parameters:
      skew (>= 0): Skew-DRP(delta). At a showdown only, P1 receives skew * (chips in the pot)
        from P2 if P1's second die is even; then the pot goes to the higher sum.
      abstraction: None, or "ir" for DRP-IR: from round 2 on a player remembers only the sum
        of their dice (and the betting), 366 abstract infosets and 854 pairs (976 with fold
        always legal). Round 1 keys are unchanged.
      fold_always_legal: also allow folding when not facing a raise (the paper is silent).
    """

    private_name = "dice"

    def __init__(
        self,
        skew: float = 0.0,
        abstraction: str | None = None,
        fold_always_legal: bool = False,
    ):
        check_range("skew", skew, 0, None, integer=False)
        if isinstance(skew, bool) or not math.isfinite(skew):
            raise ValueError(f"skew must be a finite number in [0, inf), got {skew!r}")
        if abstraction not in ABSTRACTIONS:
            raise ValueError(f"abstraction must be one of {ABSTRACTIONS}, got {abstraction!r}")
        if not isinstance(fold_always_legal, bool):
            raise ValueError(
                f"fold_always_legal must be a bool (True or False), got {fold_always_legal!r}"
            )
        self.skew = float(skew)
        self.abstraction = abstraction
        self.fold_always_legal = fold_always_legal
        self._setup(
            round_sizes=((2,), (4,)),
            max_raises=1,
            deal_owners=((0, 1), (0, 1)),
            fold_always_legal=fold_always_legal,
        )

    def params(self):
        return {
            "skew": self.skew,
            "abstraction": self.abstraction,
            "fold_always_legal": self.fold_always_legal,
        }

    def deal_outcomes(self, deals):
        return [(k, 1.0 / 6.0) for k in range(6)]

    def deal_label(self, outcome: int) -> str:
        return str(outcome + 1)

    def showdown(self, deals) -> int:
        s0 = deals[0] + deals[2]
        s1 = deals[1] + deals[3]
        return (s0 > s1) - (s0 < s1)

    def showdown_bonus(self, deals, pot: float) -> float:
        return self.skew * pot if (deals[2] + 1) % 2 == 0 else 0.0

    def abstract_information_state(self, state, player: int):
        if self.abstraction is None:
            return None
        deals, rounds = state
        if len(rounds) < 2:
            return self.information_state(state, player)
        total = sum(d + 1 for d in deals[player::2])
        return " | ".join([f"P{player} sum:{total}"] + self._public_parts(deals, rounds))
