"""Generic Poker GP(T, C, R, B) in step form (GAMES.md 1.4; rules in
``games_tensor.games.generic_poker`` and ``games_tensor.games._poker``).

State: the dealt card types, the round, each round's actions, the betting state of the
round (amount to call, aggressive actions) and the contributions. GP(4,6,4,4): 6 actions,
4 chance outcomes, a 49-bit information-state key (2 uint32 words).
"""

from __future__ import annotations

from typing import NamedTuple

import jax
import jax.numpy as jnp
import numpy as np

from games_tensor._rules import CHANCE, TERMINAL
from games_tensor.games._poker import CALL, FOLD, RAISE0
from games_tensor.step._core import (
    KeyLayout,
    StepGame,
    bits_for,
    check_key_width,
    float_dtype,
    one_hot_set,
    step_game,
)

RUNNING, FOLDED, SHOWDOWN = 0, 1, 2
_DEALS_BEFORE_ROUND = (2, 3)  # private cards before round 1, the public card before round 2


class GenericPokerState(NamedTuple):
    deals: jax.Array  # [3] int32: card types of P1, P2 and the public card; -1 = not dealt
    num_deals: jax.Array  # [] int32
    round: jax.Array  # [] int32: 0 or 1
    actions: jax.Array  # [2, L] int32: each round's actions in order, -1 = none (L = R + 3)
    count: jax.Array  # [] int32: actions taken in the current round
    to_call: jax.Array  # [] int32: chips the player to move must add to call
    aggressive: jax.Array  # [] int32: bets and raises in the current round
    contrib: jax.Array  # [2] int32: chips each player has put in, ante included
    end: jax.Array  # [] int32: RUNNING, FOLDED or SHOWDOWN


@step_game
class GenericPokerStep(StepGame):
    """GP(num_types, cards_per_type, max_raises, num_bet_sizes), GTLibrary betting.

    Actions as the compiled rules: 0 fold, 1 check/call, 2 + i bet/raise with size index
    i (round 1 sizes 2, 4, ..., 2B; round 2 doubled). Chance outcome ``k`` deals card
    type ``k`` with probability (copies left) / (cards left) (K = T; exhausted types
    have probability 0).

    Information-state key of player p: ``player`` (1 bit), ``card``: own type + 1,
    ``public``: public type + 1 once dealt, else 0 (``bits(T)`` bits each), ``round1``
    and ``round2``: L = R + 3 action codes each (action + 1, 0 = none; ``bits(A)``
    bits), as the compiled key "P0 card:K | round1: cr4c | public:Q | round2: ".
    GP(3,3,2,2): 35 bits; GP(4,6,4,4): 49 bits (2 words).

    Public-state key: ``public``, ``round1``, ``round2`` as above (the compiled public
    state string shows the same: the betting and the public card).
    """

    num_types: int = 3
    cards_per_type: int = 3
    max_raises: int = 2
    num_bet_sizes: int = 2

    name = "generic_poker"

    def __post_init__(self):
        t, b = self.num_types, self.num_bet_sizes
        length = self.max_raises + 3  # check, bet, R raises, call
        a = 2 + b
        info = KeyLayout(
            [
                ("player", 1, 1),
                ("card", 1, bits_for(t)),
                ("public", 1, bits_for(t)),
                ("round1", length, bits_for(a)),
                ("round2", length, bits_for(a)),
            ]
        )
        public = KeyLayout(
            [
                ("public", 1, bits_for(t)),
                ("round1", length, bits_for(a)),
                ("round2", length, bits_for(a)),
            ]
        )
        check_key_width(self.name, info, self.params())
        r1 = 2 * np.arange(1, b + 1)
        self._set(
            num_actions=a,
            num_chance_outcomes=t,
            max_utility=float(1 + 6 * b * (self.max_raises + 1)),  # ante + both rounds
            max_depth=3 + 2 * length,
            round_length=length,
            sizes=np.stack([r1, 2 * r1]).astype(np.int32),  # [2, B]
            info_layout=info,
            public_layout=public,
        )

    def init(self) -> GenericPokerState:
        i32 = jnp.int32
        return GenericPokerState(
            deals=jnp.full((3,), -1, i32),
            num_deals=jnp.zeros((), i32),
            round=jnp.zeros((), i32),
            actions=jnp.full((2, self.round_length), -1, i32),
            count=jnp.zeros((), i32),
            to_call=jnp.zeros((), i32),
            aggressive=jnp.zeros((), i32),
            contrib=jnp.ones((2,), i32),
            end=jnp.full((), RUNNING, i32),
        )

    def _dealing(self, state):
        need = jnp.asarray(_DEALS_BEFORE_ROUND, jnp.int32)[state.round]
        return (state.num_deals < need) & (state.end == RUNNING)

    def current_player(self, state):
        player = jnp.where(self._dealing(state), CHANCE, state.count & 1)
        return jnp.where(state.end != RUNNING, TERMINAL, player).astype(jnp.int32)

    def legal_mask(self, state):
        deciding = ~self._dealing(state) & (state.end == RUNNING)
        raise_ok = jnp.broadcast_to(state.aggressive <= self.max_raises, (self.num_bet_sizes,))
        head = jnp.stack([state.to_call > 0, jnp.ones((), bool)])
        return jnp.concatenate([head, raise_ok]) & deciding

    def chance_probs(self, state):
        t, c = self.num_types, self.cards_per_type
        dealt = (state.deals[:, None] == jnp.arange(t)[None, :]).sum(axis=0)
        left = (c - dealt).astype(float_dtype())
        total = jnp.maximum(t * c - state.num_deals, 1).astype(float_dtype())
        return left / total * self._dealing(state)

    def _apply(self, state, action):
        action = jnp.asarray(action, jnp.int32)
        dealing = self._dealing(state)
        dealt = state._replace(
            deals=one_hot_set(state.deals, state.num_deals, action),
            num_deals=state.num_deals + 1,
        )
        # betting
        rnd, i = state.round, state.count
        p = i & 1
        size = jnp.asarray(self.sizes)[rnd, jnp.clip(action - RAISE0, 0, self.num_bet_sizes - 1)]
        is_raise = action >= RAISE0
        add = jnp.where(action == CALL, state.to_call, jnp.where(is_raise, state.to_call + size, 0))
        closes = (action == CALL) & ((state.to_call > 0) | (i > 0))
        row = jnp.arange(2)[:, None] == rnd
        actions = jnp.where(row, one_hot_set(state.actions, i, action), state.actions)
        next_round = closes & (rnd == 0)
        end = jnp.where(action == FOLD, FOLDED, jnp.where(closes & (rnd == 1), SHOWDOWN, RUNNING))
        bet = GenericPokerState(
            deals=state.deals,
            num_deals=state.num_deals,
            round=rnd + next_round.astype(jnp.int32),
            actions=actions,
            count=jnp.where(next_round, 0, i + 1),
            to_call=jnp.where(is_raise & ~next_round, size, 0),
            aggressive=jnp.where(next_round, 0, state.aggressive + is_raise.astype(jnp.int32)),
            contrib=state.contrib + add * (jnp.arange(2) == p),
            end=end.astype(jnp.int32),
        )
        return jax.tree_util.tree_map(lambda a, b: jnp.where(dealing, a, b), dealt, bet)

    def _showdown(self, deals):
        a, b, pub = deals[0], deals[1], deals[2]
        a_pairs, b_pairs = a == pub, b == pub
        w = jnp.where(a > b, 1, jnp.where(a < b, -1, 0))
        w = jnp.where(a_pairs | b_pairs, 0, w)
        return jnp.where(a_pairs & ~b_pairs, 1, jnp.where(b_pairs & ~a_pairs, -1, w))

    def returns(self, state):
        c0, c1 = state.contrib[0], state.contrib[1]
        folder = (state.count - 1) & 1
        u_fold = jnp.where(folder == 0, -c0, c1)
        w = self._showdown(state.deals)
        u_show = jnp.where(w > 0, c1, jnp.where(w < 0, -c0, 0))
        u0 = jnp.where(state.end == FOLDED, u_fold, jnp.where(state.end == SHOWDOWN, u_show, 0))
        return jnp.stack([u0, -u0]).astype(float_dtype())

    def _public_fields(self, state):
        pub = jnp.where(state.num_deals > 2, state.deals[2] + 1, 0)
        return {"public": pub, "round1": state.actions[0] + 1, "round2": state.actions[1] + 1}

    def information_state_key(self, state, player):
        player = jnp.asarray(player, jnp.int32)
        own = jnp.where(player == 0, state.deals[0], state.deals[1]) + 1
        return self.info_layout.pack({"player": player, "card": own, **self._public_fields(state)})

    def public_state_key(self, state):
        return self.public_layout.pack(self._public_fields(state))

    def _prefix_of(self, state, t, fixed):
        """The deals agree with ``fixed`` ([3] types, -1 = free) and the deck can still
        deal them; the finished rounds equal the target's, the current one a prefix.
        Also returns whether both rounds' actions equal the target's."""
        dealt = jnp.arange(3) < state.num_deals
        deals_ok = jnp.all(~dealt | (fixed < 0) | (state.deals == fixed))
        cards = jnp.where(dealt, state.deals, fixed)
        counts = jnp.sum(cards[:, None] == jnp.arange(self.num_types)[None, :], axis=0)
        deck_ok = jnp.all(counts <= self.cards_per_type)
        codes = state.actions + 1  # [2, L], 0 = none
        target = jnp.stack([t["round1"], t["round2"]])
        prefix = (codes == 0) | (codes == target)
        before = jnp.arange(2)[:, None] < state.round
        rounds_ok = jnp.all(jnp.where(before, codes == target, prefix))
        round_ok = (state.round == 0) | (t["public"][0] > 0)  # round 2 needs the target there
        return deals_ok & deck_ok & rounds_ok & round_ok, jnp.all(codes == target)

    def consistent(self, state, target_key):
        t = self.info_layout.fields_of(target_key)
        player, card = t["player"][0], t["card"][0]
        # the deals the target fixes: the player's card and the public card (-1 = free)
        fixed = jnp.stack(
            [jnp.where(player == 0, card, 0), jnp.where(player == 1, card, 0), t["public"][0]]
        )
        ok, _ = self._prefix_of(state, t, fixed - 1)
        return ok & (state.end == RUNNING)

    def num_completions(self, state, target_key):
        # the key fixes the own card, the public card (once dealt in the target) and
        # the betting; the infoset's histories differ in the opponent's card type: one
        # history per type the deck can still give next to the fixed cards
        t = self.info_layout.fields_of(target_key)
        player = t["player"][0]
        own, pub = t["card"][0] - 1, t["public"][0] - 1  # -1: none
        types = jnp.arange(self.num_types)
        copies = self.cards_per_type - (types == own) - (types == pub)
        free = jnp.sum(copies >= 1).astype(float_dtype())
        opp_dealt = state.num_deals > 1 - player  # deals: P1's card, P2's, public
        count = jnp.where(opp_dealt, jnp.ones((), float_dtype()), free)
        return jnp.where(self.consistent(state, target_key), count, 0.0)

    def public_consistent(self, state, target_public_key):
        t = self.public_layout.fields_of(target_public_key)
        zero = jnp.zeros((), jnp.int32)
        ok, same = self._prefix_of(state, t, jnp.stack([zero, zero, t["public"][0]]) - 1)
        return ok & ((state.end == RUNNING) | same)

    @classmethod
    def from_rules_params(cls, num_types, cards_per_type, max_raises, num_bet_sizes):
        return cls(
            num_types=num_types,
            cards_per_type=cards_per_type,
            max_raises=max_raises,
            num_bet_sizes=num_bet_sizes,
        )
