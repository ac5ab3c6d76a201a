"""Leduc Hold'em."""

from __future__ import annotations

from games_tensor._registry import register
from games_tensor.games._poker import DeckPoker


@register("leduc_poker")
class LeducPoker(DeckPoker):
    """Leduc Hold'em (Southey et al. 2005; Heinrich's thesis; Brown & Sandholm's RBP paper).

    Deck J, Q, K in 2 suits; ante 1 each; one private card each, then round 1 betting; one public
    card, then round 2 betting. P1 acts first in both rounds. Bet/raise size 2 in round 1 and 4
    in round 2, two-bet maximum per round (one bet plus one raise); a raise puts in the amount
    to call plus the size. Fold is legal only when facing a bet (as in OpenSpiel). Showdown: a
    card pairing the public card wins, else the higher rank; equal ranks split.
    Actions (OpenSpiel's convention): 0 fold, 1 check/call, 2 bet/raise.

    Parameters:
      suits: True deals individual cards (P1's uniform over 6, P2's over 5, the public over 4)
        and players see the suit: OpenSpiel's game, 936 infosets. False deals ranks with
        probability remaining/total: the rank-only game (Brown's count), 288 infosets,
        672 (infoset, action) pairs, 1,116 terminals. Value -0.085606424078 either way.
    """

    def __init__(self, suits: bool = True):
        if not isinstance(suits, bool):
            raise ValueError(f"suits must be a bool (True or False), got {suits!r}")
        self.suits = suits
        self._setup_deck(num_types=3, copies=2, suits=suits, round_sizes=((2,), (4,)), max_raises=1)

    def params(self):
        return {"suits": self.suits}
