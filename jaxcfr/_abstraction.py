"""CFR keyed by an imperfect-recall abstraction, and the full-game regret measure.

Paper: Lanctot, Gibson, Burch, Zinkevich, Bowling, "No-Regret Learning in
Extensive-Form Games with Imperfect Recall" (ICML 2012); ALGORITHMS.md 2.9.

A compiled game may carry an abstraction (``game.meta.has_abstraction``): every
full (perfect-recall) infoset I has an abstract infoset J(I) =
``game.abstract_infoset[I]`` (J abstract infosets in all, grouped by player like
the full ones). Keyed by the abstraction, CFR keeps one table row per abstract
infoset and is otherwise unchanged:

  sigma^t(I, .) = RM(R^{t-1}(J(I), .))                 policy of a full infoset
  R^t(J, a) = regret_update(R^{t-1}(J, a), sum_{I: J(I) = J} r^t(I, a), t)
  S^t(J, a) = (S^{t-1}(J, a) + w(t) sum_{I: J(I) = J} pi_i(I) sigma^t(J, a)) d(t)

with r^t(I, a) the counterfactual regrets of the full game (one sequence-form pass,
as in ``jaxcfr._cfr``). Shapes: regrets and strategy sums ``[J, A]`` instead of
``[I, A]``. The sum over the merged full infosets is K gathers from a compiled
member table when abstract infosets merge few full ones, else a sorted segment sum
(:class:`SegmentSum`).

The measure (:func:`full_game_regret`): the sum of both players' average regrets
in the full game. With simultaneous updates and uniform averaging it equals
max_{s1} u_1(s1, xbar_2) + max_{s2} u_2(xbar_1, s2) = NashConv(xbar), xbar the
average *realization plan in the full game*: accumulated per full infoset
(``full_strategy_sum`` [I, A]: sum_t w(t) pi_i^t(I) sigma^t(I, a), the solver option
``full_average=True``), never rebuilt from the abstract averages ``S(J, a)``, which
are not realization-equivalent to xbar in general.
"""

from __future__ import annotations

import dataclasses
from typing import NamedTuple

import jax
import jax.numpy as jnp
import numpy as np

from games_tensor import Game
from jaxcfr._evaluation import br_values_unchecked
from jaxcfr._sequence_form import infoset_table
from jaxcfr._solver import check_game, check_solver_state, normalize_rows

KEYINGS = ("auto", "abstract", "full")
# A member table may hold at most this many times more slots than members.
_MAX_PADDING = 2.5


class AbstractCFRState(NamedTuple):
    """State of a full-width CFR solver keyed by an abstraction.

    regrets: [J, A] cumulative (transformed) regrets of the abstract infosets.
    strategy_sum: [J, A] abstract average-strategy sums (the paper's output strategy).
    prediction: [J, A] last instantaneous regrets (predictive variants; zeros otherwise).
    iteration: int32 scalar, completed iterations.
    full_strategy_sum: [I, A] sum_t w(t) pi_i(I) sigma^t(I, a) per full infoset, the
      full game's average realization plan (``full_average=True``), else ``[0, A]``.
    """

    regrets: jax.Array
    strategy_sum: jax.Array
    prediction: jax.Array
    iteration: jax.Array
    full_strategy_sum: jax.Array


class AbstractMCCFRState(NamedTuple):
    """State of a sampling MCCFR solver (outcome / external sampling) keyed by an
    abstraction and built with ``full_average=True``.

    regrets, strategy_sum: [J, A] sampled regrets and average sums of the abstract
      infosets (exactly those of the solver without ``full_average``).
    iteration: int32 scalar.
    full_strategy_sum: [I, A] the same sampled average-strategy rows added at the full
      infosets the trajectories visited: the full game's (sampled) average, whose rows
      summed over the members of each abstract infoset give ``strategy_sum``.
    """

    regrets: jax.Array
    strategy_sum: jax.Array
    iteration: jax.Array
    full_strategy_sum: jax.Array


def check_keying(keying) -> str:
    """Raise ``ValueError`` unless ``keying`` is one of :data:`KEYINGS`."""
    if keying not in KEYINGS:
        raise ValueError(f"keying must be one of {KEYINGS}, got {keying!r}")
    return keying


def uses_abstraction(game: Game, keying: str) -> bool:
    """Whether a solver with option ``keying`` keys its tables by ``game``'s abstraction.

    ``"auto"``: when the game has one; ``"abstract"``: required (``ValueError`` naming
    ``keying`` on a game without one); ``"full"``: never."""
    check_keying(keying)
    if keying == "abstract" and not game.meta.has_abstraction:
        raise ValueError(
            f"keying='abstract' needs a game with an abstraction; {game.name} "
            f"{dict(game.meta.params)} has none (valid here: 'auto' or 'full')"
        )
    return keying != "full" and game.meta.has_abstraction


# ---------------------------------------------------------------- host layout
@dataclasses.dataclass(frozen=True)
class SegmentSum:
    """A static segment sum over the last axis: ``out[..., s] = sum of x[..., n]`` over
    the n with ``ids[n] == s`` (``ids``: [N] host int array, values in [0, size)).

    One gather from a member table ``[M, size]`` (M the largest segment, padding
    pointing at an appended zero) and a sum over M, when the table holds at most
    ``_MAX_PADDING`` times N slots (one member each: a plain gather, exact); else a
    gather into segment order and ``jax.ops.segment_sum`` with sorted indices (a scatter;
    unsorted it took 2.7x as long on LD(1,1) last-1-bid's [13, 12288] -> [13, 72]).
    members: [M, size] int32 member positions (padding N), or None; order: [N] the
    positions sorted by segment.
    """

    ids: np.ndarray
    size: int
    members: np.ndarray | None
    order: np.ndarray

    @staticmethod
    def build(ids: np.ndarray, size: int) -> SegmentSum:
        ids = np.asarray(ids, np.int64)
        counts = np.bincount(ids, minlength=size)
        members = None
        if size and counts.max() * size <= _MAX_PADDING * max(ids.size, 1):
            order = np.argsort(ids, kind="stable")
            rank = np.arange(ids.size) - np.repeat(np.cumsum(counts) - counts, counts)
            members = np.full((max(int(counts.max()), 1), size), ids.size, np.int32)
            members[rank, ids[order]] = order
        order = np.argsort(ids, kind="stable").astype(np.int32)
        return SegmentSum(ids.astype(np.int32), size, members, order)

    def __call__(self, x: jax.Array, *, sorted_scatter: bool = False) -> jax.Array:
        """The segment sums of ``x [..., N]``: ``[..., size]``. ``sorted_scatter``: use the
        sorted ``segment_sum`` even where the member table applies (a one-member table,
        a plain gather, is kept): on DRP-IR's ``[A + 1, 558] -> [A + 1, 183]`` (6 members
        at most) the member table's gather of ``(A + 1) * 6 * 183`` slots cost CFR about
        0.84x of full keying's speed in CPU time, the sorted scatter of ``(A + 1) * 558``
        about 1x (docs/imperfect_recall.md)."""
        if self.members is not None and (self.members.shape[0] == 1 or not sorted_scatter):
            if self.members.shape[0] == 1:
                return x.at[..., self.members[0]].get(mode="promise_in_bounds")
            x = jnp.concatenate([x, jnp.zeros(x.shape[:-1] + (1,), x.dtype)], axis=-1)
            return jnp.sum(x.at[..., self.members].get(mode="promise_in_bounds"), axis=-2)
        moved = jnp.moveaxis(x.at[..., self.order].get(mode="promise_in_bounds"), -1, 0)
        summed = jax.ops.segment_sum(
            moved, self.ids[self.order], num_segments=self.size, indices_are_sorted=True
        )
        return jnp.moveaxis(summed, 0, -1)


@dataclasses.dataclass(frozen=True)
class _PlayerMap:
    """One player's abstraction map (NumPy, static).

    start, size: the player's abstract ids are ``start:start + size``.
    local: [n_p] int32, abstract id (minus ``start``) of each of the player's full
      infosets (minus the player's first full id).
    reduce: the :class:`SegmentSum` of the full infosets into the abstract ones.
    """

    start: int
    size: int
    local: np.ndarray
    reduce: SegmentSum


@dataclasses.dataclass(frozen=True)
class AbstractMap:
    """The compiled abstraction as static host arrays (memoized in ``game.meta.host``).

    players: the two :class:`_PlayerMap`; legal: [J, A] bool; uniform: [J, A] float64
    (1/|A(J)| on legal actions); counts: [J] number of full infosets per abstract one.
    """

    players: tuple[_PlayerMap, _PlayerMap]
    legal: np.ndarray
    uniform: np.ndarray
    counts: np.ndarray

    @property
    def num_abstract(self) -> int:
        return self.legal.shape[0]


def abstract_map(game: Game) -> AbstractMap:
    """The :class:`AbstractMap` of ``game`` (identity for a game without abstraction)."""
    host = game.meta.host
    amap = host.get("abstract_map")
    if amap is not None:
        return amap
    ids = host["abstract_infoset"].astype(np.int64)
    legal = host["abstract_legal_mask"]
    players = []
    for p in (0, 1):
        sl = game.player_slice(p)
        own = ids[sl]
        start = int(own.min()) if own.size else int(legal.shape[0] if p else 0)
        size = int(own.max()) + 1 - start if own.size else 0
        local = own - start
        if own.size and (np.unique(local).size != size or local.min() < 0):
            raise AssertionError("abstract infosets are not grouped by player")
        reduce = SegmentSum.build(local, size)
        players.append(_PlayerMap(start, size, local.astype(np.int32), reduce))
    amap = AbstractMap(
        tuple(players),
        legal,
        legal / legal.sum(axis=1, keepdims=True),
        np.bincount(ids, minlength=legal.shape[0]),
    )
    host["abstract_map"] = amap
    return amap


# ---------------------------------------------------------------- keyed views
class FullView:
    """Tables keyed by the full infosets (the unabstracted solvers): identities."""

    def rows(self, game: Game, player: int) -> slice:
        return game.player_slice(player)

    def num_rows(self, game: Game) -> int:
        return game.num_infosets

    def legal(self, game: Game, player: int) -> jax.Array:
        return game.legal_mask_t[:, game.player_slice(player)]

    def uniform(self, game: Game, player: int) -> jax.Array:
        return game.legal_uniform_t[:, game.player_slice(player)]

    def expand(self, game: Game, player: int, block: jax.Array) -> jax.Array:
        return block

    def reduce(self, game: Game, player: int, x: jax.Array) -> jax.Array:
        return x


class AbstractView(FullView):
    """Tables keyed by the abstract infosets: a player's ``[A, m_p]`` abstract block is
    expanded to its ``[A, n_p]`` full infosets by a gather, and full-infoset values
    ``[..., n_p]`` are summed into their abstract infosets ``[..., m_p]``."""

    def __init__(self, amap: AbstractMap):
        self.amap = amap

    def rows(self, game, player):
        pm = self.amap.players[player]
        return slice(pm.start, pm.start + pm.size)

    def num_rows(self, game):
        return self.amap.num_abstract

    def legal(self, game, player):
        return jnp.asarray(self.amap.legal[self.rows(game, player)].T)

    def uniform(self, game, player):
        return jnp.asarray(self.amap.uniform[self.rows(game, player)].T, game.legal_uniform.dtype)

    def expand(self, game, player, block):
        return block.at[..., self.amap.players[player].local].get(mode="promise_in_bounds")

    def reduce(self, game, player, x):
        return self.amap.players[player].reduce(x, sorted_scatter=True)


def view(game: Game, keying: str) -> FullView:
    """The keyed view of ``game`` for a solver with option ``keying``."""
    if uses_abstraction(game, keying):
        return AbstractView(abstract_map(game))
    return FullView()


# ---------------------------------------------------------------- sampling solvers
def abstract_game(game: Game) -> Game:
    """``game`` with its infosets replaced by the abstract ones, for the history-tree
    walkers (outcome / external sampling): ``node_infoset`` holds abstract ids,
    ``legal_mask`` / ``legal_uniform`` are ``[J, A]`` and the metadata counts J
    infosets. Its sequence-form fields still describe the full game: use it only with
    algorithms that walk the tree."""
    amap = abstract_map(game)
    ids = game.abstract_infoset
    node_infoset = jnp.where(game.node_infoset >= 0, ids[jnp.maximum(game.node_infoset, 0)], -1)
    meta = game.meta.host.get("abstract_meta")
    if meta is None:
        sizes = tuple(pm.size for pm in amap.players)
        meta = dataclasses.replace(
            game.meta,
            num_infosets=amap.num_abstract,
            infosets_per_player=sizes,
            fingerprint=game.meta.fingerprint + ":abstract",
            compact_widths=None,  # the walkers read no sequence-form layout
            compact_fanout=None,
        )
        game.meta.host["abstract_meta"] = meta
    rows = game.node_walk_rows  # the walkers' compact rows: their code column is the infoset
    if rows.shape[0] > 0:
        rows = rows.at[:, 0].set(jnp.where(node_infoset >= 0, node_infoset, rows[:, 0]))
    return dataclasses.replace(
        game,
        node_infoset=node_infoset.astype(game.node_infoset.dtype),
        node_walk_rows=rows,
        legal_mask=jnp.asarray(amap.legal),
        legal_uniform=jnp.asarray(amap.uniform, game.legal_uniform.dtype),
        legal_mask_t=jnp.asarray(np.ascontiguousarray(amap.legal.T)),
        legal_uniform_t=jnp.asarray(np.ascontiguousarray(amap.uniform.T), game.legal_uniform.dtype),
        meta=meta,
    )


def abstract_rows(game: Game) -> jax.Array:
    """``[I + 1]`` int32: the abstract infoset of each full infoset, and J at index I,
    so that the walkers' "no row" sentinel I maps to the sentinel J (dropped by the
    scatter)."""
    amap = abstract_map(game)
    return jnp.concatenate(
        [game.abstract_infoset.astype(jnp.int32), jnp.full((1,), amap.num_abstract, jnp.int32)]
    )


def sampled_update(game: Game, state, draw, add_rows):
    """One sampling-MCCFR iteration keyed by the abstraction that also accumulates the
    full game's average (outcome / external sampling with ``full_average=True``).

    The walker runs on the full game with the abstract regrets expanded to the full
    infosets (``regrets[J(I)]``: the same policy at every node as the walk of
    :func:`abstract_game`, so the same trajectories from the same key); its rows, full
    infoset ids, are mapped to J(I) for the ``[J, A]`` tables and kept as they are for
    ``full_strategy_sum``.

    Args:
      state: an :class:`AbstractMCCFRState`.
      draw: ``draw(p, regrets_full [I, A]) -> (regret_rows, regret_values, avg_rows,
        avg_values)``, the walker's rows for update player ``p`` (rows ``>= I`` skipped).
      add_rows: the scatter-add ``(table, rows, values) -> table``.
    """
    ids = abstract_rows(game)
    regrets, ssum, full = state.regrets, state.strategy_sum, state.full_strategy_sum
    for p in (0, 1):
        rr, rv, ar, av = draw(p, regrets[game.abstract_infoset])
        regrets = add_rows(regrets, ids[jnp.minimum(rr, game.num_infosets)], rv)
        ssum = add_rows(ssum, ids[jnp.minimum(ar, game.num_infosets)], av)
        full = add_rows(full, ar, av)
    return AbstractMCCFRState(regrets, ssum, state.iteration + 1, full)


def keyed_game(game: Game, keying: str) -> Game:
    """What a history-tree walker runs on for option ``keying``: :func:`abstract_game`
    when keyed by the abstraction (see :func:`uses_abstraction`), else ``game``."""
    return abstract_game(game) if uses_abstraction(game, keying) else game


# ---------------------------------------------------------------- measure
def full_average_sum(game: Game, state) -> jax.Array:
    """The ``[I, A]`` per-full-infoset average-strategy sum of a solver state: its
    ``full_strategy_sum`` when it has one, else its ``strategy_sum`` when keyed by the
    full infosets. ``ValueError`` for a state that holds only abstract averages."""
    check_solver_state(state, "strategy_sum", "jaxcfr.full_game_regret")
    full = getattr(state, "full_strategy_sum", None)
    if full is not None and full.shape[0] == game.num_infosets:
        return full
    ssum = state.strategy_sum
    if ssum.ndim == 1:  # a full-width CFR state in the kernel's compact [P_0 + P_1] layout
        ssum = infoset_table(game, ssum)
    if ssum.shape[0] == game.num_infosets:
        return ssum
    raise ValueError(
        "the state holds only the abstract average strategy [J, A], which is not "
        "realization-equivalent to the full game's average; build the solver with "
        "full_average=True to measure the full-game regret"
    )


def full_game_regret(game: Game, state) -> jax.Array:
    """The sum of both players' average regrets in the full (perfect-recall) game
    (Lanctot et al. 2012's measure): NashConv of the full game's average realization
    plan, accumulated per full infoset. Scalar; jittable; usable as
    ``jaxcfr.run(..., evaluate=jaxcfr.full_game_regret)`` (or ``evaluate="full_regret"``).

    Args:
      game: the compiled game (full infosets ``[I, A]``).
      state: a solver state with a per-full-infoset average: a full-keyed state (its
        ``[I, A]`` table, or the kernel's compact ``[P_0 + P_1]`` layout of a full-width
        CFR state on a large game such as LD(1,1) or II-Goofspiel), or an abstract-keyed
        one built with ``full_average=True``.
    """
    check_game(game)
    ssum = full_average_sum(game, state)
    policy = normalize_rows(ssum, game.legal_mask, game.legal_uniform)
    return jnp.sum(br_values_unchecked(game, policy))
