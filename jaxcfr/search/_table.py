"""Where a search bot keeps an infoset's statistics, and the history sets it targets.

The one place that maps an infoset to a row of a bot's statistics table ``[R, k, A]``
(:func:`init_tables`, :class:`StatsViews`: a trip reads one contiguous row;
:func:`num_rows`, :func:`read_node`, :func:`view_row`, :func:`commit`), for both
forms of a game:

* compiled ``Game``: the row is the infoset id (R = I), with an in-memory mask ``[R]``
  marking the infosets added to the search tree; ``table`` is None.
* step form (``games_tensor.step.StepGame``, games too large to compile): rows are
  handed out in insertion order to the information-state keys the bot adds, through a
  fixed-capacity open-addressing hash table (``jaxcfr._hash_table``, 64-bit
  fingerprints, a probe window of :data:`PROBES` slots); R = ``capacity`` (a power of
  two, a bot parameter). A full table is never silent: an infoset that would be added
  when no slot or row is free is refused (the bot treats it, and everything below it
  on that trajectory, as playout) and the table's ``refusals`` counter grows by one
  (:func:`refusals`, reported with every match result).

Target sets, compiled form: the histories of one infoset, or the player histories of
one public state, are stored once per game as compact tables in node order (CSR:
``nodes`` sorted by (set id, node id), ``start[set]``), kept on the host in the game's
static metadata like :func:`jaxcfr._sampling.level_kinds`. :func:`target_paths` turns
one set into the root paths of its histories; in the breadth-first layout the
histories below any node form a contiguous range of that set, which is how OOS
restricts a targeted trajectory with two row gathers per depth.

Target sets, step form: no enumeration; :func:`step_member` tells at each node of a
walk whether it is a member of the target set (the target infoset's key, or the
target public state's key, at a player node), :func:`step_children` (or
:func:`step_children_where`, which skips it once no trajectory needs it) which children
stay consistent with it (``StepGame.consistent`` / ``public_consistent`` on each child
state), and :func:`step_draw_weights` ISMCTS's forced draw toward an infoset target.
"""

from __future__ import annotations

import dataclasses
import functools
from typing import NamedTuple

import jax
import jax.numpy as jnp
import numpy as np

from games_tensor import Game
from games_tensor.step import StepGame
from games_tensor.step._core import float_dtype
from jaxcfr import _hash_table as ht
from jaxcfr._sampling import batch_all, is_step, materialize

DEFAULT_CAPACITY = 1 << 16  # hash-table slots (= rows) of a step-form bot's tables
PROBES = 16  # probe window of the hash table


# ---------------------------------------------------------------- infoset -> row
def check_capacity(capacity) -> int:
    """``capacity`` as an int, or ``ValueError``: it must be a positive power of two."""
    if (
        isinstance(capacity, bool)
        or not isinstance(capacity, (int, np.integer))
        or capacity < 1
        or capacity & (capacity - 1)
    ):
        raise ValueError(
            "capacity (hash-table slots = table rows of a bot on a step-form game) must be "
            f"a positive power of two, got {capacity!r}"
        )
    return int(capacity)


@functools.lru_cache(maxsize=None)
def _fns(capacity: int) -> ht.HashTableFns:
    return ht.hash_table(capacity, max_probes=PROBES)


def num_rows(game, capacity: int = DEFAULT_CAPACITY) -> int:
    """Rows R of a bot's tables: one per infoset of a compiled game; ``capacity`` for
    the step form."""
    if is_step(game):
        return capacity
    return game.num_infosets


def rows(game: Game, infoset: jax.Array) -> jax.Array:
    """Row of ``infoset`` (int32 ``[...]``) in a bot's tables (compiled form: identity)."""
    del game
    return infoset


def float_type(game):
    """The float dtype of a bot's tables (the game's)."""
    return float_dtype() if is_step(game) else game.sf_payoff.dtype


def init_tables(game, count: int, capacity: int = DEFAULT_CAPACITY):
    """One zero statistics table ``[R, count, A]`` in the game's float dtype (a bot's
    ``count`` per-action statistics of a row side by side, :class:`StatsViews`), an
    all-False in-memory mask ``[R]`` and the key table (an empty ``HashTable`` of
    ``capacity`` slots for the step form, None for a compiled game)."""
    R = num_rows(game, capacity)
    dtype = float_type(game)
    table = _fns(capacity).init() if is_step(game) else None
    stats = jnp.zeros((R, count, game.num_actions), dtype)
    return stats, jnp.zeros((R,), bool), table


class StatsViews:
    """Named ``[..., R, A]`` views of a bot state's one statistics table ``stats``
    ``[..., R, k, A]`` (mixed into the state NamedTuple; ``VIEWS`` names the k parts in
    order, ``ZERO_VIEWS`` views that read as zeros).

    A search trip reads an infoset's statistics as one contiguous row (one random
    memory access instead of one per table; the tables of 512 searchers are far larger
    than the caches) and its backup is one scatter-add of ``[n, k, A]`` records.
    ``_replace`` accepts the view names too (the part is overwritten in ``stats``)."""

    __slots__ = ()
    VIEWS: tuple = ()
    ZERO_VIEWS: tuple = ()

    def __getattr__(self, name):
        cls = type(self)
        if name in cls.VIEWS:
            return self.stats[..., cls.VIEWS.index(name), :]
        if name in cls.ZERO_VIEWS:
            return jnp.zeros_like(self.stats[..., 0, :])
        raise AttributeError(f"{cls.__name__!r} object has no attribute {name!r}")

    def _replace(self, **fields):
        stats = fields.pop("stats", self.stats)
        for name in list(fields):
            if name in type(self).VIEWS:
                j = type(self).VIEWS.index(name)
                stats = jnp.asarray(stats).at[..., j, :].set(fields.pop(name))
            elif name in type(self).ZERO_VIEWS:
                raise ValueError(f"{type(self).__name__}.{name} is not stored (always zeros)")
        return super()._replace(stats=stats, **fields)


class NodeRow(NamedTuple):
    """What a search walk step needs about its node (see :func:`read_node`).

    player_node: [] bool; row: [] int32 the infoset's row (step form: its row if
    stored, else the row it would get if added now, else R); mem: [] bool in memory;
    uniform: [A] uniform over the legal actions; can_add: [] bool there is room to add
    it (always True for a compiled game); key: the key to add it under (step form
    [W] uint32; compiled: a placeholder [1]).
    """

    player_node: jax.Array
    row: jax.Array
    mem: jax.Array
    uniform: jax.Array
    can_add: jax.Array
    key: jax.Array


def read_node(game, state, v, dtype) -> NodeRow:
    """:class:`NodeRow` of the walk's node ``v`` (a ``NodeView``) for a bot ``state``
    holding ``in_memory`` [R] and ``table`` (see :func:`init_tables`)."""
    legal_f = v.legal.astype(dtype)
    uniform = legal_f / jnp.sum(legal_f)
    player_node = v.code >= 0
    if is_step(game):
        R = state.in_memory.shape[0]
        _, row, found, can = _fns(state.table.slots.shape[0]).insert(state.table, v.key)
        row = jnp.where(row >= 0, row, R)
        return NodeRow(player_node, row, found, uniform, can | found, v.key)
    row = rows(game, v.infoset)
    mem = read_rows(state.in_memory, row)
    return NodeRow(player_node, row, mem, uniform, jnp.ones((), bool), jnp.zeros((1,), jnp.uint32))


def read_rows(table: jax.Array, row: jax.Array) -> jax.Array:
    """``table[row]`` (``row`` a valid row; a statistics table's whole ``[k, A]`` row),
    read once by one kernel of its own.

    A search iteration reads rows of its ``[R, A]`` tables and mask on the walk and then
    scatter-adds into the same tables. XLA:CPU fuses a cheap gather into each of its
    consumers; a copy of the gather fused into a value that feeds only *another*
    table's update (OOS's mean-strategy increment from sigma, ISMCTS-RM's mean strategy
    from the regrets) is not ordered before this table's scatter, so XLA copied the
    whole table (twice, with the mask) in every loop iteration to keep that read valid:
    O(R A) per iteration, 2 x 2 GB per iteration for 512 II-GS(6) searchers. Reading
    through :func:`jaxcfr._sampling.materialize` computes the gather once, in a kernel
    every later use (the sampled action, hence every scatter) depends on, so the
    scatters stay in place (the loop body holds no ``copy`` of a table:
    ``experiments/benchmarks/search_step.py`` counts them)."""
    return materialize(table.at[row].get(mode="promise_in_bounds"))


def commit(game, state, mark_rows, added_row, added_key, refused):
    """``(in_memory, table)`` after one iteration: ``mark_rows`` ([n] or [] int32,
    rows >= R skipped) set in memory; step form: ``added_key`` stored (it gets row
    ``added_row``, the one :func:`read_node` announced) when ``added_row < R``, and
    ``refusals`` grown by ``refused`` ([] bool: an infoset was refused)."""
    in_memory = state.in_memory.at[mark_rows].set(True, mode="drop")
    if not is_step(game):
        return in_memory, state.table
    R = state.in_memory.shape[0]
    add = added_row < R
    # conditional insert: one slot written (a select between the old and the new table
    # copied the whole table every iteration, O(capacity) work per trajectory)
    table, _, _, _ = _fns(state.table.slots.shape[0]).insert(state.table, added_key, add)
    table = table._replace(refusals=state.table.refusals + refused.astype(jnp.int32))
    return in_memory, table


def view_row(game, state, view):
    """``(row [] int32, in memory [] bool)`` of the acting player's infoset in a bot's
    tables (the view's infoset id, or its key for the step form)."""
    if is_step(game):
        row, found = _fns(state.table.slots.shape[0]).lookup(state.table, view.infoset)
        return jnp.maximum(row, 0), found
    row = rows(game, jnp.maximum(view.infoset, 0))
    return row, state.in_memory[row]


def refusals(state) -> jax.Array:
    """[] int32: infosets a bot's full table refused so far (0 for a compiled game)."""
    table = getattr(state, "table", None)
    if table is None:
        return jnp.zeros((), jnp.int32)
    return table.refusals


def bytes_per_state(state) -> int:
    """Bytes of one bot state (one match)."""
    return int(sum(x.size * x.dtype.itemsize for x in jax.tree_util.tree_leaves(state)))


# ---------------------------------------------------------------- step-form targets
class StepTarget(NamedTuple):
    """A step-form target set: ``player`` [] int32 (< 0: none, search from the root),
    ``key`` the target infoset's key [W] (or public-state key [Wp] when ``public``),
    ``public`` (static) public-state targeting."""

    player: jax.Array
    key: jax.Array
    public: bool


def has_public_consistency(game: StepGame) -> bool:
    """The step game implements ``public_consistent`` (public-subgame targeting)."""
    return type(game).public_consistent is not StepGame.public_consistent


def step_member(game: StepGame, target: StepTarget, v) -> jax.Array:
    """[] bool: the step-form walk node ``v`` is in the target set (the target's
    infoset, or its public state for PST targets)."""
    state = v.state
    raw = game.current_player(state)
    if target.public:
        return (raw >= 0) & jnp.all(game.public_state_key(state) == target.key)
    own = game.information_state_key(state, jnp.maximum(target.player, 0))
    return (raw == target.player) & jnp.all(own == target.key)


def step_children(game: StepGame, target: StepTarget, v, width: int) -> jax.Array:
    """[width] bool: which child slots of the step-form walk node ``v`` stay consistent
    with the target set (``StepGame.consistent_children`` /
    ``public_consistent_children``: by default one ``apply`` and one check per slot,
    Liar's Dice and II-Goofspiel from the state and the key; slots beyond the node's
    actions or outcomes are meaningless, callers mask them by probability 0)."""
    if target.public:
        return game.public_consistent_children(v.state, target.key, width)
    return game.consistent_children(v.state, target.key, width)


def step_children_where(game: StepGame, target: StepTarget, v, width: int, needed) -> jax.Array:
    """:func:`step_children` where ``needed`` ([] bool: the trajectory is above the
    target and still consistent with it); all True elsewhere. Computed under a
    ``lax.cond`` on :func:`jaxcfr._sampling.batch_all` (unbatched under ``vmap``, a real
    branch): once no trajectory of the batch needs them the checks are not run.
    Callers must not use the result where ``needed`` is False."""
    return jax.lax.cond(
        batch_all(~needed),
        lambda: jnp.ones((width,), bool),
        lambda: step_children(game, target, v, width),
    )


def step_completions(game: StepGame, target: StepTarget, v, width: int) -> jax.Array:
    """[width] float: each child slot's number of the (infoset) target's histories at
    or below it (``StepGame.num_completions``; 0 for the inconsistent ones), the
    weights of a uniform draw over the target's histories
    (``StepGame.children_completions``: by default one ``apply`` and one count per slot;
    II-Goofspiel shares one forward and one backward pass of its DP across the slots)."""
    if target.public:
        raise ValueError(
            "step_completions counts an infoset target's histories, not a public state's"
        )
    return game.children_completions(v.state, target.key, width)


def step_draw_weights(game: StepGame, target: StepTarget, v, width: int, reached, dtype):
    """[width] weights of ISMCTS's forced draw at the step-form walk node ``v`` toward
    the (infoset) target, for a trajectory that has ``reached`` ([] bool) the target or
    not: the child slots' completion counts (:func:`step_completions`), which make the
    draw uniform over the target's histories. Under ``vmap`` two cheaper branches run
    when every trajectory of the batch allows them (``lax.cond`` on
    :func:`jaxcfr._sampling.batch_all`, unbatched, a real branch):

    * every trajectory reached the target: zeros (callers use the weights above the
      target only);
    * every trajectory not yet there stands at a decision of the target's player: the
      consistent children (0 / 1; :func:`step_children`). With perfect recall exactly
      one child of such a node is consistent (the player's own earlier action in the
      target's histories), the only one with a positive count, so the draw takes the
      same child (and ``sample_index`` the same slot) as with the counts.
    """
    own = (v.code >= 0) & (v.player == target.player)
    zeros = jnp.zeros((width,), dtype)
    return jax.lax.cond(
        batch_all(reached),
        lambda: zeros,
        lambda: jax.lax.cond(
            batch_all(reached | own),
            lambda: step_children(game, target, v, width).astype(dtype),
            lambda: step_completions(game, target, v, width).astype(dtype),
        ),
    )


# ---------------------------------------------------------------- target sets
def concrete(game: Game) -> bool:
    """True outside a trace over the game (the host tables below can be built)."""
    return not isinstance(game.node_infoset, jax.core.Tracer)


def _host_array(game: Game, name: str) -> np.ndarray:
    x = getattr(game, name)
    if not concrete(game):
        raise ValueError(
            f"the search tables of {game.name} are built on the host: call bot.init(game) "
            "once outside jax.jit before tracing search"
        )
    return np.asarray(x)


@dataclasses.dataclass(frozen=True)
class SetTable:
    """Histories of each set in node order (host arrays; see the module docstring).

    nodes: [N] int32 node ids sorted by (set, node); start: [num_sets + 1] int32;
    size: the largest set (static M); depth: [num_sets] int32 depth of the set's
    histories (every set lies at one depth, checked).
    """

    nodes: np.ndarray
    start: np.ndarray
    size: int
    depth: np.ndarray


def _set_table(set_of_node: np.ndarray, num_sets: int, depth: np.ndarray, what: str) -> SetTable:
    members = np.nonzero(set_of_node >= 0)[0]
    keys = set_of_node[members]
    order = np.lexsort((members, keys))
    nodes = members[order].astype(np.int32)
    counts = np.bincount(keys, minlength=num_sets)
    start = np.concatenate([[0], np.cumsum(counts)]).astype(np.int32)
    dmin = np.full(num_sets, np.iinfo(np.int32).max)
    dmax = np.full(num_sets, -1)
    np.minimum.at(dmin, keys, depth[members])
    np.maximum.at(dmax, keys, depth[members])
    if (dmin != dmax)[counts > 0].any():
        raise ValueError(f"every {what} must lie at one depth of the tree for targeting")
    return SetTable(nodes, start, int(counts.max()), np.where(counts > 0, dmin, 0).astype(np.int32))


def infoset_sets(game: Game) -> SetTable:
    """The histories of every infoset (memoized in ``game.meta.host``)."""
    table = game.meta.host.get("search_infoset_sets")
    if table is None:
        host = game.meta.host
        node_inf = _host_array(game, "node_infoset")
        table = _set_table(node_inf, game.num_infosets, host["node_depth"], "infoset")
        _check_child_order(game)
        host["search_infoset_sets"] = table
    return table


def public_sets(game: Game) -> SetTable:
    """The player histories of every public state (memoized in ``game.meta.host``)."""
    table = game.meta.host.get("search_public_sets")
    if table is None:
        host = game.meta.host
        pub = _host_array(game, "node_public_state")
        pub = np.where(host["node_player"] >= 0, pub, -1)
        table = _set_table(pub, game.meta.num_public_states, host["node_depth"], "public state")
        _check_child_order(game)
        host["search_public_sets"] = table
    return table


def has_public_actions(game: Game) -> bool:
    """True when every player action is public: at every player node, the children
    reached by different actions lie in different public states (Liar's Dice, poker).
    Public-subgame targeting needs it; II-Goofspiel (hidden bids) has none."""
    cached = game.meta.host.get("search_public_actions")
    if cached is None:
        host = game.meta.host
        player = host["node_player"] >= 0
        kids = host["node_children"][player]
        pub = _host_array(game, "node_public_state")
        kid_pub = np.where(kids >= 0, pub[np.maximum(kids, 0)], -1)
        ok = True
        for a in range(kids.shape[1]):
            for b in range(a + 1, kids.shape[1]):
                both = (kids[:, a] >= 0) & (kids[:, b] >= 0)
                if (both & (kid_pub[:, a] == kid_pub[:, b])).any():
                    ok = False
                    break
            if not ok:
                break
        cached = game.meta.host["search_public_actions"] = ok
    return cached


def _check_child_order(game: Game) -> None:
    """The range arithmetic needs child ids increasing with the child slot."""
    kids = game.meta.host["node_children"]
    k = np.where(kids >= 0, kids, np.iinfo(np.int32).max)
    prev = np.maximum.accumulate(np.where(kids >= 0, kids, -1), axis=1)
    if (k[:, 1:] < prev[:, :-1]).any():
        raise ValueError("search needs node_children in increasing id order per node")


class Paths(NamedTuple):
    """Root paths of one target set's histories (``M`` slots, the first ``count`` used).

    count: [] int32 histories in the set (0: no target, search from the root).
    depth: [] int32 their depth (0 without a target).
    nodes: [D + 1, M] int32: ``nodes[d, m]`` the ancestor at depth d of history m.
    slot: [D, M] int32: the child slot from ``nodes[d, m]`` to ``nodes[d + 1, m]``
      (0 at depths >= the set's depth).
    """

    count: jax.Array
    depth: jax.Array
    nodes: jax.Array
    slot: jax.Array


def target_paths(game: Game, table: SetTable, set_id: jax.Array) -> Paths:
    """The :class:`Paths` of set ``set_id`` (< 0: the root as the only history).

    D + 1 parent gathers and one child-row gather per depth for the M histories.
    """
    D, M = game.meta.max_depth, table.size
    nodes = jnp.asarray(table.nodes)
    start = jnp.asarray(table.start)
    valid_set = set_id >= 0
    sid = jnp.maximum(set_id, 0)
    base = start[sid]
    count = jnp.where(valid_set, start[sid + 1] - base, 1)
    depth = jnp.where(valid_set, jnp.asarray(table.depth)[sid], 0)
    m = jnp.arange(M, dtype=jnp.int32)
    leaf = jnp.where(valid_set, nodes[base + jnp.minimum(m, count - 1)], 0)
    up = [leaf]
    for _ in range(D):
        up.append(jnp.maximum(game.node_parent[up[-1]], 0))
    up = jnp.stack(up)  # [D + 1, M]: up[j] = j-th ancestor
    back = jnp.clip(depth - jnp.arange(D + 1, dtype=jnp.int32), 0, D)
    anc = up[back]  # [D + 1, M]: ancestor at depth d (the leaf itself for d >= depth)
    kids = game.node_children[anc[:D]]  # [D, M, K]
    hit = kids == anc[1:, :, None]
    slot = jnp.argmax(hit, axis=-1).astype(jnp.int32)
    slot = jnp.where(jnp.arange(D)[:, None] < depth, slot, 0)
    return Paths(count, depth, anc, slot)


def slot_counts(game: Game, paths: Paths) -> jax.Array:
    """``C [D, M + 1, K]`` int32: ``C[d, m, k]`` = #{m' < m : slot[d, m'] = k}, over the
    set's histories and depths above it, so the histories of a range ``[lo, hi)``
    continuing through slot k at depth d number ``C[d, hi, k] - C[d, lo, k]``."""
    D, M = paths.slot.shape
    K = game.meta.max_children
    live = (jnp.arange(M) < paths.count)[None, :] & (jnp.arange(D)[:, None] < paths.depth)
    onehot = (paths.slot[..., None] == jnp.arange(K)[None, None, :]) & live[..., None]
    c = jnp.cumsum(onehot.astype(jnp.int32), axis=1)
    return jnp.concatenate([jnp.zeros((D, 1, K), jnp.int32), c], axis=1)


def path_reach(game: Game, paths: Paths, policy) -> jax.Array:
    """Sum over the set's histories of their reach under ``policy`` (chance included):
    pi(T). 1 for the root. ``policy``: a function ``infosets [D, M] -> [D, M, A]`` giving
    only the rows on the paths (O(D M A), not O(R A), per call)."""
    D, M = paths.slot.shape
    node = paths.nodes[:D]  # [D, M]
    player = game.node_player[node]
    inf = jnp.maximum(game.node_infoset[node], 0)
    pol = policy(inf)  # [D, M, A]
    kk = paths.slot
    p_player = jnp.take_along_axis(pol, jnp.minimum(kk, game.num_actions - 1)[..., None], -1)[
        ..., 0
    ]
    p_chance = jnp.take_along_axis(game.node_chance_probs[node], kk[..., None], -1)[..., 0]
    p = jnp.where(player >= 0, p_player, jnp.where(player == -1, p_chance, 1.0))
    above = jnp.arange(D)[:, None] < paths.depth
    p = jnp.where(above, p, 1.0)
    live = jnp.arange(M) < paths.count
    return jnp.sum(jnp.where(live, jnp.prod(p, axis=0), 0.0))


# ---------------------------------------------------------------- infoset forest
@dataclasses.dataclass(frozen=True)
class InfosetForest:
    """Each player's infosets as a forest, numbered in depth-first pre-order (host).

    The parent of infoset J (player p) is p's infoset at the nearest strict ancestor
    of J's histories where p acts (perfect recall: the same for every history of J,
    checked); -1 for p's first infoset. pre: [I] int32 pre-order number of each infoset
    (both players' forests in one numbering); end: [I] int32 one past the last number
    in its subtree, so J is at or below I iff ``pre[I] <= pre[J] < end[I]``.
    parent: [I] int32.
    """

    pre: np.ndarray
    end: np.ndarray
    parent: np.ndarray


def infoset_forest(game: Game) -> InfosetForest:
    """The :class:`InfosetForest` of a compiled game (memoized in ``game.meta.host``);
    ``ValueError`` when an infoset's histories disagree on the player's previous
    infoset (imperfect recall)."""
    forest = game.meta.host.get("search_infoset_forest")
    if forest is not None:
        return forest
    host = game.meta.host
    player = host["node_player"]
    infoset = _host_array(game, "node_infoset")
    parent_node = _host_array(game, "node_parent")
    depth = host["node_depth"]
    H, n_inf = player.shape[0], game.num_infosets
    last = np.full((H, 2), -1, np.int64)  # p's infoset at the nearest ancestor-or-self
    for d in range(int(depth.max()) + 1):
        nodes = np.nonzero(depth == d)[0]
        par = parent_node[nodes]
        if d > 0:
            last[nodes] = last[par]
        acting = nodes[player[nodes] >= 0]
        last[acting, player[acting]] = infoset[acting]
    acting = np.nonzero(player >= 0)[0]
    par = parent_node[acting]
    above = np.where(par >= 0, last[np.maximum(par, 0), player[acting]], -1)
    parent = np.full(n_inf, -2, np.int64)
    parent[infoset[acting]] = above
    if (parent[infoset[acting]] != above).any():
        bad = int(infoset[acting][parent[infoset[acting]] != above][0])
        raise ValueError(
            f"infoset {bad} of {game.name}: its histories follow different earlier infosets "
            "of its player (imperfect recall); the infoset forest needs perfect recall"
        )
    children = [[] for _ in range(n_inf)]
    for j in range(n_inf):
        if parent[j] >= 0:
            children[parent[j]].append(j)
    pre = np.zeros(n_inf, np.int32)
    end = np.zeros(n_inf, np.int32)
    counter = 0
    for root in np.nonzero(parent < 0)[0]:
        stack = [(int(root), False)]
        while stack:
            j, done = stack.pop()
            if done:
                end[j] = counter
                continue
            pre[j] = counter
            counter += 1
            stack.append((j, True))
            stack.extend((c, False) for c in reversed(children[j]))
    forest = InfosetForest(pre, end, parent.astype(np.int32))
    host["search_infoset_forest"] = forest
    return forest


def at_or_below(game: Game, infoset: jax.Array) -> jax.Array:
    """``[R]`` bool: the rows of the infosets at or below ``infoset`` in its player's
    forest (:func:`infoset_forest`; build it with that call before tracing). Jittable,
    ``vmap`` over ``infoset``; ``infoset < 0`` (the root view): every row."""
    forest = infoset_forest(game)
    pre = jnp.asarray(forest.pre)
    i = jnp.maximum(infoset, 0)
    inside = (pre >= pre[i]) & (pre < jnp.asarray(forest.end)[i])
    return jnp.where(infoset >= 0, inside, True)
