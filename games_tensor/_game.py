"""The compiled game: an immutable pytree of dense arrays.

Dimension vocabulary (used in every docstring of the project):
  P players (2), I infosets (both players, grouped by player), A actions (the
  game's global action space), S = I*A + 1 flat sequence slots, H histories
  (nodes of the game tree), K child slots per node (max(A, chance outcomes)),
  Z terminal histories, Zs sequence-form payoff entries (terminals merged by
  their sequence pair), D depth, B batch.

Two views share one numbering (see DESIGN.md):

* **Sequence form.** The sequence "player p took action a at infoset i" has
  flat index ``i * A + a``; slot ``I * A`` is the empty sequence of both players.
  A realization plan is one ``[S]`` vector holding both players' sequences (each
  infoset belongs to one player), with ``x[I * A] == 1``. Infosets of each player
  are in level order (``infoset_levels[p]`` are static ``(start, end)`` slices);
  an infoset's parent sequence belongs to an infoset of the previous level, and
  inside a level infosets are sorted by parent sequence.
* **History tree, level layout.** Nodes in breadth-first order (``node_levels``
  are static ``(start, end)`` slices by depth; the children of a node are
  contiguous). ``node_children[h, k]`` is the child reached by action ``k`` (player
  node) or by the ``k``-th chance outcome (chance node), ``-1`` when absent.
"""

from __future__ import annotations

import dataclasses
from typing import Any

import jax

CHANCE = -1
TERMINAL = -4


@dataclasses.dataclass(frozen=True, eq=False)
class GameMeta:
    """Static (hashable) metadata of a compiled game.

    Equality and hash use ``name``, ``params``, the shapes and a fingerprint of the
    tree structure, so two compiles of the same game share jit caches while games
    that differ (algorithms read static layouts from here) never do. The host-side extras (readable
    infoset names, float64 copies of the float arrays) ride along unhashed.
    """

    name: str
    params: tuple[tuple[str, Any], ...]
    num_actions: int
    num_infosets: int
    infosets_per_player: tuple[int, int]
    num_histories: int
    num_terminals: int
    num_sf_terminals: int
    num_payoff_blocks: int  # G > 0: terminal payoffs also laid out as dense blocks
    max_depth: int
    max_children: int
    infoset_levels: tuple[tuple[tuple[int, int], ...], tuple[tuple[int, int], ...]]
    # per player, per level d >= 1: child fan-out K of the gathered child sums, 0 where
    # the kernel uses a segment sum (games_tensor._table.level_children)
    child_fanout: tuple[tuple[int, ...], tuple[int, ...]]
    node_levels: tuple[tuple[int, int], ...]
    num_public_states: int
    num_abstract_infosets: int
    has_abstraction: bool
    fingerprint: str  # hash of the tree structure: games that differ never share a trace
    infoset_keys: tuple[str, ...] = dataclasses.field(repr=False)
    abstract_keys: tuple[str, ...] = dataclasses.field(repr=False)
    host: dict = dataclasses.field(repr=False)  # float64 numpy copies, see compile
    # the kernel's compact layout (games_tensor._table.compact_layout): per player, per
    # level, the block height W_d (the level's maximal legal-action count) and the child
    # fan-outs as ``child_fanout``; None where a game copy does not carry the compact
    # fields (the pruning sub-games), which then run in the [A, n_p] layout
    compact_widths: tuple | None = None
    compact_fanout: tuple | None = None
    # per player, per level, the ``(W, n)`` pieces of the level's flat block (one piece
    # ``(W_d, n_d)`` where the level is not split by legal count)
    compact_pieces: tuple | None = None
    # per player, the ``(K, n)`` shapes of the fan-in groups of its payoff entries in the
    # compact layout, then the ``unit`` flag (payoffs -1, 0, 1: zeros dropped, signs in the
    # positions) (games_tensor._table.fanin_groups; ``Game.compact_group_*``); None
    # where the game has payoff blocks or a copy's payoff list differs from the compiled
    # one (the pruning and chance-sampled copies), which then use the segment sum
    payoff_groups: tuple | None = None

    def _key(self):
        return (
            self.name,
            self.params,
            self.num_actions,
            self.num_infosets,
            self.infosets_per_player,
            self.num_histories,
            self.num_terminals,
            self.num_sf_terminals,
            self.num_payoff_blocks,
            self.max_children,
            self.infoset_levels,
            self.child_fanout,
            self.node_levels,
            self.num_public_states,
            self.num_abstract_infosets,
            self.fingerprint,
            self.compact_widths,
            self.compact_fanout,
            self.compact_pieces,
            self.payoff_groups,
        )

    def __eq__(self, other):
        return isinstance(other, GameMeta) and self._key() == other._key()

    def __hash__(self):
        return hash(self._key())


_DATA_FIELDS = (
    "legal_mask",
    "legal_uniform",
    "legal_mask_t",
    "legal_uniform_t",
    "infoset_player",
    "parent_seq",
    "abstract_infoset",
    "sf_seq0",
    "sf_seq1",
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
    "compact_legal",
    "compact_uniform",
    "compact_index",
    "compact_position",
    "compact_parent_local",
    "compact_parent_piece",
    "compact_order",
    "compact_rank",
    "compact_level_children",
    "compact_parent_own",
    "compact_sf_own0",
    "compact_sf_own1",
    "compact_block_row_own",
    "compact_block_col_own",
    "compact_group_opp",
    "compact_group_payoff",
    "compact_group_slot",
    "node_player",
    "node_infoset",
    "node_children",
    "node_chance_probs",
    "node_utility",
    "node_chance_reach",
    "node_public_state",
    "node_parent",
    "node_depth",
    "node_walk_rows",
)


@dataclasses.dataclass(frozen=True, eq=False)
class Game:
    """A compiled two-player zero-sum game (frozen pytree; arrays are leaves).

    Build one with ``games_tensor.load(name, **params)`` or
    ``games_tensor.compile(rules)``. Float arrays are float32, or float64 when
    ``jax_enable_x64`` is on at load time.
    """

    # --- infosets / sequence form ---
    legal_mask: jax.Array  # [I, A] bool
    legal_uniform: jax.Array  # [I, A] float: 1/|A(I)| on legal actions, 0 elsewhere
    # the same two, action-major [A, I] (the kernel's layout, jaxcfr._sequence_form): read
    # every update, a transpose of the [I, A] ones would be recomputed every iteration
    legal_mask_t: jax.Array  # [A, I] bool
    legal_uniform_t: jax.Array  # [A, I] float
    infoset_player: jax.Array  # [I] int32, 0 or 1
    parent_seq: jax.Array  # [I] int32 in [0, S): owner's parent sequence (I*A = empty)
    abstract_infoset: jax.Array  # [I] int32: abstract infoset id (identity without abstraction)
    sf_seq0: jax.Array  # [Zs] int32: P1's sequence at each payoff entry
    sf_seq1: jax.Array  # [Zs] int32: P2's sequence
    sf_payoff: jax.Array  # [Zs] float: sum of chance reach * u_0 over merged terminals
    block_rows: jax.Array  # [G, R] int32: P1 sequences of each payoff block (pad: S)
    block_cols: jax.Array  # [G, C] int32: P2 sequences of each payoff block (pad: S)
    block_payoff: jax.Array  # [G, R, C] float: chance reach * u_0 (G = 0: no blocks)
    # --- the level structure of each player's sequence tree (games_tensor._table) ---
    parent_local: jax.Array  # [I] int32: parent sequence in the previous level's [A, n] block
    level_children: jax.Array  # [L] int32: child ids per parent slot (see meta.child_fanout)
    # --- the same sequences as positions in their owner's flattened [A, n_p] block
    #     (games_tensor._table.block_positions; empty -> A*n_p, padding -> A*n_p + 1) ---
    parent_own: jax.Array  # [I] int32: parent_seq in the owner's block
    sf_own0: jax.Array  # [Zs] int32: sf_seq0 in P1's block
    sf_own1: jax.Array  # [Zs] int32: sf_seq1 in P2's block
    block_row_own: jax.Array  # [G, R] int32: block_rows in P1's block
    block_col_own: jax.Array  # [G, C] int32: block_cols in P2's block
    # --- the compact layout (games_tensor._table.compact_layout): each level of a player's
    #     sequence tree a [W_d, n_d] block (W_d its own widest infoset, actions renumbered
    #     by rank among the legal ones), levels concatenated flat into [P_p] ---
    compact_legal: jax.Array  # [P_0 + P_1] bool
    compact_uniform: jax.Array  # [P_0 + P_1] float: 1/|A(I)| on legal slots
    compact_index: jax.Array  # [P_0 + P_1] int32: i*A + a of each slot (padding: I*A)
    compact_position: jax.Array  # [I, A] int32: slot of each legal pair (else P_0 + P_1)
    compact_parent_local: jax.Array  # [I] int32: parent_local in the compact level blocks
    # levels split by legal count keep their infosets in piece order (compact_layout):
    compact_parent_piece: jax.Array  # [I] int32: compact_parent_local in piece order
    compact_order: jax.Array  # [I] int32: level-local id of each place in piece order
    compact_rank: jax.Array  # [I] int32: each infoset's place in its level's piece order
    compact_level_children: jax.Array  # [L'] int32: level_children of the compact layout
    compact_parent_own: jax.Array  # [I] int32: parent_own in the owner's compact block
    compact_sf_own0: jax.Array  # [Zs] int32
    compact_sf_own1: jax.Array  # [Zs] int32
    compact_block_row_own: jax.Array  # [G, R] int32
    compact_block_col_own: jax.Array  # [G, C] int32
    # --- the payoff entries grouped by the fan-in of their own sequence, per player (player
    #     0's groups, then player 1's; shapes in meta.payoff_groups; empty without them) ---
    compact_group_opp: jax.Array  # [N_0 + N_1] int32: the opponent's compact position
    compact_group_payoff: jax.Array  # [N_0 + N_1] float: the payoff, signed for the owner
    compact_group_slot: jax.Array  # [P_0 + 1 + P_1 + 1] int32: own slot -> group sum
    # --- history tree (breadth-first level layout) ---
    node_player: jax.Array  # [H] int32: 0, 1, CHANCE (-1) or TERMINAL (-4)
    node_infoset: jax.Array  # [H] int32: infoset id at player nodes, -1 elsewhere
    node_children: jax.Array  # [H, K] int32: child node id, -1 if none
    node_chance_probs: jax.Array  # [H, K] float: outcome probabilities at chance nodes
    node_utility: jax.Array  # [H] float: u_0 at terminals, 0 elsewhere
    node_chance_reach: jax.Array  # [H] float: product of chance probabilities to the node
    node_public_state: jax.Array  # [H] int32: public-state id
    node_parent: jax.Array  # [H] int32: parent node id, -1 at the root
    node_depth: jax.Array  # [H] int32
    # each node's walk row (games_tensor._table.walk_rows; the samplers' compact node
    # rows, jaxcfr._sampling.compact_rows): [H, 3 + w] int32, w = float words: the code
    # (infoset id, CHANCE or TERMINAL), the first child (0 where none), the legal actions
    # as a bitmask (player nodes: the infoset's; terminals: all A; chance nodes: 0), u_0's
    # bits; [0, 3 + w] when A > 31 (the bitmask is one int32)
    node_walk_rows: jax.Array
    meta: GameMeta

    # ------------------------------------------------------------------ info
    @property
    def name(self) -> str:
        return self.meta.name

    @property
    def params(self) -> dict[str, Any]:
        return dict(self.meta.params)

    @property
    def num_actions(self) -> int:
        return self.meta.num_actions

    @property
    def num_infosets(self) -> int:
        return self.meta.num_infosets

    @property
    def num_sequences(self) -> int:
        """Flat sequence slots ``S = I * A + 1`` (the last one is the empty sequence)."""
        return self.meta.num_infosets * self.meta.num_actions + 1

    @property
    def empty_sequence(self) -> int:
        return self.meta.num_infosets * self.meta.num_actions

    @property
    def infoset_keys(self) -> tuple[str, ...]:
        """Readable information-state string of each infoset, in id order."""
        return self.meta.infoset_keys

    def player_slice(self, player: int) -> slice:
        """Infoset ids of ``player`` (infosets are grouped by player)."""
        n0 = self.meta.infosets_per_player[0]
        return slice(0, n0) if player == 0 else slice(n0, self.meta.num_infosets)

    @property
    def sizes(self) -> dict[str, Any]:
        """Sizes: infosets, infosets_per_player, infoset_actions, sequences, terminals, ...

        ``sequences`` counts each player's sequences including the empty one
        (infoset_actions + 2), as in the sequence-form literature.
        """
        m = self.meta
        host = m.host
        pairs = int(host["legal_mask"].sum())
        out = {
            "infosets": m.num_infosets,
            "infosets_per_player": m.infosets_per_player,
            "infoset_actions": pairs,
            "sequences": pairs + 2,
            "terminals": m.num_terminals,
            "histories": m.num_histories,
            "max_depth": m.max_depth,
            "public_states": m.num_public_states,
        }
        if m.has_abstraction:
            out["abstract_infosets"] = m.num_abstract_infosets
            out["abstract_infoset_actions"] = int(host["abstract_legal_mask"].sum())
        return out

    def __repr__(self) -> str:
        s = self.sizes
        args = ", ".join(f"{k}={v!r}" for k, v in self.meta.params)
        extra = f", abstract_infosets={s['abstract_infosets']}" if self.meta.has_abstraction else ""
        return (
            f"Game(name={self.meta.name!r}{', ' if args else ''}{args}, "
            f"infosets={s['infosets']}, actions={self.meta.num_actions}, "
            f"terminals={s['terminals']}, histories={s['histories']}{extra})"
        )


jax.tree_util.register_dataclass(Game, data_fields=list(_DATA_FIELDS), meta_fields=["meta"])


class ArgumentTypeError(TypeError, ValueError):
    """An argument of the wrong kind (a game's name instead of a compiled ``Game``, an
    integer instead of a PRNG key): a ``TypeError`` that is also a ``ValueError``, so
    callers catching either (the library's "clear error" is a ``ValueError``) see it.
    The one class for games_tensor and jaxcfr (``jaxcfr._solver`` re-uses it)."""


def require_game(game, name: str = "game") -> None:
    """Raise :class:`ArgumentTypeError` (a ``TypeError`` and a ``ValueError``) unless
    ``game`` is a compiled :class:`Game` (a game's name or its ``Rules`` get a message
    saying how to compile it)."""
    if not isinstance(game, Game):
        raise ArgumentTypeError(
            f"{name} must be a compiled games_tensor.Game, got {type(game).__name__} "
            f"{game!r:.80} (compile it first: games_tensor.load(name))"
        )


def uniform_policy(game: Game) -> jax.Array:
    """The uniform policy ``[I, A]``: 1/|A(I)| on legal actions, 0 on illegal ones."""
    require_game(game)
    return game.legal_uniform
