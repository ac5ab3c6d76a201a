"""The one sequence-form traversal kernel shared by evaluation and full-width CFR.

Everything is a top-down product or a bottom-up sum over the levels of each
player's sequence tree (``game.meta.infoset_levels``), with static slices, so
the passes unroll into a handful of gathers, segment sums and reductions per
level. Written for one policy; callers ``jax.vmap`` over a batch.

Layout. The kernel computes in **action-major** layout: a player's policy, plan
and values are ``[A, n_p]`` blocks (action first, then the player's infosets in
``game.player_slice(p)`` order), so every sum or max over actions reduces the
major axis, which XLA:CPU vectorizes; over a minor axis of 2 or 3 actions it runs
about 4x slower (``python -m experiments.benchmarks layout`` measures both). The
public API keeps ``[I, A]``; :func:`policy_blocks` transposes once at the boundary.

Compact layout (``compact=True``, where :func:`uses_compact` says it pays): every level
``d`` of a player's sequence tree is a ``[W_d, n_d]`` block, ``W_d`` the level's own
widest infoset (not the game's ``A``), row ``k`` an infoset's ``k``-th legal action, and
a player's levels are concatenated flat into ``[P_p]``
(``games_tensor._table.compact_layout``; the compiled positions ``game.compact_*``).
II-Goofspiel(6) keeps 205,596 slots instead of 996,012. Where a level mixes infosets of
very different legal counts the compiler splits it into pieces ``[W, n]`` by legal count
(``meta.compact_pieces``; LD(1,1): 59,436 slots instead of 172,026 for 49,140 legal
pairs); the kernel runs its per-level work piece by piece, per-infoset values of such a
level are read and written in the pieces' order (``game.compact_order`` /
``compact_rank``: one small gather each) and its child sums still add in level order, so
the results keep the unsplit layout's bits (up to the sign of a zero sum). Every
function below takes ``compact`` and then reads and returns flat ``[P_p]`` blocks
instead of ``[A, n_p]``; the arithmetic per legal pair is the same (sums over actions
skip only the zeros of illegal actions), so results equal the ``[A, n_p]`` layout's.

Each player's plan and values stay in its own ``[A, n_p]`` block: the compiler stores
the position of every sequence the kernel gathers or scatters in its owner's flattened
block (``game.parent_own``, ``sf_own0/1``, ``block_row_own/col_own``; the empty
sequence at ``A * n_p``, out of the block; see ``games_tensor._table.block_positions``),
so no index arithmetic runs in the loop and no joint table of both players is built.

* ``plan_block``: x[a, i] = x(parent_seq[i]) * policy[a, i], x(empty) = 1.
* ``own_terminal_values``: g_p(s) = sum over payoff entries z with seq_p(z) = s of
  x_{-p}(seq_{-p}(z)) * u_p(z) (chance reach already in the payoff), on p's block.
* ``bottom_up``: v(i, a) = g_p(i, a) + sum over p's infosets j with parent
  sequence (i, a) of value(j), deepest level first, where value(j) is either
  sum_a policy(j, a) v(j, a) (counterfactual values of the policy) or
  max over legal a of v(j, a) (counterfactual best response).
  The v(i, a) are counterfactual values: weighted by the opponent's and chance's
  reach, not by p's own reach to i.
"""

from __future__ import annotations

from typing import Callable, NamedTuple

import jax
import jax.numpy as jnp

from games_tensor import Game
from jaxcfr._solver import (
    check_game,
    materialized,
    normalize_rows,
    over_actions,
    rounded,
    sum_actions,
    tree_sum,
)

NEG_INF = -jnp.inf


def take(x: jax.Array, index: jax.Array, fill_value=None) -> jax.Array:
    """``x[index]`` for compiled, non-negative positions: no negative-index wrapping
    (a select over the whole index array that XLA re-runs every iteration); positions
    out of bounds read ``fill_value`` (they must be in bounds when it is None)."""
    if fill_value is None:
        return x.at[index].get(mode="promise_in_bounds", wrap_negative_indices=False)
    if x.shape[0] == 0:  # a player without infosets: every position is out of bounds
        return jnp.full(jnp.shape(index) + x.shape[1:], fill_value, x.dtype)
    return x.at[index].get(mode="fill", fill_value=fill_value, wrap_negative_indices=False)


def take_near(x: jax.Array, index: jax.Array, fill_value) -> jax.Array:
    """``x[index]`` for compiled positions in ``[0, len(x) + 1]``, the two past the end
    reading ``fill_value`` (the empty sequence at ``len(x)`` and padding at
    ``len(x) + 1``, see ``games_tensor._table.block_positions``; child-list and
    compact-layout padding at ``len(x)``). The two fill values are appended and the
    gather runs in bounds: :func:`take` with a fill value selects over the whole index
    array instead (the largest fusion of a II-Goofspiel(6) update)."""
    pad = jnp.full((2,) + x.shape[1:], fill_value, x.dtype)
    return take(jnp.concatenate([x, pad]), index)


def _levels(game: Game, player: int):
    return game.meta.infoset_levels[player]


# The compact layout is used where it keeps at most this fraction of the [I, A] slots and
# the game has at least COMPACT_MIN_SLOTS of them: II-Goofspiel(6) (0.21 of 996,012)
# measured faster with it (exploitability 1.5x; CFR 2.0x once the state itself is kept
# compact, session 23), LD(1,1) (0.54 of 319,488) too (CFR 1.6x, CFR+ 1.3x in CPU time,
# session 24, once its float64 bits equal the [A, n_p] layout's); II-Goofspiel(4) (0.31
# of 2,952 slots) ran slower with it (CFR about 0.55x: the per-level ops cost more than
# the padding they save on a small game); II-Goofspiel(5) (0.249 of 49,740) keeps the
# compact layout it had before session 24 (not re-measured). docs/cfr.md, sessions 22-24.
COMPACT_FRACTION = 0.6
COMPACT_MIN_SLOTS = 1 << 15


def _pieces(game: Game, player: int, d: int):
    """The static ``(W, n)`` pieces of level ``d``'s compact block: one ``(W_d, n_d)``, or
    several where the compiler split the level by legal count (its infosets then in
    piece order, ``game.compact_order``; ``games_tensor._table.compact_layout``)."""
    return game.meta.compact_pieces[player][d]


def _split(game: Game, player: int, d: int) -> bool:
    return len(_pieces(game, player, d)) > 1


def _level_size(game: Game, player: int, d: int) -> int:
    """Slots of level ``d`` in the compact layout (``sum W * n`` over its pieces)."""
    return sum(w * n for w, n in _pieces(game, player, d))


def compact_size(game: Game, player: int) -> int:
    """``P_p``: slots of ``player``'s compact block."""
    return sum(_level_size(game, player, d) for d in range(len(_levels(game, player))))


def uses_compact(game: Game) -> bool:
    """Whether the solvers run ``game`` in the compact layout (static): it carries one,
    has at least ``COMPACT_MIN_SLOTS`` ``I * A`` slots and the unsplit layout (``W_d * n_d``
    per level, as measured in sessions 22-24) keeps at most ``COMPACT_FRACTION`` of them."""
    if game.meta.compact_widths is None or game.num_infosets == 0:
        return False
    full = game.num_infosets * game.num_actions
    slots = sum(
        w * (e - s)
        for p in (0, 1)
        for w, (s, e) in zip(game.meta.compact_widths[p], _levels(game, p), strict=True)
    )
    return full >= COMPACT_MIN_SLOTS and slots <= COMPACT_FRACTION * full


def _width(game: Game, player: int, d: int, compact: bool) -> int:
    return game.meta.compact_widths[player][d] if compact else game.num_actions


def _offset(game: Game, player: int, d: int) -> int:
    """Start of level ``d`` in ``player``'s flat compact block."""
    return sum(_level_size(game, player, e) for e in range(d))


def _player_offset(game: Game, player: int) -> int:
    """Start of ``player``'s slots in the compact arrays of both players."""
    return 0 if player == 0 else compact_size(game, 0)


def level_pieces(game: Game, x: jax.Array, player: int, d: int) -> list:
    """Level ``d``'s ``[W, n]`` pieces of a player's flat compact block."""
    off, out = _offset(game, player, d), []
    for w, n in _pieces(game, player, d):
        out.append(x[off : off + w * n].reshape(w, n))
        off += w * n
    return out


def level_block(game: Game, x: jax.Array, player: int, d: int, compact: bool = False):
    """Level ``d``'s ``[W_d, n_d]`` piece of a player's block (``[A, n_d]`` columns of
    an ``[A, n_p]`` block, or a reshaped slice of a flat compact one). A level split by
    legal count comes back as its pieces padded with zeros to ``W_d`` rows, its columns
    in piece order (for per-infoset checks; the kernel itself runs on the pieces)."""
    start, end = _levels(game, player)[d]
    if not compact:
        return x[:, _local(game, player, start, end)]
    pieces = level_pieces(game, x, player, d)
    if len(pieces) == 1:
        return pieces[0]
    w = _width(game, player, d, True)
    return jnp.concatenate([jnp.pad(p, ((0, w - p.shape[0]), (0, 0))) for p in pieces], axis=1)


def _level_flat(game: Game, x: jax.Array, player: int, d: int) -> jax.Array:
    off = _offset(game, player, d)
    return x[off : off + _level_size(game, player, d)]


def _to_pieces(game: Game, values: jax.Array, player: int, d: int) -> jax.Array:
    """Level ``d``'s per-infoset ``[n_d]`` values (level order) in piece order."""
    if not _split(game, player, d):
        return values
    start, end = _levels(game, player)[d]
    return materialized(take(values, game.compact_order[start:end]))


def _from_pieces(game: Game, values: jax.Array, player: int, d: int) -> jax.Array:
    """The inverse of :func:`_to_pieces`."""
    if not _split(game, player, d):
        return values
    start, end = _levels(game, player)[d]
    return take(values, game.compact_rank[start:end])


def _on_pieces(game: Game, player: int, d: int, fn, *flats):
    """``fn`` on each ``[W, n]`` piece of level ``d`` (``flats``: the level's flat slices),
    results as a list."""
    out, off = [], 0
    for w, n in _pieces(game, player, d):
        out.append(fn(*(x[off : off + w * n].reshape(w, n) for x in flats)))
        off += w * n
    return out


def join_levels(game: Game, pieces, player: int, compact: bool = False, dtype=None):
    """The inverse of :func:`level_block`: per-level pieces -> a player's block.

    In the compact layout of a player without split levels the pieces are written one
    after the other into one buffer (:func:`write_flat`), else concatenated: XLA:CPU fuses
    the pieces' computations into a concatenation as one loop that picks its operand per
    element and runs scalar (II-Goofspiel(6) CFR: the state's concatenations were about a
    quarter of an update), while each write is a loop of its own. With split levels
    (LD(1,1), 33 pieces) the writes ran slower (CFR 0.72x in one process, session 31)."""
    if not pieces:
        shape = (0,) if compact else (game.num_actions, 0)
        return jnp.zeros(shape, dtype or jnp.result_type(float))
    if compact:
        flat = [p.reshape(-1) for p in pieces]
        if any(_split(game, player, d) for d in range(len(_levels(game, player)))):
            return jnp.concatenate(flat)
        return write_flat(flat)
    return jnp.concatenate(pieces, axis=1)


def write_flat(pieces) -> jax.Array:
    """1-D ``pieces`` joined by writing them one after the other into one zero buffer
    (``dynamic_update_slice``, in place): the values of their concatenation."""
    out, offset = jnp.zeros((sum(p.shape[0] for p in pieces),), pieces[0].dtype), 0
    for piece in pieces:
        out = jax.lax.dynamic_update_slice(out, piece, (offset,))
        offset += piece.shape[0]
    return out


def over_infosets(game: Game, values: jax.Array, player: int, compact: bool = False):
    """Per-infoset ``[n_p]`` values broadcast over each infoset's action slots (the
    player's block shape; :func:`jaxcfr._solver.over_actions` per level)."""
    if not compact:
        return over_actions(values, (game.num_actions, values.shape[-1]))
    pieces = []
    offset = game.player_slice(player).start
    for d, (start, end) in enumerate(_levels(game, player)):
        lv = values[start - offset : end - offset]
        if not _split(game, player, d):
            pieces.append(over_actions(lv, (_width(game, player, d, True), end - start)))
            continue
        lv, q = _to_pieces(game, lv, player, d), 0
        for w, n in _pieces(game, player, d):
            pieces.append(over_actions(lv[q : q + n], (w, n)))
            q += n
    return join_levels(game, pieces, player, True, values.dtype)


def by_level(game: Game, player: int, compact: bool, fn, *blocks):
    """``fn`` over a player's blocks: on each level's ``[W_d, n_d]`` pieces, joined
    (compact layout), or on the whole ``[A, n_p]`` blocks at once. ``fn`` works on
    action-major pieces (actions on axis 0), e.g. regret matching."""
    if not compact:
        return fn(*blocks)
    pieces = [fn(*xs) for xs in level_pieces_of(game, player, True, *blocks)]
    return join_levels(game, pieces, player, True, blocks[0].dtype)


def level_pieces_of(game: Game, player: int, compact: bool, *blocks) -> list[tuple]:
    """The pieces :func:`by_level` runs its ``fn`` on, as tuples (one piece of each of
    ``blocks``): each level's ``[W_d, n_d]`` block or, where the level is split, its
    pieces (compact layout); the whole ``[A, n_p]`` blocks otherwise."""
    if not compact:
        return [blocks]
    out = []
    for d in range(len(_levels(game, player))):
        if _split(game, player, d):
            parts = [level_pieces(game, b, player, d) for b in blocks]
            out.extend(zip(*parts, strict=True))
        else:
            out.append(tuple(level_block(game, b, player, d, True) for b in blocks))
    return out


def flat(x: jax.Array) -> jax.Array:
    """A player's block as a flat vector (its compiled positions index that)."""
    return x.reshape(-1)


def _local(game: Game, player: int, start: int, end: int) -> slice:
    """Columns of infosets ``start:end`` inside ``player``'s ``[A, n_p]`` block."""
    offset = game.player_slice(player).start
    return slice(start - offset, end - offset)


def policy_blocks(game: Game, policy: jax.Array, compact: bool = False):
    """``[I, A]`` table -> the two players' blocks: action-major ``[A, n_0]``, ``[A, n_1]``
    (a transpose), or with ``compact`` the flat ``[P_0]``, ``[P_1]`` (one gather)."""
    if compact:
        both = take_near(policy.reshape(-1), game.compact_index, 0.0)
        split = compact_size(game, 0)
        return both[:split], both[split:]
    policy_t = policy.T
    return tuple(policy_t[:, game.player_slice(p)] for p in (0, 1))


def block_rows(game: Game, blocks, compact: bool = False) -> jax.Array:
    """The inverse of :func:`policy_blocks`: both players' blocks -> ``[I, A]`` (zero on
    illegal actions in the compact layout)."""
    if compact:  # a scatter of the P_0 + P_1 slots (a gather would read all I * A)
        size = game.num_infosets * game.num_actions
        rows = (
            jnp.zeros((size,), blocks[0].dtype)
            .at[game.compact_index]
            .set(jnp.concatenate(blocks), mode="drop", unique_indices=True)
        )
        return rows.reshape(game.num_infosets, game.num_actions)
    return jnp.concatenate(blocks, axis=1).T


def kernel_table(game: Game, table: jax.Array) -> jax.Array:
    """One ``[I, A]`` table of a full-width CFR state -> the kernel's layout the solver
    keeps it in: flat ``[P_0 + P_1]`` (both players' compact blocks, one gather) where
    :func:`uses_compact`, else ``table`` itself (the ``[A, n_p]`` blocks are its
    transpose, which XLA turns into a bitcast). Illegal actions are dropped."""
    check_game(game)
    shape = (game.num_infosets, game.num_actions)
    if tuple(table.shape) != shape:
        raise ValueError(f"table must be [I, A] = {shape} of {game.name}, got {table.shape}")
    if not uses_compact(game):
        return table
    return jnp.concatenate(policy_blocks(game, table, True))


def infoset_table(game: Game, table: jax.Array) -> jax.Array:
    """The public ``[I, A]`` view of one table of a solver state (zero on illegal actions):
    a flat ``[P_0 + P_1]`` compact table (the kernel's layout, see :func:`kernel_table`)
    is scattered into ``[I, A]``; any 2-D table (``[I, A]``, or ``[J, A]`` keyed by an
    abstraction) is returned as it is. One state's table: ``jax.vmap`` it for a batch."""
    check_game(game)
    if table.ndim == 2 and table.shape[1] == game.num_actions:
        return table
    if table.ndim != 1:
        raise ValueError(
            f"table must be one state's [I, A] (or [J, A]) table of {game.name} "
            f"(A = {game.num_actions}) or its compact [P_0 + P_1] layout, got shape "
            f"{tuple(table.shape)} (jax.vmap it for a batch)"
        )
    size = None
    if game.meta.compact_widths is not None:
        size = compact_size(game, 0) + compact_size(game, 1)
    if table.shape[0] != size:
        raise ValueError(
            f"a 1-D state table must be the kernel's compact layout [P_0 + P_1] = [{size}] "
            f"of {game.name}, got shape {tuple(table.shape)}"
        )
    split = compact_size(game, 0)
    return block_rows(game, (table[:split], table[split:]), True)


def legal_block(game: Game, player: int, compact: bool = False) -> jax.Array:
    """``[A, n_p]`` (or compact ``[P_p]``) legal mask of ``player``'s infosets."""
    if compact:
        off = _player_offset(game, player)
        return game.compact_legal[off : off + compact_size(game, player)]
    return game.legal_mask_t[:, game.player_slice(player)]


def uniform_block(game: Game, player: int, compact: bool = False) -> jax.Array:
    """The uniform fallback of ``player``'s infosets in the layout of :func:`legal_block`."""
    if compact:
        off = _player_offset(game, player)
        return game.compact_uniform[off : off + compact_size(game, player)]
    return game.legal_uniform_t[:, game.player_slice(player)]


def _padded(game: Game) -> bool:
    """Whether the compact layout of ``game`` has padding slots (some level holds an
    infoset with fewer legal actions than the level's width; LD(1,1): 172,026 slots for
    49,140 legal pairs; II-Goofspiel has none)."""
    pairs = int(game.meta.host["legal_mask"].sum())
    return compact_size(game, 0) + compact_size(game, 1) > pairs


def plan_block(
    game: Game, policy_p: jax.Array, player: int, compact: bool = False, written: bool = False
):
    """``player``'s realization plan from its policy block (both ``[A, n_p]``, or flat
    ``[P_p]`` with ``compact``).

    With ``written`` (compact layout only; the exact evaluation) the levels are written
    one after the other into one buffer (``dynamic_update_slice``, in place) instead of
    concatenated: XLA:CPU fuses each level's computation, the deepest level's parent
    gather and renormalization included, into the concatenation, one loop over the whole
    plan that picks its operand per element; written, each level is its own loop
    (II-Goofspiel(6) exploitability: the two concatenations 160-350 us each, the deepest
    level's write about 110 us; session 30, docs/cfr.md "Exact exploitability"). The
    values are the same, so the same bits; the result is a buffer of its own, which XLA
    does not fuse into the payoff gathers. Written, every level but the deepest is also
    computed into its own buffer first (:func:`jaxcfr._solver.materialized`): otherwise
    XLA fuses a level's parent gather, normalization and product into the next level's
    gather and recomputes them per child (II-Goofspiel(6): the deepest level's write
    recomputed level 4's plan for each of its 65,760 slots; 5% less CPU per call,
    session 31).

    In a padded compact layout (:func:`_padded`) each level's plan is computed once into
    its own buffer (:func:`jaxcfr._solver.materialized`, the same bits): otherwise
    XLA:CPU may fuse it into the next level's gather, the concatenation of the levels
    and the payoff gather, and recompute it in each (assumed, not read in the HLO).
    LD(1,1) CFR ran 1.16x (CFR+ 1.14x) with it, II-GS(6) 0.95x, interleaved in one
    process (docs/cfr.md "Session 25")."""
    if compact:
        return _compact_plan(game, policy_p, player, written)
    parent_local = game.parent_local
    pieces = []
    prev = None  # the previous level's [A, n] plan, flattened
    for start, end in _levels(game, player):
        pol = policy_p[:, _local(game, player, start, end)]
        if prev is None:
            cur = pol
        else:
            cur = over_actions(take(prev, parent_local[start:end]), pol.shape) * pol
        pieces.append(cur)
        prev = cur.reshape(-1)
    return join_levels(game, pieces, player, compact, policy_p.dtype)


def _compact_plan(game: Game, policy_p: jax.Array, player: int, written: bool = False):
    """:func:`plan_block` in the compact layout: each piece's parents are read from the
    previous level's flat plan (``game.compact_parent_piece``, piece order); the pieces
    are concatenated, or with ``written`` written into one zero buffer in the same order."""
    padded, last = _padded(game), len(_levels(game, player)) - 1
    pieces = []
    prev = None  # the previous level's plan, flat
    for d, (start, end) in enumerate(_levels(game, player)):
        # written: every level a later level reads in its own buffer (see plan_block)
        materialize = padded or (written and d < last)
        if not _split(game, player, d):  # as a [W_d, n_d] block
            pol = level_block(game, policy_p, player, d, True)
            cur = pol
            if prev is not None:
                parent = take(prev, game.compact_parent_local[start:end])
                cur = over_actions(parent, pol.shape) * pol
            if materialize:
                cur = materialized(cur)
            pieces.append(cur)
            prev = cur.reshape(-1)
            continue
        level, q = [], start
        for pol in level_pieces(game, policy_p, player, d):
            n = pol.shape[1]
            if prev is None:
                cur = pol
            else:
                parent = take(prev, game.compact_parent_piece[q : q + n])
                cur = over_actions(parent, pol.shape) * pol
            if materialize:
                cur = materialized(cur)
            level.append(cur.reshape(-1))
            q += n
        pieces.extend(level)
        prev = level[0] if len(level) == 1 else jnp.concatenate(level)
    if not written or not pieces:
        return join_levels(game, pieces, player, True, policy_p.dtype)
    return write_flat([piece.reshape(-1) for piece in pieces])


def realization_plan(game: Game, policy: jax.Array) -> jax.Array:
    """The realization plan as a flat ``[S]`` vector over sequence ids ``i*A + a``
    (``x[I*A] = 1``) of the ``[I, A]`` profile ``policy`` (standard order, for callers
    outside the kernel)."""
    blocks = policy_blocks(game, policy)
    plans = [plan_block(game, blocks[p], p) for p in (0, 1)]
    one = jnp.ones((1,), policy.dtype)
    return jnp.concatenate([jnp.concatenate(plans, axis=1).T.reshape(-1), one])


def own_reach_block(game: Game, plan_p: jax.Array, player: int, compact: bool = False):
    """``[n_p]``: ``player``'s own reach x_p(parent_seq(i)) to each of its infosets, read
    from its own plan block (``game.parent_own``; the empty sequence: 1)."""
    parent_own = game.compact_parent_own if compact else game.parent_own
    return take_near(flat(plan_p), parent_own[game.player_slice(player)], 1.0)


def uses_groups(game: Game, compact: bool) -> bool:
    """Whether :func:`own_terminal_values` can sum the payoff entries by fan-in group
    (static): the compact layout of a game that carries the compiled groups
    (``game.meta.payoff_groups``, games without payoff blocks)."""
    return compact and game.meta.payoff_groups is not None


def _grouped_terminal_values(game: Game, opp_flat: jax.Array, player: int):
    """:func:`own_terminal_values` through the fan-in groups (compact layout, no payoff
    blocks; ``games_tensor._table.fanin_groups``): each group of own sequences with ``K``
    payoff entries is a ``[K, n]`` table of the opponent's positions and signed payoffs,
    summed row after row (one fused loop per group: ``K`` gathers of the opponent's plan,
    products and adds, no scatter and no zero fill); one gather puts the group sums in
    the own block's order. Groups of nearby fan-ins come merged from the compiler, their
    shorter columns padded with cells that read a zero appended to the plan (fewer,
    larger loops). Rows are summed in the entries' order, so the result has the
    bits of the segment sum (unit payoffs: up to the sign of a zero sum, as the zero
    entries are dropped; a cell is then one gather of the plan or its negated copy).
    ``shapes[2]``, the unit flag, is ``game.meta.payoff_groups[2]``."""
    shapes = game.meta.payoff_groups
    start = sum(K * n for K, n in shapes[0]) if player == 1 else 0
    slot_start = compact_size(game, 0) + 1 if player == 1 else 0
    size = compact_size(game, player)
    opp = jnp.concatenate([opp_flat, jnp.ones((2,), opp_flat.dtype)])  # empty, padding: 1
    unit = shapes[2]
    if unit:  # payoffs -1, 0, 1: a -1 entry reads the negated copy (fanin_groups)
        opp = jnp.concatenate([opp, -opp])
    opp = jnp.concatenate([opp, jnp.zeros((1,), opp.dtype)])  # read by merged groups' padding
    sums = []
    pos, pay = game.compact_group_opp, game.compact_group_payoff.astype(opp.dtype)
    for K, n in shapes[player]:
        # row k as a 1-D slice of the flat table (a [K, n] reshape made XLA copy each
        # group's table into its own buffer first)
        rows = [slice(start + k * n, start + (k + 1) * n) for k in range(K)]
        if unit:
            sums.append(sum(take(opp, pos[r]) for r in rows))
        else:
            sums.append(sum(rounded(take(opp, pos[r]) * pay[r]) for r in rows))
        start += K * n
    sums.append(jnp.zeros((1,), opp.dtype))
    g = take(jnp.concatenate(sums), game.compact_group_slot[slot_start : slot_start + size + 1])
    return g[:size], g[size]


def own_terminal_values(
    game: Game, opp_plan: jax.Array, player: int, compact: bool = False, grouped: bool = False
):
    """``g_p`` on ``player``'s own sequences, from the opponent's ``[A, n_{-p}]`` plan block
    alone: returns ``(g [A, n_p], g_root)``, ``g_root`` the sum over payoff entries at
    ``player``'s empty sequence (with ``compact``: flat ``[P_{-p}]`` in, ``[P_p]`` out,
    through the ``game.compact_*`` positions). Gathers and scatters go through ``game.sf_own0`` /
    ``block_row_own`` ... (positions in each player's own block,
    ``games_tensor._table.block_positions``): the scatter fills only ``A * n_p + 1`` slots.

    With payoff blocks (``game.meta.num_payoff_blocks > 0``) this is G small dense
    matrix-vector products, unrolled over the small block axis (no dot: XLA:CPU runs
    tiny batched dots through its thread pool, slower here), and a scatter of G*R (or
    G*C) values; otherwise one segment sum over the Zs payoff entries, or with
    ``grouped`` where :func:`uses_groups` (the exact evaluation; the CFR update with
    ``jaxcfr._cfr.GROUPED``), dense sums per fan-in
    group (:func:`_grouped_terminal_values`, the same bits)."""
    if grouped and uses_groups(game, compact):
        return _grouped_terminal_values(game, flat(opp_plan), player)
    A = game.num_actions
    n = game.meta.infosets_per_player[player]
    size = compact_size(game, player) if compact else A * n
    if compact:
        row_own, col_own = game.compact_block_row_own, game.compact_block_col_own
        sf_own0, sf_own1 = game.compact_sf_own0, game.compact_sf_own1
    else:
        row_own, col_own = game.block_row_own, game.block_col_own
        sf_own0, sf_own1 = game.sf_own0, game.sf_own1
    opp_flat = flat(opp_plan)
    if game.meta.num_payoff_blocks:
        pay = game.block_payoff.astype(opp_plan.dtype)
        # padding rows / columns read 1 (the fill of the empty sequence); their payoff is 0
        if player == 0:
            opp = take_near(opp_flat, col_own, 1.0)
            vals = sum(rounded(pay[:, :, c] * opp[:, c, None]) for c in range(pay.shape[2]))
            own = row_own
        else:
            opp = take_near(opp_flat, row_own, 1.0)
            vals = -sum(rounded(pay[:, r, :] * opp[:, r, None]) for r in range(pay.shape[1]))
            own = col_own
        contrib, own = vals.reshape(-1), own.reshape(-1)
    else:
        own, opp = (sf_own0, sf_own1) if player == 0 else (sf_own1, sf_own0)
        payoff = game.sf_payoff.astype(opp_flat.dtype)
        contrib = rounded(take_near(opp_flat, opp, 1.0) * payoff)
    g = jax.ops.segment_sum(contrib, own, num_segments=size + 1)
    if player == 1 and not game.meta.num_payoff_blocks:
        # player 1's payoff is -u_0: the sums of u_0 negated, ``0 - s`` (+0 where s is
        # a zero, as the sum of the negated terms gives; otherwise exactly -s), instead of
        # negating all Zs payoffs, which XLA hoists out of a scan loop and then runs on
        # every call (II-Goofspiel(6): 518,400 products per call, docs/cfr.md "Session 27")
        g = 0.0 - g
    return (g[:size] if compact else g[:size].reshape(A, n)), g[size]


def _child_table_offset(game: Game, player: int, level: int, compact: bool = False) -> int:
    """Static start of level ``level``'s child table in ``game.level_children``
    (``game.compact_level_children``)."""
    offset = 0
    fanouts = game.meta.compact_fanout if compact else game.meta.child_fanout
    for p, fanout in enumerate(fanouts):
        for e, k in enumerate(fanout):
            if (p, e + 1) == (player, level):
                return offset
            pstart, pend = game.meta.infoset_levels[p][e]
            if compact:
                offset += k * _level_size(game, p, e)
            else:
                offset += k * game.num_actions * (pend - pstart)
    raise AssertionError("level not found")


def _child_sums(game: Game, player: int, d: int, val: jax.Array, compact: bool = False):
    """Sum the values ``val`` ([n], level order) of level ``d``'s infosets into the
    ``[A, n_prev]`` parent-sequence slots of level ``d - 1`` (compact layout: that level's
    flat block): ``K`` gathers from the compiled child lists where the fan-out ``K`` is
    small, else a segment sum (see ``games_tensor._table.level_children``)."""
    levels = _levels(game, player)
    start, end = levels[d]
    n_prev = levels[d - 1][1] - levels[d - 1][0]
    W, shape = game.num_actions, (game.num_actions, n_prev)
    if compact and _split(game, player, d - 1):  # the level's flat block
        W, n_prev = 1, _level_size(game, player, d - 1)
        shape = (n_prev,)
    elif compact:
        W = _width(game, player, d - 1, True)
        shape = (W, n_prev)
    if compact:
        fanout, parent_local = game.meta.compact_fanout[player], game.compact_parent_local
        children = game.compact_level_children
    else:
        fanout, parent_local = game.meta.child_fanout[player], game.parent_local
        children = game.level_children
    K = fanout[d - 1]
    if K == 0:
        sums = jax.ops.segment_sum(val, parent_local[start:end], num_segments=W * n_prev)
        # ``rounded``: XLA rewrites ``g + scatter_add(0, ...)`` into ``scatter_add(g, ...)``,
        # i.e. (g + c1) + c2 instead of g + (c1 + c2), where the shapes line up without a
        # reshape (the compact layout's flat levels; LD(1,1) differed by 1 ulp from the
        # [A, n_p] layout, docs/cfr.md "Session 24"); the select keeps the sum separate.
        return rounded(sums).reshape(shape)
    offset = _child_table_offset(game, player, d, compact)
    table = children[offset : offset + K * W * n_prev].reshape((K, *shape))
    return sum(take_near(val, table[k], 0.0) for k in range(K))


class BottomUp(NamedTuple):
    """Result of a bottom-up pass for one player p, action-major.

    action_values: [A, n_p] (compact layout: flat [P_p]) counterfactual values v(i, a)
      on p's infosets (``game.player_slice(p)`` order), zero on illegal actions.
    infoset_values: [n_p] value(i) of each of p's infosets.
    root_value: scalar, p's expected value (policy) or best-response value (max).
    """

    action_values: jax.Array
    infoset_values: jax.Array
    root_value: jax.Array


Combine = Callable[[jax.Array, jax.Array, jax.Array], jax.Array]


def combine_policy(values, mask, policy):
    """value(i) = sum_a policy(a, i) v(a, i) (``[A, n]`` -> ``[n]``)."""
    return materialized(sum_actions(jnp.where(mask, rounded(values * policy), 0.0), axis=0))


def combine_max(values, mask, policy):
    """value(i) = max over legal a of v(a, i), the counterfactual best response."""
    del policy
    return jnp.max(jnp.where(mask, values, NEG_INF), axis=0)


def bottom_up(
    game: Game,
    g: jax.Array,
    player: int,
    policy_p: jax.Array,
    combine: Combine,
    root_g: jax.Array,
    compact: bool = False,
) -> BottomUp:
    """Accumulate terminal values ``g`` up the player's sequence tree: ``g`` is the
    player's own block (``[A, n_p]``, or flat ``[P_p]`` with ``compact``) and ``root_g``
    its empty-sequence sum (:func:`own_terminal_values`). ``policy_p`` is the player's
    policy block in the same layout.

    ``combine(v [W, n], mask [W, n], policy [W, n]) -> [n]`` turns action values
    into infoset values (:func:`combine_policy` or :func:`combine_max`).
    """
    levels = _levels(game, player)
    mask_p = legal_block(game, player, compact)
    action_vals = [None] * len(levels)
    infoset_vals = [None] * len(levels)
    child = None  # [W, n_level] (compact: flat) sums of child infoset values, from below
    for d in range(len(levels) - 1, -1, -1):
        if compact and _split(game, player, d):
            v = _level_flat(game, g, player, d)
            if child is not None:
                v = v + child

            def piece(v, mask, pol):
                v = jnp.where(mask, v, 0.0)
                return v, combine(v, mask, pol)

            out = _on_pieces(
                game,
                player,
                d,
                piece,
                v,
                *(_level_flat(game, x, player, d) for x in (mask_p, policy_p)),
            )
            v = jnp.concatenate([o[0].reshape(-1) for o in out])
            val = out[0][1] if len(out) == 1 else jnp.concatenate([o[1] for o in out])
            val = _from_pieces(game, val, player, d)
        else:
            v = level_block(game, g, player, d, compact)
            if child is not None:
                v = v + child
            mask = level_block(game, mask_p, player, d, compact)
            v = jnp.where(mask, v, 0.0)
            val = combine(v, mask, level_block(game, policy_p, player, d, compact))
        action_vals[d], infoset_vals[d] = v, val
        if d > 0:
            child = _child_sums(game, player, d, val, compact)
    root = root_g + (tree_sum(infoset_vals[0]) if levels else 0.0)
    if not levels:
        empty = join_levels(game, [], player, compact, g.dtype)
        return BottomUp(empty, jnp.zeros((0,), g.dtype), root)
    action_values = join_levels(game, action_vals, player, compact, g.dtype)
    return BottomUp(action_values, jnp.concatenate(infoset_vals), root)


def to_full(game: Game, player: int, block: jax.Array) -> jax.Array:
    """Place a player's ``[n_p, ...]`` block into a zero ``[I, ...]`` array."""
    full = jnp.zeros((game.num_infosets, *block.shape[1:]), block.dtype)
    return full.at[game.player_slice(player)].set(block)


def normalize_policy(game: Game, policy: jax.Array) -> jax.Array:
    """Inside-jit policy hygiene: zero illegal mass, renormalize over legal actions,
    uniform where a row has no legal mass. ``[I, A] -> [I, A]``."""
    return normalize_rows(policy, game.legal_mask, game.legal_uniform)
