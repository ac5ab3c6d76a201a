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


def level_children(parent_local: np.ndarray, infoset_levels, num_actions: int):
    """Child lists for the bottom-up sums of :func:`level_parent_positions`, where cheap.

    For level ``d >= 1`` of a player (``n`` infosets below ``m = A * n_prev`` parent
    sequence slots, each slot with at most ``K`` child infosets), the kernel sums child
    values into parent slots either with a segment sum (a scatter) or, when
    ``K * m <= 4 * n + 2048`` (few gathers; saves the scatter and its zero fill), with
    ``K`` gathers from a ``[K, m]`` table of local child ids (padding ``n``, out of
    bounds). Returns the concatenated tables (int32, level by level, player 0 first)
    and the static fan-outs ``((K or 0 per level d >= 1), (...))`` (0: segment sum).
    """
    A = num_actions
    pieces, fanouts = [], []
    for levels in infoset_levels:
        fan = []
        for (start, end), (pstart, pend) in zip(levels[1:], levels[:-1], strict=True):
            n, m = end - start, A * (pend - pstart)
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
