"""Total RBP on a compacted live sub-game between checks (host layout, device stretch).

Brown & Sandholm (2016): a long-pruned branch should cost neither time nor memory. Between
two checks of Total RBP (``check_every = k``) the pruned set does not change (starts
happen only at checks; a branch ends only at a check: a scheduled one, or the one forced
at the iteration where (9) fails, ALGORITHMS.md 2.8), so the iterations between checks
run on a *sub-game* built on the host from the pruned set (a stretch stops before an
iteration where (9) fails, which then runs as a forced check on the full game):

* infosets: every infoset of player p not strictly below a pruned own sequence (the
  opponent's infosets under p's pruned branches stay: their owner still reaches them);
  per player and level, in the full game's order, padded with dummy infosets (one legal
  action, no payoff) to a size bucket (4 per octave) so that few shapes (compiles) occur;
  ``run_live`` (by default) also leaves out the *opponent-frozen* infosets (every history
  below a pruned sequence of the opponent: zero cf values, so regrets, V and bounds
  frozen) and brings their average and faced-plan sums up to date after each stretch
  (:func:`_catch_up`, from window sums the stretch keeps at their parent sequences);
* payoff entries: those whose two sequences are live (no pruned sequence of its owner on
  the path, inclusive), merged per sequence pair, padded to a power of two; no payoff
  blocks (segment-sum path);
* per player p, the histories of p's rows (row, the opponent's sequence in the compact
  game, chance reach) and U(I, a) of the rows: the counterfactual reach
  pi_{-p}(I) = sum_{h in I} chance(h) x_{-p}(h) and the bound increment of (9) are the
  dense solver's sums over the same histories in the same order.

One non-check iteration on the sub-game is the dense solver's: R(I, a) += r on live,
unpruned (I, a), S += w pi_i sigma, V(I) += v(I) on live I, B(I, a) += pi_{-i}(I) U(I, a)
at pruned (I, a) of live I, the faced-plan sums X += x ("live": no pruned own sequence
above, computed from the state's mask once per stretch: the mask is frozen there). The
dense master state is kept on the device in the kernel's layout (a ``BlockState``: per
player ``[A, n_p]`` blocks, so a check transposes nothing, session 29; on the device
since session 30, so a check transfers no state): before a stretch one jitted call
gathers the sub-game's rows (columns)
into a compact state (``[A, n_p']`` blocks), one jitted call runs up to the k - 1
iterations to the next scheduled check on the device (stopping before an iteration
where (9) fails, which runs as a forced check), which then holds only the compact
state and the live sub-game (the kernel's fields of the compact game, every other
``Game`` field ``[0, ...]``, and the per-history tables), and one jitted call (the
master donated) scatters the rows back; the opponent-frozen rows' catch-up is a host
pass on their columns only (float64, as before: the same bits). The check runs the
dense solver's update on the full game and the master state (donated; CBR and the reset
(7)/(8) from the one evaluation kernel, as before), the game transferred for it when
the caller keeps it on the host;
see docs/pruning.md. Shapes: layout ``rows`` ``[I']`` (full infoset id, ``I`` for a
dummy).

A layout built under the pruned set P stays exact under a later set P' as long as every
(I, a) of P is still pruned or below a pruned sequence under P' (:func:`covers`: nothing
P dropped has come back; newly pruned branches are masked inside the stretch), so
:func:`run_live` rebuilds only when that fails (a branch ended: re-expansion), when the
live infosets shrank by the factor ``shrink`` against the layout's rows, or when the
pruned set has been unchanged for ``stable`` checks and differs from the layout's.
"""

from __future__ import annotations

import dataclasses
import hashlib
from typing import NamedTuple

import jax
import jax.numpy as jnp
import numpy as np

from games_tensor import Game
from games_tensor._table import (
    block_positions,
    child_table,
    level_parent_positions,
)
from jaxcfr import _sequence_form as sf
from jaxcfr._solver import (
    Solver,
    over_actions,
    regret_matching,
    regret_tolerance,
    rounded,
)
from jaxcfr.pruning._solver import (
    _BASES,
    BlockState,
    PrunedState,
    allocated_fields,
    from_blocks,
    to_blocks,
)
from jaxcfr.pruning._tables import tables

# the Game fields the stretch's kernel calls read (the sequence-form kernel, non-compact
# path: legal_block, plan_block, own_reach_block, own_terminal_values, bottom_up); the
# live sub-game allocates only these on the device (the others are [0, ...])
_KERNEL_FIELDS = frozenset(
    (
        "legal_mask_t",
        "legal_uniform_t",
        "sf_payoff",
        "block_rows",
        "block_cols",
        "block_payoff",
        "parent_local",
        "level_children",
        "parent_own",
        "sf_own0",
        "sf_own1",
        "block_row_own",
        "block_col_own",
    )
)


def _bucket(n: int) -> int:
    """Round ``n`` up to 4 sizes per octave (at most 25% padding); small n exact."""
    if n <= 16:
        return n
    step = 1 << (n.bit_length() - 3)
    return -(-n // step) * step


@dataclasses.dataclass(frozen=True)
class Layout:
    """A live sub-game: ``game`` (compact Game) and ``rows`` ``[I']`` (full infoset of
    each compact row, ``I`` for dummies); ``live_entries`` real payoff entries kept;
    ``pruned`` ``[I, A]`` the mask it was built under; ``extra`` the per-player history
    tables (``hist_row`` local row in p's block, ``hist_opp`` the opponent's sequence in
    its block, ``hist_chance``), ``upper`` ``[A, n_p']`` U(I, a) of the rows and
    ``front`` ``[F_p]`` the positions in p's compact block of the parent sequences of
    the opponent-frozen rows left out (:func:`opponent_frozen`); ``frozen`` per player
    the host tables that bring those rows' sums up to date (:func:`_catch_up`; empty
    when none is left out); ``cache`` the catch-up's rho, its key and how many
    times it was ``computed``."""

    game: Game
    rows: np.ndarray
    live_entries: int
    pruned: np.ndarray
    extra: dict
    frozen: tuple = ()
    cache: dict = dataclasses.field(default_factory=dict, compare=False, repr=False)


def _check_mask(game: Game, pruned) -> None:
    """``ValueError`` naming ``pruned`` unless it is an ``[I, A]`` mask of ``game``."""
    shape = np.shape(pruned)
    if shape != (game.num_infosets, game.num_actions):
        raise ValueError(
            f"pruned must be an [I, A] = {(game.num_infosets, game.num_actions)} mask of "
            f"the game (infoset-major, as PrunedState.pruned), got shape {shape}"
        )


def dead_infosets(game: Game, pruned: np.ndarray) -> np.ndarray:
    """``[I]`` bool (host): infosets strictly below a pruned own sequence."""
    _check_mask(game, pruned)
    A, n_inf = game.num_actions, game.num_infosets
    parent = np.asarray(game.meta.host.get("parent_seq", game.parent_seq)).astype(np.int64)
    dead = np.zeros(n_inf, bool)
    flat = np.asarray(pruned).reshape(-1)
    for levels in game.meta.infoset_levels:
        for start, end in levels:
            par = parent[start:end]
            inner = par < n_inf * A
            pi = np.where(inner, par // A, 0)
            dead[start:end] = inner & (flat[np.where(inner, par, 0)] | dead[pi])
    return dead


def _children(parent_local, levels, A, target, real):
    """:func:`level_children` over the real rows only (a dummy's value is 0, so leaving
    it out of the child sums is exact), with the fan-outs of ``target`` (a compiled
    shape's; ``None``: the compiler's rule): ``None`` where a level needs more."""
    pieces, fanouts = [], []
    for p, levs in enumerate(levels):
        fan = []
        for d, ((start, end), (pstart, pend)) in enumerate(zip(levs[1:], levs[:-1], strict=True)):
            n, m = end - start, A * (pend - pstart)
            idx = np.nonzero(real[start:end])[0]
            ids = np.asarray(parent_local[start:end], dtype=np.int64)[idx]
            counts = np.bincount(ids, minlength=m)
            need = int(counts.max()) if ids.size else 0
            if target is None:
                K = need if need and need * m <= 4 * n + 2048 else 0
            else:
                K = target[p][d]
                if K and need > K:
                    return None
            if K:
                pieces.append(child_table(ids, idx, K, m, n))
            fan.append(K)
        fanouts.append(tuple(fan))
    flat = np.concatenate(pieces) if pieces else np.zeros(0, np.int32)
    return flat.astype(np.int32), tuple(fanouts)


class Shape(NamedTuple):
    """A compiled layout's shapes (what :func:`layout` pads to; no arrays): per player
    the level sizes and child fan-outs, the payoff entries, per player the history
    table length, and the rows."""

    levels: tuple
    fanout: tuple
    payoff: int
    hist: tuple
    rows: int
    front: tuple = (0, 0)


def shape_of(lay: Layout) -> Shape:
    """The :class:`Shape` of a layout."""
    meta = lay.game.meta
    return Shape(
        tuple(tuple(e - s for s, e in lv) for lv in meta.infoset_levels),
        meta.child_fanout,
        meta.num_sf_terminals,
        tuple(int(h.shape[0]) for h in lay.extra["hist_row"]),
        int(lay.rows.size),
        tuple(int(f.shape[0]) for f in lay.extra["front"]),
    )


def layout(
    game: Game,
    pruned,
    like: Layout | Shape | None = None,
    *,
    leave_out_frozen: bool = False,
) -> Layout | None:
    """The live sub-game of ``game`` under the Total RBP mask ``pruned`` ``[I, A]``;
    with ``like``, padded to ``like``'s shapes (levels, fan-outs, payoff entries, so
    no new compile), or ``None`` where the live sub-game does not fit in them. With
    ``leave_out_frozen``, the opponent-frozen infosets (:func:`opponent_frozen`) are
    left out too (their regrets, V and bounds cannot change while ``pruned`` stands;
    :func:`_catch_up` brings their average and faced-plan sums up to date)."""
    pruned = np.asarray(pruned, bool)
    A, n_inf = game.num_actions, game.num_infosets
    legal = np.asarray(game.legal_mask)
    parent = np.asarray(game.parent_seq).astype(np.int64)
    dead = dead_infosets(game, pruned)
    frozen = np.zeros(n_inf, bool)
    if leave_out_frozen:
        frozen = opponent_frozen(game, pruned, dead) & ~dead
    drop = dead | frozen
    target = None
    if isinstance(like, Layout):
        like = shape_of(like)
    if like is not None:
        target = [list(lv) for lv in like.levels]
    rows, levels_new, sizes, pos = [], ([], []), [], 0
    for p, levels in enumerate(game.meta.infoset_levels):
        count = 0
        for d, (start, end) in enumerate(levels):
            ids = np.arange(start, end)[~drop[start:end]]
            size = _bucket(ids.size)
            if target is not None:
                size = target[p][d] if d < len(target[p]) else 0
                if size < ids.size:
                    return None
            if size == 0:
                continue
            rows.append(np.concatenate([ids, np.full(size - ids.size, n_inf)]))
            levels_new[p].append((pos, pos + size))
            pos += size
            count += size
        sizes.append(count)
    rows = np.concatenate(rows).astype(np.int64) if rows else np.zeros(0, np.int64)
    n_new = rows.size
    new_id = np.full(n_inf + 1, -1, np.int64)
    real = rows < n_inf
    new_id[rows[real]] = np.nonzero(real)[0]
    empty_new = n_new * A

    def seq_map(seq):  # full flat sequence ids -> compact ids, -1 where dropped
        seq = np.asarray(seq, np.int64)
        inner = seq < n_inf * A
        i = np.where(inner, seq // A, 0)
        a = np.where(inner, seq % A, 0)
        out = new_id[i] * A + a
        ok = inner & (new_id[i] >= 0) & ~pruned.reshape(-1)[np.where(inner, seq, 0)]
        return np.where(inner, np.where(ok, out, -1), empty_new)

    # infoset tables; a dummy copies the parent of the row before it (sorted order kept)
    par_new = np.empty(n_new, np.int64)
    legal_new = np.zeros((n_new, A), bool)
    real_rows = np.nonzero(rows < n_inf)[0]
    par = parent[rows[real_rows]]
    inner = par < n_inf * A
    par_new[real_rows] = np.where(
        inner, new_id[np.where(inner, par // A, 0)] * A + par % A, empty_new
    )
    legal_new[real_rows] = legal[rows[real_rows]]
    for levs in levels_new:
        for s, e in levs:
            for r in range(s, e):  # a dummy: the previous row's parent, or its first action
                if rows[r] < n_inf:
                    continue
                if r > s:
                    par_new[r] = par_new[r - 1]
                else:
                    par_new[r] = empty_new if s == levs[0][0] else (s - 1) * A
                legal_new[r, 0] = True
    # payoff entries: the live pairs
    s0, s1 = seq_map(game.sf_seq0), seq_map(game.sf_seq1)
    pay = np.asarray(game.meta.host.get("sf_payoff", game.sf_payoff), np.float64)
    keep = (s0 >= 0) & (s1 >= 0)
    s0, s1, pay = s0[keep], s1[keep], pay[keep]
    key = s0 * (empty_new + 1) + s1
    uniq, inv = np.unique(key, return_inverse=True)
    pay = np.bincount(inv, weights=pay, minlength=uniq.size)
    s0, s1 = uniq // (empty_new + 1), uniq % (empty_new + 1)
    n_z = int(keep.sum())
    size = max(16, 1 << max(uniq.size - 1, 0).bit_length())
    if like is not None:
        size = like.payoff
        if size < uniq.size:
            return None
    pad = size - uniq.size
    s0 = np.concatenate([s0, np.zeros(pad, np.int64)])
    s1 = np.concatenate([s1, np.zeros(pad, np.int64)])
    pay = np.concatenate([pay, np.zeros(pad)])

    levels_t = tuple(tuple(lv) for lv in levels_new)
    parent_local = level_parent_positions(par_new, levels_t, A)
    if like is not None and tuple(len(lv) for lv in levels_t) != tuple(len(lv) for lv in target):
        return None
    fan_target = None if like is None else like.fanout
    built = _children(parent_local, levels_t, A, fan_target, rows < n_inf)
    if built is None:
        return None
    children, fanout = built
    dtype = game.sf_payoff.dtype
    uniform = legal_new / np.maximum(legal_new.sum(axis=1, keepdims=True), 1)
    sig = repr((levels_t, fanout, size)).encode()
    meta = dataclasses.replace(
        game.meta,
        num_infosets=n_new,
        infosets_per_player=(sizes[0], sizes[1]),
        num_sf_terminals=size,
        num_payoff_blocks=0,
        payoff_groups=None,
        infoset_levels=levels_t,
        child_fanout=fanout,
        num_abstract_infosets=n_new,
        has_abstraction=False,
        fingerprint=game.meta.fingerprint + ":live:" + hashlib.sha1(sig).hexdigest()[:12],
        infoset_keys=(),
        abstract_keys=(),
        host={},
        compact_widths=None,  # its compact_* fields are the full game's: [A, n_p] only
        compact_fanout=None,
    )
    i32 = lambda x: jnp.asarray(np.asarray(x), jnp.int32)  # noqa: E731
    starts = (0, sizes[0])

    def own(seq, p):  # positions in player p's own [A, n_p] block (the kernel's own layout)
        return block_positions(seq, starts[p], sizes[p], n_new, A)

    own_parent = np.concatenate(
        [own(np.asarray(par_new)[starts[p] : starts[p] + sizes[p]], p) for p in (0, 1)]
    )
    # per player: its rows' histories (dense order) and U(I, a) of its rows
    tab = tables(game)
    extra = {"hist_row": [], "hist_opp": [], "hist_chance": [], "upper": []}
    for p in (0, 1):
        q = 1 - p
        ids, local = tab.node_ids[p], tab.node_local[p]
        row = new_id[local + game.player_slice(p).start]
        n_q = game.meta.infosets_per_player[q]
        opp_pos = tab.hist_own[q][ids].astype(np.int64)  # in the opponent's full block
        oi = opp_pos % max(n_q, 1) + game.player_slice(q).start
        opp_seq = seq_map(np.where(opp_pos == A * n_q, n_inf * A, oi * A + opp_pos // max(n_q, 1)))
        ok = (row >= 0) & (opp_seq >= 0)  # x_{-p}(h) = 0 where the opponent's seq is pruned
        n_h = int(ok.sum())
        h_size = max(16, 1 << max(n_h - 1, 0).bit_length())
        if like is not None:
            h_size = like.hist[p]
            if h_size < n_h:
                return None
        pad = h_size - n_h
        extra["hist_row"].append(np.concatenate([row[ok] - starts[p], np.zeros(pad, np.int64)]))
        extra["hist_opp"].append(
            np.concatenate([own(opp_seq[ok], q), np.full(pad, A * sizes[q], np.int64)])
        )
        extra["hist_chance"].append(np.concatenate([tab.chance[ids[ok]], np.zeros(pad)]))
        mine = rows[starts[p] : starts[p] + sizes[p]]
        real_p = mine < n_inf
        up = np.zeros((A, sizes[p]))
        up[:, real_p] = tab.upper[p][:, mine[real_p] - game.player_slice(p).start]
        extra["upper"].append(up)
    fronts, catch = [], []
    for p in (0, 1):
        built = _frozen_tables(game, p, frozen, parent)
        front = own(seq_map(built.pop("front_seq")), p).astype(np.int64)
        f_size = _bucket(front.size)
        if like is not None:
            f_size = like.front[p]
            if f_size < front.size:
                return None
        fronts.append(np.concatenate([front, np.full(f_size - front.size, A * sizes[p] + 1)]))
        catch.append(built)
    extra = {
        "hist_row": tuple(i32(x) for x in extra["hist_row"]),
        "hist_opp": tuple(i32(x) for x in extra["hist_opp"]),
        "hist_chance": tuple(jnp.asarray(x, dtype) for x in extra["hist_chance"]),
        "upper": tuple(jnp.asarray(x, dtype) for x in extra["upper"]),
        "front": tuple(i32(x) for x in fronts),
    }
    no_i = jnp.zeros((0, 1), jnp.int32)
    unused = {  # fields the stretch's kernel calls never read: not allocated on the device
        f.name: jnp.zeros(
            (0,) + tuple(getattr(game, f.name).shape[1:]), getattr(game, f.name).dtype
        )
        for f in dataclasses.fields(game)
        if f.name != "meta" and f.name not in _KERNEL_FIELDS
    }
    small = dataclasses.replace(
        game,
        **unused,
        legal_mask_t=jnp.asarray(np.ascontiguousarray(legal_new.T)),
        legal_uniform_t=jnp.asarray(np.ascontiguousarray(uniform.T), dtype),
        sf_payoff=jnp.asarray(pay, dtype),
        block_rows=no_i,
        block_cols=no_i,
        block_payoff=jnp.zeros((0, 1, 1), dtype),
        parent_local=i32(parent_local),
        level_children=i32(children),
        parent_own=i32(own_parent),
        sf_own0=i32(own(s0, 0)),
        sf_own1=i32(own(s1, 1)),
        block_row_own=no_i,
        block_col_own=no_i,
        meta=meta,
    )
    catch = tuple(catch) if frozen.any() else ()
    return Layout(small, rows.astype(np.int32), n_z, pruned.copy(), extra, catch)


def opponent_frozen(game: Game, pruned, dead: np.ndarray | None = None) -> np.ndarray:
    """``[I]`` bool (host): the infosets every history of which lies below a pruned
    sequence of the *opponent* (``pruned`` ``[I, A]``, a Total RBP mask; a pruned
    sequence: a pruned (J, b), or any sequence of J below one, ``dead``:
    :func:`dead_infosets`). While the mask stands the opponent's plan is 0 there, so
    such an infoset's counterfactual reach and values are 0: its regrets, V(I) and
    bound of (9) do not change (docs/pruning.md, session 26: "opponent-frozen"). The
    set is closed downwards in the owner's tree (a child's histories extend its
    parent's)."""
    _check_mask(game, pruned)
    pruned = np.asarray(pruned, bool)
    dead = dead_infosets(game, pruned) if dead is None else dead
    tab = tables(game)
    A = game.num_actions
    out = np.zeros(game.num_infosets, bool)
    for p in (0, 1):
        q = 1 - p
        n_q, q0 = game.meta.infosets_per_player[q], game.player_slice(q).start
        pos = tab.hist_own[q][tab.node_ids[p]].astype(np.int64)  # q's last sequence
        empty = pos >= A * n_q
        i = np.where(empty, 0, pos % max(n_q, 1) + q0)
        a = np.where(empty, 0, pos // max(n_q, 1))
        free = empty | (~dead[i] & ~pruned[i, a])  # no pruned sequence of q on the path
        sl = game.player_slice(p)
        hits = np.bincount(tab.node_local[p], weights=free, minlength=sl.stop - sl.start)
        out[sl] = hits == 0
    return out


def _frozen_tables(game: Game, p: int, frozen, parent) -> dict:
    """Host tables of player p's left-out frozen rows (full ids ``rows``, sorted, so
    parents come first): ``par`` the index of the parent row among them (-1 for a
    root: its parent sequence is not frozen; a row with ``par >= 0`` is *nested*),
    ``front`` the index of the root's parent sequence in ``front_seq`` (full flat
    sequence ids, ``I * A`` for the empty sequence) and
    ``row_front`` ``[n_p]`` int32 the same index per row of p, -1 off the rows (what
    :func:`_catch_up_fn` selects the rows by)."""
    A, n_inf = game.num_actions, game.num_infosets
    sl = game.player_slice(p)
    rows = np.nonzero(frozen[sl])[0].astype(np.int64) + sl.start
    par = parent[rows]
    inner = par < n_inf * A
    pinf = np.where(inner, par // A, 0)
    root = ~inner | ~frozen[pinf]
    index = np.full(n_inf, -1, np.int64)
    index[rows] = np.arange(rows.size)
    par_idx = np.where(root, -1, index[pinf])
    front_seq, front = np.unique(par[root], return_inverse=True)
    front_idx = np.zeros(rows.size, np.int64)
    front_idx[root] = front
    for start, end in game.meta.infoset_levels[p]:
        lo, hi = np.searchsorted(rows, start), np.searchsorted(rows, end)
        sub = np.arange(lo, hi)[~root[lo:hi]]
        front_idx[sub] = front_idx[par_idx[sub]]  # parents lie on earlier levels
    row_front = np.full(sl.stop - sl.start, -1, np.int32)
    row_front[rows - sl.start] = front_idx
    return {
        "rows": rows,
        "par": par_idx,
        "front": front_idx,
        "front_seq": front_seq,
        "row_front": row_front,
    }


def _catch_up_game(game: Game) -> Game:
    """The full game with only the fields :func:`_catch_up_fn` reads (``legal_mask_t``
    and ``parent_local``: ``sf.legal_block`` and ``sf.plan_block``, non-compact path)
    on the device, every other field ``[0, ...]``; cached per game (fingerprint and
    dtype), so a host game is transferred once, not at every stretch."""
    key = ("catch_up_game", game.meta.fingerprint, str(game.sf_payoff.dtype))
    if key not in _FNS:
        keep = {"legal_mask_t", "parent_local"}
        fields = {
            f.name: (
                jnp.asarray(getattr(game, f.name))
                if f.name in keep
                else jnp.zeros(
                    (0,) + tuple(getattr(game, f.name).shape[1:]), getattr(game, f.name).dtype
                )
            )
            for f in dataclasses.fields(game)
            if f.name != "meta"
        }
        _FNS[key] = dataclasses.replace(game, **fields)
    return _FNS[key]


def _catch_up_fn(tolerance: float):
    """The jitted ``(cg, R, pruned, row_front) -> (rho_0, rho_1)`` of :func:`_catch_up`,
    over the full game (``R``, ``pruned``: per player p its ``[A, n_p]`` block;
    ``cg``: :func:`_catch_up_game`; ``rho_p`` ``[A, n_p]``, p's action-major block) with
    the left-out frozen rows selected by ``row_front`` (per player ``[n_p]``, -1 for a
    row that was not left out). Fixed shapes: one compile per game and dtype, whatever
    rows are frozen. sigma is :func:`jaxcfr._solver.regret_matching` of the rows (the
    stretch's: legal and not pruned, ``tolerance``), rho = ``sf.plan_block`` of the
    policy that is sigma on the frozen rows and 1 on every other row: at a frozen (I,
    a), the product of sigma over the frozen rows from the top one above I down to (I,
    a) (the plan of the top row's parent sequence is a product of ones; the frozen set
    is closed downwards)."""

    def rho(cg, regrets, pruned, row_front):
        out = []
        for p in (0, 1):
            mask = sf.legal_block(cg, p) & ~pruned[p]
            sigma = regret_matching(regrets[p], mask, None, axis=0, tolerance=tolerance)
            frozen = (row_front[p] >= 0)[None]
            out.append(sf.plan_block(cg, jnp.where(frozen, sigma, jnp.ones((), sigma.dtype)), p))
        return tuple(out)

    return jax.jit(rho)


def _catch_up(master: BlockState, game: Game, lay: Layout, c: dict, at, tolerance: float):
    """Bring the average and faced-plan sums of the opponent-frozen rows ``lay`` left
    out up to date after a stretch: their new ``(S, X)`` columns per player (padded to
    ``fcols`` of :func:`_device_indices`; ``None`` where p has none), which
    :func:`_scatter` writes into the device master copy (:func:`_write_frozen`); ``at``
    the rows' columns :func:`_gather` read before the stretch. The rows' regrets,
    V and bounds did not change: their cf values were 0.

    In the stretch sigma(I, a) is fixed at a frozen row (its regrets and the pruned
    set are), so player p's plan there is x_t(I, a) = x_t(f) rho(I, a), where f is
    the parent sequence of the top frozen row above I (a live sequence, or the empty
    one) and rho(I, a) = prod sigma(J, b) over the frozen (J, b) from that row down to
    (I, a) inclusive. The dense solver adds S(I, a) <- (S(I, a) + w_t x_t(I, a)) d_t
    and X(I, a) <- X(I, a) + x'_t(I, a) on each iteration t of the window (CFR: w_t =
    d_t = 1, uniform averaging; CFR+: w_t = 1, d_t = t / (t + 1), linear averaging
    normalized by T + 1; x' the plan the opponent faced: P1's updated one under
    alternating updates). So S(I, a) = S_0(I, a) prod_t d_t + rho(I, a) A_S(f),
    X(I, a) = X_0(I, a) + rho(I, a) A_X(f), with A_S(f) = the window's sum of w_t x_t(f)
    prod_{u >= t} d_u and A_X(f) = the sum of x'_t(f), which the stretch accumulates at
    the front sequences only (``c["aS"]``, ``c["aX"]``). S_0 prod d is applied with
    every row outside the sub-game (:func:`_scatter_device_fn`); rho comes from one
    jitted call over the full game (:func:`_catch_up_fn`: the library's regret matching
    and plan pass, the frozen rows selected by a mask), kept in ``lay.cache`` while the rows'
    regrets and pruned bits are the ones it was computed from (the key: those bytes, the
    regret matching's ``tolerance`` and the regrets' dtype; the bytes change only where a
    check prunes an action of a frozen row); the update is
    one host pass over the frozen rows. Equal to the dense sums up to float rounding
    (one product of sums instead of a sum of products)."""
    if not _has_frozen(lay):
        return (None, None)
    fcols = _device_indices(master, lay)["fcols"]
    at = jax.device_get(at)
    dec = np.asarray(c["dec"])
    host = []
    for p, a in enumerate(at):
        nf = lay.frozen[p]["rows"].size
        a = {k: np.ascontiguousarray(v[:, :nf]) for k, v in a.items()}
        a["S"] = a["S"] * np.asarray(dec, a["S"].dtype)  # the window's decay, as _scatter
        host.append(a)
    acc = {k: jax.device_get(c[k]) for k in ("aS", "aX")}
    new = _frozen_sums(
        game,
        lay,
        tuple(b["R"] for b in master.blocks),
        tuple(b["pruned"] for b in master.blocks),
        tuple(host),
        acc,
        tolerance,
    )
    return tuple(
        None
        if v is None
        else tuple(np.pad(x, ((0, 0), (0, int(fcols[p].shape[0]) - x.shape[1]))) for x in v)
        for p, v in enumerate(new)
    )


def _has_frozen(lay: Layout) -> bool:
    """Whether ``lay`` left out any opponent-frozen row."""
    return bool(lay.frozen) and any(fz["rows"].size for fz in lay.frozen)


def _frozen_sums(game: Game, lay: Layout, regrets, pruned, at, c: dict, tolerance: float):
    """The host pass of :func:`_catch_up` on the left-out frozen rows' columns: ``at``
    per player a dict of host ``[A, n_f]`` arrays ``R``, ``pr``, ``S`` (after the window's
    decay), ``X`` at the rows ``lay.frozen[p]["rows"]``; ``regrets``, ``pruned`` the full
    ``[A, n_p]`` blocks (host or device) rho is computed from on a cache miss. Returns per
    player the new ``(S, X)`` columns (``None`` where p has no frozen row)."""
    key = (tolerance, at[0]["R"].dtype.str) + tuple(
        a["R"].tobytes() + a["pr"].tobytes() for a in at
    )
    if lay.cache.get("key") != key:
        name = ("catch_up", tolerance)
        if name not in _FNS:
            _FNS[name] = _catch_up_fn(tolerance)
        rho = _FNS[name](
            _catch_up_game(game),
            tuple(regrets),
            tuple(pruned),
            tuple(fz["row_front"] for fz in lay.frozen),
        )
        starts = (0, lay.frozen[0]["row_front"].size)
        lay.cache["rho"] = tuple(
            np.asarray(r, np.float64)[:, fz["rows"] - starts[p]]
            for p, (r, fz) in enumerate(zip(rho, lay.frozen, strict=True))
        )
        lay.cache["key"] = key
        lay.cache["computed"] = lay.cache.get("computed", 0) + 1
    out = []
    for p, fz in enumerate(lay.frozen):
        if fz["rows"].size == 0:
            out.append(None)
            continue
        rho, new = lay.cache["rho"][p], []  # [A, n]
        for name, acc in (("S", "aS"), ("X", "aX")):
            front = np.asarray(c[acc][p], np.float64)[fz["front"]]
            table = at[p][name]
            new.append((table + rho * front[None]).astype(table.dtype))
        out.append(tuple(new))
    return tuple(out)


def live_payoff_entries(game: Game, pruned, dead: np.ndarray | None = None) -> np.ndarray:
    """``[Zs]`` bool (host): payoff entries whose two sequences are live under ``pruned``
    (``[I, A]`` bool, a Total RBP state's mask): each sequence is empty, or its infoset
    is not below a pruned own sequence (``dead``: :func:`dead_infosets`) and its action
    is not pruned."""
    pruned = np.asarray(pruned, bool)
    dead = dead_infosets(game, pruned) if dead is None else dead
    A, n_inf = game.num_actions, game.num_infosets
    host = game.meta.host
    ok = np.ones(game.meta.num_sf_terminals, bool)
    for name in ("sf_seq0", "sf_seq1"):
        seq = np.asarray(host.get(name, getattr(game, name))).astype(np.int64)
        inner = seq < n_inf * A
        s = np.where(inner, seq, 0)
        ok &= ~inner | (~dead[s // A] & ~pruned.reshape(-1)[s])
    return ok


def covers(lay: Layout, game: Game, pruned: np.ndarray, dead: np.ndarray | None = None) -> bool:
    """Whether ``lay`` (built under its own mask) is exact for the mask ``pruned``
    (host ``[I, A]``): every (I, a) pruned at build time is still pruned, or I lies
    below a pruned own sequence now (``dead``: :func:`dead_infosets` of ``pruned``)."""
    dead = dead_infosets(game, pruned) if dead is None else dead
    gone = lay.pruned & ~pruned & ~dead[:, None]
    return not gone.any()


def _stretch_fn(solver: Solver, tolerance: float):
    """The jitted stretch ``(small, extra, c, n) -> (c, ran)``: up to ``n`` (an int32
    argument, no recompile per length) iterations on the compact state ``c``
    (:func:`_gather`; ``extra``: :attr:`Layout.extra`), stopping *before* the first
    iteration at which (9) fails for some pruned branch (that iteration is not
    committed: the caller runs it as a forced check of the dense solver, whose reset
    (7)/(8) must come between the two players' steps); ``ran`` iterations were done.
    Under ``check_rule="worst_case"`` (9) cannot fail between checks made at this k: the
    loop then keeps no copy of the previous carry and a failure is committed
    (``run_live`` drops the whole stretch and runs its window densely).
    Its arguments are the live sub-game's device arrays and the compact state only."""
    hp = dict(solver.hyperparams)
    if hp.get("pruning") != "total":
        raise ValueError(
            f"the live sub-game runs Total RBP only, got pruning={hp.get('pruning')!r}"
        )
    regret_update, weight, _ = _BASES[solver.name](hp)
    alternating = hp.get("alternating", True)
    # only the paper / eager rules let (9) fail between scheduled checks; the worst-case
    # rule's stretch keeps no second carry (no select, session 23's memory)
    stop_early = hp.get("check_rule", "worst_case") != "worst_case"

    def one(small, extra, frozen, c):
        t = c["t"] + 1
        masks = [sf.legal_block(small, p) for p in (0, 1)]

        def policy(p, R, pr):
            return regret_matching(R, masks[p] & ~pr, None, axis=0, tolerance=tolerance)

        pol = [policy(p, c["R"][p], c["pr"][p]) for p in (0, 1)]
        plans = [sf.plan_block(small, pol[p], p) for p in (0, 1)]
        own_plans = list(plans)  # the plans S is summed from (before P1's update)
        c = {k: list(v) if isinstance(v, tuple) else v for k, v in c.items()}

        def at_front(plan, p):  # the plan at the left-out frozen rows' parent sequences
            return sf.take_near(plan.reshape(-1), extra["front"][p], 1.0)

        c["X"][1] = c["X"][1] + plans[1]
        c["aX"][1] = c["aX"][1] + at_front(plans[1], 1)
        for p in (0, 1):
            if p == 1:
                if alternating:  # P2 faces P1's updated policy (P2's own plan unchanged)
                    plans[0] = sf.plan_block(small, policy(0, c["R"][0], c["pr"][0]), 0)
                c["X"][0] = c["X"][0] + plans[0]
                c["aX"][0] = c["aX"][0] + at_front(plans[0], 0)
            mask, pr = masks[p], c["pr"][p]
            shape = mask.shape
            g, g_root = sf.own_terminal_values(small, plans[1 - p], p)
            bu = sf.bottom_up(small, g, p, pol[p], sf.combine_policy, g_root)
            iv = bu.infoset_values
            inst = jnp.where(mask, bu.action_values - over_actions(iv, shape), 0.0)
            dtype = c["R"][p].dtype
            live, live_a = frozen[p]  # no pruned own sequence above (fixed in a stretch)
            upd = mask & live_a & ~pr
            R = c["R"][p]
            c["R"][p] = jnp.where(upd, regret_update(R, inst, t), R).astype(R.dtype)
            w, decay = weight(t)
            reach = sf.own_reach_block(small, plans[p], p)
            S = c["S"][p]
            c["S"][p] = ((S + rounded(over_actions(w * reach, shape) * pol[p])) * decay).astype(
                S.dtype
            )
            aS = c["aS"][p]
            c["aS"][p] = ((aS + rounded(w * at_front(own_plans[p], p))) * decay).astype(aS.dtype)
            c["V"][p] = jnp.where(live, c["V"][p] + iv, c["V"][p]).astype(dtype)
            # pi_{-p}(I): the dense solver's sum over I's histories, in the same order
            opp_reach = extra["hist_chance"][p] * sf.take(
                plans[1 - p].reshape(-1), extra["hist_opp"][p], 1.0
            )
            cf_reach = jax.ops.segment_sum(opp_reach, extra["hist_row"][p], num_segments=shape[1])
            active = pr & live_a
            B = c["B"][p]
            c["B"][p] = jnp.where(
                active, B + over_actions(cf_reach, shape) * extra["upper"][p], B
            ).astype(dtype)
            if p == 0:  # the rows outside the sub-game get the same decay (CFR+)
                c["dec"] = c["dec"] * decay
            c["fail"] = c["fail"] | jnp.any(active & (c["B"][p] > over_actions(c["V"][p], shape)))
        c["t"] = t
        return {k: tuple(v) if isinstance(v, list) else v for k, v in c.items()}

    def stretch(small: Game, extra: dict, c: dict, n):
        # the pruned set does not change within a stretch: its live rows once, not per
        # iteration (the dense solver's free-plan pass, same values)
        frozen = []
        for p in (0, 1):
            free = sf.plan_block(small, (~c["pr"][p]).astype(c["R"][p].dtype), p)
            live = sf.own_reach_block(small, free, p) > 0
            frozen.append((live, over_actions(live, c["pr"][p].shape)))

        def body(carry):
            i, c, _ = carry
            new = one(small, extra, frozen, c)
            fail = new["fail"]
            if (
                not stop_early
            ):  # worst case: (9) cannot fail here (run_live drops the stretch if it did)
                return i + 1, new, fail
            # keep the last state at which (9) still held everywhere
            c = jax.tree.map(lambda old, nw: jnp.where(fail, old, nw), c, new)
            return i + jnp.where(fail, 0, 1).astype(i.dtype), c, fail

        def cond(carry):
            i, _, fail = carry
            return (i < n) & ~fail

        zero = jnp.zeros((), jnp.int32)
        ran, c, _ = jax.lax.while_loop(cond, body, (zero, c, jnp.zeros((), bool)))
        return c, ran

    return jax.jit(stretch)


# the compact state's blocks: (name, PrunedState field, fill of a dummy row)
_CARRY = (
    ("R", "regrets", 0),
    ("S", "strategy_sum", 0),
    ("pr", "pruned", False),
    ("B", "bound", 0),
    ("X", "plan_sum", 0),
)


# the compact state's block names -> the master copy's (BlockState, as in update)
_BLOCK_OF = {"R": "R", "S": "S", "pr": "pruned", "B": "bound", "X": "X"}


def host_blocks(game: Game, state) -> BlockState:
    """A writable host :class:`BlockState` (numpy, contiguous ``[A, n_p]`` blocks) of a
    :class:`PrunedState` (or of a :class:`BlockState`, copied): the fields the state
    allocates (``[I, A]``) become blocks, its ``[0, A]`` placeholders stay in ``rest``
    (:func:`allocated_fields`)."""
    if isinstance(state, BlockState):
        return jax.tree.map(np.array, state)
    state = PrunedState(*(np.asarray(x) for x in state))
    return jax.tree.map(np.array, to_blocks(game, state, allocated_fields(game, state), np))


def _columns(master: BlockState, lay: Layout) -> list:
    """Per player p: (the columns of p's full ``[A, n_p]`` block that ``lay``'s rows of
    p take, 0 for a dummy; the dummies ``[n_p']`` bool)."""
    n0 = master.blocks[0]["R"].shape[1]
    n_inf = n0 + master.blocks[1]["R"].shape[1]
    out = []
    for p in (0, 1):
        rows = lay.rows[lay.game.player_slice(p)].astype(np.int64)
        dummy = rows >= n_inf
        out.append((np.where(dummy, 0, rows - (0, n0)[p]), dummy))
    return out


def _device_indices(master: BlockState, lay: Layout) -> dict:
    """The device index arrays of ``lay`` for the master copy kept on the device (built
    once per layout, kept in ``lay.cache``): per player ``cols`` (the rows' columns of
    p's ``[A, n_p]`` block, 0 for a dummy), ``dummy``, ``put`` (``cols`` with the dummies
    at ``n_p``, out of bounds: dropped by the scatter) and ``fcols`` the left-out frozen
    rows' columns padded to a size bucket (``n_p``: dropped; read as column 0)."""
    if "device" not in lay.cache:
        n = [master.blocks[p]["R"].shape[1] for p in (0, 1)]
        starts = (0, n[0])
        out = {"cols": [], "dummy": [], "put": [], "fcols": []}
        for p, (col, dummy) in enumerate(_columns(master, lay)):
            out["cols"].append(jnp.asarray(col, jnp.int32))
            out["dummy"].append(jnp.asarray(dummy))
            out["put"].append(jnp.asarray(np.where(dummy, n[p], col), jnp.int32))
            f = lay.frozen[p]["rows"] - starts[p] if lay.frozen else np.zeros(0, np.int64)
            pad = _bucket(f.size) - f.size
            out["fcols"].append(jnp.asarray(np.concatenate([f, np.full(pad, n[p])]), jnp.int32))
        lay.cache["device"] = {k: tuple(v) for k, v in out.items()}
    return lay.cache["device"]


@jax.jit
def _gather_device(master: BlockState, ix: dict, front: tuple):
    """:func:`_gather`'s jitted call (``ix``: :func:`_device_indices`; ``front``:
    ``lay.extra["front"]``, for the window sums' shapes)."""
    c = {}
    for name, _, fill in _CARRY:
        c[name] = tuple(
            jnp.where(
                ix["dummy"][p][None], fill, jnp.take(b[_BLOCK_OF[name]], ix["cols"][p], axis=1)
            )
            for p, b in enumerate(master.blocks)
        )
    c["V"] = tuple(
        jnp.where(ix["dummy"][p], 0, b["V"][ix["cols"][p]]).astype(b["V"].dtype)
        for p, b in enumerate(master.blocks)
    )
    c["t"] = master.iteration
    dtype = master.blocks[0]["S"].dtype
    for acc in ("aS", "aX"):  # window sums at the left-out frozen rows' parents (_catch_up)
        c[acc] = tuple(jnp.zeros(f.shape, dtype) for f in front)
    c["fail"] = jnp.zeros((), bool)
    c["dec"] = jnp.ones((), dtype)
    at = tuple(
        {
            name: jnp.take(b[_BLOCK_OF[name]], jnp.where(f < b["R"].shape[1], f, 0), axis=1)
            for name in ("R", "pr", "S", "X")
        }
        for b, f in zip(master.blocks, ix["fcols"], strict=True)
    )
    return c, at


def _gather(master: BlockState, lay: Layout):
    """The compact state of ``lay`` from the device master copy (a :class:`BlockState`),
    one jitted call: per player ``[A, n_p']`` blocks of the rows' columns (dummies: zeros
    / False), ``V`` ``[n_p']``, the iteration ``t``, ``fail`` (False), the CFR+ decay
    ``dec`` (1) of the rows outside and the window sums ``aS``, ``aX`` (zeros) at the
    left-out frozen rows' parents; and ``at``, those frozen rows' ``R``, ``pr``, ``S``,
    ``X`` columns (padded; the padding reads column 0) for :func:`_catch_up`."""
    return _gather_device(master, _device_indices(master, lay), lay.extra["front"])


def _write_frozen(master: BlockState, fcols: tuple, frozen_sums) -> BlockState:
    """The master copy with the left-out frozen rows' new sums ``frozen_sums``
    (:func:`_catch_up`: per player ``(S, X)`` padded columns, or ``None``) written at
    ``fcols`` (:func:`_device_indices`; padding dropped)."""
    blocks = []
    for p, b in enumerate(master.blocks):
        if frozen_sums[p] is not None:
            b = dict(b)
            b["S"] = b["S"].at[:, fcols[p]].set(frozen_sums[p][0], mode="drop")
            b["X"] = b["X"].at[:, fcols[p]].set(frozen_sums[p][1], mode="drop")
        blocks.append(b)
    return master._replace(blocks=tuple(blocks))


def _scatter_device_fn(master: BlockState, c: dict, ix: dict, frozen_sums):
    """:func:`_scatter`'s jitted call (the master donated): the CFR+ decay ``dec`` on
    every S, the compact state's live rows written back (dummies dropped), then the
    frozen rows' sums (:func:`_write_frozen`)."""
    blocks = []
    for p, b in enumerate(master.blocks):
        b = dict(b)
        b["S"] = b["S"] * c["dec"].astype(b["S"].dtype)
        put = ix["put"][p]
        for name, _, _ in _CARRY:
            if name == "pr":  # the stretch never changes the pruned set
                continue
            field = _BLOCK_OF[name]
            b[field] = b[field].at[:, put].set(c[name][p], mode="drop")
        b["V"] = b["V"].at[put].set(c["V"][p], mode="drop")
        blocks.append(b)
    master = master._replace(blocks=tuple(blocks), iteration=c["t"])
    return _write_frozen(master, ix["fcols"], frozen_sums)


_scatter_device = jax.jit(_scatter_device_fn, donate_argnums=(0,))


def _scatter(master: BlockState, game: Game, lay: Layout, c: dict, at, tolerance: float):
    """Write the compact state ``c`` after a stretch back into the device master copy
    (donated; returned with the new iteration): the rows outside get the CFR+ decay
    ``dec``, the left-out frozen rows their window's sums (:func:`_catch_up`, a host pass
    on their columns ``at`` from :func:`_gather`, whose regret matching takes
    ``tolerance``)."""
    sums = _catch_up(master, game, lay, c, at, tolerance)
    return _scatter_device(master, c, _device_indices(master, lay), sums)


def _stretch_on_device(master, game, lay, fn, n, tolerance):
    """One stretch with the master copy on the device: :func:`_gather`, the jitted
    stretch ``fn``, :func:`_scatter` (the frozen rows' catch-up on their columns only;
    the master donated). Returns ``(master, ran, fail)``; on ``fail`` the master is
    unchanged."""
    c, at = _gather(master, lay)
    c, ran = fn(lay.game, lay.extra, c, np.int32(n))
    if bool(c["fail"]):
        return master, int(ran), True
    return _scatter(master, game, lay, c, at, tolerance), int(ran), False


def _pruned_mask(master: BlockState) -> np.ndarray:
    """The master copy's pruned mask as a contiguous host ``[I, A]`` array."""
    b0, b1 = (np.asarray(b["pruned"]) for b in master.blocks)  # a device copy: one transfer
    return np.ascontiguousarray(np.concatenate([b0, b1], axis=1).T)


def run_live(
    solver: Solver,
    game: Game,
    iterations: int,
    state=None,
    *,
    stats=None,
    shrink: float = 1.5,
    stable: int = 10,
    dense_after_forced: bool = True,
    leave_out_frozen: bool = True,
):
    """``iterations`` Total RBP iterations of ``solver`` on ``game``: the iterations
    between checks on the live sub-game (:func:`layout`), each check by the solver's
    step on the full game (``solver.update.step_blocks`` on the master copy's ``[A, n_p]``
    blocks; ``solver.update``'s refusals are checked once, up front): the scheduled
    ones (iteration t with t % k == 0) and the forced ones, at the first iteration
    where (9) fails for a pruned branch (the stretch stops before it; under
    ``check_rule="worst_case"`` that does not happen, the check having ended every
    branch that could fail before the next one). Returns the
    :class:`PrunedState` as host numpy arrays, the iterates of the dense solver up to
    summation order. ``state`` may start at any iteration.

    Where things live: the dense master state is a device ``BlockState`` (the
    ``[A, n_p]`` blocks the check's ``step`` computes on; session 30: no host copy
    between checks, only the pruned mask and the left-out frozen rows' columns come
    to the host), read and written only around the stretches (jitted gather / donated
    scatter of the live rows) and at the checks (donated); a
    stretch's jitted call takes only the live sub-game's arrays (:func:`layout`: the
    kernel's fields of the compact game and the per-history tables) and the compact
    state. The check takes ``game`` and the master state: pass ``game`` as host numpy
    (``jax.tree.map(np.array, game)``) to keep the full game off the device between checks
    (it is then transferred for each check), or a device game to keep it resident.

    The layout is rebuilt on the host only when it no longer :func:`covers` the pruned
    set (a branch ended), when ``shrink`` times the live infosets (or live payoff
    entries) are fewer than its real rows (entries), or when the pruned set has been
    unchanged for ``stable`` checks and differs from the one it was built
    under. ``stats`` (a dict, also carrying the current layout between calls) collects
    ``checks`` (the stretches run, i.e. the checks they follow, forced ones included;
    ``stable`` counts these too), layouts built, ``stale`` (checks that kept a layout
    built under another pruned set), ``forced`` (checks forced by (9) failing between
    scheduled ones),
    distinct shapes and the live payoff entries. Under ``check_rule="worst_case"`` (9)
    cannot fail inside a stretch that follows a check made with this solver's k; a state
    last checked with a smaller ``check_every`` can fail it, and then that window runs as
    the dense solver (``stats["resumed_dense"]`` counts such windows) instead.

    ``dense_after_forced`` (default): after a stretch stopped for (9), the forced check
    and the rest of the window through the next scheduled check run as the dense solver
    in one jitted loop on the device (``stats["dense"]`` counts those iterations), not
    as one host round trip per forced check (layout, gather, scatter, transfers). Same
    iterates (the dense solver's). Under the paper rule some branch's (9) fails at
    nearly every iteration on Leduc-5 (session 25: 90 of 90 non-scheduled iterations),
    where the round trips made ``run_live`` 2.5-4x slower than the dense solver.

    ``leave_out_frozen`` (default): the layout also leaves out the opponent-frozen
    infosets (:func:`opponent_frozen`: every history below a pruned sequence of the
    opponent; zero cf values while the pruned set stands, so their regrets, V and
    bounds do not change), and after each stretch their average and faced-plan sums
    are brought up to date (:func:`_catch_up`: rho, the frozen rows' fixed plan below
    their front, from one jitted call cached per layout, then one host pass): the same regrets,
    the same sums up to float rounding. ``stats["frozen_rows"]``: the rows the current
    layout left out that way (``stats["rows"]`` counts the rows it keeps, padded)."""
    hp = dict(solver.hyperparams)
    k = hp.get("check_every", 1)
    if hp.get("pruning") != "total":
        raise ValueError(f"run_live runs Total RBP only, got pruning={hp.get('pruning')!r}")
    if (
        isinstance(iterations, bool)
        or not isinstance(iterations, (int, np.integer))
        or iterations < 0
    ):
        raise ValueError(f"iterations must be an integer >= 0, got {iterations!r}")
    if not (isinstance(shrink, (int, float)) and shrink >= 1):
        raise ValueError(f"shrink must be a number >= 1, got {shrink!r}")
    if isinstance(stable, bool) or not isinstance(stable, (int, np.integer)) or stable < 1:
        raise ValueError(f"stable must be an integer >= 1, got {stable!r}")
    tol = regret_tolerance(game, game.sf_payoff.dtype)
    step = getattr(solver.update, "step_blocks", None)
    if step is None:
        raise ValueError("run_live needs a solver built by jaxcfr.pruning.regret_pruning")
    check = _cfr_cache(solver, "check_donated", lambda: jax.jit(step, donate_argnums=(1,)))
    stats = {} if stats is None else stats
    for name in ("layouts", "checks", "unchanged", "stale"):
        stats.setdefault(name, 0)
    stats.setdefault("shapes", set())
    if stats.get("game") != game.meta.fingerprint:  # a layout serves one game
        stats["game"], stats["current"], stats["compiled"] = game.meta.fingerprint, None, []
    stats.setdefault("forced", 0)
    stats.setdefault("dense", 0)
    if not isinstance(dense_after_forced, bool):
        raise ValueError(f"dense_after_forced must be a bool, got {dense_after_forced!r}")
    if not isinstance(leave_out_frozen, bool):
        raise ValueError(f"leave_out_frozen must be a bool, got {leave_out_frozen!r}")
    if stats.get("leave_out_frozen", leave_out_frozen) != leave_out_frozen:
        stats["current"], stats["compiled"] = None, []  # layouts of the other kind
    stats["leave_out_frozen"] = leave_out_frozen
    # the master copy: host numpy in the kernel's [A, n_p] layout (no transposes per check)
    if state is None:
        state = solver.init(game)
    elif not isinstance(state, BlockState):  # update's refusals (keying, state kind):
        solver.update.check(game, state)  # the checks below run its step, not update
    state = _device(host_blocks(game, state))  # the master copy, kept on the device
    done = int(state.iteration)
    shapes = stats.setdefault("compiled", [])
    fn = _cfr_cache(solver, ("stretch", tol), lambda: _stretch_fn(solver, tol))
    dense = _cfr_cache(solver, "dense_donated", lambda: _dense_fn(solver))
    while done < iterations:
        forced = False
        # up to the iteration before the next scheduled check (t % k == 0)
        n = min((done // k + 1) * k - 1 - done, iterations - done)
        if n:
            pr = _pruned_mask(state)
            key = pr.tobytes()
            if key == stats.get("key"):
                stats["unchanged"] += 1
            else:
                stats["key"], stats["unchanged"] = key, 0
            stats["checks"] += 1
            cur = stats.get("current")
            dead = dead_infosets(game, pr)
            rebuild = cur is None or not covers(cur, game, pr, dead)
            if not rebuild and not np.array_equal(cur.pruned, pr):
                real = int((cur.rows < game.num_infosets).sum()) + _frozen_count(cur)
                rebuild = (
                    shrink * int((~dead).sum()) < real
                    or shrink * int(live_payoff_entries(game, pr, dead).sum()) < cur.live_entries
                    or stats["unchanged"] >= stable
                )
                stats["stale"] += not rebuild  # reused under a changed pruned set
            if rebuild:
                stats["current"] = None  # the old sub-game's device arrays go first
                cur = _build(game, pr, shapes, leave_out_frozen)
                stats["current"] = cur
                stats["layouts"] += 1
                stats["shapes"].add(cur.game.meta.fingerprint)
                stats["live_entries"] = cur.live_entries
                stats["rows"] = cur.rows.size
                stats["frozen_rows"] = _frozen_count(cur)
            state, ran, fail = _stretch_on_device(state, game, cur, fn, n, tol)
            if fail:
                # (9) failed inside a worst-case stretch (its failure is committed, not
                # stopped at): the state's last check ended the branches for a shorter
                # interval than k (a state from a run with a smaller check_every). The
                # stretch is dropped; the window runs as the dense solver, which checks
                # where a branch ends, through the scheduled check at this k.
                m = min((done // k + 1) * k - done, iterations - done)
                state = dense(game, state, np.int32(m))
                done += m
                stats["dense"] += m
                stats["resumed_dense"] = stats.get("resumed_dense", 0) + 1
                continue
            done += ran
            forced = int(ran) < n and done < iterations
            stats["forced"] += forced
        if done < iterations and forced and dense_after_forced:
            # the forced check and the rest of the window, through the scheduled check
            m = min((done // k + 1) * k - done, iterations - done)
            state = dense(game, state, np.int32(m))
            done += m
            stats["dense"] += m
        elif done < iterations:  # the scheduled check, or the forced one where (9) failed
            state = check(game, state)
            done += 1
    return from_blocks(_host(state), np)


def _host(bs: BlockState) -> BlockState:
    """A writable host copy of a (device) :class:`BlockState`."""
    return jax.tree.map(np.array, bs)


def _device(bs: BlockState) -> BlockState:
    """A device copy of a host :class:`BlockState` (its own buffers: run_live donates them)."""
    return jax.tree.map(jnp.array, bs)


def _dense_fn(solver: Solver):
    """The jitted ``(game, state, m) -> state``: ``m`` (an int32 argument, one compile
    for every length) iterations of the dense solver's ``update`` (on its
    :class:`BlockState`) in one device loop."""
    step = solver.update.step_blocks

    def dense(game, state, m):
        return jax.lax.fori_loop(0, m, lambda i, s: step(game, s), state)

    return jax.jit(dense, donate_argnums=(1,))


def _frozen_count(lay: Layout) -> int:
    """Rows ``lay`` left out as opponent-frozen."""
    return sum(int(fz["rows"].size) for fz in lay.frozen)


def _build(game: Game, pruned: np.ndarray, shapes: list, leave_out_frozen: bool = False) -> Layout:
    """The live sub-game under ``pruned`` in an already compiled shape (``shapes``:
    :class:`Shape` list) at most 4/3 its
    own rows (2x its payoff list), else in its own shape (one more compile)."""
    own = layout(game, pruned, leave_out_frozen=leave_out_frozen)
    for like in sorted(shapes, key=lambda sh: sh.rows):
        if 3 * like.rows > 4 * own.rows.size or (like.payoff > 2 * own.game.meta.num_sf_terminals):
            continue
        lay = layout(game, pruned, like, leave_out_frozen=leave_out_frozen)
        if lay is not None:
            return lay
    shapes.append(shape_of(own))  # the shape only: no old layout's arrays kept alive
    return own


_FNS: dict = {}


def _cfr_cache(solver: Solver, what, make):
    key = (solver.cache_key or id(solver), what)
    if key not in _FNS:
        _FNS[key] = make()
    return _FNS[key]
