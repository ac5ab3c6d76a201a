"""Generic Poker GP(T, C, R, B)."""

from __future__ import annotations

from games_tensor._registry import register
from games_tensor._rules import check_range
from games_tensor.games._poker import DeckPoker

MAX_TYPES = 13
MAX_CARDS_PER_TYPE = 13
MAX_RAISES = 4
MAX_BET_SIZES = 4


@register("generic_poker")
class GenericPoker(DeckPoker):
    """Generic Poker GP(T, C, R, B) (Lisy, Lanctot, Bowling, "Online Monte Carlo Counterfactual
    Regret Minimization for Search in Imperfect Information Games", AAMAS 2015), with the exact
    betting of GTLibrary's ``GenericPokerExpander``.

    Ante 1 each; one private card each, round 1 betting; one public card, round 2 betting; P1
    first in both rounds. Chance deals card types with probability remaining copies / remaining
    cards. Round-1 bet and raise sizes are 2, 4, ..., 2B; round 2 doubles them (4, ..., 4B).
    Not facing a bet: check or bet (any size); check-check ends the round. Facing a bet: fold,
    call (the last increment), or raise (last increment plus any size) while fewer than R raises
    followed the opening bet. Showdown: a player wins if her card matches the public card and the
    opponent's does not, or if neither matches and her card is higher; otherwise split.
    Actions: 0 fold, 1 check/call, 2 + i bet/raise with size index i.

    Parameters:
      num_types (T, 2..13): card types.
      cards_per_type (C, 1..13): copies of each type; T * C >= 3.
      max_raises (R, 0..4): raises allowed after the opening bet in a round; 4 is the largest
        value in the papers (GP(4,6,4,4)).
      num_bet_sizes (B, 1..4): bet sizes per round.
    GP(3,2,1,1) is Leduc (rank-only); GP(3,3,2,2) has 7,920 infosets, 22,704 pairs and 44,883
    terminals.
    """

    def __init__(
        self,
        num_types: int = 3,
        cards_per_type: int = 3,
        max_raises: int = 2,
        num_bet_sizes: int = 2,
    ):
        check_range("num_types", num_types, 2, MAX_TYPES)
        check_range("cards_per_type", cards_per_type, 1, MAX_CARDS_PER_TYPE)
        if num_types * cards_per_type < 3:
            raise ValueError(
                "num_types * cards_per_type must be >= 3 (two private cards and a public card), "
                f"got cards_per_type={cards_per_type} with num_types={num_types}"
            )
        check_range("max_raises", max_raises, 0, MAX_RAISES)
        check_range("num_bet_sizes", num_bet_sizes, 1, MAX_BET_SIZES)
        self.num_types = num_types
        self.cards_per_type = cards_per_type
        self.max_raises = max_raises
        self.num_bet_sizes = num_bet_sizes
        r1 = tuple(2 * (i + 1) for i in range(num_bet_sizes))
        self._setup_deck(
            num_types=num_types,
            copies=cards_per_type,
            suits=False,
            round_sizes=(r1, tuple(2 * s for s in r1)),
            max_raises=max_raises,
        )

    def params(self):
        return {
            "num_types": self.num_types,
            "cards_per_type": self.cards_per_type,
            "max_raises": self.max_raises,
            "num_bet_sizes": self.num_bet_sizes,
        }
