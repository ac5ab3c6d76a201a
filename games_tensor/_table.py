"""Positions of sequences in the kernel's action-major blocks (precomputed at compile).

The sequence-form kernel (``jaxcfr._sequence_form``) holds each player's realization
plan and values as an ``[A, n_p]`` block: entry ``[a, i]`` is sequence
``(start_p + i)*A + a``, so sums and maxima over actions reduce the major axis (what
XLA:CPU vectorizes). The compiler stores, next to each flat sequence id array, the
matching positions in the owner's flattened block (and the level structure: parent
positions in the previous level's block, gathered child lists), so no integer division
runs inside the solvers' loops.
"""

from __future__ import annotations

import numpy as np

from games_tensor._game import TERMINAL


def block_positions(seq: np.ndarray, start: int, size: int, num_infosets: int, num_actions: int):
    """Flat sequence ids of one player's sequences -> positions in that player's own
    flattened ``[A, n_p]`` block (infosets ``start:start + size``): ``a * n_p + i - start``
    for sequence ``i*A + a``; the empty sequence (``I*A``) -> ``A*n_p`` and padding
    (``> I*A``) -> ``A*n_p + 1``, both out of the block, so a gather with
    ``fill_value=1`` reads the empty sequence's plan 1 (padding entries have zero
    payoff) and a scatter into ``A*n_p + 1`` segments keeps the empty sequence's sum
    last and drops padding. The kernel gathers the opponent's plan and scatters its
    own values through these, without a joint table of both players."""
    seq = np.asarray(seq, dtype=np.int64)
    A, n = num_actions, size
    empty = num_infosets * A
    pos = (seq % A) * n + seq // A - start
    pos = np.where(seq == empty, A * n, np.where(seq > empty, A * n + 1, pos))
    return pos.astype(np.int32)


def level_parent_positions(parent_seq: np.ndarray, infoset_levels, num_actions: int) -> np.ndarray:
    """``[I]``: for each infoset below the first level of its player, the position of
    its parent sequence in the flattened ``[A, n]`` block of the previous level
    (``b * n + j - start`` for parent sequence ``j*A + b``); 0 on first levels."""
    A = num_actions
    parent_seq = np.asarray(parent_seq, dtype=np.int64)
    out = np.zeros(parent_seq.size, dtype=np.int32)
    for levels in infoset_levels:
        for (start, end), (pstart, pend) in zip(levels[1:], levels[:-1], strict=True):
            parent = parent_seq[start:end]
            out[start:end] = (parent % A) * (pend - pstart) + parent // A - pstart
    return out


def child_table(ids: np.ndarray, rows: np.ndarray, K: int, m: int, pad: int) -> np.ndarray:
    """Flattened ``[K, m]`` int32 table: column ``j`` lists the ``rows`` whose parent slot
    ``ids`` is ``j``, in their order, then ``pad`` (out of bounds) below."""
    order = np.argsort(ids, kind="stable")
    sorted_ids = ids[order]
    rank = np.arange(ids.size) - np.searchsorted(sorted_ids, sorted_ids, side="left")
    table = np.full((K, m), pad, dtype=np.int32)
    table[rank, sorted_ids] = rows[order]
    return table.reshape(-1)


def level_children(parent_local: np.ndarray, infoset_levels, num_actions: int, level_pieces=None):
    """Child lists for the bottom-up sums of :func:`level_parent_positions`, where cheap.

    For level ``d >= 1`` of a player (``n`` infosets below ``m = A * n_prev`` parent
    sequence slots, each slot with at most ``K`` child infosets), the kernel sums child
    values into parent slots either with a segment sum (a scatter) or, when
    ``K * m <= 4 * n + 2048`` (few gathers; saves the scatter and its zero fill), with
    ``K`` gathers from a ``[K, m]`` table of local child ids (padding ``n``, out of
    bounds). Returns the concatenated tables (int32, level by level, player 0 first)
    and the static fan-outs ``((K or 0 per level d >= 1), (...))`` (0: segment sum).
    ``level_pieces`` (per player, per level, the ``(W, n)`` pieces of the compact layout,
    :func:`compact_layout`) makes each level's flat block ``sum W * n`` slots instead of
    ``A * n`` (child ids stay in level order).
    """
    A = num_actions
    pieces, fanouts = [], []
    for p, levels in enumerate(infoset_levels):
        fan = []
        for d, ((start, end), (pstart, pend)) in enumerate(
            zip(levels[1:], levels[:-1], strict=True)
        ):
            n = end - start
            m = A * (pend - pstart)
            if level_pieces is not None:
                m = sum(w * k for w, k in level_pieces[p][d])
            ids = np.asarray(parent_local[start:end], dtype=np.int64)
            K = int(np.bincount(ids, minlength=m).max()) if n else 0
            if n == 0 or K * m > 4 * n + 2048:
                fan.append(0)
                continue
            pieces.append(child_table(ids, np.arange(n), K, m, n))
            fan.append(K)
        fanouts.append(tuple(fan))
    flat = np.concatenate(pieces) if pieces else np.zeros(0, np.int32)
    return flat.astype(np.int32), tuple(fanouts)


# A level of the compact layout is split into pieces by legal count (below) where the
# pieces keep at most SPLIT_FRACTION of the level's W_d * n_d slots; a piece of fewer
# than SPLIT_MIN_INFOSETS infosets joins the next wider one (each piece is one more set
# of small ops per pass). docs/cfr.md "Session 26".
SPLIT_FRACTION = 0.8
SPLIT_MIN_INFOSETS = 64


def split_level(count: np.ndarray) -> list[tuple[int, np.ndarray]]:
    """One level's infosets (their legal counts ``count``, level order) -> pieces
    ``(W, local ids)``: infosets bucketed by ``ceil(log2(count))`` (widths 1, 2, 3-4,
    5-8, ...), narrowest first, each piece as wide as its widest infoset and its
    infosets in level order; a single piece ``(max count, all)`` where splitting does
    not keep at most ``SPLIT_FRACTION`` of the slots."""
    n = count.size
    whole = [(int(count.max()) if n else 0, np.arange(n))]
    if n == 0:
        return whole
    bucket = np.ceil(np.log2(np.maximum(count, 1))).astype(np.int64)
    pieces, carry = [], np.zeros(0, np.int64)
    for b in np.unique(bucket):
        ids = np.concatenate([carry, np.nonzero(bucket == b)[0]])
        if ids.size < SPLIT_MIN_INFOSETS and b != bucket.max():
            carry = ids
            continue
        if ids.size < SPLIT_MIN_INFOSETS and pieces:  # the widest bucket: joins the one before
            ids = np.concatenate([pieces.pop()[1], ids])
        pieces.append((int(count[ids].max()), np.sort(ids)))
        carry = np.zeros(0, np.int64)
    if len(pieces) < 2 or sum(w * ids.size for w, ids in pieces) > SPLIT_FRACTION * whole[0][0] * n:
        return whole
    return pieces


def compact_layout(
    legal_mask: np.ndarray, parent_seq: np.ndarray, infoset_levels, split: bool = True
):
    """The kernel's compact layout: each level of a player's sequence tree as a
    ``[W_d, n_d]`` block, ``W_d`` the level's own maximal number of legal actions (not the
    game's ``A``), row ``k`` holding each infoset's ``k``-th legal action (actions
    renumbered by their rank among the infoset's legal ones, so II-Goofspiel's card ids
    fit); a player's levels are concatenated flat, ``[P_p]``. A level where infosets of
    very different legal counts would pad most slots is instead the concatenation of
    pieces ``[W, n]`` (:func:`split_level`; LD(1,1): 59,436 slots instead of 172,026 for
    49,140 legal pairs), the level's infosets then in *piece order* (piece after piece,
    level order inside each). Slot ``(k, q)`` of a piece is at
    ``offset_piece + k * n + q``; an unsplit level is one piece in level order.

    Returns a dict: ``widths`` (per player, per level: the level's maximal count),
    ``pieces`` (per player, per level: the ``(W, n)`` of each piece), ``sizes``
    ``(P_0, P_1)``, ``position`` ``[I, A]`` int32 (global slot ``P_0 * p + local`` of
    each legal pair, ``P_0 + P_1`` for illegal ones), ``index`` ``[P_0 + P_1]`` int32 (the
    flat ``i*A + a`` of each slot, ``I*A`` for padding), ``legal`` ``[P_0 + P_1]`` bool,
    ``uniform`` ``[P_0 + P_1]`` float64, ``parent_local`` ``[I]`` (parent sequence in the
    previous level's flat block), ``order`` ``[I]`` (per level, the level-local id of the
    ``q``-th infoset in piece order), ``rank`` ``[I]`` (its inverse: an infoset's place in
    piece order), ``parent_piece`` ``[I]`` (``parent_local`` in piece order), and
    :func:`compact_positions` maps sequence ids. ``split=False`` keeps every level one
    piece (the layout before session 26; used to read checkpoints written in it)."""
    legal = np.asarray(legal_mask, dtype=bool)
    n_inf, A = legal.shape
    rank = np.cumsum(legal, axis=1) - 1
    count = legal.sum(axis=1)
    widths, all_pieces, sizes = [], [], []
    local = np.zeros((n_inf, A), np.int64)
    order = np.zeros(n_inf, np.int64)
    place = np.zeros(n_inf, np.int64)
    level_offsets = []
    for levels in infoset_levels:
        ws, ps, offs, offset = [], [], [], 0
        for start, end in levels:
            n = end - start
            ws.append(int(count[start:end].max()) if n else 0)
            offs.append(offset)
            pieces, q = [], 0
            level = count[start:end]
            whole = [(int(level.max()) if n else 0, np.arange(n))]
            for w, ids in split_level(level) if split else whole:
                rows = np.arange(ids.size)
                local[start + ids] = offset + rank[start + ids] * ids.size + rows[:, None]
                order[start + q : start + q + ids.size] = ids
                place[start + ids] = q + rows
                pieces.append((w, int(ids.size)))
                offset += w * ids.size
                q += ids.size
            ps.append(tuple(pieces))
        widths.append(tuple(ws))
        all_pieces.append(tuple(ps))
        sizes.append(offset)
        level_offsets.append(offs)
    total = sizes[0] + sizes[1]
    player_of = np.zeros(n_inf, np.int64)
    for p, levels in enumerate(infoset_levels):
        for start, end in levels:
            player_of[start:end] = p
    glob = local + np.where(player_of == 1, sizes[0], 0)[:, None]
    position = np.where(legal, glob, total)
    index = np.full(total, n_inf * A, np.int64)
    ii, aa = np.nonzero(legal)
    index[position[ii, aa]] = ii * A + aa
    c_legal = np.zeros(total, bool)
    c_legal[position[ii, aa]] = True
    uniform = np.zeros(total)
    uniform[position[ii, aa]] = 1.0 / count[ii]
    parent_seq = np.asarray(parent_seq, np.int64)
    parent_local = np.zeros(n_inf, np.int32)
    parent_piece = np.zeros(n_inf, np.int32)
    for p, levels in enumerate(infoset_levels):
        for d in range(1, len(levels)):
            start, end = levels[d]
            j, b = parent_seq[start:end] // A, parent_seq[start:end] % A
            parent_local[start:end] = local[j, b] - level_offsets[p][d - 1]
            parent_piece[start:end] = parent_local[start + order[start:end]]
    return {
        "widths": tuple(widths),
        "pieces": tuple(all_pieces),
        "sizes": tuple(sizes),
        "position": position.astype(np.int32),
        "local": local,
        "index": index.astype(np.int32),
        "legal": c_legal,
        "uniform": uniform,
        "parent_local": parent_local,
        "order": order.astype(np.int32),
        "rank": place.astype(np.int32),
        "parent_piece": parent_piece,
    }


def compact_positions(layout: dict, seq: np.ndarray, size: int, num_infosets: int, A: int):
    """Flat sequence ids of one player's sequences -> positions in that player's compact
    ``[P_p]`` block (``size = P_p``); the empty sequence (``I*A``) -> ``P_p``, padding
    (``> I*A``) -> ``P_p + 1``, as :func:`block_positions` does for ``[A, n_p]``."""
    seq = np.asarray(seq, dtype=np.int64)
    empty = num_infosets * A
    inside = np.minimum(seq, empty - 1)
    pos = layout["local"][inside // A, inside % A]
    pos = np.where(seq == empty, size, np.where(seq > empty, size + 1, pos))
    return pos.astype(np.int32)


# Fan-in groups (below) of nearby fan-ins are merged into one padded group where that adds
# at most GROUP_PAD_FRACTION of the merged group's entries (or GROUP_PAD_CELLS cells): each
# group is one more kernel per payoff pass, and II-Goofspiel(6) has 40 fan-ins per
# player, 21 of them with fewer than 250 sequences. II-GS(6): 9 groups per player, 18%
# more cells; its jitted exploitability's first call (trace + compile) 16 -> 4-5 CPU-s,
# and 6-8% less CPU per call interleaved in one process (unresolved across processes at
# load 11-19; session 28, docs/cfr.md "Exact exploitability").
GROUP_PAD_FRACTION = 0.25
GROUP_PAD_CELLS = 4096


def _merged_fanins(count: np.ndarray) -> list[tuple[int, list[int]]]:
    """The fan-ins ``K > 0`` present in ``count`` (entries per own sequence) merged, by
    increasing ``K``, into groups ``(K_max, [K, ...])`` padded to their largest fan-in."""
    fans = np.unique(count[count > 0])
    n = np.bincount(count, minlength=fans.max() + 1 if fans.size else 1)
    out = []  # (K_max, fan-ins, entries, sequences)
    for K in fans.tolist():
        if out:
            _, ks, real, cols = out[-1]
            real, cols = real + K * n[K], cols + n[K]
            if K * cols - real <= max(GROUP_PAD_CELLS, GROUP_PAD_FRACTION * real):
                out[-1] = (K, ks + [K], real, cols)
                continue
        out.append((K, [K], K * n[K], n[K]))
    return [(K, ks) for K, ks, _, _ in out]


def fanin_groups(own: np.ndarray, opp: np.ndarray, payoff: np.ndarray, size: int, opp_size: int):
    """The payoff entries of one player grouped by the fan-in of their own sequence, so
    that the terminal values ``g(s) = sum_{z: own(z) = s} x_opp(opp(z)) * payoff(z)`` are
    dense sums instead of a scatter-add (a fan-in-grouped gather table, CSR-like).

    ``own`` ``[Zs]``: positions in the player's own block ``[0, size]`` (``size`` the
    empty sequence; ``size + 1``, padding, is dropped); ``opp`` ``[Zs]``: the opponent's
    positions (``[0, opp_size + 1]``, read as in ``block_positions``); ``payoff`` ``[Zs]``
    (already signed for the player). Own sequences with the same fan-in ``K`` (number of
    entries) form one group, a ``[K, n]`` table: column ``j`` lists the entries of the
    group's ``j``-th sequence in their order in ``own`` (a stable sort), so summing the
    rows in order adds exactly as a sequential segment sum does (the same bits). Groups of
    nearby fan-ins are merged (:func:`_merged_fanins`): a column then lists its sequence's
    entries and below them padding cells that read the zero placed after the opponent's
    plan (position ``(2 if unit else 1) * (opp_size + 2)``, payoff 0), and adding ``+0``
    to a sum that starts from ``0 +`` leaves its bits.

    Unit payoffs (every entry -1, 0 or 1, as in II-Goofspiel): the zero entries are
    dropped and a -1 entry's opponent position is moved by ``opp_size + 2``, into a negated
    copy of the opponent's plan placed after the plan and its two fill slots, so a cell is
    one gather and no product (``x * 1`` and ``x * -1`` are exact: the same sums, up to the
    sign of a zero); ``unit`` says so.

    Returns a dict: ``unit``, ``shapes`` (``((K, n), ...)``, by increasing ``K``), ``opp`` and
    ``payoff`` (the tables flattened and concatenated group after group, int32 and
    float64) and ``slot`` ``[size + 1]`` int32: where each own position's sum lands in
    the concatenated group sums ``[sum_j n_j]`` followed by one zero (``sum_j n_j``: no
    entry)."""
    own = np.asarray(own, np.int64)
    payoff = np.asarray(payoff, np.float64)
    unit = bool(np.isin(payoff, (-1.0, 0.0, 1.0)).all())
    keep = (own <= size) & ((payoff != 0) if unit else True)
    own = own[keep]
    opp = np.asarray(opp, np.int64)[keep]
    payoff = payoff[keep]
    if unit:  # -1 entries read the negated copy of the opponent's plan
        opp = np.where(payoff < 0, opp + opp_size + 2, opp)
    order = np.argsort(own, kind="stable")
    own, opp, payoff = own[order], opp[order], payoff[order]
    count = np.bincount(own, minlength=size + 1)
    first = np.concatenate([[0], np.cumsum(count)[:-1]])
    shapes, opps, pays = [], [], []
    slot = np.zeros(size + 1, np.int64)
    placed = 0
    pad = (2 if unit else 1) * (opp_size + 2)  # the zero after the plan (and its copy)
    opp = np.concatenate([opp, [pad]])
    payoff = np.concatenate([payoff, [0.0]])
    for K, fans in _merged_fanins(count):
        seqs = np.nonzero(np.isin(count, fans))[0]
        rows = np.arange(K)[:, None]
        cells = np.where(rows < count[seqs], first[seqs] + rows, own.size)  # [K, n] entry ids
        opps.append(opp[cells].reshape(-1))
        pays.append(payoff[cells].reshape(-1))
        slot[seqs] = placed + np.arange(seqs.size)
        shapes.append((int(K), int(seqs.size)))
        placed += seqs.size
    slot[count == 0] = placed
    return {
        "unit": unit,
        "shapes": tuple(shapes),
        "opp": (np.concatenate(opps) if opps else np.zeros(0)).astype(np.int32),
        "payoff": np.concatenate(pays) if pays else np.zeros(0),
        "slot": slot.astype(np.int32),
    }


# the legal bitmask of a walk row is one int32 (bits 0..30)
MAX_WALK_ROW_ACTIONS = 31


def walk_rows(node_player, node_infoset, node_children, legal_mask, utility_bits) -> np.ndarray:
    """``[H, 3 + w]`` int32 walk rows of the history tree (``Game.node_walk_rows``): the
    node code (infoset id at player nodes, else ``node_player``: CHANCE or TERMINAL), the
    first child (smallest child id; 0 where none), the legal actions as a bitmask (bit a
    for action a: the infoset's ``legal_mask`` row at player nodes, all A at terminals, 0
    at chance nodes), then ``utility_bits`` (``[H, w]`` int32: u_0's bits in the game's
    float dtype). ``[0, 3 + w]`` when A > :data:`MAX_WALK_ROW_ACTIONS`. Built once at
    compile, so the samplers do not rebuild them in every call (jaxcfr._sampling's
    compact node rows read them at the levels without chance nodes)."""
    node_player = np.asarray(node_player)
    legal_mask = np.asarray(legal_mask, bool)
    A = legal_mask.shape[1]
    utility_bits = np.asarray(utility_bits, np.int32).reshape(node_player.shape[0], -1)
    if A > MAX_WALK_ROW_ACTIONS:
        return np.zeros((0, 3 + utility_bits.shape[1]), np.int32)
    code = np.where(node_player >= 0, np.maximum(node_infoset, 0), node_player)
    kids = np.asarray(node_children)
    big = np.iinfo(np.int32).max
    first = (
        np.where(kids >= 0, kids, big).min(axis=1) if kids.shape[1] else np.full(code.shape, big)
    )
    first = np.where(first == big, 0, first)
    bits_of = (legal_mask.astype(np.int64) << np.arange(A)).sum(axis=1)  # per infoset
    bits = np.where(
        code >= 0,
        bits_of[np.maximum(node_infoset, 0)],
        np.where(code == TERMINAL, (1 << A) - 1, 0),
    )
    return np.concatenate(
        [np.stack([code, first, bits], axis=1).astype(np.int32), utility_bits], axis=1
    )
