"""Leduc-5: Leduc Hold'em with five bet sizes."""

from __future__ import annotations

from games_tensor._registry import register
from games_tensor.games._poker import DeckPoker

ROUND1_SIZES = (0.5, 1, 2, 4, 8)
ROUND2_SIZES = (1, 2, 4, 8, 16)


@register("leduc5")
class Leduc5(DeckPoker):
    """Leduc-5 (Brown & Sandholm, "Reduced Space and Faster Convergence ... via Regret-Based
    Pruning", 2016).

    Leduc Hold'em with rank-level chance (J, Q, K, two copies each; a rank is dealt with
    probability remaining/total), but a player may bet 0.5, 1, 2, 4 or 8 chips in round 1 and
    1, 2, 4, 8 or 16 chips in round 2. Two-bet maximum per round, fold only when facing a bet,
    P1 first in both rounds.
    [inferred] Raises take the same 5 sizes: a raise puts in the amount to call plus the size.
    This gives 34,224 infosets (Brown's count), 100,464 (infoset, action) pairs, 177,684
    terminals. Actions: 0 fold, 1 check/call, 2..6 bet/raise with the size of that index.
    No parameters.
    """

    def __init__(self):
        self._setup_deck(
            num_types=3,
            copies=2,
            suits=False,
            round_sizes=(ROUND1_SIZES, ROUND2_SIZES),
            max_raises=1,
        )
