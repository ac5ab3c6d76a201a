"""Compile plain-Python rules into a :class:`Game` pytree (host, NumPy, once).

One depth-first walk of the rules records every history; then infosets and
histories are renumbered deterministically:

* infosets: by player, then by level in the player's own sequence tree, then by
  the (already renumbered) parent sequence, then by first visit in the walk;
* histories: breadth first (by depth, then parent id, then child slot).

The walk visits actions in the order ``legal_actions`` returns them and chance
outcomes in the order ``chance_outcomes`` returns them, so two compiles of the
same rules give identical arrays.
"""

from __future__ import annotations

import hashlib
import math
import sys
import time
from array import array

import jax.numpy as jnp
import numpy as np

from games_tensor._game import CHANCE, TERMINAL, Game, GameMeta
from games_tensor._rules import Rules
from games_tensor._table import (
    block_positions,
    compact_layout,
    compact_positions,
    fanin_groups,
    level_children,
    level_parent_positions,
    walk_rows,
)

DEFAULT_MAX_HISTORIES = 12_000_000
# Rough peak memory per history during the walk and layout (Python records + arrays).
_BYTES_PER_HISTORY = 600


class GameTooLargeError(ValueError):
    """The game has more histories than ``max_histories``; raised before allocating."""


class ImperfectRecallError(ValueError):
    """The information-state keys do not give perfect recall: one key is reached by two
    different own action sequences of its player."""


def _count(x) -> str:
    """A possibly astronomical count (int of any size, float, inf) as ``1.23e+45``."""
    if isinstance(x, float) and not math.isfinite(x):
        return "more than 1.8e+308"
    if x < 1e300:
        return f"{float(x):.3g}"
    exp = math.floor(math.log10(x))  # exact enough for display; works on huge ints
    return f"{10 ** (math.log10(x) - exp):.3g}e+{exp}"


def _too_large(rules: Rules, histories, max_histories: int, estimated: bool) -> str:
    how = "an estimated" if estimated else "more than"
    gib = histories * _BYTES_PER_HISTORY / 2**30
    return (
        f"{rules!r} has {how} {_count(histories)} histories (limit max_histories="
        f"{max_histories:.3g}); unrolling it would need "
        + (f"about {_count(gib)} GiB" if math.isfinite(gib) else "an astronomical amount")
        + " of memory. "
        "It is too large for dense tabular compilation; use a smaller instance."
    )


def _check_max_histories(max_histories) -> int:
    if isinstance(max_histories, np.integer):
        max_histories = int(max_histories)
    if isinstance(max_histories, bool) or not isinstance(max_histories, int) or max_histories < 1:
        raise ValueError(
            f"max_histories must be an integer >= 1 (default {DEFAULT_MAX_HISTORIES}), "
            f"got {max_histories!r}"
        )
    return max_histories


def _check_utilities(rules: Rules, utility: np.ndarray, dtype) -> None:
    """Refuse utilities that are not finite in float64 or in the compiled float type."""
    finfo = np.finfo(dtype)
    big = np.abs(utility).max(initial=0.0)
    if np.isfinite(utility).all() and big <= finfo.max:
        return
    params = ", ".join(f"{k}={v!r}" for k, v in rules.params().items()) or "none"
    raise ValueError(
        f"{rules!r}: a terminal utility is {big:.3g}, not finite in {finfo.dtype} (largest "
        f"finite {finfo.max:.3g}); check the game's parameters ({params}) and choose "
        "values that keep every payoff finite"
        + ("" if dtype == np.float64 else ", or enable float64 (jax_enable_x64)")
    )


class _Walk:
    """Mutable records of one depth-first walk (flat typed arrays, not objects)."""

    def __init__(self, rules: Rules, max_histories: int):
        self.rules = rules
        self.A = rules.num_actions
        self.max_histories = max_histories
        # per node
        self.parent = array("i")
        self.slot = array("i")
        self.depth = array("i")
        self.player = array("i")
        self.infoset = array("i")  # provisional infoset id, -1 if none
        self.public = array("i")
        self.utility = array("d")
        self.chance_reach = array("d")
        self.chance_children: dict[int, list[float]] = {}  # node -> outcome probabilities
        self.num_slots = 1
        # per provisional infoset
        self.infoset_ids: dict = {}
        self.inf_player = array("i")
        self.inf_parent_seq = array("q")  # provisional flat sequence, -1 = empty
        self.inf_level = array("i")
        self.inf_legal: list[tuple[int, ...]] = []
        self.inf_keys: list = []
        self.inf_abstract: list = []
        self.public_ids: dict = {}
        # terminals (sequence form)
        self.t_seq0 = array("q")
        self.t_seq1 = array("q")
        self.t_weight = array("d")  # chance reach * u_0
        self.t_public = array("i")  # public state at the terminal

    def infoset_of(self, state, p, legal, own_seq):
        rules = self.rules
        key = rules.information_state(state, p)
        full_key = (p, key)
        inf = self.infoset_ids.get(full_key)
        if inf is None:
            inf = len(self.inf_player)
            self.infoset_ids[full_key] = inf
            self.inf_player.append(p)
            self.inf_parent_seq.append(own_seq)
            self.inf_level.append(0 if own_seq < 0 else self.inf_level[own_seq // self.A] + 1)
            self.inf_legal.append(legal)
            self.inf_keys.append(key)
            self.inf_abstract.append(rules.abstract_information_state(state, p))
            for a in legal:
                if not 0 <= a < self.A:
                    raise ValueError(
                        f"{rules!r}: action {a} at infoset {key!r} is outside [0, {self.A})"
                    )
        else:
            if self.inf_legal[inf] != legal:
                raise ValueError(
                    f"{rules!r}: infoset {key!r} has different legal actions in two of "
                    f"its histories: {self.inf_legal[inf]} vs {legal}"
                )
            if self.inf_parent_seq[inf] != own_seq:
                raise ImperfectRecallError(
                    f"{rules!r}: infoset {key!r} of player {p} is reached by two different "
                    f"own action sequences ({self._own_actions(self.inf_parent_seq[inf])} and "
                    f"{self._own_actions(own_seq)}): the information-state keys do not give "
                    "perfect recall. Key the infosets by the player's own action history too "
                    "and return the coarser key from abstract_information_state (the "
                    "imperfect-recall abstraction; games_tensor.from_openspiel does this "
                    "for OpenSpiel games)"
                )
            if self.inf_abstract[inf] != rules.abstract_information_state(state, p):
                raise ValueError(
                    f"{rules!r}: infoset {key!r} maps to two abstract infosets; an "
                    "abstraction must be coarser than the information states"
                )
        return inf

    def _own_actions(self, seq) -> list[int]:
        """The own actions (oldest first) of provisional sequence ``seq`` (-1: none)."""
        out = []
        while seq >= 0:
            out.append(int(seq % self.A))
            seq = self.inf_parent_seq[seq // self.A]
        return out[::-1]

    def visit(self, state, parent, slot, depth, seq0, seq1, reach):
        rules = self.rules
        node = len(self.player)
        if node >= self.max_histories:
            raise GameTooLargeError(
                _too_large(rules, self.max_histories, self.max_histories, False)
            )
        p = rules.current_player(state)
        self.parent.append(parent)
        self.slot.append(slot)
        self.depth.append(depth)
        self.player.append(p)
        self.chance_reach.append(reach)
        pub_key = rules.public_state(state)
        pub = self.public_ids.get(pub_key)
        if pub is None:
            pub = self.public_ids[pub_key] = len(self.public_ids)
        self.public.append(pub)
        if p == TERMINAL:
            u0, u1 = rules.returns(state)
            if abs(u0 + u1) > 1e-9 * max(1.0, abs(u0)):
                raise ValueError(f"{rules!r}: returns {(u0, u1)} are not zero-sum")
            self.infoset.append(-1)
            self.utility.append(u0)
            self.t_seq0.append(seq0)
            self.t_seq1.append(seq1)
            self.t_weight.append(reach * u0)
            self.t_public.append(pub)
            return
        self.utility.append(0.0)
        if p == CHANCE:
            self.infoset.append(-1)
            outcomes = list(rules.chance_outcomes(state))
            probs = [pr for _, pr in outcomes]
            if not outcomes or abs(sum(probs) - 1.0) > 1e-9 or min(probs) < 0:
                raise ValueError(
                    f"{rules!r}: chance probabilities {probs} at {state!r} do not sum to 1"
                )
            self.chance_children[node] = probs
            self.num_slots = max(self.num_slots, len(outcomes))
            for k, (outcome, pr) in enumerate(outcomes):
                self.visit(rules.apply(state, outcome), node, k, depth + 1, seq0, seq1, reach * pr)
            return
        if p not in (0, 1):
            raise ValueError(f"{rules!r}: current_player returned {p} at {state!r}")
        legal = tuple(rules.legal_actions(state))
        if not legal:
            raise ValueError(f"{rules!r}: no legal action at non-terminal state {state!r}")
        inf = self.infoset_of(state, p, legal, seq0 if p == 0 else seq1)
        self.infoset.append(inf)
        base = inf * self.A
        for a in legal:
            child = rules.apply(state, a)
            if p == 0:
                self.visit(child, node, a, depth + 1, base + a, seq1, reach)
            else:
                self.visit(child, node, a, depth + 1, seq0, base + a, reach)


def _renumber_infosets(w: _Walk) -> tuple[np.ndarray, list[list[tuple[int, int]]]]:
    """New id of each provisional infoset, and per-player level slices."""
    A = w.A
    n = len(w.inf_player)
    player = np.frombuffer(w.inf_player, dtype=np.int32)
    level = np.frombuffer(w.inf_level, dtype=np.int32)
    parent = np.frombuffer(w.inf_parent_seq, dtype=np.int64)
    new_id = np.full(n, -1, dtype=np.int64)
    levels: list[list[tuple[int, int]]] = [[], []]
    nxt = 0
    for p in (0, 1):
        for lv in range(int(level.max(initial=-1)) + 1):
            members = np.nonzero((player == p) & (level == lv))[0]
            if members.size == 0:
                continue
            par = parent[members]
            # renumbered parent sequence (parents live in the previous level: done already)
            new_par = np.where(par < 0, -1, new_id[np.maximum(par, 0) // A] * A + par % A)
            order = np.lexsort((members, new_par))
            new_id[members[order]] = np.arange(nxt, nxt + members.size)
            levels[p].append((nxt, nxt + members.size))
            nxt += members.size
    return new_id, levels


def _remap_seq(seq: np.ndarray, new_id: np.ndarray, A: int, empty: int) -> np.ndarray:
    seq = np.asarray(seq, dtype=np.int64)
    return np.where(seq < 0, empty, new_id[np.maximum(seq, 0) // A] * A + seq % A)


def _payoff_blocks(s0, s1, weight, public, num_sequences, max_padding=3.0):
    """Dense blocks of the sequence-form payoff matrix, one per terminal public state.

    Terminals sharing a public state pair every P1 sequence of the block with every
    P2 sequence (poker: the private cards vary), so the sparse payoff sum becomes
    G small dense matrix-vector products: rows [G, R] and cols [G, C] of flat
    sequence ids (padding: ``num_sequences``, out of range), payoffs [G, R, C].
    Returns empty arrays (G = 0) when padding would exceed ``max_padding`` times the
    number of entries (e.g. II-Goofspiel, whose public states are coarse).
    """
    empty = (np.zeros((0, 1), np.int32), np.zeros((0, 1), np.int32), np.zeros((0, 1, 1)))
    if s0.size == 0:
        return empty
    order = np.lexsort((s1, s0, public))
    s0, s1, weight, public = s0[order], s1[order], weight[order], public[order]
    groups, starts = np.unique(public, return_index=True)
    bounds = list(starts) + [public.size]
    per = []
    R = C = 1
    for g in range(groups.size):
        a, b = bounds[g], bounds[g + 1]
        rows, r_idx = np.unique(s0[a:b], return_inverse=True)
        cols, c_idx = np.unique(s1[a:b], return_inverse=True)
        per.append((rows, cols, r_idx, c_idx, weight[a:b]))
        R, C = max(R, rows.size), max(C, cols.size)
    if groups.size * R * C > max_padding * s0.size:
        return empty
    G = groups.size
    rows_arr = np.full((G, R), num_sequences, np.int32)
    cols_arr = np.full((G, C), num_sequences, np.int32)
    pay = np.zeros((G, R, C))
    for g, (rows, cols, r_idx, c_idx, w) in enumerate(per):
        rows_arr[g, : rows.size] = rows
        cols_arr[g, : cols.size] = cols
        np.add.at(pay[g], (r_idx, c_idx), w)
    return rows_arr, cols_arr, pay


def _breadth_first_order(parent: np.ndarray, slot: np.ndarray, depth: np.ndarray):
    """Permutation old->new putting nodes by depth, then new parent id, then slot."""
    n = parent.size
    new_of_old = np.empty(n, dtype=np.int64)
    levels = []
    start = 0
    by_depth = np.argsort(depth, kind="stable")
    bounds = np.searchsorted(depth[by_depth], np.arange(depth.max() + 2))
    for d in range(depth.max() + 1):
        nodes = by_depth[bounds[d] : bounds[d + 1]]
        if d == 0:
            order = nodes
        else:
            order = nodes[np.lexsort((slot[nodes], new_of_old[parent[nodes]]))]
        new_of_old[order] = np.arange(start, start + order.size)
        levels.append((start, start + order.size))
        start += order.size
    return new_of_old, levels


def compile(rules: Rules, *, max_histories: int = DEFAULT_MAX_HISTORIES) -> Game:  # noqa: A001
    """Walk ``rules`` once and lay the game out as a :class:`Game` of dense arrays.

    Args:
      rules: a :class:`games_tensor.Rules` instance.
      max_histories: refuse (``GameTooLargeError``, a ``ValueError``) games with more
        histories, before allocating when the rules give ``estimated_histories()``.

    Returns:
      The compiled :class:`Game`. Float arrays are float64 under ``jax_enable_x64``,
      else float32; float64 NumPy copies stay in ``game.meta.host``.
    """
    t0 = time.perf_counter()
    if not isinstance(rules, Rules):
        raise ValueError(
            f"compile expects a games_tensor.Rules instance, got {rules!r} "
            f"({type(rules).__name__}); use games_tensor.load(name) for a registered game"
        )
    max_histories = _check_max_histories(max_histories)
    est = rules.estimated_histories()
    if est is not None and est > max_histories:
        raise GameTooLargeError(_too_large(rules, est, max_histories, True))
    if rules.num_actions < 1:
        raise ValueError(f"{rules!r}: num_actions must be >= 1")
    w = _Walk(rules, max_histories)
    old_limit = sys.getrecursionlimit()
    sys.setrecursionlimit(max(old_limit, 10_000))
    try:
        w.visit(rules.initial_state(), -1, 0, 0, -1, -1, 1.0)
    finally:
        sys.setrecursionlimit(old_limit)
    A = rules.num_actions

    # ---- infosets ---------------------------------------------------------
    new_id, inf_levels = _renumber_infosets(w)
    n_inf = new_id.size
    empty = n_inf * A
    inv = np.argsort(new_id)  # provisional id of each new id
    legal_mask = np.zeros((n_inf, A), dtype=bool)
    for new, old in enumerate(inv):
        legal_mask[new, list(w.inf_legal[old])] = True
    inf_player = np.frombuffer(w.inf_player, dtype=np.int32)[inv]
    parent_seq = _remap_seq(np.frombuffer(w.inf_parent_seq, dtype=np.int64)[inv], new_id, A, empty)
    keys = tuple(str(w.inf_keys[o]) for o in inv)
    per_player = (int((inf_player == 0).sum()), int((inf_player == 1).sum()))

    # ---- abstraction ------------------------------------------------------
    abstract = [w.inf_abstract[o] for o in inv]
    has_abstraction = any(a is not None for a in abstract)
    if has_abstraction:
        if any(a is None for a in abstract):
            raise ValueError(
                f"{rules!r}: abstract_information_state returned None for some infosets"
            )
        abs_ids: dict = {}
        abstract_infoset = np.array(
            [
                abs_ids.setdefault((int(p), a), len(abs_ids))
                for p, a in zip(inf_player, abstract, strict=True)
            ],
            dtype=np.int32,
        )
        abstract_keys = tuple(str(a) for _, a in abs_ids)
        abstract_legal = np.zeros((len(abs_ids), A), dtype=bool)
        abstract_legal[abstract_infoset] = legal_mask
        if (abstract_legal[abstract_infoset] != legal_mask).any():
            bad = int(np.nonzero((abstract_legal[abstract_infoset] != legal_mask).any(1))[0][0])
            j = int(abstract_infoset[bad])
            raise ValueError(
                f"{rules!r}: abstract infoset {abstract_keys[j]!r} merges infosets with "
                f"different legal actions, e.g. {keys[bad]!r} with "
                f"{np.nonzero(legal_mask[bad])[0].tolist()} (the union is "
                f"{np.nonzero(abstract_legal[j])[0].tolist()}); an abstract infoset must "
                "merge infosets with the same legal actions"
            )
    else:
        abstract_infoset = np.arange(n_inf, dtype=np.int32)
        abstract_keys = keys
        abstract_legal = legal_mask

    # ---- sequence-form payoffs (terminals merged by sequence pair) ---------
    s0 = _remap_seq(np.frombuffer(w.t_seq0, dtype=np.int64), new_id, A, empty)
    s1 = _remap_seq(np.frombuffer(w.t_seq1, dtype=np.int64), new_id, A, empty)
    tw = np.frombuffer(w.t_weight, dtype=np.float64)
    order = np.lexsort((s1, s0))
    s0, s1, tw = s0[order], s1[order], tw[order]
    first = np.ones(s0.size, dtype=bool)
    first[1:] = (s0[1:] != s0[:-1]) | (s1[1:] != s1[:-1])
    starts = np.nonzero(first)[0]
    sf_seq0, sf_seq1 = s0[starts], s1[starts]
    sf_payoff = np.add.reduceat(tw, starts)
    blocks = _payoff_blocks(
        s0, s1, tw, np.frombuffer(w.t_public, dtype=np.int32)[order], n_inf * A + 1
    )

    # ---- history tree -----------------------------------------------------
    parent = np.frombuffer(w.parent, dtype=np.int32).astype(np.int64)
    slot = np.frombuffer(w.slot, dtype=np.int32)
    depth = np.frombuffer(w.depth, dtype=np.int32)
    H = parent.size
    new_of_old, node_levels = _breadth_first_order(parent, slot, depth)
    old_of_new = np.argsort(new_of_old)
    K = max(A, w.num_slots)
    node_player = np.frombuffer(w.player, dtype=np.int32)[old_of_new]
    old_inf = np.frombuffer(w.infoset, dtype=np.int32)[old_of_new]
    node_infoset = np.where(old_inf < 0, -1, new_id[np.maximum(old_inf, 0)]).astype(np.int32)
    node_parent_old = parent[old_of_new]
    node_parent = np.where(node_parent_old < 0, -1, new_of_old[np.maximum(node_parent_old, 0)])
    node_slot = slot[old_of_new]
    node_children = np.full((H, K), -1, dtype=np.int32)
    has_parent = node_parent >= 0
    node_children[node_parent[has_parent], node_slot[has_parent]] = np.nonzero(has_parent)[0]
    node_chance_probs = np.zeros((H, K), dtype=np.float64)
    for old, probs in w.chance_children.items():
        node_chance_probs[new_of_old[old], : len(probs)] = probs
    node_utility = np.frombuffer(w.utility, dtype=np.float64)[old_of_new]
    fdt = jnp.asarray(0.0).dtype  # float32, or float64 under jax_enable_x64
    _check_utilities(rules, np.concatenate([node_utility, sf_payoff]), fdt)
    node_chance_reach = np.frombuffer(w.chance_reach, dtype=np.float64)[old_of_new]
    node_public = np.frombuffer(w.public, dtype=np.int32)[old_of_new]
    node_depth = depth[old_of_new]
    num_terminals = int((node_player == TERMINAL).sum())

    host = {
        "node_player": node_player.astype(np.int32),
        "node_children": node_children,
        "node_infoset": node_infoset,  # host copy for static index tables (jaxcfr.pruning)
        "node_depth": node_depth.astype(np.int32),
        "legal_mask": legal_mask,
        "abstract_legal_mask": abstract_legal,
        # for host-side layouts of abstraction keying and chance sampling (jaxcfr)
        "abstract_infoset": abstract_infoset.astype(np.int32),
        "sf_seq0": sf_seq0.astype(np.int32),
        "sf_seq1": sf_seq1.astype(np.int32),
        "node_public_state": node_public.astype(np.int32),
        "block_rows": blocks[0],
        "block_cols": blocks[1],
        "sf_payoff": sf_payoff,
        "node_chance_probs": node_chance_probs,
        "node_utility": node_utility,
        "node_chance_reach": node_chance_reach,
        "public_state_keys": tuple(str(k) for k in w.public_ids),
        "compile_seconds": 0.0,
    }
    digest = hashlib.sha1()
    for arr in (legal_mask, inf_player, parent_seq, abstract_infoset, node_player, node_children):
        digest.update(np.ascontiguousarray(arr).tobytes())
    levels = (tuple(inf_levels[0]), tuple(inf_levels[1]))
    parent_local = level_parent_positions(parent_seq, levels, A)
    children, fanout = level_children(parent_local, levels, A)
    compact = compact_layout(legal_mask, parent_seq, levels)
    c_children, c_fanout = level_children(compact["parent_local"], levels, A, compact["pieces"])
    groups = None
    c_own = [  # the sf entries' positions in each player's compact [P_p] block
        compact_positions(compact, s, compact["sizes"][p], n_inf, A)
        for p, s in enumerate((sf_seq0, sf_seq1))
    ]
    if blocks[2].shape[0] == 0:  # a game with payoff blocks sums its block rows instead
        groups = [
            fanin_groups(
                c_own[p],
                c_own[1 - p],
                sign * sf_payoff,
                compact["sizes"][p],
                compact["sizes"][1 - p],
            )
            for p, sign in ((0, 1.0), (1, -1.0))
        ]
    meta = GameMeta(
        name=rules.name,
        params=tuple(sorted(rules.params().items())),
        num_actions=A,
        num_infosets=n_inf,
        infosets_per_player=per_player,
        num_histories=H,
        num_terminals=num_terminals,
        num_sf_terminals=int(sf_payoff.size),
        num_payoff_blocks=int(blocks[2].shape[0]),
        max_depth=int(depth.max()),
        max_children=K,
        infoset_levels=levels,
        child_fanout=fanout,
        node_levels=tuple(node_levels),
        num_public_states=len(w.public_ids),
        num_abstract_infosets=int(abstract_legal.shape[0]),
        has_abstraction=has_abstraction,
        fingerprint=digest.hexdigest(),
        infoset_keys=keys,
        abstract_keys=abstract_keys,
        host=host,
        compact_widths=compact["widths"],
        compact_pieces=compact["pieces"],
        compact_fanout=c_fanout,
        payoff_groups=None
        if groups is None
        else (*(gr["shapes"] for gr in groups), groups[0]["unit"] and groups[1]["unit"]),
    )
    i32 = np.int32
    starts = (0, per_player[0])

    def own(seq, p):  # positions in player p's own [A, n_p] block
        return jnp.asarray(block_positions(seq, starts[p], per_player[p], n_inf, A))

    parent_own = np.concatenate(
        [
            block_positions(
                parent_seq[starts[p] : starts[p] + per_player[p]],
                starts[p],
                per_player[p],
                n_inf,
                A,
            )
            for p in (0, 1)
        ]
    )
    uniform = legal_mask / legal_mask.sum(axis=1, keepdims=True)

    def cown(seq, p):  # positions in player p's compact [P_p] block
        return jnp.asarray(
            compact_positions(compact, seq, compact["sizes"][p], n_inf, A), dtype=jnp.int32
        )

    c_parent_own = np.concatenate(
        [np.asarray(cown(parent_seq[starts[p] : starts[p] + per_player[p]], p)) for p in (0, 1)]
    )

    def group_cat(key, dtype):  # both players' fan-in group tables, player 0 first
        return np.concatenate([gr[key] for gr in groups]) if groups else np.zeros(0, dtype)

    game = Game(
        legal_mask=jnp.asarray(legal_mask),
        legal_uniform=jnp.asarray(uniform, dtype=fdt),
        legal_mask_t=jnp.asarray(np.ascontiguousarray(legal_mask.T)),
        legal_uniform_t=jnp.asarray(np.ascontiguousarray(uniform.T), dtype=fdt),
        infoset_player=jnp.asarray(inf_player.astype(i32)),
        parent_seq=jnp.asarray(parent_seq.astype(i32)),
        abstract_infoset=jnp.asarray(abstract_infoset.astype(i32)),
        sf_seq0=jnp.asarray(sf_seq0.astype(i32)),
        sf_seq1=jnp.asarray(sf_seq1.astype(i32)),
        sf_payoff=jnp.asarray(sf_payoff, dtype=fdt),
        block_rows=jnp.asarray(blocks[0]),
        block_cols=jnp.asarray(blocks[1]),
        block_payoff=jnp.asarray(blocks[2], dtype=fdt),
        parent_local=jnp.asarray(parent_local),
        level_children=jnp.asarray(children),
        parent_own=jnp.asarray(parent_own),
        sf_own0=own(sf_seq0, 0),
        sf_own1=own(sf_seq1, 1),
        block_row_own=own(blocks[0], 0),
        block_col_own=own(blocks[1], 1),
        compact_legal=jnp.asarray(compact["legal"]),
        compact_uniform=jnp.asarray(compact["uniform"], dtype=fdt),
        compact_index=jnp.asarray(compact["index"]),
        compact_position=jnp.asarray(compact["position"]),
        compact_parent_local=jnp.asarray(compact["parent_local"]),
        compact_parent_piece=jnp.asarray(compact["parent_piece"]),
        compact_order=jnp.asarray(compact["order"]),
        compact_rank=jnp.asarray(compact["rank"]),
        compact_level_children=jnp.asarray(c_children),
        compact_parent_own=jnp.asarray(c_parent_own),
        compact_sf_own0=jnp.asarray(c_own[0], dtype=jnp.int32),
        compact_sf_own1=jnp.asarray(c_own[1], dtype=jnp.int32),
        compact_block_row_own=cown(blocks[0], 0),
        compact_block_col_own=cown(blocks[1], 1),
        compact_group_opp=jnp.asarray(group_cat("opp", np.int32)),
        compact_group_payoff=jnp.asarray(group_cat("payoff", np.float64), dtype=fdt),
        compact_group_slot=jnp.asarray(group_cat("slot", np.int32)),
        node_player=jnp.asarray(node_player.astype(i32)),
        node_infoset=jnp.asarray(node_infoset),
        node_children=jnp.asarray(node_children),
        node_chance_probs=jnp.asarray(node_chance_probs, dtype=fdt),
        node_utility=jnp.asarray(node_utility, dtype=fdt),
        node_chance_reach=jnp.asarray(node_chance_reach, dtype=fdt),
        node_public_state=jnp.asarray(node_public.astype(i32)),
        node_parent=jnp.asarray(node_parent.astype(i32)),
        node_depth=jnp.asarray(node_depth.astype(i32)),
        node_walk_rows=jnp.asarray(
            walk_rows(
                node_player,
                node_infoset,
                node_children,
                legal_mask,
                # u_0's bits in the game's float dtype (as jnp casts it above)
                np.asarray(jnp.asarray(node_utility, dtype=fdt)).view(np.int32),
            )
        ),
        meta=meta,
    )
    host["compile_seconds"] = time.perf_counter() - t0
    return game
