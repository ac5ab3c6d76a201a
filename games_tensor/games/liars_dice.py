"""Liar's Dice LD(D1, D2) as in the OOS paper (Lisy, Lanctot, Bowling, AAMAS 2015).

See :class:`LiarsDice` for the rules and parameters.
"""

from __future__ import annotations

import functools
import math

from games_tensor._registry import register
from games_tensor._rules import CHANCE, TERMINAL, Rules, check_range


@register("liars_dice")
class LiarsDice(Rules):
    """Liar's Dice LD(dice0, dice1) with ``faces``-sided dice; the last face is wild.

    Paper: Lisy, Lanctot, Bowling, "Online Monte Carlo Counterfactual Regret
    Minimization for Search in Imperfect Information Games" (AAMAS 2015), the
    game "LD(D1, D2)"; identical to GTLibrary ``LiarsDice*`` and to OpenSpiel
    ``liars_dice`` with ``bidding_rule="reset-face"``.

    Rules:
      * Chance rolls P1's dice one at a time, then P2's, each uniform over
        ``1..faces``. Each player sees only their own dice.
      * P1 bids first; players alternate. A bid is (quantity, face) with bid
        index ``b`` in ``[0, (dice0 + dice1) * faces)``: quantity ``b // faces + 1``,
        face ``b % faces + 1`` (OpenSpiel's action numbering). A new bid must have a
        strictly larger index (lexicographic in (quantity, face)).
      * Instead of bidding, the player to move may call liar: action
        ``(dice0 + dice1) * faces``. The opening move cannot be a call; after the
        highest bid only a call is legal.
      * At a call, count the dice of both players showing the bid face or the
        wild face ``faces``. If the count is at least the quantity, the bidder
        wins; otherwise the caller wins. Payoff +1 / -1.

    [inferred] choices (see GAMES.md 1.5 and 1.10):
      * Chance rolls the dice in order (the tree has faces^(dice0+dice1) roll
        sequences, as in GTLibrary and OpenSpiel), but a player's information
        state shows their own dice sorted, as OpenSpiel does (and Lanctot's
        ``bluff.cpp``: 2*21*2^23 infosets for LD(2,2)). GTLibrary keys the dice
        in roll order instead; the two are strategically equivalent (payoffs
        depend only on the multiset of dice), and coincide for one die each.
      * ``faces`` generalises the six-sided die; the highest face is always wild.
      * The bounded-recall abstraction (Neller & Hnath 2011; OpenSpiel
        ``liars_dice_ir``) keeps the player, own dice and the last ``recall`` bids.

    Information-state strings follow OpenSpiel's ``liars_dice`` format: own dice
    sorted (digits, comma-separated when ``faces > 9``) followed by the bids as
    ``quantity-face``, e.g. ``"3 1-1 1-4"``. Abstract keys follow
    ``liars_dice_ir``: ``"P0 3 1-1 1-4"`` (players 0-indexed).

    Args:
      dice0: number of dice of P1 (>= 1).
      dice1: number of dice of P2 (>= 1).
      faces: sides per die (>= 2); the face ``faces`` is wild.
      recall: ``None`` (no abstraction) or the number r >= 1 of most recent bids
        kept by the imperfect-recall abstraction.

    Sizes: LD(1,1) has 24,576 infosets (12,288 per player), 49,140
    (infoset, action) pairs, 147,420 terminals and 294,883 histories.
    """

    def __init__(self, dice0: int = 1, dice1: int = 1, faces: int = 6, recall: int | None = None):
        check_range("dice0", dice0, 1)
        check_range("dice1", dice1, 1)
        check_range("faces", faces, 2)
        if recall is not None:
            check_range("recall", recall, 1, (dice0 + dice1) * faces)
        self.dice0 = dice0
        self.dice1 = dice1
        self.faces = faces
        self.recall = recall
        self.num_bids = (dice0 + dice1) * faces
        self.liar = self.num_bids
        self.num_actions = self.num_bids + 1
        self._sep = "" if faces <= 9 else ","
        self._win = (1.0, -1.0)
        self._lose = (-1.0, 1.0)
        # Per-bid tables are built on first use (compile), after the size check: building
        # them here would take O(num_bids^2) memory for parameters the guard refuses.

    @functools.cached_property
    def _bid_names(self):
        faces = self.faces
        return tuple(f"{b // faces + 1}-{b % faces + 1}" for b in range(self.num_bids))

    @functools.cached_property
    def _first_actions(self):
        return tuple(range(self.num_bids))

    @functools.cached_property
    def _after(self):
        # Legal actions after last bid b: higher bids, then liar.
        return tuple(
            tuple(range(b + 1, self.num_bids)) + (self.liar,) for b in range(self.num_bids)
        )

    @functools.cached_property
    def _chance(self):
        return tuple((o, 1.0 / self.faces) for o in range(self.faces))

    def params(self):
        return {
            "dice0": self.dice0,
            "dice1": self.dice1,
            "faces": self.faces,
            "recall": self.recall,
        }

    # state: (dice0 tuple, dice1 tuple, bids tuple, called bool); dice values 1..faces.
    def initial_state(self):
        return ((), (), (), False)

    def current_player(self, state):
        d0, d1, bids, called = state
        if len(d0) < self.dice0 or len(d1) < self.dice1:
            return CHANCE
        if called:
            return TERMINAL
        return len(bids) & 1

    def chance_outcomes(self, state):
        return self._chance

    def legal_actions(self, state):
        bids = state[2]
        if not bids:
            return self._first_actions
        return self._after[bids[-1]]

    def apply(self, state, action):
        d0, d1, bids, called = state
        if len(d0) < self.dice0:
            return (d0 + (action + 1,), d1, bids, False)
        if len(d1) < self.dice1:
            return (d0, d1 + (action + 1,), bids, False)
        if action == self.liar:
            if not bids:
                raise ValueError("the opening move cannot be a call")
            return (d0, d1, bids, True)
        if bids and action <= bids[-1]:
            raise ValueError(f"bid {action} does not raise the last bid {bids[-1]}")
        return (d0, d1, bids + (action,), False)

    def returns(self, state):
        d0, d1, bids, _ = state
        b = bids[-1]
        quantity = b // self.faces + 1
        face = b % self.faces + 1
        wild = self.faces
        count = sum(1 for d in d0 + d1 if d == face or d == wild)
        bidder = (len(bids) - 1) & 1
        bidder_wins = count >= quantity
        p0_wins = bidder_wins == (bidder == 0)
        return self._win if p0_wins else self._lose

    # ---- what players know ------------------------------------------------
    def _dice_str(self, dice):
        if len(dice) > 1:
            dice = sorted(dice)
        return self._sep.join(str(d) for d in dice)

    def information_state(self, state, player):
        names = self._bid_names
        s = self._dice_str(state[player])
        bids = state[2]
        if bids:
            s += " " + " ".join(names[b] for b in bids)
        return s

    def abstract_information_state(self, state, player):
        if self.recall is None:
            return None
        names = self._bid_names
        s = f"P{player} " + self._dice_str(state[player])
        bids = state[2][-self.recall :]
        if bids:
            s += " " + " ".join(names[b] for b in bids)
        return s

    def public_state(self, state):
        d0, d1, bids, called = state
        if len(d0) < self.dice0 or len(d1) < self.dice1:
            return f"roll{len(d0) + len(d1)}"
        s = "bids:" + " ".join(self._bid_names[b] for b in bids)
        return s + " Liar" if called else s

    def action_name(self, action):
        if action == self.liar:
            return "Liar"
        return self._bid_names[action]

    def estimated_histories(self):
        # Ordered dice rolls x bid-sequence subsets x (decision node + terminal).
        # LD(1,1): 36 * 4096 * 2 = 294,912 (exact: 294,883). Past the float range the
        # exact power would be a huge integer (dice0=10**9): return inf from the logarithm.
        dice = self.dice0 + self.dice1
        if self.num_bids > 1000 or dice * math.log2(self.faces) + self.num_bids > 1000:
            return math.inf
        return self.faces**dice * 2**self.num_bids * 2
