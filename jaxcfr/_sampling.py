"""Shared pieces of the sampling solvers (outcome and external sampling MCCFR, and the
MCTS self-play solvers of ``jaxcfr.mcts``, which walk trajectories with :func:`walk`).

Both walk the compiled history tree (``games_tensor._game``: breadth-first level
layout, ``node_children[h, k]`` the child by action ``k`` or the ``k``-th chance
outcome) with a fixed-length loop over depth, unrolled in Python, so one step
is a handful of gathers whatever the batch size. Shapes: I infosets, A actions,
K child slots, H histories, D depth (``game.meta.max_depth``), F frontier slots.

* Node data is packed into one table (:func:`node_tables`) so a step reads a
  node with one gather, plus one for the regrets of its infoset.
* What each depth can hold (chance, either player, terminals, child slots used;
  :func:`level_kinds`) prunes the unrolled steps statically. It comes from the
  tree's integer arrays kept on the host in the game's static metadata
  (:func:`host_tree`), so it is known at trace time.
* Randomness: every choice is an inverse-CDF draw from one uniform number, and
  all uniforms of an update come from one 64-bit threefry draw on the update's
  key expanded by a counter-based mixer (:func:`uniforms`), so the key fully
  determines chance outcomes and the players' sampled actions.
* Table updates are ``table.at[rows].add(values, mode="drop")`` with the unused
  rows pointed past the end (``I``), see :func:`add_rows` and docs/mccfr.md for
  the layouts measured against it.
"""

from __future__ import annotations

import dataclasses
from typing import NamedTuple

import jax
import jax.numpy as jnp
import numpy as np

from games_tensor import Game
from games_tensor._game import CHANCE, TERMINAL
from games_tensor._table import MAX_WALK_ROW_ACTIONS
from games_tensor.step import StepGame
from games_tensor.step._core import computed_once
from jaxcfr import _prng
from jaxcfr._solver import regret_matching, regret_tolerance, rounded, sum_actions


class MCCFRState(NamedTuple):
    """State of a sampling MCCFR solver (one run; ``jax.vmap`` over keys for many).

    regrets: [I, A] cumulative sampled counterfactual regrets.
    strategy_sum: [I, A] sampled average-strategy sums (normalize with
      :func:`jaxcfr.average_policy`).
    iteration: [] int32, completed iterations.
    """

    regrets: jax.Array
    strategy_sum: jax.Array
    iteration: jax.Array


def init_state(game: Game) -> MCCFRState:
    """All-zero tables ``[I, A]`` in the game's float dtype, iteration 0."""
    shape = (game.num_infosets, game.num_actions)
    dtype = game.sf_payoff.dtype
    return MCCFRState(jnp.zeros(shape, dtype), jnp.zeros(shape, dtype), jnp.zeros((), jnp.int32))


# ---------------------------------------------------------------- sampling
_GOLDEN = 0x9E3779B9


def _mix32(x: jax.Array) -> jax.Array:
    """lowbias32 (C. Wellons): a bijective avalanche mixer on uint32."""
    x = x ^ (x >> 16)
    x = x * jnp.uint32(0x7FEB352D)
    x = x ^ (x >> 15)
    x = x * jnp.uint32(0x846CA68B)
    return x ^ (x >> 16)


def uniforms(key: jax.Array, shape: tuple[int, ...], dtype) -> jax.Array:
    """``shape`` uniforms on the grid ``{0, 1, ..., 2^23 - 1} / 2^23`` from one key.

    One threefry draw of 64 bits (``jax.random.bits(key, (2,))``) seeds a
    counter-based stream ``mix(mix(s0 + n * golden) ^ s1)`` (lowbias32 mixer), n
    the flat index: about 10x cheaper under ``vmap`` on CPU than
    ``jax.random.uniform(key, shape)`` for the few dozen numbers one update needs
    (docs/mccfr.md). The key fully determines the numbers. The array is computed once
    (:func:`materialize`), not in each of its consumers' kernels. The largest value is
    ``1 - 2^-23``, so ``u * total`` stays strictly below ``total`` in float32 and
    :func:`sample_index` never runs off the end.
    """
    return materialize(stream_uniforms(stream_seed(key), 0, shape, dtype))


def stream_seed(key: jax.Array) -> jax.Array:
    """The 64-bit seed (``uint32[2]``) of :func:`uniforms`' counter-based stream:
    ``jax.random.bits(key, (2,), uint32)``, computed by :func:`jaxcfr._prng.bits2` (the
    same bits, Threefry unrolled: no rolled loop of tiny kernels per update on CPU),
    through :func:`materialize`: otherwise XLA fuses the ~100 ops of the hash (and of the
    caller's ``fold_in``) into every consumer of every uniform."""
    return materialize(_prng.bits2(key))


def stream_uniforms(seed: jax.Array, start, shape: tuple[int, ...], dtype) -> jax.Array:
    """``shape`` uniforms at counters ``start, start + 1, ...`` of the stream of ``seed``
    (:func:`stream_seed`): ``uniforms(key, ...) == stream_uniforms(stream_seed(key), 0,
    ...)``. Lets a loop of many iterations draw one threefry seed per call and index the
    stream by iteration, with no threefry inside the loop (the search bots)."""
    n = int(np.prod(shape))
    idx = jnp.arange(n, dtype=jnp.uint32) + jnp.asarray(start).astype(jnp.uint32)
    counter = idx * jnp.uint32(_GOLDEN) + seed[0]
    x = _mix32(_mix32(counter) ^ seed[1])
    return ((x >> 9).astype(dtype) * (1.0 / (1 << 23))).reshape(shape)


def sample_index(probs: jax.Array, u: jax.Array) -> jax.Array:
    """Inverse-CDF categorical draw: ``probs [..., K]`` (unnormalized, >= 0, not all
    zero) and ``u [...]`` from :func:`uniforms` -> int32 ``[...]`` index k with
    ``probs[k] > 0`` and probability ``probs[k] / sum(probs)`` (up to the 2^-23 grid).

    k = #{j : cdf_j <= u * total}, ``cdf_j`` the sum of ``probs[i]``, ``i <= j``
    (:func:`prefix_sums`, the same positions in the same order in every row). A zero
    slot's cdf then equals its predecessor's bit for bit and the cdf is non-decreasing
    (rounding is monotone); since
    ``u * total < total`` (see :func:`uniforms`) with ``total`` the last cdf, trailing
    zero slots are never counted past and a zero slot in the middle is never the first
    one above the target.
    """
    cdf = prefix_sums(probs)
    target = u * cdf[..., -1]
    return jnp.sum((cdf <= target[..., None]).astype(jnp.int32), axis=-1)


def sample_set(mask: jax.Array, u: jax.Array) -> jax.Array:
    """Uniform draw from a set: ``mask [..., W]`` bool (not all False), ``u [...]`` from
    :func:`uniforms` -> int32 ``[...]``, the same index as
    ``sample_index(mask.astype(u.dtype), u)`` bit for bit, in ``[..., W]`` integer work
    instead of the ``[..., W, W]`` cdf reduction (W <= 31; wider masks go through
    :func:`sample_index`).

    With 0/1 weights the cdf is the exact count ``c_j`` of set slots ``<= j``, here
    ``popcount(bits & (2^(j+1) - 1))`` of the mask's bits, and the total the set's size
    n, so k = #{j : c_j <= u n} (u n in the float dtype, as :func:`sample_index`
    computes it): the m-th set slot (0-based), m = floor(u n).
    """
    W = mask.shape[-1]
    if W > 31:
        return sample_index(mask.astype(u.dtype), u)
    slots = jnp.arange(W, dtype=jnp.int32).reshape((1,) * (mask.ndim - 1) + (W,))
    bits = jnp.sum(jnp.where(mask, jnp.left_shift(jnp.int32(1), slots), 0), axis=-1)
    upto = jnp.left_shift(jnp.int32(2), slots) - 1  # bits 0..j
    count = jax.lax.population_count(bits[..., None] & upto)  # [..., W] c_j
    target = u * jax.lax.population_count(bits).astype(u.dtype)
    return jnp.sum((count.astype(u.dtype) <= target[..., None]).astype(jnp.int32), axis=-1)


def prefix_sums(probs: jax.Array) -> jax.Array:
    """``cdf [..., K]``: ``cdf_j`` the masked sum of ``probs[i]``, ``i <= j``: one
    ``[..., K, K]`` reduction, a single XLA kernel whatever K (a Python loop of K running
    sums was K kernels on CPU, each recomputing the fused producers of ``probs``, which
    made a Liar's Dice search step 3x slower, docs/search.md). Every row of the
    reduction sums the same positions in the same order, so a zero slot's cdf equals its
    predecessor's bit for bit and the cdf is non-decreasing (``tests/test_mccfr.py``,
    K up to 36, float32 and float64, 512 rows). A 0/1 matrix product ``probs @ T`` (tried
    in session 27, 5x cheaper per draw) broke both on XLA:CPU at some widths (float32 K =
    20, 36; float64 K = 13): its dot kernel blocks the accumulation, so it was dropped.

    The summed axis i is the operand's *major* one (``[..., i, j]``, reduced over
    ``-2``): XLA:CPU then runs the K sums of a row side by side along the minor axis j
    (vectorised, independent adds) instead of one serial chain of K dependent adds per
    output (reducing the minor axis). Bits unchanged against the minor-axis form (checked
    at K 6-36, float32 and float64); the order is the sequential running sum's
    (0, 1, ..., K - 1) up to K = 20 (``test_prefix_sums_is_the_sequential_cumsum``); at
    K = 36 XLA sums in another fixed order, the same for both forms. Session 28:
    1.14-1.21x the simulations per CPU-second of the search bots on Liar's Dice at 512
    searchers (K = 13).
    """
    K = probs.shape[-1]
    upto = jnp.arange(K)[:, None] <= jnp.arange(K)[None, :]  # [i, j]: i <= j
    zero = jnp.zeros((), probs.dtype)
    return jnp.sum(jnp.where(upto, probs[..., :, None], zero), axis=-2)


def materialize(tree):
    """``tree`` unchanged (bit for bit), each leaf computed once by one small XLA kernel.

    XLA:CPU fuses cheap elementwise producers into every consumer and drops
    ``lax.optimization_barrier``; a value carried down the unrolled depth loop (a
    "below the new infoset" flag, running probabilities) was then recomputed from the
    root in every later depth's kernels (O(D^2) work per trajectory). A reduction is
    not duplicated, so each leaf goes through one the simplifier cannot remove: the
    bits as int32, ``sum([x, x] * [1, 0])``, back to the leaf's dtype
    (``games_tensor.step._core.computed_once``, the one copy of the trick).
    """
    return jax.tree_util.tree_map(computed_once, tree)


def pad_actions(x: jax.Array, num_slots: int) -> jax.Array:
    """``[..., A] -> [..., K]`` with zeros (player rows indexed like child slots)."""
    extra = num_slots - x.shape[-1]
    if extra == 0:
        return x
    return jnp.concatenate([x, jnp.zeros(x.shape[:-1] + (extra,), x.dtype)], axis=-1)


def explore(sigma: jax.Array, legal: jax.Array, epsilon) -> jax.Array:
    """epsilon-on-policy sampling distribution ``eps * Unif(A(I)) + (1 - eps) * sigma``."""
    legal_f = legal.astype(sigma.dtype)
    uniform = legal_f * (1.0 / sum_actions(legal_f))[..., None]  # see normalize_rows
    return rounded(epsilon * uniform) + rounded((1.0 - epsilon) * sigma)


@jax.tree_util.register_dataclass
@dataclasses.dataclass(frozen=True)
class NodeTables:
    """Per-node data packed into one table, so that a walk step reads a node with one
    row gather (one random memory access per trip instead of two).

    packed: [Hw, 1 + K + w (K + 1)] int32, w = float itemsize / 4: columns 0..K the
      ints, then the floats' bits (``jax.lax.bitcast_convert_type``, exact); the first
      Hw nodes (:func:`num_wide_rows`: all H without compact rows).
    dtype: the float dtype (static).

    Read as the two logical tables (:attr:`ints`, :attr:`floats`):
    ints: [H, 1 + K] int32: column 0 the infoset id at player nodes, CHANCE (-1) or
      TERMINAL (-4); columns 1..K the children (``node_children``).
    floats: [H, K + 1]: columns 0..K-1 the chance probabilities at chance nodes,
      the legal mask (1.0 / 0.0, padded to K) at player nodes and ones on the first A
      slots at terminals (so the policy read there is finite; it is never used);
      column K the utility u_0 (``node_utility``).
    compact: [H, 3 + w] int32 or None: the compact row of every node, read instead of
      ``packed`` at the levels without chance nodes (:func:`compact_rows`; None when the
      game does not allow it (:func:`has_compact_rows`), when its wide rows are small
      (:func:`uses_compact_rows`) or with ``node_tables(game, compact=False)``): column 0
      the code (as in ``ints``), 1 the first child, 2 the legal actions as a bitmask (bit
      a for action a; all A bits at terminals), then the bits of u_0. 16 bytes a row in float32
      instead of ``packed``'s 8 (K + 1) (LD(1,1): 4.7 MB instead of 33 MB, which stays in
      a 32 MiB L3 cache).
    """

    packed: jax.Array
    dtype: np.dtype = dataclasses.field(metadata=dict(static=True))
    compact: jax.Array | None = None

    @property
    def num_ints(self) -> int:
        """1 + K: the int columns of :attr:`packed`."""
        w = np.dtype(self.dtype).itemsize // 4
        return self.packed.shape[-1] // (1 + w)

    @property
    def ints(self) -> jax.Array:
        return split_row(self, self.packed)[0]

    @property
    def floats(self) -> jax.Array:
        return split_row(self, self.packed)[1]


def split_row(tables: NodeTables, row: jax.Array) -> tuple[jax.Array, jax.Array]:
    """``(ints [..., 1 + K], floats [..., K + 1])`` of packed rows ``[..., C]`` (bits
    unchanged)."""
    n = tables.num_ints
    ints, bits = row[..., :n], row[..., n:]
    w = np.dtype(tables.dtype).itemsize // 4
    if w > 1:
        bits = bits.reshape(bits.shape[:-1] + (n, w))
    return ints, jax.lax.bitcast_convert_type(bits, tables.dtype)


def node_utility(tables: NodeTables, h: jax.Array, K: int) -> jax.Array:
    """u_0 of the nodes ``h`` ([...] int32): float column ``K`` of the packed table, only
    its own word(s) gathered."""
    w = np.dtype(tables.dtype).itemsize // 4
    if tables.compact is not None:  # the same bits, from the small table
        word = tables.compact.at[h, 3 : 3 + w].get(mode="promise_in_bounds")
        return jax.lax.bitcast_convert_type(word if w > 1 else word[..., 0], tables.dtype)
    start = tables.num_ints + K * w
    if w == 1:
        word = tables.packed.at[h, start].get(mode="promise_in_bounds")
    else:
        word = tables.packed.at[h, start : start + w].get(mode="promise_in_bounds")
    return jax.lax.bitcast_convert_type(word, tables.dtype)


def _pack(ints: jax.Array, floats: jax.Array) -> jax.Array:
    """``[H, 1 + K]`` int32 and ``[H, K + 1]`` floats -> one ``[H, C]`` int32 table."""
    if floats.dtype.itemsize < 4:
        raise ValueError(f"node tables need a float dtype of >= 32 bits, got {floats.dtype}")
    bits = jax.lax.bitcast_convert_type(floats, jnp.int32)  # [H, K + 1] or [H, K + 1, w]
    bits = bits.reshape(floats.shape[0], -1)
    return jnp.concatenate([ints.astype(jnp.int32), bits], axis=1)


def node_tables(game: Game, compact: bool | None = None) -> NodeTables:
    """Pack the history tree for walking. The wide rows are computed from the game's
    arrays in O(Hw K) (inside a ``lax.scan`` over iterations XLA hoists them out of the
    loop); the compact rows are the game's ``node_walk_rows``, built at compile
    (:func:`compact_rows`). ``compact``: use the compact
    rows (:func:`uses_compact_rows`; None: when the game allows them and its wide rows
    would take at least :data:`COMPACT_MIN_BYTES`); the wide rows then cover only the
    nodes up to the last level holding chance nodes (:func:`num_wide_rows`), the only
    ones read from them."""
    compact = uses_compact_rows(game) if compact is None else compact and has_compact_rows(game)
    Hw = num_wide_rows(game) if compact else game.node_player.shape[0]
    player = game.node_player
    is_player = player >= 0
    infoset = jnp.maximum(game.node_infoset, 0)
    code = jnp.where(is_player, infoset, player)
    compact = compact_rows(game) if compact else None
    player, is_player, infoset, code = player[:Hw], is_player[:Hw], infoset[:Hw], code[:Hw]
    dtype = game.node_chance_probs.dtype
    K = game.meta.max_children
    legal = pad_actions(game.legal_mask[infoset].astype(dtype), K)
    filler = pad_actions(jnp.ones((1, game.num_actions), dtype), K)
    row = jnp.where(
        (player == CHANCE)[:, None],
        game.node_chance_probs[:Hw],
        jnp.where(is_player[:, None], legal, filler),
    )
    ints = jnp.concatenate([code[:, None], game.node_children[:Hw]], axis=1)
    floats = jnp.concatenate([row, game.node_utility[:Hw, None].astype(dtype)], axis=1)
    return NodeTables(_pack(ints, floats), np.dtype(dtype), compact)


# Compact rows by default only from this size of the wide rows on: Leduc's (0.5 MB,
# cached either way) read 0.97-0.98x CPU per simulation with them (RM, OOS at B = 512,
# paired), LD(1,1)'s (33 MB) 1.1-1.5x (session 30)
COMPACT_MIN_BYTES = 4 << 20


def uses_compact_rows(game: Game) -> bool:
    """Whether :func:`node_tables` builds compact rows by default: the game allows
    them (:func:`has_compact_rows`) and its wide rows would take at least
    :data:`COMPACT_MIN_BYTES`."""
    H, K = game.meta.host["node_children"].shape
    w = np.dtype(game.node_chance_probs.dtype).itemsize // 4
    return has_compact_rows(game) and H * (1 + K + w * (K + 1)) * 4 >= COMPACT_MIN_BYTES


def num_wide_rows(game: Game) -> int:
    """Rows of :class:`NodeTables` ``packed`` (static) when :func:`node_tables` builds
    compact rows: the nodes up to the end of the last level holding chance nodes (at
    least 1); a walk reads the wide rows only at levels with chance nodes, where the
    node is on that level or a terminal above it (LD(1,1): 7 of 294,883 rows). H for a
    game without compact rows (:func:`has_compact_rows`); without compact rows
    :func:`node_tables` keeps all H."""
    H = int(game.meta.host["node_player"].shape[0])
    if not has_compact_rows(game):  # callers build no compact rows then
        return H
    kinds = level_kinds(game)
    ends = [end for (_, end), k in zip(game.meta.node_levels, kinds, strict=True) if k.chance]
    return max(ends, default=1)


def has_compact_rows(game: Game) -> bool:
    """Whether :func:`compact_rows` describes the game's player and terminal nodes
    exactly (host check, memoized in ``game.meta.host``): A <= 31, and at every player
    node the child slots used are the legal actions and their children consecutive ids
    in slot order (``node_children[h, a] = first + #{legal b < a}``), at every terminal
    none. True for every game the compiler's breadth-first layout produces; a game
    that fails it is walked with the wide rows only."""
    host = game.meta.host
    ok = host.get("compact_rows")
    if ok is not None:
        return ok
    A = game.num_actions
    player = host["node_player"]
    kids = np.asarray(host["node_children"])
    ok = A <= MAX_WALK_ROW_ACTIONS
    if ok:
        term = kids[player == TERMINAL]
        ok = bool((term < 0).all())
    if ok:
        pl = player >= 0
        legal = np.asarray(host["legal_mask"], bool)[np.asarray(host["node_infoset"])[pl]]
        pk = kids[pl]
        legal_k = np.zeros(pk.shape, bool)
        legal_k[:, :A] = legal
        rank = np.cumsum(legal_k, axis=1) - 1
        first = np.where(legal_k, pk, np.iinfo(np.int32).max).min(axis=1)
        expect = np.where(legal_k, first[:, None] + rank, -1)
        ok = bool((legal.any(axis=1)).all() and (pk == expect).all())
    host["compact_rows"] = bool(ok)
    return bool(ok)


def compact_rows(game: Game) -> jax.Array:
    """``[H, 3 + w]`` int32 compact node rows (:class:`NodeTables` ``compact``): the
    game's ``node_walk_rows``, built once when the game is compiled
    (``games_tensor._table.walk_rows``): the node code (as :func:`node_tables` computes
    it), first child (smallest child id; 0 where none), legal bitmask (the infoset's
    legal actions at player nodes, all A at terminals and 0 at chance nodes, whose rows
    are never read), u_0's bits.

    A field of the game, so a jitted search gets them as an argument: no per-call build
    (4.1 ms of an LD(1,1) search call, 14 ms of II-GS(6)'s, session 30) and no constant
    (a closed-over table cost seconds of constant folding or compile, sessions 29-30)."""
    if game.node_walk_rows.shape[0] != game.node_player.shape[0]:
        raise ValueError(
            f"{game.name} has no walk rows (A = {game.num_actions} > {MAX_WALK_ROW_ACTIONS})"
        )
    return game.node_walk_rows


def _read_compact(game: Game, tables: NodeTables, h: jax.Array, W: int):
    """``(code, legal [..., A], row [..., W], children [..., W], utility)`` of the nodes
    ``h`` from the compact rows, bit for bit those of the wide rows at player and
    terminal nodes (:func:`read_nodes`)."""
    A = game.num_actions
    r = tables.compact.at[h].get(mode="promise_in_bounds")
    code, first, bits = r[..., 0], r[..., 1], r[..., 2]
    w = np.dtype(tables.dtype).itemsize // 4
    word = r[..., 3 : 3 + w] if w > 1 else r[..., 3]
    utility = jax.lax.bitcast_convert_type(word, tables.dtype)
    slots = jnp.arange(max(W, A), dtype=jnp.int32).reshape((1,) * code.ndim + (-1,))
    on = (jnp.right_shift(bits[..., None], slots) & 1) > 0  # [..., max(W, A)]
    below = jnp.left_shift(jnp.int32(1), slots[..., :W]) - 1
    rank = jax.lax.population_count(bits[..., None] & below)
    live = on[..., :W] & (code >= 0)[..., None]
    children = jnp.where(live, first[..., None] + rank, -1)
    return code, on[..., :A], on[..., :W].astype(tables.dtype), children, utility


class NodeView(NamedTuple):
    """What a walk step reads about the nodes ``h`` ([...] int32, valid ids).

    code: [...] int32 (infoset id, CHANCE or TERMINAL); player: [...] int32 acting
    player (0 or 1; meaningless elsewhere); infoset: [...] int32 clipped to >= 0;
    legal: [..., A] bool; sigma: [..., A] regret-matching policy of the infoset
    (meaningless at chance and terminal nodes); row: [..., K] chance probabilities
    (chance nodes) or legal mask (player nodes); children: [..., K] int32;
    utility: [...] u_0 (terminal nodes).
    """

    code: jax.Array
    player: jax.Array
    infoset: jax.Array
    legal: jax.Array
    sigma: jax.Array
    row: jax.Array
    children: jax.Array
    utility: jax.Array
    key: jax.Array | None = None
    state: object = None


def read_nodes(
    game: Game,
    tables: NodeTables,
    regrets: jax.Array,
    h: jax.Array,
    width: int | None = None,
    policy: bool = True,
    chance: bool | None = None,
) -> NodeView:
    """Gather node data and the current policy (regret matching on ``regrets``, positive
    regrets at or below :func:`jaxcfr._solver.regret_tolerance` treated as 0) at ``h``.

    ``width``: child slots to keep (default K; a level's :class:`LevelKinds` width).
    ``policy=False`` skips the regret gather (levels without player nodes, or
    solvers whose statistics are not regrets, where ``regrets`` may be None):
    ``sigma`` is then zeros. ``chance``: the level's :class:`LevelKinds` ``chance``
    flag; False: the nodes are read from the compact rows when the tables have them (one
    16-byte row instead of 8 (K + 1) bytes; the same values), else from the wide rows.
    True: from the wide rows, which then hold only the nodes up to the last level with
    chance nodes (:func:`num_wide_rows`), so it must be False at deeper levels. Required
    (``ValueError``) when the tables have compact rows: a deeper read of the truncated
    wide rows would be out of bounds.
    """
    if chance is None:
        if tables.compact is not None:
            raise ValueError(
                "read_nodes needs the level's chance flag (LevelKinds.chance) when the node "
                "tables have compact rows: the wide rows stop after the last chance level"
            )
        chance = True
    K = game.meta.max_children
    W = K if width is None else width
    if not chance and tables.compact is not None:
        code, legal, row, children, utility = _read_compact(game, tables, h, W)
    else:
        ints, floats = split_row(tables, tables.packed.at[h].get(mode="promise_in_bounds"))
        code = ints[..., 0]
        row = floats[..., :W]
        legal = floats[..., : game.num_actions] > 0
        children, utility = ints[..., 1 : 1 + W], floats[..., K]
    infoset = jnp.maximum(code, 0)
    player = (infoset >= game.meta.infosets_per_player[0]).astype(jnp.int32)
    if policy:
        rows = regrets.at[infoset].get(mode="promise_in_bounds")
        sigma = regret_matching(rows, legal, tolerance=regret_tolerance(game, regrets.dtype))
    else:
        sigma = jnp.zeros(legal.shape, tables.dtype if regrets is None else regrets.dtype)
    return NodeView(code, player, infoset, legal, sigma, row, children, utility)


def is_step(game) -> bool:
    """True for the step form of a game (``games_tensor.step.StepGame``)."""
    return isinstance(game, StepGame)


def max_depth(game) -> int:
    """D: steps of the walk (compiled: ``game.meta.max_depth``; step form: ``max_depth``)."""
    return game.max_depth if is_step(game) else game.meta.max_depth


def num_slots(game) -> int:
    """K: child slots of a node (compiled: ``max_children``; step form: max(A, chance
    outcomes), the width of every step-form level)."""
    if is_step(game):
        return max(game.num_actions, game.num_chance_outcomes)
    return game.meta.max_children


def step_compiler_options() -> dict:
    """XLA options for jitting search on a step-form game: on CPU, the old fusion
    emitters (``xla_cpu_use_fusion_emitters=False``) and no YNN fusions (as
    :func:`sampling_compiler_options`). jaxlib 0.10.2's new XLA:CPU fusion emitters
    fail to compile OOS and ISMCTS on the step form ("UNKNOWN: Unknown MLIR failure";
    the compiled form is unaffected). Without YNN, from about 128 vmapped searchers on,
    each trip's ``[B, W, W]`` cdf reduction stays an XLA reduction (LD(2,2) OOS at
    B = 256: about 1.25x the iterations per CPU second, docs/large_games.md, session
    27) and a searcher's bits no longer depend on its batch's size. Pass as
    ``jax.jit(..., compiler_options=step_compiler_options())``; the match engine does."""
    if jax.default_backend() == "cpu":
        return {"xla_cpu_use_fusion_emitters": False, "xla_cpu_experimental_ynn_fusion_type": ""}
    return {}


def sampling_compiler_options() -> dict:
    """XLA options for jitting a batched trajectory sampler (MCTS): on CPU, no YNN
    fusions (``xla_cpu_experimental_ynn_fusion_type=""``).

    From about 128 rows on, jaxlib 0.10.2's XLA:CPU hands each per-depth ``[B, W, W]``
    cdf reduction of :func:`sample_index` to a YNNPACK kernel: ten library calls per
    Leduc episode that XLA cannot fuse with the producers of ``probs``, and a lane-wise
    summation order ((p0 + p2) + p1 for W = 3) that differs from XLA's own sequential
    one, which it uses for smaller batches (the reproductions' 10-20 runs): without
    YNN a run's bits no longer depend on how many runs share its batch, and Smooth UCT
    at B = 1024 on Leduc runs about 1.2x faster per CPU-second (docs/mcts.md, "Session
    24"). Returned for every backend without starting one (a solver factory calls
    this): :func:`jaxcfr._solver.jit_options` drops the ``xla_cpu_*`` option when it
    jits on another backend."""
    return {"xla_cpu_experimental_ynn_fusion_type": ""}


def read_step(game: StepGame, state, width: int) -> NodeView:
    """The :class:`NodeView` of a step-form state (see its docstring): ``row`` the
    chance probabilities (chance nodes), the legal mask (player nodes) or ones on the
    first A slots (terminals), padded to ``width``."""
    raw = game.current_player(state)
    dtype = game.chance_probs(state).dtype
    legal = game.legal_mask(state)
    legal_f = pad_actions(legal.astype(dtype), width)
    filler = pad_actions(jnp.ones((game.num_actions,), dtype), width)
    chance = pad_actions(game.chance_probs(state), width)
    row = jnp.where(raw == CHANCE, chance, jnp.where(raw >= 0, legal_f, filler))
    player = jnp.maximum(raw, 0)
    zero = jnp.zeros((), jnp.int32)
    return NodeView(
        code=jnp.where(raw >= 0, zero, raw),
        player=player,
        infoset=zero,
        legal=legal,
        sigma=jnp.zeros(legal.shape, dtype),
        row=row,
        children=None,
        utility=game.returns(state)[0],
        key=game.information_state_key(state, player),
        state=state,
    )


def walk(
    game: Game,
    tables: NodeTables,
    step,
    carry,
    regrets=None,
    stacked: bool = False,
    loop: bool = False,
):
    """The fixed-depth trajectory walk from the root, one step per depth (unrolled).

    One walk for both forms of a game (the node source): a compiled ``Game`` is walked
    by node ids through ``tables`` (:func:`node_tables`); a step-form game
    (``games_tensor.step.StepGame``; ``tables`` and ``regrets`` must be None) by its
    state pytree, ``game.apply(state, k)`` after each step, with views from
    :func:`read_step` and every level's :class:`LevelKinds` all-true of width
    :func:`num_slots` (chance slot k is the game's chance outcome k). The step-form
    levels are alike, so they run as one ``lax.while_loop`` that stops at the terminal
    (``d`` is then a traced int32, records must be arrays, and ``step`` must leave the
    carry unchanged at a terminal: :func:`_while_walk`): D times less to compile
    than unrolling. Under ``vmap`` the loop runs until the batch's last trajectory ends,
    so a finished trajectory's later records repeat a terminal step (its ``k`` drawn
    from ``u[d]``): callers must give a terminal's record no weight.

    ``step(d, kinds, view, carry) -> (k, carry, record)`` is called at every depth ``d``
    (static) with the level's :class:`LevelKinds` and the :class:`NodeView` of the
    current node (read with :func:`read_nodes`; ``sigma`` is regret matching on
    ``regrets`` at levels holding player nodes when ``regrets`` is given, zeros
    otherwise); it returns the child slot ``k`` to follow. Once the trajectory reaches a
    terminal it stays there (later steps read that terminal, ``view.code == TERMINAL``,
    and their ``k`` is ignored).

    Returns ``(records, carry, utility)``: the D records, the final carry and the
    reached terminal's u_0. ``stacked=True`` (step form only): the records as one
    pytree with a leading ``[D]`` axis instead of a list (the same values; callers
    then vectorise over depth instead of unrolling it). Used by outcome sampling and
    by the search algorithms (``jaxcfr.search``: OOS, ISMCTS), so every sampled
    trajectory is this one walk.

    ``loop=True`` (compiled form): the deepest levels that are alike
    (:func:`loop_levels`: same chance flag and width, player nodes in each, terminals
    above the last) run as one ``lax.while_loop`` that stops once the trajectory, and
    under ``jax.vmap`` every trajectory of the batch (:func:`batch_all`), has reached
    a terminal, instead of D unrolled steps that keep running at the terminal
    (:func:`_walk_loop`; the same depth loop as the step form's, :func:`_while_walk`,
    over node ids instead of states). ``d`` is then a traced int32 in those levels, records must
    be arrays, and ``step`` must leave the carry unchanged at a terminal and give a
    record there that callers ignore (except for factors of 1): the records of the
    depths the loop did not run are the last run depth's (a terminal's).
    """
    if is_step(game):
        if tables is not None or regrets is not None:
            raise ValueError("a step-form walk takes no node tables and no regrets")
        return _walk_step_form(game, step, carry, stacked)
    if stacked:
        raise ValueError("stacked=True is for step-form games (a compiled game's levels differ)")
    h = jnp.zeros((), jnp.int32)
    records = []
    levels = level_kinds(game)[: game.meta.max_depth]
    d0 = loop_levels(game) if loop else len(levels)
    for d, kinds in enumerate(levels[:d0]):
        policy = regrets is not None and any(kinds.players)
        v = read_nodes(game, tables, regrets, h, kinds.width, policy, kinds.chance)
        k, carry, rec = step(d, kinds, v, carry)
        records.append(rec)
        h = jnp.where(v.code == TERMINAL, h, select(v.children, k))
    if d0 < len(levels):
        tail, carry, h = _walk_loop(game, tables, step, carry, regrets, h, d0)
        records += tail
    utility = node_utility(tables, h, game.meta.max_children)
    return records, carry, utility


def loop_levels(game: Game) -> int:
    """The first depth of the compiled tree's deepest run of alike levels that
    :func:`walk` (``loop=True``) runs as a while loop; ``max_depth`` when there is none
    worth it (fewer than two such levels, or no terminal above the last level, so no
    trajectory could stop early: II-Goofspiel). Alike: the same chance flag and
    width, player nodes at each (which players and terminals are merged: the steps
    decide those per node)."""
    levels = level_kinds(game)[: game.meta.max_depth]
    D = len(levels)
    d0 = D
    while d0 > 0:
        k = levels[d0 - 1]
        last = levels[D - 1]
        if not any(k.players) or (k.chance, k.width) != (last.chance, last.width):
            break
        d0 -= 1
    if D - d0 < 2 or not any(k.terminal for k in levels[d0 : D - 1]):
        return D
    return d0


@jax.custom_batching.custom_vmap
def batch_all(flag: jax.Array) -> jax.Array:
    """``flag`` ([] bool) unchanged; under ``jax.vmap`` (any nesting) the logical and
    over the batch, unbatched. A while loop over one trajectory's depths conditioned
    on it runs, under ``vmap``, until every trajectory is done, with an unbatched
    predicate (a batched one makes JAX select between the old and the new carry of
    every element in every trip)."""
    return flag


@batch_all.def_vmap
def _batch_all_rule(axis_size, in_batched, flag):
    del axis_size
    return (batch_all(jnp.all(flag, axis=0)) if in_batched[0] else flag), False


def _walk_loop(game: Game, tables: NodeTables, step, carry, regrets, h, d0: int):
    """:func:`walk`'s compiled levels ``d0 .. D - 1`` (alike, :func:`loop_levels`) as
    :func:`_while_walk` from node ``h`` over the node tables (:func:`read_nodes`; a
    terminal's child is itself): ``(records, carry, h)``."""
    levels = level_kinds(game)[: game.meta.max_depth]
    D = len(levels)
    players = tuple(any(k.players[p] for k in levels[d0:]) for p in range(2))
    last = levels[D - 1]
    kinds = LevelKinds(last.chance, players, True, last.width)
    policy = regrets is not None

    def read(h):
        return read_nodes(game, tables, regrets, h, kinds.width, policy, kinds.chance)

    def follow(h, v, k):
        return jnp.where(v.code == TERMINAL, h, select(v.children, k))

    return _while_walk(read, follow, step, kinds, carry, h, d0, D)


def _walk_step_form(game: StepGame, step, carry, stacked: bool = False):
    """:func:`walk` on a step-form game: :func:`_while_walk` over all ``max_depth``
    levels (alike) from ``game.init()``, the node a state (:func:`read_step`;
    ``game.apply`` keeps a terminal state as it is). Trajectories are often much
    shorter than ``max_depth`` (LD(2,2): 29 steps at most, about 8 on a random
    playout). ``step`` is traced once (the loop body): the rules, targeting and the
    table compile once per walk."""
    kinds = level_kinds(game)[0]  # every step-form level is alike

    def read(state):
        return read_step(game, state, kinds.width)

    def follow(state, v, k):
        return game.apply(state, k)

    records, carry, state = _while_walk(
        read, follow, step, kinds, carry, game.init(), 0, game.max_depth, stacked
    )
    return records, carry, game.returns(state)[0]


def _while_walk(read, follow, step, kinds, carry, node, d0: int, D: int, stacked=False):
    """The tree walker's depth loop: depths ``d0 .. D - 1`` (levels alike: ``kinds``)
    as one ``lax.while_loop`` from ``node``, for either node source.

    ``read(node) -> NodeView``, ``follow(node, view, k) -> node`` (the child at slot
    ``k``; a terminal's is itself): compiled node ids over the node tables
    (:func:`_walk_loop`) or step-form states (:func:`_walk_step_form`). The trip at
    depth d (traced int32) runs ``step(d, kinds, view, carry)`` at the node there and
    records it at ``d - d0``; the loop stops after the trip at the last depth or the
    first trip on which the trajectory, and under ``jax.vmap`` every trajectory of the
    batch (:func:`batch_all`, an unbatched predicate: JAX then does not select between
    old and new carries on every trip), was at a terminal. A trajectory at a terminal
    keeps running terminal steps, as the unrolled walk does; ``step`` must leave the
    carry unchanged there and give a record that callers ignore (except for factors of
    1). The depths the loop did not run get the last run trip's record (a terminal's
    for every trajectory).

    Returns ``(records, carry, node)``: ``D - d0`` records as a list, or with
    ``stacked=True`` one pytree with a leading ``[D - d0]`` axis (the same values).
    """

    def one(d, node, carry):
        v = read(node)
        k, carry, rec = step(d, kinds, v, carry)
        return v, k, carry, rec

    d_start = jnp.asarray(d0, jnp.int32)
    shapes = jax.eval_shape(lambda n, c: one(d_start, n, c)[3], node, carry)
    buf = jax.tree_util.tree_map(lambda x: jnp.zeros((D - d0,) + x.shape, x.dtype), shapes)

    def cond(c):
        d, _, _, _, done = c
        return (d < D) & ~batch_all(done)

    def body(c):
        d, node, carry, buf, _ = c
        v, k, carry, rec = one(d, node, carry)
        buf = jax.tree_util.tree_map(
            lambda b, r: jax.lax.dynamic_update_index_in_dim(b, r, d - d0, 0), buf, rec
        )
        return d + 1, follow(node, v, k), carry, buf, v.code == TERMINAL

    d_end, node, carry, buf, _ = jax.lax.while_loop(
        cond, body, (d_start, node, carry, buf, jnp.zeros((), bool))
    )
    e = d_end - 1 - d0  # the last trip's record index (>= 0: the loop runs at least once)
    last = jax.tree_util.tree_map(
        lambda b: jax.lax.dynamic_index_in_dim(b, e, 0, keepdims=False), buf
    )
    if stacked:
        j = jnp.arange(D - d0)

        def fill(b, r):
            keep = (j <= e).reshape((D - d0,) + (1,) * (b.ndim - 1))
            return jnp.where(keep, b, r[None])

        return jax.tree_util.tree_map(fill, buf, last), carry, node
    records = [
        jax.tree_util.tree_map(lambda b, r, j=j: jnp.where(j <= e, b[j], r), buf, last)
        for j in range(D - d0)
    ]
    return records, carry, node


class WalkStep(NamedTuple):
    """One step of :func:`sample_walk`: what the depth can hold (static), the node read,
    the sampled child slot ``k`` (int32) and what ``choose`` kept for after the walk."""

    kinds: LevelKinds
    view: NodeView
    k: jax.Array
    aux: object


def sample_walk(game: Game, tables: NodeTables, u: jax.Array, choose, carry=None, regrets=None):
    """:func:`walk` where every depth draws its child from a distribution.

    Args:
      tables: the packed tree (:func:`node_tables`).
      u: [D] uniforms, one per depth.
      choose: ``choose(d, kinds, view, carry) -> (probs [W], carry, aux)``: the
        unnormalized distribution over the level's ``W = kinds.width`` slots (at
        chance nodes the caller passes ``view.row`` through), the carry to the next
        depth and anything to keep for after the walk.
      carry: initial carry of ``choose`` (e.g. per-player flags).
      regrets: [I, A] when ``choose`` wants ``view.sigma`` at player depths.

    Returns:
      (steps, utility, carry): D :class:`WalkStep`, the terminal's u_0 and the last carry.
    """

    def step(d, kinds, v, carry):
        probs, carry, aux = choose(d, kinds, v, carry)
        k = sample_index(probs, u[d])
        return k, carry, WalkStep(kinds, v, k, aux)

    steps, carry, utility = walk(game, tables, step, carry, regrets)
    return steps, utility, carry


def select(x: jax.Array, k: jax.Array) -> jax.Array:
    """``x[..., k]`` for ``x [..., K]`` and ``k [...]`` by a masked sum (no gather)."""
    iota = jnp.arange(x.shape[-1], dtype=k.dtype).reshape((1,) * k.ndim + (x.shape[-1],))
    hit = iota == k[..., None]
    return jnp.sum(jnp.where(hit, x, jnp.zeros((), x.dtype)), axis=-1)


def add_rows(table: jax.Array, rows: jax.Array, values: jax.Array) -> jax.Array:
    """``table [I, A]``, ``rows [n]`` (rows ``>= I`` are skipped), ``values [n, A]``:
    the scatter-add ``table[rows] += values`` (duplicate rows accumulate)."""
    return table.at[rows].add(rounded(values.astype(table.dtype)), mode="drop")


def add_record_span(table: jax.Array, rows: jax.Array, values_of, chunk: int) -> jax.Array:
    """:func:`add_rows` of ``D`` stacked walk records, run only over the span of records
    that update a row: ``table [R, k, A]``, ``rows [D]`` (rows ``>= R`` skipped),
    ``values_of(s, K)`` the ``[K, k, A]`` values of records ``s .. s + K - 1`` (``s``
    a traced int32, ``K`` static), so only the records scattered are computed.

    The same adds as ``add_rows(table, rows, values_of(0, D))`` (each row at most once
    per call gives the same bits). A step-form walk records all ``max_depth`` levels
    (LD(2,2): 29), but only its in-tree part updates rows (a few records at the first
    decision); XLA:CPU's scatter still visits every record. Here a ``lax.while_loop``
    scatters ``K = chunk`` records a trip from the first updating record until past
    the last, with the unbatched predicate of :func:`batch_all` (under ``jax.vmap`` it
    runs until every element's span is done; an element's extra trips scatter only
    rows ``>= R``). A chunk is a clamped ``dynamic_slice`` (start ``min(s, D - K)``):
    records before ``s`` in it are pointed past the end.

    One scatter per part ``j < k`` (``table[:, j]``, windows of A values): XLA:CPU
    (old emitters, as the step form is jitted) expands a scatter into a loop over its
    indices, run as one kernel when its cost model puts the loop under 1,024 bytes
    accessed (``SmallWhileLoopHoistingPass``), else as about five kernels per index:
    ISMCTS-RM's [3, 25] windows on LD(2,2) were over, 1,024 indices a trip at B = 256."""
    R, D = table.shape[0], rows.shape[0]
    K = min(chunk, D)
    valid = rows < R
    first = jnp.argmax(valid).astype(jnp.int32)
    end = jnp.where(jnp.any(valid), D - jnp.argmax(valid[::-1]), 0).astype(jnp.int32)

    def cond(c):
        return ~batch_all(c[0] >= end)

    def body(c):
        start, t = c
        s = jnp.minimum(start, D - K)
        r = jax.lax.dynamic_slice_in_dim(rows, s, K)
        r = jnp.where(s + jnp.arange(K, dtype=jnp.int32) >= start, r, R)
        v = values_of(s, K)
        for j in range(t.shape[1]):  # a scatter per part: [A] windows (see above)
            t = t.at[r, j].add(rounded(v[:, j].astype(t.dtype)), mode="drop")
        return start + K, t

    return jax.lax.while_loop(cond, body, (first, table))[1]


# ---------------------------------------------------------------- host tree
@dataclasses.dataclass(frozen=True)
class HostTree:
    """NumPy copies of the history tree's integer arrays (for static layouts)."""

    node_player: np.ndarray  # [H] int32
    node_children: np.ndarray  # [H, K] int32
    node_depth: np.ndarray  # [H] int32


def host_tree(game: Game) -> HostTree:
    """The tree's integer arrays on the host, from the game's static metadata
    (``game.meta.host``), so they are known inside a trace too."""
    host = game.meta.host
    return HostTree(host["node_player"], host["node_children"], host["node_depth"])


@dataclasses.dataclass(frozen=True)
class LevelKinds:
    """What can be at one depth of the tree (static): chance nodes, each player's
    nodes, terminals, and the number of child slots used (``width`` <= K)."""

    chance: bool
    players: tuple[bool, bool]
    terminal: bool
    width: int


def level_kinds(game: Game) -> tuple[LevelKinds, ...]:
    """Per-depth :class:`LevelKinds` from the host tree (memoized in ``game.meta.host``).
    Step form: D levels that may hold anything, of width :func:`num_slots`."""
    if is_step(game):
        return (LevelKinds(True, (True, True), True, num_slots(game)),) * game.max_depth
    kinds = game.meta.host.get("level_kinds")
    if kinds is not None:
        return kinds
    tree = host_tree(game)
    out = []
    for start, end in game.meta.node_levels:
        pl = tree.node_player[start:end]
        used = (tree.node_children[start:end] >= 0).any(axis=0)
        width = int(np.nonzero(used)[0].max()) + 1 if used.any() else 1
        if (pl >= 0).any():
            width = max(width, game.num_actions)
        out.append(
            LevelKinds(
                bool((pl == CHANCE).any()),
                (bool((pl == 0).any()), bool((pl == 1).any())),
                bool((pl == TERMINAL).any()),
                width,
            )
        )
    kinds = game.meta.host["level_kinds"] = tuple(out)
    return kinds
