"""The bot interface shared by the search algorithms, what a bot sees, and the random bot.

A bot is a small NamedTuple of pure functions (write them for one match; ``jax.vmap``
over matches):

* ``init(game) -> state``: fixed-shape tables (statistics ``[R, k, A]`` and an in-memory
  mask ``[R]``, R rows from ``jaxcfr.search._table``) and an int32 iteration counter.
* ``search(game, state, view, key, num_iterations) -> state``: that many iterations
  from the searcher's current position (a ``lax.fori_loop`` inside).
* ``policy(game, state, view) -> [A]``: the distribution the bot plays there.
* ``strategy(game, state) -> (weights [R, A], in_memory [R])``: the bot's
  accumulated strategy weights (OOS and ISMCTS-RM: mean-strategy sums; ISMCTS-UCT:
  visit counts), for exploitability of what it computed.

A bot never sees the true history: :class:`View` holds only what the acting player
knows, its infoset id and the public state id (step-form games: its information-state
key, the public-state key and its legal actions). The match engine (``jaxcfr.play``)
holds the history (step form: the game state) and builds the view with
:func:`view_of` (:func:`step_view_of`).
"""

from __future__ import annotations

from typing import Any, Callable, NamedTuple

import jax
import jax.numpy as jnp
import numpy as np

from games_tensor import Game
from jaxcfr import _sampling as smp
from jaxcfr._solver import backend_options, check_count, check_game, check_key
from jaxcfr.search import _table as tbl


class Bot(NamedTuple):
    """A search bot: ``(init, search, policy, strategy)`` pure functions and its name,
    built by :func:`jaxcfr.oos`, :func:`jaxcfr.ismcts` or :func:`jaxcfr.random_bot`.

    * ``init(game) -> state``: empty tables (fixed shapes; R rows, one per infoset or,
      on a step-form game, ``capacity`` hash slots).
    * ``search(game, state, view, key, num_iterations) -> state``: ``num_iterations``
      (an integer >= 0: a Python int, or a traced int32 as ``play``'s engine passes;
      the bound of a ``fori_loop``) simulations from what ``view`` (a
      :class:`View`) knows, drawing chance and the unseen history from ``key``.
    * ``policy(game, state, view) -> [A]``: the move distribution at ``view``'s infoset.
    * ``strategy(game, state) -> (weights [R, A], in_memory [R])``: the whole table.

    ``play`` samples each move from ``policy``; ISMCTS-UCT's policy is one-hot on the
    most-visited action, so its moves are deterministic. Unbatched: ``jax.vmap`` the
    functions over searchers. ``repr`` is the bot's name and settings.
    """

    init: Callable[..., Any]
    search: Callable[..., Any]
    policy: Callable[..., Any]
    strategy: Callable[..., Any]
    name: str = "bot"

    def __repr__(self) -> str:
        return f"Bot({self.name})"


class View(NamedTuple):
    """What the acting player knows (int32 scalars, or ``[B]`` under ``vmap``).

    player: the acting player (0 or 1); infoset: its infoset id; public_state: the
    public-state id. ``root_view()``: all -1, search from the root.

    Step-form games (:func:`step_view_of`): ``infoset`` is the information-state key
    ``[W]`` uint32, ``public_state`` the public-state key ``[Wp]`` uint32, and
    ``legal`` the ``[A]`` legal mask (part of what the player knows); compiled
    games leave ``legal`` None.
    """

    player: jax.Array
    infoset: jax.Array
    public_state: jax.Array
    legal: jax.Array | None = None


def compiler_options(game) -> dict | None:
    """XLA options for jitting a bot's ``search`` (or a match engine that runs it) on
    ``game``; ``None`` when there are none. Pass as ``jax.jit(..., compiler_options=
    compiler_options(game))``; ``jaxcfr.play`` and the search benchmarks do.

    Compiled games: :func:`jaxcfr._sampling.sampling_compiler_options` (no YNNPACK
    fusions on CPU). From about 128 vmapped searchers on, XLA:CPU otherwise hands each
    trip's ``[B, K, K]`` cdf reduction of ``sample_index`` (and the row sums) to a
    YNNPACK kernel that it cannot fuse with the ``[B, K, K]`` masked operand (Liar's
    Dice at B = 512: 1.8-2.0x the iterations per second of the previous session's
    quiet run of ``python -m experiments.benchmarks search --games ld --batches 512``,
    which includes the one-row-less UCT change; docs/search.md, "Design"). It also makes a
    searcher's bits independent of how many searchers share its batch (YNNPACK sums
    the K slots in another order than XLA's sequential one). Step form:
    :func:`jaxcfr._sampling.step_compiler_options` (the old fusion emitters, and no
    YNNPACK fusions since session 27). ``xla_cpu_*`` options
    are dropped on other backends."""
    if smp.is_step(game):
        return smp.step_compiler_options() or None
    return backend_options(smp.sampling_compiler_options())


def view_of(game: Game, history) -> View:
    """The acting player's :class:`View` at history (node id) ``history``: what the
    match engine hands to a bot. The history itself is not part of it.

    ``history``: an int node id in ``[0, H)`` (or an int array of them; traced ids are
    not range-checked); ``ValueError`` for one outside the game's tree."""
    check_game(game)
    if not isinstance(history, jax.core.Tracer):
        h = np.asarray(history)
        n = game.node_player.shape[0]
        if not np.issubdtype(h.dtype, np.integer) or ((h < 0) | (h >= n)).any():
            raise ValueError(
                f"history must be integer node ids in [0, {n}) of {game.name}, got {history!r:.80}"
            )
    h = jnp.asarray(history, jnp.int32)
    return View(game.node_player[h], game.node_infoset[h], game.node_public_state[h])


def step_view_of(game, state) -> View:
    """The acting player's :class:`View` at a step-form game state: its
    information-state key, the public-state key and the legal mask (player -1 at
    chance and terminal states). The state itself is not part of it."""
    raw = game.current_player(state)
    player = jnp.where(raw >= 0, raw, -1).astype(jnp.int32)
    key = game.information_state_key(state, jnp.maximum(raw, 0))
    return View(player, key, game.public_state_key(state), game.legal_mask(state))


def root_view() -> View:
    """A view meaning "search from the root" (root convergence runs)."""
    m = jnp.asarray(-1, jnp.int32)
    return View(m, m, m)


def _concrete(x) -> bool:
    return not isinstance(x, jax.core.Tracer)


def check_search(game: Game, view: View, key, num_iterations, *, need_public=False) -> None:
    """Arguments of every bot's ``search``: a compiled ``Game`` (not its name), a
    :class:`View` of the acting player (:func:`check_view`), one PRNG key (not an
    integer seed) and an integer number of iterations ``>= 0``; a clear
    ``TypeError``/``ValueError`` naming the bad one."""
    check_game(game, step_form=True)
    if not isinstance(view, View):
        raise ValueError(
            f"view must be a jaxcfr.View (jaxcfr.view_of(game, history) or "
            f"jaxcfr.root_view()), got {type(view).__name__} {view!r:.80}"
        )
    check_view(game, view, need_public=need_public)
    check_key(key)
    check_count("num_iterations", num_iterations, 0)


def check_view(game: Game, view: View, *, need_public: bool = False) -> None:
    """Raise ``ValueError`` when a concrete view is not an acting player's infoset.

    Checked: ``view.infoset`` in [0, I) (or -1 with every field -1: the root view),
    the infoset belongs to ``view.player``, and (``need_public``) ``view.public_state``
    is the public state of the infoset's histories. Traced views pass (the engine
    builds them with :func:`view_of`).
    """
    if tbl.is_step(game):
        return  # keys carry no ids to check; the engine builds them with step_view_of
    if not all(_concrete(x) for x in view if x is not None):
        return
    player, infoset, public = (np.asarray(x) for x in view[:3])
    if player.ndim or infoset.ndim or public.ndim:
        raise ValueError(f"view must hold int32 scalars (one match); got shapes {player.shape}")
    player, infoset, public = int(player), int(infoset), int(public)
    if infoset == -1 and player == -1:
        return
    if not 0 <= infoset < game.num_infosets:
        raise ValueError(
            f"view.infoset must be an infoset id in [0, {game.num_infosets}) of the acting "
            f"player, got {infoset}"
        )
    owner = int(_owners(game)[infoset])
    if owner != player:
        raise ValueError(
            f"view.infoset {infoset} belongs to player {owner}, not to view.player {player}: "
            "a view must be the acting player's own infoset"
        )
    if need_public:
        table = tbl.infoset_sets(game)
        first = table.nodes[table.start[infoset]]
        expect = int(tbl._host_array(game, "node_public_state")[first])
        if public != expect:
            raise ValueError(
                f"view.public_state {public} is not the public state {expect} of infoset {infoset}"
            )


def _owners(game: Game) -> np.ndarray:
    owners = game.meta.host.get("search_infoset_player")
    if owners is None:
        owners = tbl._host_array(game, "infoset_player")
        game.meta.host["search_infoset_player"] = owners
    return owners


def legal_row(game: Game, view: View) -> jax.Array:
    """``[A]`` legal mask at the view's infoset."""
    if tbl.is_step(game):
        return view.legal
    return game.legal_mask[jnp.maximum(view.infoset, 0)]


def normalized_row(game: Game, weights: jax.Array, state, view: View):
    """``weights[row]`` normalized over the legal actions at the view's infoset; uniform
    when the infoset is not in memory or its weights sum to 0. ``state``: the bot
    state (its ``in_memory`` mask and key ``table``, ``jaxcfr.search._table``)."""
    legal = legal_row(game, view)
    row, mem = tbl.view_row(game, state, view)
    w = jnp.where(legal & mem, weights[row], 0.0)
    total = jnp.sum(w)
    uniform = legal / jnp.sum(legal)
    return jnp.where(total > 0, w / jnp.where(total > 0, total, 1.0), uniform.astype(w.dtype))


def table_policy(
    game: Game, weights: jax.Array, in_memory: jax.Array, fallback: jax.Array, infosets=None
):
    """``[I, A]`` policy from a bot's strategy weights: normalized rows where the infoset
    is in memory with positive weight, ``fallback`` [I, A] elsewhere (e.g. the root
    protocol's fixed random action, or uniform).

    ``infosets`` (int32 ``[...]``, optional): only those infosets' rows, ``[..., A]``
    (the same values as the full policy's rows; O(size of ``infosets``), not O(I))."""
    ids = jnp.arange(game.num_infosets) if infosets is None else infosets
    rows = tbl.rows(game, ids)
    legal = game.legal_mask[ids]
    w = jnp.where(legal, weights[rows], 0.0)
    total = jnp.sum(w, axis=-1, keepdims=True)
    use = in_memory[rows][..., None] & (total > 0)
    fallback = fallback if infosets is None else fallback[ids]
    return jnp.where(use, w / jnp.where(total > 0, total, 1.0), fallback.astype(w.dtype))


def fixed_random_policy(game: Game, seed: int = 0) -> jax.Array:
    """``[I, A]`` one-hot on a legal action drawn uniformly per infoset from ``seed``:
    the root-convergence protocol's play outside the tree, shared by all algorithms."""
    check_game(game)
    check_count("seed", seed, 0)
    rng = np.random.default_rng(int(seed))
    mask = game.meta.host["legal_mask"]
    score = rng.random(mask.shape) * mask
    pick = np.argmax(score, axis=1)
    out = np.zeros(mask.shape, np.asarray(game.legal_uniform).dtype)
    out[np.arange(mask.shape[0]), pick] = 1.0
    return jnp.asarray(out)


# ---------------------------------------------------------------- random bot
class RandomState(NamedTuple):
    """The random bot keeps nothing but a counter."""

    iteration: jax.Array


def random_bot() -> Bot:
    """The uniform random bot (RND of the OOS paper): no search, uniform over legal actions.

    Example::

        utilities = jaxcfr.play(game, jaxcfr.random_bot(), jaxcfr.random_bot(), 1000, 0, key)
    """

    def init(game: Game) -> RandomState:
        check_game(game, step_form=True)
        return RandomState(jnp.zeros((), jnp.int32))

    def search(game: Game, state: RandomState, view: View, key, num_iterations) -> RandomState:
        check_search(game, view, key, num_iterations)
        return RandomState(state.iteration + num_iterations)

    def policy(game: Game, state: RandomState, view: View) -> jax.Array:
        del state
        check_game(game, step_form=True)
        legal = legal_row(game, view)
        return (legal / jnp.sum(legal)).astype(tbl.float_type(game))

    def strategy(game: Game, state: RandomState):
        del state
        check_game(game, step_form=True)
        R = 1 if tbl.is_step(game) else tbl.num_rows(game)
        return jnp.ones((R, game.num_actions), tbl.float_type(game)), jnp.ones((R,), bool)

    return Bot(init, search, policy, strategy, "random")
