"""The step form of a game: pure, jittable rules over a fixed-shape state pytree.

A :class:`StepGame` is the second, optional form of a game, for games too large to
compile (LD(2,2), II-GS(13), GP(4,6,4,4)): online search needs only the histories it
visits. It is written in the style of pgx, but with explicit chance nodes, and plays
exactly the tree of the game's compiled Python rules (``games_tensor/games/``): the same
action numbering, chance outcomes in the same order, the same utilities and the same
information-state and public-state partitions (tested in ``tests/test_step_games.py``
by enumerating both forms).

Shapes: A actions (the compiled game's ``num_actions``), K chance outcomes
(``num_chance_outcomes``), W and Wp uint32 words of the information-state and
public-state keys, B batch.

Every method is a pure function of the state; the game object holds only static
parameters (it is a frozen dataclass and a pytree without leaves, so it can be passed
to a jitted function or closed over). Write code for one state and ``jax.vmap`` it::

    game = games_tensor.step.load("liars_dice", dice0=2, dice1=2)
    s = game.init()                                  # root: a chance node
    s = game.apply(s, 3)                             # chance outcome index 3 (die 4)
    jax.vmap(game.legal_mask)(batch_of_states)       # [B, A]

Node kinds follow ``games_tensor._rules``: ``current_player`` is 0, 1, ``CHANCE``
(-1) or ``TERMINAL`` (-4). At a chance node ``apply`` takes the index ``k`` of a
chance outcome with ``chance_probs(state)[k] > 0``; at a player node an action
with ``legal_mask(state)[a]``; at a terminal it returns the state unchanged.
Anything else is undefined (it cannot raise under ``jit``). The compiled game lists
only outcomes of positive probability, so its chance slot ``j`` is the ``j``-th
positive entry of ``chance_probs`` here (the same order; the two coincide unless a
deck runs out of a card type, e.g. GP with C <= 2).

Information-state keys: ``information_state_key(state, player)`` packs what
``player`` has observed into W uint32 words (:class:`KeyLayout`; each game's
docstring gives its fields). At a node where ``player`` moves, two histories have
equal keys exactly when the compiled game puts them in the same infoset. The key
starts with the player bit, so keys of both players can share one table.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping, Sequence
from typing import Any, ClassVar, NamedTuple

import jax
import jax.numpy as jnp
import numpy as np

from games_tensor._rules import CHANCE, TERMINAL

MAX_KEY_WORDS = 16  # 512 bits: longer keys are refused by the loaders


def bits_for(max_value: int) -> int:
    """Bits needed to store the integers ``0..max_value``."""
    return max(1, int(max_value).bit_length())


class KeyLayout:
    """Static packing of small unsigned integer fields into uint32 words.

    ``fields`` is a sequence of ``(name, count, bits)``: ``count`` values of ``bits``
    bits each (``1 <= bits <= 32``). Values are placed in order, the first at the lowest
    bits of word 0; a value never crosses a word boundary (it starts the next word when
    it does not fit), so each word holds a contiguous run of values and packing is one
    shifted sum per word (the bits are disjoint, so the sum is an OR).
    """

    def __init__(self, fields: Sequence[tuple[str, int, int]]):
        self.fields = tuple((str(n), int(c), int(b)) for n, c, b in fields)
        word, used = 0, 0
        words, shifts = [], []
        for name, count, bits in self.fields:
            if not 1 <= bits <= 32 or count < 1:
                raise ValueError(f"field {name!r}: bits must be in [1, 32] and count >= 1")
            for _ in range(count):
                if used + bits > 32:
                    word, used = word + 1, 0
                words.append(word)
                shifts.append(used)
                used += bits
        self.words = word + 1
        self.bits = sum(c * b for _, c, b in self.fields)
        self._word_of = np.asarray(words, np.int32)
        self._shift = np.asarray(shifts, np.uint32)
        starts = np.searchsorted(self._word_of, np.arange(self.words + 1))
        self._runs = tuple((int(starts[w]), int(starts[w + 1])) for w in range(self.words))

    def pack(self, values: Mapping[str, jax.Array]) -> jax.Array:
        """``{name: [count] or scalar}`` -> ``[W]`` uint32. Values must fit their bits."""
        flat = jnp.concatenate(
            [
                jnp.reshape(jnp.asarray(values[name]).astype(jnp.uint32), (count,))
                for name, count, _ in self.fields
            ]
        )
        shifted = jnp.left_shift(flat, jnp.asarray(self._shift))
        return jnp.stack([jnp.sum(shifted[a:b], dtype=jnp.uint32) for a, b in self._runs])

    def fields_of(self, words: jax.Array) -> dict[str, jax.Array]:
        """Traceable inverse of :meth:`pack`: ``[W]`` uint32 -> ``{name: [count] int32}``."""
        vals = jnp.right_shift(words[jnp.asarray(self._word_of)], jnp.asarray(self._shift))
        out, i = {}, 0
        for name, count, bits in self.fields:
            out[name] = (vals[i : i + count] & jnp.uint32((1 << bits) - 1)).astype(jnp.int32)
            i += count
        return out

    def unpack(self, words) -> dict[str, np.ndarray]:
        """Host-side inverse of :meth:`pack`: ``[..., W]`` -> ``{name: [..., count]}``."""
        words = np.asarray(words, np.uint32)
        vals = (words[..., self._word_of] >> self._shift).astype(np.uint64)
        out, i = {}, 0
        for name, count, bits in self.fields:
            mask = np.uint64((1 << bits) - 1)
            out[name] = (vals[..., i : i + count] & mask).astype(np.int64)
            i += count
        return out

    def describe(self) -> str:
        """One line per field: name, count x bits, (word, shift) of the first value."""
        lines, i = [], 0
        for name, count, bits in self.fields:
            lines.append(
                f"{name}: {count} x {bits} bits from word {self._word_of[i]} bit {self._shift[i]}"
            )
            i += count
        return "\n".join(lines)

    def __repr__(self) -> str:
        return f"KeyLayout(words={self.words}, bits={self.bits}, fields={self.fields})"


def check_key_width(game_name: str, layout: KeyLayout, params: Mapping[str, Any]) -> None:
    """Refuse layouts wider than :data:`MAX_KEY_WORDS` words, naming the parameters."""
    if layout.words > MAX_KEY_WORDS:
        args = ", ".join(f"{k}={v!r}" for k, v in params.items())
        raise ValueError(
            f"{game_name} step form with {args}: the information-state key needs "
            f"{layout.bits} bits in {layout.words} uint32 words, more than the supported "
            f"{MAX_KEY_WORDS} words ({32 * MAX_KEY_WORDS} bits); use smaller parameters"
        )


def one_hot_set(array: jax.Array, index: jax.Array, value) -> jax.Array:
    """``array`` with ``array[index] = value`` on its last axis, written as a select
    (no scatter: cheaper under ``vmap`` on CPU)."""
    hit = jnp.arange(array.shape[-1]) == index
    return jnp.where(hit, jnp.asarray(value, array.dtype), array)


def small_sort(x: jax.Array) -> jax.Array:
    """Ascending sort of a short ``[n]`` vector with O(n^2) compares (no sort kernel,
    which is slow per call under ``vmap`` on CPU): the element of rank ``i`` goes to ``i``."""
    n = x.shape[-1]
    if n <= 1:
        return x
    idx = jnp.arange(n)
    before = (x[None, :] < x[:, None]) | (
        (x[None, :] == x[:, None]) & (idx[None, :] < idx[:, None])
    )
    rank = jnp.sum(before, axis=1)  # rank[j]: position of x[j]
    return jnp.sum(jnp.where(rank[None, :] == idx[:, None], x[None, :], 0), axis=1).astype(x.dtype)


def computed_once(x: jax.Array) -> jax.Array:
    """``x`` unchanged, bit for bit, computed by one XLA kernel of its own.

    A straight-line chain of small steps (an unrolled DP) is cheaper than a
    ``lax.scan`` of them (no loop, no stacked carries), but XLA:CPU fuses each cheap
    elementwise step into its consumers and recomputes it there, and drops
    ``lax.optimization_barrier``. A reduction is not duplicated, so the value goes
    through one the simplifier cannot remove: the bits as integers (floats bitcast,
    bools as int32), ``sum([x, x] * [1, 0])``, back to ``x``'s dtype. The one copy of
    this trick: ``jaxcfr._sampling.materialize`` maps it over a pytree.
    """
    x = jnp.asarray(x)
    if jnp.issubdtype(x.dtype, jnp.floating):
        bits = jax.lax.bitcast_convert_type(x, jnp.dtype(f"int{8 * x.dtype.itemsize}"))
    else:
        bits = x.astype(jnp.int32) if x.dtype == jnp.bool_ else x
    w = jnp.asarray([1, 0], bits.dtype).reshape((1,) * bits.ndim + (2,))
    once = jnp.sum(jnp.stack([bits, bits], axis=-1) * w, axis=-1, dtype=bits.dtype)
    if jnp.issubdtype(x.dtype, jnp.floating):
        return jax.lax.bitcast_convert_type(once, x.dtype)
    return once.astype(x.dtype)


def float_dtype():
    """float32, or float64 under ``jax_enable_x64`` (as the compiled game)."""
    return jnp.asarray(0.0).dtype


@dataclasses.dataclass(frozen=True)
class StepGame:
    """Base class of the step-form games: static parameters as dataclass fields.

    Subclasses set ``name`` and implement the methods below; :meth:`__post_init__`
    of a subclass builds ``info_layout`` and ``public_layout`` (:class:`KeyLayout`)
    and the sizes ``num_actions`` (A), ``num_chance_outcomes`` (K) and ``max_depth``
    (the longest root-to-terminal path, chance steps included) and ``max_utility``
    (the largest |u| over terminals, as the compiled game's; ISMCTS scales by it).
    """

    name: ClassVar[str] = "step_game"

    # ---- static description -------------------------------------------------
    def params(self) -> dict[str, Any]:
        return {f.name: getattr(self, f.name) for f in dataclasses.fields(self)}

    @property
    def key_words(self) -> int:
        """W: uint32 words of an information-state key."""
        return self.info_layout.words

    @property
    def public_key_words(self) -> int:
        """Wp: uint32 words of a public-state key."""
        return self.public_layout.words

    def _set(self, **values) -> None:
        for k, v in values.items():
            object.__setattr__(self, k, v)

    # ---- the tree (override) --------------------------------------------------
    def init(self) -> NamedTuple:
        """The root state."""
        raise NotImplementedError

    def current_player(self, state) -> jax.Array:
        """[] int32: 0, 1, ``CHANCE`` (-1) or ``TERMINAL`` (-4)."""
        raise NotImplementedError

    def legal_mask(self, state) -> jax.Array:
        """[A] bool: legal actions of the player to move (all False elsewhere)."""
        raise NotImplementedError

    def chance_probs(self, state) -> jax.Array:
        """[K] float: outcome probabilities at a chance node (zeros elsewhere)."""
        raise NotImplementedError

    def _apply(self, state, action) -> NamedTuple:
        """The successor state at a chance or player node (terminals handled by apply)."""
        raise NotImplementedError

    def returns(self, state) -> jax.Array:
        """[2] float: ``(u0, u1)`` at a terminal (zero-sum), zeros elsewhere."""
        raise NotImplementedError

    def information_state_key(self, state, player) -> jax.Array:
        """[W] uint32: ``player``'s information-state key (see the game's docstring)."""
        raise NotImplementedError

    def public_state_key(self, state) -> jax.Array:
        """[Wp] uint32: the public-state key."""
        raise NotImplementedError

    def consistent(self, state, target_key) -> jax.Array:
        """[] bool: is ``state``'s history a prefix (or a member) of a history of the
        infoset with key ``target_key`` ([W] uint32; its player field says whose)?

        For targeted search (OOS in-tree targeting, ISMCTS determinization): restrict a
        trajectory's steps to children that stay consistent. Exact (no dead ends) for
        Liar's Dice and Generic Poker, and for II-Goofspiel (the opponent's remaining
        cards must be able to produce the target's round outcomes: a matching check).
        """
        raise NotImplementedError

    def consistent_children(self, state, target_key, width: int) -> jax.Array:
        """[width] bool: :meth:`consistent` of the child by each slot (action or chance
        outcome ``k``) of ``state``; slots that are not legal actions or possible
        outcomes are meaningless (callers mask them). This default applies every
        child; a game may override it with a check on the key alone (Liar's Dice).

        Step games have perfect recall, and ISMCTS's forced draw relies on it
        (``jaxcfr.search._table.step_draw_weights``): at a decision of the target's own
        player exactly one child is consistent. A game without perfect recall would
        bias that draw."""
        kids = jax.vmap(self.apply, (None, 0))(state, jnp.arange(width, dtype=jnp.int32))
        return jax.vmap(self.consistent, (0, None))(kids, target_key)

    def public_consistent_children(self, state, target_public_key, width: int) -> jax.Array:
        """[width] bool: :meth:`public_consistent` of each child (see
        :meth:`consistent_children`)."""
        kids = jax.vmap(self.apply, (None, 0))(state, jnp.arange(width, dtype=jnp.int32))
        return jax.vmap(self.public_consistent, (0, None))(kids, target_public_key)

    def num_completions(self, state, target_key) -> jax.Array:
        """[] float: the number of histories of the infoset with key ``target_key`` that
        pass through ``state`` (0 when ``state`` is not :meth:`consistent` with it; the
        infoset's size at the root). Exact counts, in the float dtype (relative
        precision 2^-24 in float32: they are used as sampling weights).

        For a uniform draw over an infoset's histories without enumerating them
        (ISMCTS's start history, ALGORITHMS.md 2.6): walk from the root, choosing each
        child with probability proportional to its count."""
        raise NotImplementedError

    def children_completions(self, state, target_key, width: int) -> jax.Array:
        """[width] float: :meth:`num_completions` of the child by each slot of
        ``state`` (see :meth:`consistent_children` for the slots; meaningless slots are
        masked by callers): the weights of ISMCTS's forced draw toward an infoset
        (``jaxcfr.search._table.step_completions``). This default applies every child
        and counts each; a game may override it with shared work across the children
        (II-Goofspiel: one forward and one backward pass of its counting DP instead of
        ``width`` DPs)."""
        kids = jax.vmap(self.apply, (None, 0))(state, jnp.arange(width, dtype=jnp.int32))
        return jax.vmap(self.num_completions, (0, None))(kids, target_key)

    def public_consistent(self, state, target_public_key) -> jax.Array:
        """[] bool: is ``state``'s history a prefix (or a member) of a history in the
        public state with key ``target_public_key`` ([Wp] uint32)? For public-subgame
        targeting (OOS PST); exact for Liar's Dice and Generic Poker."""
        raise NotImplementedError

    # ---- shared conveniences ---------------------------------------------------
    def apply(self, state, action) -> NamedTuple:
        """The successor state; ``action`` is a chance outcome index at chance nodes.

        At a terminal the state is returned unchanged, so a fixed-length masked loop
        can keep stepping finished trajectories.
        """
        new = self._apply(state, action)
        done = self.is_terminal(state)
        return jax.tree_util.tree_map(lambda a, b: jnp.where(done, a, b), state, new)

    def is_terminal(self, state) -> jax.Array:
        return self.current_player(state) == TERMINAL

    def is_chance(self, state) -> jax.Array:
        return self.current_player(state) == CHANCE

    def current_key(self, state) -> jax.Array:
        """[W] uint32: the information-state key of the player to move (player 0's key
        at chance and terminal nodes, where it is not an infoset)."""
        return self.information_state_key(state, jnp.maximum(self.current_player(state), 0))

    def __repr__(self) -> str:
        args = ", ".join(f"{k}={v!r}" for k, v in self.params().items())
        return f"{type(self).__name__}({args})"


def step_game(cls):
    """Class decorator: a frozen dataclass registered as a pytree without leaves."""
    cls = dataclasses.dataclass(frozen=True, repr=False)(cls)
    jax.tree_util.register_static(cls)
    return cls
