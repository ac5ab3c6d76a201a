"""Liar's Dice LD(D1, D2) in step form (GAMES.md 1.5; rules in ``games_tensor.games.liars_dice``).

State: the dice in roll order, the set of bids made (bids strictly increase, so the set
is the sequence), the last bid and whether liar was called. LD(2,2) has 25 actions and
a 31-bit information-state key (one uint32 word).
"""

from __future__ import annotations

from typing import NamedTuple

import jax
import jax.numpy as jnp
import numpy as np

from games_tensor._rules import CHANCE, TERMINAL
from games_tensor.step._core import (
    KeyLayout,
    StepGame,
    bits_for,
    check_key_width,
    float_dtype,
    one_hot_set,
    small_sort,
    step_game,
)


class LiarsDiceState(NamedTuple):
    dice: jax.Array  # [D1 + D2] int32: faces 1..F in roll order (P1's first), 0 = not rolled
    rolled: jax.Array  # [] int32: dice rolled so far
    bids: jax.Array  # [NB] bool: bids made (NB = (D1 + D2) * F)
    last_bid: jax.Array  # [] int32: the last bid, -1 before the first
    num_bids: jax.Array  # [] int32
    called: jax.Array  # [] bool: liar was called (terminal)


@step_game
class LiarsDiceStep(StepGame):
    """LD(dice0, dice1) with ``faces``-sided dice, the last face wild.

    Actions as the compiled rules: bid ``b`` in ``[0, NB)`` (quantity ``b // F + 1``,
    face ``b % F + 1``), liar = ``NB``. Chance outcome ``k`` rolls face ``k + 1``
    (K = F, uniform): P1's dice first, then P2's.

    Information-state key of player p (fields in packing order, :class:`KeyLayout`):
    ``player`` (1 bit), ``dice``: p's own dice sorted ascending, max(D1, D2) values of
    ``bits(F)`` bits (0 pads the shorter hand and marks dice not yet rolled),
    ``bids``: NB 1-bit flags, bid b made. LD(1,1): 16 bits; LD(2,2): 31 bits (1 word).

    Public-state key: ``rolled`` (dice rolled so far), ``called`` (1 bit), ``bids``
    (NB flags); the compiled public states are "roll<n>" before the last die and
    "bids:<sequence>[ Liar]" after it.
    """

    dice0: int = 1
    dice1: int = 1
    faces: int = 6

    name = "liars_dice"

    def __post_init__(self):
        nd = self.dice0 + self.dice1
        nb = nd * self.faces
        dmax = max(self.dice0, self.dice1)
        info = KeyLayout([("player", 1, 1), ("dice", dmax, bits_for(self.faces)), ("bids", nb, 1)])
        public = KeyLayout([("rolled", 1, bits_for(nd)), ("called", 1, 1), ("bids", nb, 1)])
        check_key_width(self.name, info, self.params())
        self._set(
            num_dice=nd,
            num_bids=nb,
            num_actions=nb + 1,
            num_chance_outcomes=self.faces,
            max_utility=1.0,
            max_depth=nd + nb + 1,
            info_layout=info,
            public_layout=public,
            _quantity=np.arange(nb, dtype=np.int32) // self.faces + 1,
            _face=np.arange(nb, dtype=np.int32) % self.faces + 1,
        )

    def init(self) -> LiarsDiceState:
        i32 = jnp.int32
        return LiarsDiceState(
            dice=jnp.zeros((self.num_dice,), i32),
            rolled=jnp.zeros((), i32),
            bids=jnp.zeros((self.num_bids,), bool),
            last_bid=jnp.full((), -1, i32),
            num_bids=jnp.zeros((), i32),
            called=jnp.zeros((), bool),
        )

    def current_player(self, state):
        player = jnp.where(state.called, TERMINAL, state.num_bids & 1)
        return jnp.where(state.rolled < self.num_dice, CHANCE, player).astype(jnp.int32)

    def legal_mask(self, state):
        deciding = (state.rolled == self.num_dice) & ~state.called
        raise_ok = jnp.arange(self.num_bids) > state.last_bid
        liar_ok = state.num_bids > 0
        return jnp.concatenate([raise_ok, liar_ok[None]]) & deciding

    def chance_probs(self, state):
        chance = state.rolled < self.num_dice
        p = jnp.where(chance, 1.0 / self.faces, 0.0).astype(float_dtype())
        return jnp.broadcast_to(p, (self.faces,))

    def _apply(self, state, action):
        action = jnp.asarray(action, jnp.int32)
        chance = state.rolled < self.num_dice
        liar = action == self.num_bids
        bid = ~chance & ~liar
        return LiarsDiceState(
            dice=jnp.where(chance, one_hot_set(state.dice, state.rolled, action + 1), state.dice),
            rolled=state.rolled + chance.astype(jnp.int32),
            bids=state.bids | ((jnp.arange(self.num_bids) == action) & bid),
            last_bid=jnp.where(bid, action, state.last_bid),
            num_bids=state.num_bids + bid.astype(jnp.int32),
            called=state.called | (~chance & liar),
        )

    def returns(self, state):
        b = jnp.maximum(state.last_bid, 0)
        quantity = jnp.asarray(self._quantity)[b]
        face = jnp.asarray(self._face)[b]
        count = jnp.sum((state.dice == face) | (state.dice == self.faces))
        bidder = (state.num_bids - 1) & 1
        p0_wins = (count >= quantity) == (bidder == 0)
        u0 = jnp.where(p0_wins, 1.0, -1.0) * state.called
        return jnp.stack([u0, -u0]).astype(float_dtype())

    def _own_dice(self, state, player):
        dmax = max(self.dice0, self.dice1)
        d0 = jnp.pad(state.dice[: self.dice0], (0, dmax - self.dice0))
        d1 = jnp.pad(state.dice[self.dice0 :], (0, dmax - self.dice1))
        return small_sort(jnp.where(player == 0, d0, d1))

    def information_state_key(self, state, player):
        player = jnp.asarray(player, jnp.int32)
        return self.info_layout.pack(
            {"player": player, "dice": self._own_dice(state, player), "bids": state.bids}
        )

    def public_state_key(self, state):
        return self.public_layout.pack(
            {"rolled": state.rolled, "called": state.called, "bids": state.bids}
        )

    def consistent(self, state, target_key):
        t = self.info_layout.fields_of(target_key)
        player = t["player"][0]
        faces = jnp.arange(1, self.faces + 1)
        own = self._own_dice(state, player)  # rolled own dice so far (0 = not yet)
        have = jnp.sum(own[:, None] == faces[None, :], axis=0)
        need = jnp.sum(t["dice"][:, None] == faces[None, :], axis=0)
        dice_ok = jnp.all(have <= need)
        # the bids so far are exactly the target's bids up to the last one made
        upto = jnp.arange(self.num_bids) <= state.last_bid
        bids_ok = jnp.all(state.bids == (t["bids"].astype(bool) & upto))
        return dice_ok & bids_ok & ~state.called

    def _next_bid(self, state, bids):
        """The smallest bid of the flags ``bids`` [NB] above the state's last bid (-1:
        none)."""
        later = bids.astype(bool) & (jnp.arange(self.num_bids) > state.last_bid)
        return jnp.where(jnp.any(later), jnp.argmax(later), -1)

    def consistent_children(self, state, target_key, width):
        # without applying the children: a die of the target's player keeps the state
        # consistent iff the key still needs that face, the opponent's any face; a bid
        # iff it is the key's next bid; liar never (the target is a decision node)
        t = self.info_layout.fields_of(target_key)
        player = t["player"][0]
        faces = jnp.arange(1, self.faces + 1)
        have = jnp.sum(self._own_dice(state, player)[:, None] == faces[None, :], axis=0)
        need = jnp.sum(t["dice"][:, None] == faces[None, :], axis=0)
        owner = (state.rolled >= self.dice0).astype(jnp.int32)
        slots = jnp.arange(width)
        face_ok = jnp.pad(need > have, (0, max(width - self.faces, 0)))[:width]
        roll = jnp.where(owner == player, face_ok, slots < self.faces)
        bid = slots == self._next_bid(state, t["bids"])
        chance = state.rolled < self.num_dice
        return self.consistent(state, target_key) & jnp.where(chance, roll, bid)

    def public_consistent_children(self, state, target_public_key, width):
        t = self.public_layout.fields_of(target_public_key)
        slots = jnp.arange(width)
        roll = (slots < self.faces) & (state.rolled + 1 <= t["rolled"][0])
        bid = (slots == self._next_bid(state, t["bids"])) | (
            (slots == self.num_bids) & (t["called"][0] > 0)
        )
        chance = state.rolled < self.num_dice
        return self.public_consistent(state, target_public_key) & jnp.where(chance, roll, bid)

    def num_completions(self, state, target_key):
        # own dice still to roll: any order of the key's dice not rolled yet
        # (multinomial); the opponent's dice still to roll: any faces (F^m); the bids
        # are fixed by the key
        c = self._counting(state, target_key)
        count = self._count(c["need"], c["have"], c["opp_left"])
        return jnp.where(self.consistent(state, target_key), count, 0.0)

    def children_completions(self, state, target_key, width):
        # num_completions of every child without applying them (the same arithmetic on
        # the children's die counts): a die of the target's player adds its face to
        # the own counts, a die of the opponent leaves one opponent die less to roll;
        # a bid keeps the dice and must be the key's next bid (so its bids are the
        # key's up to it); liar ends the game (0). Meaningless slots (faces beyond F
        # at a chance node, illegal bids) get values callers mask.
        t = self.info_layout.fields_of(target_key)
        c = self._counting(state, target_key)
        player, need, have, opp_left = c["player"], c["need"], c["have"], c["opp_left"]
        slots = jnp.arange(width)
        # a die: own -> have + e_k (and its check), opponent's -> one die less to roll.
        # Only the F face slots differ (a slot k >= F adds no face: the counts of the
        # state's own dice), so the [F, F] counts are computed and the rest broadcast
        F = min(self.faces, width)
        faces = jnp.arange(self.faces)
        owner = (state.rolled >= self.dice0).astype(jnp.int32)
        own_die = owner == player
        opp_k = opp_left - (~own_die).astype(opp_left.dtype)
        have_k = have[None, :] + ((faces[:F, None] == faces[None, :]) & own_die)  # [F, F]
        have_k = jnp.concatenate([have_k, have[None, :]])  # [F + 1, F]: the last, k >= F
        roll = jnp.where(
            jnp.all(have_k <= need[None, :], axis=1) & c["bids_ok"],
            self._count(need[None, :], have_k, opp_k),
            0.0,
        )
        roll = jnp.concatenate([roll[:F], jnp.broadcast_to(roll[F], (width - F,))])
        # a bid k: the state's bids plus k must be the key's bids up to k, i.e. they
        # agree below k, the key bids k and the state has no bid above k (O(NB), not
        # a [width, NB] comparison; slots k >= NB are masked below)
        nb = jnp.arange(self.num_bids)
        key_bids = t["bids"].astype(bool)
        first_diff = jnp.min(jnp.where(state.bids != key_bids, nb, self.num_bids))
        last_bid = jnp.max(jnp.where(state.bids, nb, -1))
        key_k = jnp.zeros((width,), bool).at[: self.num_bids].set(key_bids[:width])
        bids_ok_k = (slots <= first_diff) & key_k & (slots >= last_bid)
        count = self._count(need, have, opp_left)
        bid = jnp.where(bids_ok_k & c["dice_ok"] & (slots < self.num_bids), count, 0.0)
        chance = state.rolled < self.num_dice
        out = jnp.where(chance, roll, bid)
        return jnp.where(state.called, 0.0, out).astype(float_dtype())

    def _counting(self, state, target_key):
        """The pieces of :meth:`num_completions`: the target's player, its die counts
        by face in the key (need) and rolled so far (have), the opponent's dice still
        to roll, and the checks of :meth:`consistent` on the dice and on the bids."""
        t = self.info_layout.fields_of(target_key)
        player = t["player"][0]
        faces = jnp.arange(1, self.faces + 1)
        own = self._own_dice(state, player)
        have = jnp.sum(own[:, None] == faces[None, :], axis=0)
        need = jnp.sum(t["dice"][:, None] == faces[None, :], axis=0)
        rolled0 = jnp.minimum(state.rolled, self.dice0)
        rolled1 = state.rolled - rolled0
        opp_left = jnp.where(player == 0, self.dice1 - rolled1, self.dice0 - rolled0)
        upto = jnp.arange(self.num_bids) <= state.last_bid
        bids_ok = jnp.all(state.bids == (t["bids"].astype(bool) & upto))
        return dict(
            player=player,
            need=need,
            have=have,
            opp_left=opp_left,
            dice_ok=jnp.all(have <= need),
            bids_ok=bids_ok,
        )

    def _count(self, need, have, opp_left):
        """Histories completing die counts ``have`` to ``need`` ([..., F]) with
        ``opp_left`` ([...]) opponent dice to roll: multinomial(left) * F^opp_left."""
        left = jnp.maximum(need - have, 0)
        fact = np.cumprod(np.concatenate([[1.0], np.arange(1, self.num_dice + 1)]))
        orders = _lookup(fact, jnp.sum(left, axis=-1)) / jnp.prod(_lookup(fact, left), axis=-1)
        free = _lookup(float(self.faces) ** np.arange(self.num_dice + 1), opp_left)
        return orders * free

    def public_consistent(self, state, target_public_key):
        t = self.public_layout.fields_of(target_public_key)
        upto = jnp.arange(self.num_bids) <= state.last_bid
        bids_ok = jnp.all(state.bids == (t["bids"].astype(bool) & upto))
        called_ok = ~state.called | (t["called"][0] > 0)
        return (state.rolled <= t["rolled"][0]) & bids_ok & called_ok

    @classmethod
    def from_rules_params(cls, dice0, dice1, faces, recall):
        if recall is not None:
            raise ValueError(
                f"recall={recall!r} is not supported by the liars_dice step form (it has no "
                "imperfect-recall abstraction); valid: recall=None"
            )
        return cls(dice0=dice0, dice1=dice1, faces=faces)


def _lookup(values: np.ndarray, index: jax.Array) -> jax.Array:
    """``values[index]`` (host ``values [n]``, ``index`` in ``0 .. n - 1``, any shape)
    as a chain of n selects in :func:`float_dtype`: elementwise work that fuses, not a
    gather (XLA:CPU runs a gather as a scalar loop; LD(2,2)'s children counts at
    B = 256 took about half the time with this and the [F + 1, F] roll counts). The
    counts' tables (factorials, powers of F up to the number of dice) hold small
    integers, exact in float32. An index outside gives ``values[0]``: only slots that
    callers mask have one (an opponent's die "rolled" at a bidding node)."""
    out = jnp.full(index.shape, values[0], float_dtype())
    for i in range(1, len(values)):
        out = jnp.where(index == i, jnp.asarray(values[i], float_dtype()), out)
    return out
