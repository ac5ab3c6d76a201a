"""II-Goofspiel II-GS(N) in step form (GAMES.md 1.7; rules in ``games_tensor.games.ii_goofspiel``).

State: round, who bids next, P1's pending card, both hands, the cards played per round
and the round outcomes. No chance nodes (K = 1, always zero). II-GS(13): 13 actions,
an 79-bit information-state key (3 uint32 words).
"""

from __future__ import annotations

from typing import NamedTuple

import jax
import jax.numpy as jnp

from games_tensor._rules import TERMINAL
from games_tensor.step._core import (
    KeyLayout,
    StepGame,
    bits_for,
    check_key_width,
    computed_once,
    float_dtype,
    one_hot_set,
    step_game,
)

WIN, LOSS, TIE = 1, 2, 3  # round outcome codes from P1's view; 0 = round not played


class IIGoofspielState(NamedTuple):
    phase: jax.Array  # [] int32: 0 = P1 to bid, 1 = P2 to bid, TERMINAL
    round: jax.Array  # [] int32: current round (N at the end)
    pending: jax.Array  # [] int32: P1's card this round, -1 when P1 has not bid
    hands: jax.Array  # [2, N] bool: cards still held
    cards: jax.Array  # [2, N] int32: card each player played in each round (0 if not played)
    outcomes: jax.Array  # [N] int32: WIN / LOSS / TIE from P1's view, 0 = not played
    diff: jax.Array  # [] int32: P1's points minus P2's


class _HallPairs(NamedTuple):
    """Pieces of :meth:`IIGoofspielStep._hall` (int32, [n + 1] each)."""

    xs: jax.Array  # x = -1 .. n-1: last card of the low block
    ys: jax.Array  # y = 0 .. n: first card of the high block
    by_x: jax.Array  # d[x] + max e[>= x + 2]
    by_y: jax.Array  # e[y] + max d[<= y - 2]


class _CompletionDP(NamedTuple):
    """The counting DP's pieces (:meth:`IIGoofspielStep._completion_dp`)."""

    start: jax.Array  # [n + 1] F_0 = e_0 (no "above" round served)
    hit: jax.Array  # [n + 1] 1 at s = #above rounds
    avail: jax.Array  # [n] bool: the opponent's cards free for the rounds to assign
    serve: jax.Array  # [n, n + 1] per card x and s: the above rounds it may serve
    pick: jax.Array  # [n, n + 1] per card x and s: the below round ending at x's picks
    pick_less: jax.Array  # [n, n + 1] the same with one available card <= x less
    ties_ok: jax.Array  # [] bool: every tied round's card is in the opponent's hand
    rest: jax.Array  # [] int: cards left beyond the rounds to assign
    player: jax.Array  # [] the target player
    cards: jax.Array  # [n] the target player's cards by round (key)
    outcomes: jax.Array  # [n] the rounds' outcomes (key; 0 = not played)
    rnd: jax.Array  # [] the state's round
    r: jax.Array  # [] min(round, n - 1)
    done: jax.Array  # [] rounds played in the target


@step_game
class IIGoofspielStep(StepGame):
    """II-GS(num_cards): bid card index as the action; P1 bids, then P2 without seeing it.

    Information-state key of player p: ``player`` (1 bit), ``cards``: p's card in each
    round (N values of ``bits(N - 1)`` bits), ``outcomes``: each round's outcome from
    p's own view (N values of 2 bits: 0 not played, 1 won, 2 lost, 3 tie), as the
    compiled key "P0 2W 0L 1T". II-GS(6): 31 bits (1 word); II-GS(13): 79 bits (3 words).

    Public-state key: ``phase`` (2 bits: 0 P1 to bid, 1 P2 to bid, 2 terminal) and the
    outcomes from P1's view, as the compiled public state "<outcomes>[|P0 bid|end]".
    """

    num_cards: int = 4
    first_point: int = 0
    decide_last_card: bool = True

    name = "ii_goofspiel"

    def __post_init__(self):
        n = self.num_cards
        info = KeyLayout([("player", 1, 1), ("cards", n, bits_for(n - 1)), ("outcomes", n, 2)])
        public = KeyLayout([("phase", 1, 2), ("outcomes", n, 2)])
        check_key_width(self.name, info, self.params())
        rounds = n if self.decide_last_card else n - 1
        self._set(
            num_actions=n,
            num_chance_outcomes=1,
            max_utility=1.0,
            max_depth=2 * rounds,
            info_layout=info,
            public_layout=public,
            last_decided_round=rounds - 1,
        )

    def init(self) -> IIGoofspielState:
        n, i32 = self.num_cards, jnp.int32
        return IIGoofspielState(
            phase=jnp.zeros((), i32),
            round=jnp.zeros((), i32),
            pending=jnp.full((), -1, i32),
            hands=jnp.ones((2, n), bool),
            cards=jnp.zeros((2, n), i32),
            outcomes=jnp.zeros((n,), i32),
            diff=jnp.zeros((), i32),
        )

    def current_player(self, state):
        return state.phase

    def legal_mask(self, state):
        hand = jnp.where(state.phase == 0, state.hands[0], state.hands[1])
        return hand & (state.phase >= 0)

    def chance_probs(self, state):
        return jnp.zeros((1,), float_dtype())

    def _resolve(self, rnd, c0, c1, cards, outcomes, diff):
        """Play round ``rnd`` with cards ``c0`` (P1) and ``c1`` (P2)."""
        points = self.first_point + rnd
        code = jnp.where(c0 > c1, WIN, jnp.where(c0 < c1, LOSS, TIE))
        diff = diff + jnp.where(c0 > c1, points, jnp.where(c0 < c1, -points, 0))
        cards = jnp.stack([one_hot_set(cards[0], rnd, c0), one_hot_set(cards[1], rnd, c1)])
        return cards, one_hot_set(outcomes, rnd, code), diff

    def _apply(self, state, action):
        n = self.num_cards
        action = jnp.asarray(action, jnp.int32)
        p1_bids = state.phase == 0
        rnd = state.round
        not_card = jnp.arange(n) != action
        hands = state.hands & jnp.stack([not_card | ~p1_bids, not_card | p1_bids])
        # P2's bid closes the round.
        cards, outcomes, diff = self._resolve(
            rnd, state.pending, action, state.cards, state.outcomes, state.diff
        )
        last = rnd == self.last_decided_round
        if not self.decide_last_card:  # play the remaining cards automatically
            c0 = jnp.argmax(hands[0]).astype(jnp.int32)
            c1 = jnp.argmax(hands[1]).astype(jnp.int32)
            auto = self._resolve(rnd + 1, c0, c1, cards, outcomes, diff)
            cards, outcomes, diff = (
                jnp.where(last, x, y) for x, y in zip(auto, (cards, outcomes, diff), strict=True)
            )
        closed = IIGoofspielState(
            phase=jnp.where(last, TERMINAL, 0).astype(jnp.int32),
            round=jnp.where(last, n, rnd + 1).astype(jnp.int32),
            pending=jnp.full((), -1, jnp.int32),
            hands=hands,
            cards=cards,
            outcomes=outcomes,
            diff=diff,
        )
        opened = state._replace(phase=jnp.ones((), jnp.int32), pending=action, hands=hands)
        return jax.tree_util.tree_map(lambda a, b: jnp.where(p1_bids, a, b), opened, closed)

    def returns(self, state):
        u0 = jnp.sign(state.diff) * (state.phase == TERMINAL)
        return jnp.stack([u0, -u0]).astype(float_dtype())

    def _own_view(self, state, player):
        """``player``'s cards per round and the round outcomes from their view."""
        own = jnp.where(player == 0, state.cards[0], state.cards[1])
        out = state.outcomes
        swapped = jnp.where(out == WIN, LOSS, jnp.where(out == LOSS, WIN, out))
        return own, jnp.where(player == 0, out, swapped)

    def information_state_key(self, state, player):
        player = jnp.asarray(player, jnp.int32)
        own, outcomes = self._own_view(state, player)
        return self.info_layout.pack({"player": player, "cards": own, "outcomes": outcomes})

    def public_state_key(self, state):
        phase = jnp.where(state.phase == TERMINAL, 2, state.phase)
        return self.public_layout.pack({"phase": phase, "outcomes": state.outcomes})

    def _played_ok(self, state, target_key):
        """[] bool: ``state`` is live, not past the target's round, and agrees with the
        target's key on the rounds played and on P1's pending bid (:meth:`consistent`
        without the check that the rounds still to play can be realized)."""
        n = self.num_cards
        t = self.info_layout.fields_of(target_key)
        player = t["player"][0]
        rounds = jnp.arange(n)
        done = jnp.sum(t["outcomes"] > 0)  # T: rounds completed in the target
        rnd, pending = state.round, state.pending
        bid = state.phase == 1  # P1 has bid in round s
        own, seen = self._own_view(state, player)
        past = rounds < rnd
        past_ok = jnp.all(~past | ((own == t["cards"]) & (seen == t["outcomes"])))
        t_card = t["cards"][jnp.minimum(rnd, n - 1)]
        t_out = t["outcomes"][jnp.minimum(rnd, n - 1)]
        # P1's pending bid: P1's own card must be the target's; for P2 it is the
        # opponent's card of round s and must give the target's outcome
        outcome_p2 = jnp.where(pending < t_card, WIN, jnp.where(pending > t_card, LOSS, TIE))
        pending_ok = jnp.where(
            player == 0,
            ~bid | ((rnd < done) & (pending == t_card)),
            ~bid | (rnd == done) | (outcome_p2 == t_out),
        )
        live = (state.phase >= 0) & (rnd <= done)
        return live & past_ok & pending_ok

    def consistent(self, state, target_key):
        n = self.num_cards
        t = self.info_layout.fields_of(target_key)
        player = t["player"][0]
        rounds = jnp.arange(n)
        done = jnp.sum(t["outcomes"] > 0)  # T: rounds completed in the target
        rnd = state.round
        bid = state.phase == 1  # P1 has bid in round s
        # rounds s..T-1 still to play: the opponent's cards in hand must realize the
        # target's outcomes against its own cards: a tie needs its card, a won round a
        # card below the own card, a lost one a card above; Hall's condition
        # (:meth:`_hall`; it replaced a greedy matching loop in session 28)
        fixed = bid & (player == 1)  # round s already has the opponent's card
        todo = (rounds >= rnd) & (rounds < done) & ~((rounds == rnd) & fixed)
        c, o = t["cards"], t["outcomes"]
        hand = jnp.where(player == 0, state.hands[1], state.hands[0])
        tie_card = jnp.any((rounds[None, :] == c[:, None]) & (todo & (o == TIE))[:, None], axis=0)
        free = hand & ~tie_card
        below, above = todo & (o == WIN), todo & (o == LOSS)
        d, e, pairs, _ = self._hall(free, below, above, c)
        ok = jnp.all(~tie_card | hand) & (jnp.max(pairs.by_x) <= 0)
        ok = ok & (jnp.sum(below) + jnp.sum(above) <= jnp.sum(free))
        return self._played_ok(state, target_key) & ok

    def consistent_children(self, state, target_key, width):
        # Without applying the children. The target player's own move: only the key's
        # card of this round (before the target's round). The opponent's card a in
        # round s < T: its outcome against the own card must be the key's, and the
        # opponent's other cards must still realize rounds s+1..T-1: Hall's condition,
        # which for "below c" / "above c" rounds (ties fix their card) reduces to
        # #below(hi <= x) + #above(lo >= y) <= #cards in [0, x] + #cards in [y, N-1]
        # for all x < y - 1, and #rounds <= #cards. P1's bid in P2's target round T: any.
        n = self.num_cards
        t = self.info_layout.fields_of(target_key)
        player = t["player"][0]
        c, o = t["cards"], t["outcomes"]
        cards = jnp.arange(n)
        done = jnp.sum(o > 0)
        rnd = state.round
        r = jnp.minimum(rnd, n - 1)
        own_card, own_out = c[r], o[r]
        mover = state.phase
        hand = jnp.where(player == 0, state.hands[1], state.hands[0])  # opponent's
        # opponent card a: outcome of round s from the target player's view
        out = jnp.where(own_card > cards, WIN, jnp.where(own_card < cards, LOSS, TIE))
        later = (cards > rnd) & (cards < done)  # rounds s+1..T-1 (indexed like cards)
        tie = later & (o == TIE)
        tie_card = jnp.any((cards[None, :] == c[:, None]) & tie[:, None], axis=0)  # [card]
        below, above = later & (o == WIN), later & (o == LOSS)
        avail = hand[None, :] & (cards[None, :] != cards[:, None])  # [a, card]: hand - a
        ties_ok = jnp.all(~tie_card[None, :] | avail, axis=1)
        free = hand & ~tie_card  # [card]: the cards for "below" / "above" rounds (less a)
        # Hall for child a (card a removed from free): d[x] + e[y] + free[a] [a outside
        # (x, y)] <= 0 for all x < y - 1 (:meth:`_hall`), as three maxima of O(n^2)
        # instead of the O(n^3) pairs per child: pairs around a (max d below a + max e
        # above a), pairs with a <= x (suffix max over x of ``by_x``) and pairs with
        # y <= a (prefix max over y of ``by_y``). Integers: exact.
        d, e, pairs, masked_max = self._hall(free, below, above, c)
        xs, ys, a_col = pairs.xs, pairs.ys, cards[:, None]
        around = masked_max(xs[None, :] < a_col, d) + masked_max(ys[None, :] > a_col, e)
        outside = jnp.maximum(
            masked_max(xs[None, :] >= a_col, pairs.by_x),
            masked_max(ys[None, :] <= a_col, pairs.by_y),
        )
        hall = jnp.maximum(around, outside + free.astype(jnp.int32)) <= 0
        total = jnp.sum(below) + jnp.sum(above) <= jnp.sum(free) - free
        opp = hand & jnp.where(rnd < done, (out == own_out) & ties_ok & hall & total, rnd == done)
        own = (cards == own_card) & (rnd < done)
        allowed = jnp.where(mover == player, own, opp)
        allowed = self.consistent(state, target_key) & allowed
        return jnp.pad(allowed, (0, max(width - n, 0)))[:width]

    def _hall(self, free, below, above, c):
        """Hall's condition for assigning the cards ``free`` ([n] bool) one to one to
        the "below" rounds (a card < the own card ``c``) and "above" rounds (> ``c``)
        ([n] bool by round): a family's cards are a prefix [0, x] and a suffix [y, n-1],
        so it holds iff, for all x < y - 1 (x in -1..n-1, y in 0..n),
        ``d[x] + e[y] <= 0`` with ``d[x] = #below rounds with c - 1 <= x - #free <= x``
        and ``e[y] = #above rounds with c + 1 >= y - #free >= y``, and the rounds do not
        outnumber the cards (callers). Returns ``(d [n+1], e [n+1], pairs, masked_max)``:
        ``pairs.by_x[x] = d[x] + max e[>= x + 2]``, ``pairs.by_y[y] = e[y] + max
        d[<= y - 2]`` (the pairs from x and up to y), ``masked_max(where [m, n+1],
        values [n+1]) -> [m]`` a maximum over a mask (empty: below any sum of d, e, 1)."""
        n = self.num_cards
        cards = jnp.arange(n)
        xs = jnp.arange(-1, n)  # x: last card of the low block (-1: none)
        ys = jnp.arange(n + 1)  # y: first card of the high block (n: none)
        n_below = jnp.sum(below[None, :] & (c[None, :] - 1 <= xs[:, None]), axis=1)
        n_above = jnp.sum(above[None, :] & (c[None, :] + 1 >= ys[:, None]), axis=1)
        low = jnp.sum(free[None, :] & (cards[None, :] <= xs[:, None]), axis=1)
        high = jnp.sum(free[None, :] & (cards[None, :] >= ys[:, None]), axis=1)
        d, e = n_below - low, n_above - high
        none = jnp.int32(-4 * n - 4)

        def masked_max(where, values):
            return jnp.max(jnp.where(where, values[None, :], none), axis=1)

        pairs = _HallPairs(
            xs=xs,
            ys=ys,
            by_x=d + masked_max(ys[None, :] >= xs[:, None] + 2, e),
            by_y=e + masked_max(xs[None, :] <= ys[:, None] - 2, d),
        )
        return d, e, pairs, masked_max

    def num_completions(self, state, target_key):
        # The target's histories differ in the opponent's cards. Below a consistent
        # state they are: the opponent's cards in hand assigned one to one to the
        # target's rounds not played yet (ties fix the card; a won round needs a card
        # below the own card, a lost one a card above), times, for a P2 target whose
        # round-T bid of P1 is still to come, the cards left for that bid. The
        # assignments are counted by the DP of :meth:`_completion_dp`. The count is 0
        # exactly when the rounds cannot be realized, so the state needs only the
        # played-rounds part of :meth:`consistent`.
        dp = self._completion_dp(state, target_key, opp_moves=False)
        count = jnp.sum(dp.hit * self._forward(dp)[-1])
        bid = state.phase == 1
        pending_open = (dp.player == 1) & ((dp.rnd < dp.done) | ((dp.rnd == dp.done) & ~bid))
        count = count * jnp.where(pending_open, jnp.maximum(dp.rest, 0), 1).astype(count.dtype)
        return jnp.where(self._played_ok(state, target_key) & dp.ties_ok, count, 0.0)

    def children_completions(self, state, target_key, width):
        # :meth:`num_completions` of every child without applying them. The children
        # share the rounds still to assign (the parent's, less round s when the
        # opponent moves) and differ only in the opponent's card a they take from its
        # hand. The DP is a product of linear maps over the cards,
        # count = <e_hit, M_{n-1} ... M_0 e_0>; removing card a replaces M_a by P'_a
        # (no card, and the picks of a "below" round ending at a see one set-aside card
        # less) and every later M_x by M'_x (one set-aside card less, :meth:`_completion_dp`),
        # so with the forward states F_x = M_{x-1} ... M_0 e_0 and the backward ones
        # G'_x = M'_x^T ... M'_{n-1}^T e_hit every child's count is <G'_{a+1}, P'_a F_a>:
        # one forward and one backward pass instead of n DPs. At the target player's
        # own node only the key's card has a consistent child, with the parent's rounds
        # and hand: its count is F_n at the hit.
        n = self.num_cards
        opp_moves = state.phase != self.info_layout.fields_of(target_key)["player"][0]
        dp = self._completion_dp(state, target_key, opp_moves)
        rounds = jnp.arange(n)
        fs = self._forward(dp)
        zero = jnp.zeros((1,), dp.start.dtype)
        av = dp.avail.astype(dp.start.dtype)
        # [a]: card a removed, each child's count reduced as the backward pass
        # (g = G'_{x+1} -> G'_x = M'_x^T G'_{x+1}) reaches it
        g = dp.hit
        without = [None] * n
        for x in reversed(range(n)):
            h = g * dp.pick_less[x]
            without[x] = jnp.sum(h * fs[x])
            g = computed_once(h + av[x] * jnp.concatenate([(dp.serve[x] * h)[1:], zero]))
        without = jnp.stack(without)
        # the opponent's card a (its round-s outcome must be the key's, except P1's bid
        # in a P2 target's own round T; a P2 target's round-T bid is open below s < T)
        own_card, own_out = dp.cards[dp.r], dp.outcomes[dp.r]
        out = jnp.where(own_card > rounds, WIN, jnp.where(own_card < rounds, LOSS, TIE))
        p2_open = (dp.player == 1) & (dp.rnd < dp.done)
        opp = dp.avail * without * ((dp.rnd == dp.done) | (out == own_out))
        opp = opp * jnp.where(p2_open, jnp.maximum(dp.rest - 1, 0), 1)
        # the target player's own card
        total = jnp.sum(dp.hit * fs[n])
        total = total * jnp.where(p2_open, jnp.maximum(dp.rest, 0), 1)
        own = jnp.where((rounds == own_card) & (dp.rnd < dp.done), total, 0.0)
        counts = jnp.where(opp_moves, opp, own)
        counts = jnp.where(self._played_ok(state, target_key) & dp.ties_ok, counts, 0.0)
        return jnp.pad(counts.astype(dp.start.dtype), (0, max(width - n, 0)))[:width]

    def _forward(self, dp):
        """``[F_0, ..., F_n]`` of :meth:`_completion_dp`, ``F_{x+1} = M_x F_x``:
        ``M_x f = pick_x * (f + avail_x serve_x * f[s - 1])``. Unrolled, one kernel per
        card (:func:`computed_once`): two ``lax.scan``s of the 2-D DP before session 29
        ran about 14x slower per call under ``vmap``."""
        zero = jnp.zeros((1,), dp.start.dtype)
        av = dp.avail.astype(dp.start.dtype)
        fs = [dp.start]
        for x in range(self.num_cards):
            f = fs[x]
            served = dp.serve[x] * jnp.concatenate([zero, f[:-1]])
            fs.append(computed_once((f + av[x] * served) * dp.pick[x]))
        return fs

    def _completion_dp(self, state, target_key, opp_moves):
        """The counting DP of :meth:`num_completions` / :meth:`children_completions`
        over the opponent's cards in increasing order: ``f[s]``, s "above" rounds
        served. Each available card is either served to an "above" round (card > own
        card: it may take any card past its bound, so a card serves one of the
        (eligible - s) waiting ones) or set aside, for a "below" round or to stay
        unused; the set-aside count is implicit, q = (available cards so far) - s.
        The "below" round whose bound ends at card x (the target player's cards
        differ, so at most one) picks one of the q - taken set-aside cards not taken
        by earlier-ending ones; the set-aside cards no round picks are the unused
        ones, so each assignment is one path (session 29; the 2-D DP before it kept q
        and s and an "unused" branch). ``opp_moves``: the round being played is
        assigned (the children of an opponent's move), else only P1's bid fixed by a
        P2 target. ``pick_less``: the picks with one available card <= x less (a
        child that took a card <= x). Returns :class:`_CompletionDP`."""
        n = self.num_cards
        dt = float_dtype()
        t = self.info_layout.fields_of(target_key)
        player = t["player"][0]
        c, o = t["cards"], t["outcomes"]
        rounds = jnp.arange(n)
        done = jnp.sum(o > 0)
        rnd = state.round
        fixed = (state.phase == 1) & (player == 1)
        todo = (rounds >= rnd) & (rounds < done) & ~((rounds == rnd) & (fixed | opp_moves))
        hand = jnp.where(player == 0, state.hands[1], state.hands[0])  # the opponent's
        tie_card = jnp.any((rounds[None, :] == c[:, None]) & (todo & (o == TIE))[:, None], axis=0)
        avail = hand & ~tie_card
        below = todo & (o == WIN)  # opponent card <= c - 1
        above = todo & (o == LOSS)  # opponent card >= c + 1
        num_below, num_above = jnp.sum(below), jnp.sum(above)
        s = jnp.arange(n + 1)
        # per-card factors of M_x, [x, n + 1] by s
        eligible = jnp.sum(above[None, :] & (c[None, :] + 1 <= rounds[:, None]), axis=1)
        serve = jnp.maximum(eligible[:, None] - (s[None, :] - 1), 0).astype(dt)
        ends = jnp.any(below[None, :] & (c[None, :] - 1 == rounds[:, None]), axis=1)
        taken = jnp.sum(below[None, :] & (c[None, :] - 1 < rounds[:, None]), axis=1)
        free = jnp.cumsum(avail.astype(jnp.int32))[:, None] - s[None, :] - taken[:, None]
        return _CompletionDP(
            start=(s == 0).astype(dt),
            hit=(s == num_above).astype(dt),
            avail=avail,
            serve=serve,
            pick=jnp.where(ends[:, None], jnp.maximum(free, 0), 1).astype(dt),
            pick_less=jnp.where(ends[:, None], jnp.maximum(free - 1, 0), 1).astype(dt),
            ties_ok=jnp.all(~tie_card | hand),
            rest=jnp.sum(avail) - num_below - num_above,  # cards left for P1's round-T bid
            player=player,
            cards=c,
            outcomes=o,
            rnd=rnd,
            r=jnp.minimum(rnd, n - 1),
            done=done,
        )

    @classmethod
    def from_rules_params(cls, num_cards, first_point, decide_last_card):
        return cls(num_cards=num_cards, first_point=first_point, decide_last_card=decide_last_card)
