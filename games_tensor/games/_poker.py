"""Shared engine for the multi-round poker games (Leduc, Leduc-5, Generic Poker, Die-Roll Poker).

A game built on :class:`PokerEngine` is a sequence of rounds. Each round starts with chance
events ("deals": a private card or die for a player, or a public card), then has one betting
round in which P1 acts first. Both players ante 1.

Betting in a round (``sizes`` = that round's bet/raise sizes, ``max_raises`` = raises allowed
after the opening bet):

* not facing a bet: check (action 1) or bet size ``i`` (action ``2 + i``); check-check ends the
  round. Fold (action 0) is legal here only with ``fold_always_legal``.
* facing a bet: fold (0), call (1, ends the round), or raise size ``i`` (``2 + i``) while fewer
  than ``max_raises + 1`` aggressive actions were taken this round.
* a bet puts in ``size``; a call puts in the amount to call; a raise puts in the amount to call
  plus ``size``.

A fold ends the game: the folder loses their contribution. After the last round, the showdown
(:meth:`PokerEngine.showdown`) decides who wins the opponent's contribution (0 on a tie).

States are ``(deals, rounds)``: the chance outcomes dealt so far, and a tuple with one tuple of
actions per round reached.
"""

from __future__ import annotations

from collections.abc import Sequence

from games_tensor._rules import CHANCE, TERMINAL, Rules

FOLD, CALL, RAISE0 = 0, 1, 2
PUBLIC = 2  # owner of a public deal


def format_chips(x: float) -> str:
    return f"{x:g}"


class PokerEngine(Rules):
    """Multi-round two-player poker; subclasses set the deals and the showdown.

    Subclasses call :meth:`_setup` from ``__init__`` and implement :meth:`deal_outcomes`,
    :meth:`showdown` and :meth:`deal_label`.
    """

    private_name = "card"

    def _setup(
        self,
        *,
        round_sizes: Sequence[Sequence[float]],
        max_raises: int,
        deal_owners: Sequence[Sequence[int]],
        fold_always_legal: bool = False,
    ) -> None:
        assert len(round_sizes) == len(deal_owners)
        self._sizes = tuple(tuple(float(x) for x in s) for s in round_sizes)
        self._max_aggr = max_raises + 1
        self._owners = tuple(tuple(o) for o in deal_owners)
        self._flat_owners = tuple(o for r in self._owners for o in r)
        cum, n = [], 0
        for r in self._owners:
            n += len(r)
            cum.append(n)
        self._cum_deals = tuple(cum)
        self._fold_always = bool(fold_always_legal)
        self.num_actions = 2 + max(len(s) for s in self._sizes)

    # ---- hooks --------------------------------------------------------------
    def deal_outcomes(self, deals: tuple[int, ...]) -> list[tuple[int, float]]:
        """Chance outcomes of the next deal, given the outcomes dealt so far."""
        raise NotImplementedError

    def showdown(self, deals: tuple[int, ...]) -> int:
        """+1 if P1 wins the showdown, -1 if P2 wins, 0 on a tie."""
        raise NotImplementedError

    def showdown_bonus(self, deals: tuple[int, ...], pot: float) -> float:
        """Extra payment to P1 from P2 at a showdown (Skew-DRP). Default 0."""
        return 0.0

    def deal_label(self, outcome: int) -> str:
        return str(outcome)

    def private_label(self, deals: tuple[int, ...], player: int) -> str:
        own = [
            self.deal_label(d)
            for d, o in zip(deals, self._flat_owners, strict=False)
            if o == player
        ]
        return f"{self.private_name}:{','.join(own)}"

    # ---- betting --------------------------------------------------------------
    def _scan(self, r: int, actions: tuple[int, ...]):
        """(to_call, aggressive actions, contributions this round, end) of round ``r``.

        ``end`` is None (round in progress), ``"fold"`` or ``"closed"``.
        """
        sizes = self._sizes[r]
        to_call, aggr, end = 0.0, 0, None
        contrib = [0.0, 0.0]
        for i, a in enumerate(actions):
            p = i & 1
            if a == FOLD:
                end = "fold"
            elif a == CALL:
                contrib[p] += to_call
                if to_call > 0 or i > 0:
                    end = "closed"
                to_call = 0.0
            else:
                size = sizes[a - RAISE0]
                contrib[p] += to_call + size
                to_call = size
                aggr += 1
        return to_call, aggr, contrib, end

    def contributions(self, state) -> tuple[float, float]:
        """Chips each player has put in (ante included)."""
        c0 = c1 = 1.0
        for r, acts in enumerate(state[1]):
            _, _, c, _ = self._scan(r, acts)
            c0 += c[0]
            c1 += c[1]
        return c0, c1

    # ---- Rules ---------------------------------------------------------------
    def initial_state(self):
        return ((), ((),))

    def current_player(self, state) -> int:
        deals, rounds = state
        r = len(rounds) - 1
        if len(deals) < self._cum_deals[r]:
            return CHANCE
        acts = rounds[r]
        if acts and self._scan(r, acts)[3] is not None:
            return TERMINAL
        return len(acts) & 1

    def legal_actions(self, state) -> list[int]:
        r = len(state[1]) - 1
        to_call, aggr, _, _ = self._scan(r, state[1][r])
        out = [FOLD] if (to_call > 0 or self._fold_always) else []
        out.append(CALL)
        if aggr < self._max_aggr:
            out.extend(range(RAISE0, RAISE0 + len(self._sizes[r])))
        return out

    def chance_outcomes(self, state) -> list[tuple[int, float]]:
        return self.deal_outcomes(state[0])

    def apply(self, state, action: int):
        deals, rounds = state
        r = len(rounds) - 1
        if len(deals) < self._cum_deals[r]:
            return (deals + (action,), rounds)
        acts = rounds[r] + (action,)
        rounds = rounds[:-1] + (acts,)
        if r + 1 < len(self._sizes) and self._scan(r, acts)[3] == "closed":
            rounds = rounds + ((),)
        return (deals, rounds)

    def returns(self, state) -> tuple[float, float]:
        deals, rounds = state
        c0, c1 = self.contributions(state)
        acts = rounds[-1]
        if acts[-1] == FOLD:
            u0 = -c0 if (len(acts) - 1) & 1 == 0 else c1
        else:
            w = self.showdown(deals)
            u0 = c1 if w > 0 else (-c0 if w < 0 else 0.0)
            u0 += self.showdown_bonus(deals, c0 + c1)
        return (u0, -u0)

    # ---- keys ----------------------------------------------------------------
    def _token(self, r: int, a: int) -> str:
        if a == FOLD:
            return "f"
        if a == CALL:
            return "c"
        if max(len(s) for s in self._sizes) == 1:
            return "r"
        return "r" + format_chips(self._sizes[r][a - RAISE0])

    def _public_parts(self, deals, rounds) -> list[str]:
        parts = []
        start = 0
        for r, owners in enumerate(self._owners):
            if r >= len(rounds):
                break
            pub = [
                self.deal_label(deals[k])
                for k in range(start, min(start + len(owners), len(deals)))
                if owners[k - start] == PUBLIC
            ]
            if pub:
                parts.append("public:" + ",".join(pub))
            parts.append(f"round{r + 1}: " + "".join(self._token(r, a) for a in rounds[r]))
            start += len(owners)
        return parts

    def information_state(self, state, player: int) -> str:
        deals, rounds = state
        head = f"P{player} " + self.private_label(deals, player)
        return " | ".join([head] + self._public_parts(deals, rounds))

    def public_state(self, state) -> str:
        return " | ".join(self._public_parts(*state))

    def action_name(self, action: int) -> str:
        if action == FOLD:
            return "fold"
        if action == CALL:
            return "check/call"
        i = action - RAISE0
        if max(len(s) for s in self._sizes) == 1:
            return "bet/raise"
        return "bet/raise " + "/".join(format_chips(s[i]) for s in self._sizes if i < len(s))

    # ---- size guard ------------------------------------------------------------
    def _round_shape(self, r: int) -> tuple[int, int, int]:
        """(decision nodes, fold endings, non-fold endings) of one betting round."""
        dec = fold = closed = 0
        stack = [()]
        while stack:
            acts = stack.pop()
            end = self._scan(r, acts)[3] if acts else None
            if end == "fold":
                fold += 1
            elif end == "closed":
                closed += 1
            else:
                dec += 1
                state = ((), tuple(() for _ in range(r)) + (acts,))
                stack.extend(acts + (a,) for a in self.legal_actions(state))
        return dec, fold, closed

    def estimated_histories(self) -> int:
        """Exact node count: betting-round shapes times the number of distinct deal prefixes."""
        prefixes = [1]  # prefixes[k] = number of distinct deal sequences of length k
        level = [()]
        for _ in range(len(self._flat_owners)):
            level = [d + (o,) for d in level for o, p in self.deal_outcomes(d) if p > 0]
            prefixes.append(len(level))
        total, paths, start = 0, 1, 0
        for r, owners in enumerate(self._owners):
            total += paths * sum(prefixes[start + k] for k in range(len(owners)))
            start += len(owners)
            dec, fold, closed = self._round_shape(r)
            total += paths * prefixes[start] * (dec + fold)
            paths *= closed
        return total + paths * prefixes[start]


class DeckPoker(PokerEngine):
    """Two rounds; one private card each before round 1, one public card before round 2.

    The deck has ``num_types`` card types with ``copies`` cards each. With ``suits`` a deal is an
    individual card (uniform over the remaining cards, card ``c`` has type ``c // copies``),
    otherwise a type (probability remaining copies / remaining cards). Showdown: a player whose
    card pairs the public card wins unless the opponent's also does; otherwise the higher type
    wins; anything else is a tie.
    """

    _RANKS = "23456789TJQKA"
    _SUITS = "shdc"

    def _setup_deck(
        self,
        *,
        num_types: int,
        copies: int,
        suits: bool,
        round_sizes: Sequence[Sequence[float]],
        max_raises: int,
    ) -> None:
        self._types = num_types
        self._copies = copies
        self._suits = suits
        self._setup(
            round_sizes=round_sizes,
            max_raises=max_raises,
            deal_owners=((0, 1), (PUBLIC,)),
        )

    def card_type(self, outcome: int) -> int:
        return outcome // self._copies if self._suits else outcome

    def deal_outcomes(self, deals):
        total = self._types * self._copies - len(deals)
        if self._suits:
            rest = [c for c in range(self._types * self._copies) if c not in deals]
            return [(c, 1.0 / total) for c in rest]
        out = []
        for t in range(self._types):
            left = self._copies - deals.count(t)
            if left > 0:
                out.append((t, left / total))
        return out

    def showdown(self, deals) -> int:
        a, b, pub = (self.card_type(d) for d in deals)
        if a == pub and b != pub:
            return 1
        if b == pub and a != pub:
            return -1
        if a != pub and b != pub and a != b:
            return 1 if a > b else -1
        return 0

    def deal_label(self, outcome: int) -> str:
        t = self.card_type(outcome)
        ranks = self._RANKS if self._types == 13 else self._RANKS[:-1]
        name = ranks[len(ranks) - self._types + t] if self._types <= len(ranks) else f"t{t}"
        if self._suits:
            s = outcome % self._copies
            name += self._SUITS[s] if self._copies <= len(self._SUITS) else str(s)
        return name
