"""Is a compiled imperfect-recall abstraction well-formed? (Lanctot et al. 2012, Defs. 2, 3)

The compiled game is the perfect-recall refinement; ``game.abstract_infoset`` is the
abstraction. For every player i, abstract infoset I and two full infosets Ĭ, Ĭ' merged
into I (P̆(I)), well-formedness asks for a bijection phi: Z_Ĭ -> Z_Ĭ' and constants
k, l >= 0 with, for every terminal z below Ĭ:

  (i)   u_i(z) = k u_i(phi(z))            (skew well-formed: |u_i(z) - k u_i(phi(z))| <= delta)
  (ii)  pi_c(z) = l pi_c(phi(z))
  (iii) X_{-i}(z) = X_{-i}(phi(z))         the opponent's abstract (infoset, action) sequence
  (iv)  X_i(z[Ĭ], z) = X_i(phi(z)[Ĭ'], phi(z))   i's own abstract sequence from Ĭ on

(ALGORITHMS.md 2.9). The test: (iii) and (iv) say phi preserves the key
(X_{-i}(z), X_i(z[Ĭ], z)), so the key multisets of Z_Ĭ and Z_Ĭ' must agree (tested
first, each condition alone, then jointly); inside one key, phi may be any matching,
and since positive constants k, l preserve the order of (pi_c, u_i) pairs, matching the
sorted pairs finds one satisfying (i) and (ii) whenever one exists. Then (ii) and (i)
are tested on that matching. Each abstract infoset compares every pair of its members
when it has at most ``_ALL_PAIRS`` of them, else every member with the first (enough
for the verdicts, since the bijections compose; delta is then taken over those pairs).
"""

from __future__ import annotations

import collections
import itertools
from typing import NamedTuple

import numpy as np

from games_tensor._game import TERMINAL, Game, require_game

_ALL_PAIRS = 16
CONDITIONS = ("i", "ii", "iii", "iv")


class AbstractionCheck(NamedTuple):
    """Result of :func:`check_abstraction`.

    verdict: ``"well-formed"``, ``"skew well-formed"`` or ``"not well-formed"``.
    condition: the first violated condition (``"i"``: only for skew well-formed;
      ``"ii"``, ``"iii"``, ``"iv"``, or ``"iii+iv"`` when each alone holds but no
      bijection keeps both), None when well-formed.
    example: a readable instance of the violation (None when well-formed).
    delta: max over abstract infosets of delta_I = max_{Ĭ, Ĭ'} delta_{Ĭ,Ĭ'} l_{Ĭ,Ĭ'}
      (0 when well-formed, inf when not even skew well-formed).
    infoset_delta: [J] delta_I per abstract infoset.
    K: [2] per player, sum over its abstract infosets of max_{Ĭ, Ĭ'} k l (Theorem 1's K).
    skew_term: [2] per player, sum over its abstract infosets of |P̆(I)| delta_I
      (Theorem 2's additive term).
    """

    verdict: str
    condition: str | None
    example: str | None
    delta: float
    infoset_delta: np.ndarray
    K: np.ndarray
    skew_term: np.ndarray


class _Violation(Exception):
    def __init__(self, condition: str, example: str):
        super().__init__(condition)
        self.condition, self.example = condition, example


def _entries(game: Game):
    """Per full infoset, the list of (opponent key, own suffix, u_i, pi_c) of its terminals."""
    host = game.meta.host
    player = host["node_player"]
    children = host["node_children"]
    infoset = host["node_infoset"]
    abstract = host["abstract_infoset"]
    util = host["node_utility"]
    reach = host["node_chance_reach"]
    H = player.size  # noqa: N806
    parent = np.full(H, -1, np.int64)
    slot = np.zeros(H, np.int64)
    rows, cols = np.nonzero(children >= 0)
    parent[children[rows, cols]] = rows
    slot[children[rows, cols]] = cols
    # interned abstract sequences: id -> (parent id, (abstract infoset, action))
    trie: list[tuple[int, tuple[int, int]] | None] = [None]
    intern: dict = {}
    seq = np.zeros((2, H), np.int64)
    own_len = np.zeros((2, H), np.int64)
    for start, end in game.meta.node_levels:
        for c in range(max(start, 1), end):
            h = parent[c]
            seq[:, c], own_len[:, c] = seq[:, h], own_len[:, h]
            p = player[h]
            if p in (0, 1):
                key = (int(seq[p, h]), (int(abstract[infoset[h]]), int(slot[c])))
                sid = intern.get(key)
                if sid is None:
                    sid = intern[key] = len(trie)
                    trie.append(key)
                seq[p, c], own_len[p, c] = sid, own_len[p, h] + 1

    def pairs(sid: int) -> tuple:
        out = []
        while sid:
            sid, pair = trie[sid]
            out.append(pair)
        return tuple(reversed(out))

    per_infoset: dict[int, list] = collections.defaultdict(list)
    for z in np.nonzero(player == TERMINAL)[0]:
        own = (pairs(int(seq[0, z])), pairs(int(seq[1, z])))
        opp_ids = (int(seq[1, z]), int(seq[0, z]))
        h = parent[z]
        while h >= 0:
            p = player[h]
            if p in (0, 1):
                u = util[z] if p == 0 else -util[z]
                suffix = own[p][own_len[p, h] :]
                per_infoset[int(infoset[h])].append((opp_ids[p], suffix, u, reach[z]))
            h = parent[h]
    return per_infoset, pairs


def _compare(x, y, conditions, atol, describe):
    """(k, l, delta) of the best bijection Z_x -> Z_y, or raise :class:`_Violation`."""

    def multiset(entries, part):
        return collections.Counter(e[part] for e in entries)

    for cond, part in (("iii", 0), ("iv", 1)):
        if cond not in conditions:
            continue
        mx, my = multiset(x, part), multiset(y, part)
        if mx != my:
            key = next(k for k in (mx | my) if mx[k] != my[k])
            what = "the opponent's sequence" if part == 0 else "the own sequence from here"
            raise _Violation(
                cond,
                f"{what} {describe(part, key)} ends {mx[key]} terminal(s) below the first "
                f"and {my[key]} below the second",
            )
    parts = [p for c, p in (("iii", 0), ("iv", 1)) if c in conditions]

    def grouped(entries):
        out = collections.defaultdict(list)
        for e in entries:
            out[tuple(e[p] for p in parts)].append((e[3], e[2]))
        return out

    gx, gy = grouped(x), grouped(y)
    if {k: len(v) for k, v in gx.items()} != {k: len(v) for k, v in gy.items()}:
        raise _Violation("iii+iv", "no bijection keeps both the opponent's and the own sequences")
    px, py, ux, uy = [], [], [], []
    for key in gx:
        for (pcx, ax), (pcy, ay) in zip(sorted(gx[key]), sorted(gy[key]), strict=True):
            px.append(pcx), py.append(pcy), ux.append(ax), uy.append(ay)
    px, py, ux, uy = map(np.asarray, (px, py, ux, uy))
    ratio = px / py
    ell = float(ratio[0])
    if "ii" in conditions and not np.allclose(ratio, ell, rtol=1e-9, atol=0):
        j = int(np.argmax(np.abs(ratio - ell)))
        raise _Violation(
            "ii",
            f"chance reach ratios {ell:.6g} and {ratio[j]:.6g} differ between matched terminals",
        )
    if "i" not in conditions:
        return 1.0, ell, 0.0
    j = int(np.argmax(np.abs(uy)))
    k_fit = float(ux[j] / uy[j]) if abs(uy[j]) > atol else 1.0
    best = (np.inf, 1.0)
    for k in {1.0, max(k_fit, 0.0)}:
        best = min(best, (float(np.max(np.abs(ux - k * uy), initial=0.0)), k))
    delta, k = best
    return k, ell, (0.0 if delta <= atol else delta)


def check_abstraction(
    game: Game, *, conditions: tuple[str, ...] = CONDITIONS, atol: float = 1e-9
) -> AbstractionCheck:
    """Decide whether ``game``'s abstraction is well-formed, skew well-formed (with which
    delta) or neither, by testing conditions (i)-(iv) of Lanctot et al. 2012's
    Definitions 2 and 3 on the compiled tree (host, NumPy; see the module docstring).

    Args:
      game: a compiled game with an abstraction (``ValueError`` otherwise).
      conditions: the conditions to test (default all four); e.g. ``("i", "ii", "iv")``
        asks whether a game breaks only (iii).
      atol: tolerance on utilities (delta below it counts as 0).

    Returns:
      :class:`AbstractionCheck`.
    """
    require_game(game)
    if not game.meta.has_abstraction:
        raise ValueError(
            f"game {game.name} {dict(game.meta.params)} has no abstraction to check "
            "(compile it with an abstraction, e.g. die_roll_poker(abstraction='ir'))"
        )
    bad = sorted(set(conditions) - set(CONDITIONS))
    if bad or not conditions:
        raise ValueError(
            f"conditions must be a non-empty subset of {CONDITIONS}, got {conditions!r}"
        )
    per_infoset, pairs = _entries(game)
    abstract = game.meta.host["abstract_infoset"]
    infoset_player = np.asarray(game.infoset_player)
    J = game.meta.num_abstract_infosets  # noqa: N806
    members = collections.defaultdict(list)
    for full, j in enumerate(abstract):
        members[int(j)].append(full)
    keys, akeys = game.infoset_keys, game.meta.abstract_keys

    def describe(part, key):
        seq = pairs(key) if part == 0 else key
        return "[" + ", ".join(f"({akeys[i]!r}, {a})" for i, a in seq) + "]"

    infoset_delta = np.zeros(J)
    K = np.zeros(2)  # noqa: N806
    skew_term = np.zeros(2)
    skew_example = None
    for j in range(J):
        m = members[j]
        p = int(infoset_player[m[0]])
        kl_max = 1.0
        if len(m) > 1:
            pair_list = (
                itertools.combinations(m, 2)
                if len(m) <= _ALL_PAIRS
                else ((m[0], other) for other in m[1:])
            )
            for a, b in pair_list:
                try:
                    k, ell, d = _compare(per_infoset[a], per_infoset[b], conditions, atol, describe)
                except _Violation as v:
                    example = (
                        f"abstract infoset {akeys[j]!r} (player {p}) merges {keys[a]!r} and "
                        f"{keys[b]!r}: {v.example}"
                    )
                    return AbstractionCheck(
                        "not well-formed",
                        v.condition,
                        example,
                        np.inf,
                        np.full(J, np.nan),
                        np.full(2, np.nan),
                        np.full(2, np.inf),
                    )
                kl = k * ell
                kl_max = max(kl_max, kl, 1.0 / kl if kl > 0 else 1.0)
                if d * ell > infoset_delta[j]:
                    infoset_delta[j] = d * ell
                    if skew_example is None:
                        skew_example = (
                            f"abstract infoset {akeys[j]!r} (player {p}) merges {keys[a]!r} "
                            f"and {keys[b]!r}: utilities differ by up to {d:.6g} (k = {k:.6g})"
                        )
        K[p] += kl_max
        skew_term[p] += len(m) * infoset_delta[j]
    delta = float(infoset_delta.max(initial=0.0))
    if delta > 0:
        return AbstractionCheck(
            "skew well-formed", "i", skew_example, delta, infoset_delta, K, skew_term
        )
    return AbstractionCheck("well-formed", None, None, 0.0, infoset_delta, K, skew_term)
