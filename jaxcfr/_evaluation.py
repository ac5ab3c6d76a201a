"""Exact evaluation: expected value, counterfactual values, best response,
NashConv and exploitability.

All functions are pure and jittable, take the game as an argument and one
``[I, A]`` policy profile (both players' rows); ``jax.vmap`` them over a batch
of policies::

    jax.vmap(jaxcfr.exploitability, in_axes=(None, 0))(game, policies)  # [B]

Conventions (OpenSpiel's): ``nash_conv = sum_p (BR_p value - value_p)``, which in a
zero-sum game is ``BR_0(sigma_1) + BR_1(sigma_0)``; ``exploitability = nash_conv / 2``.
The best response is the counterfactual best response (it maximizes the
counterfactual value at every infoset, reached or not).

Policy hygiene: called on concrete arrays (outside jit) the public functions
validate the policy and raise ``ValueError`` on bad input (see
:func:`validate_policy`); they run one cached jitted kernel that checks the policy on
device, and the host check runs only where that check fails (:func:`_evaluate`).
Inside jit/vmap they cannot raise on values (shape and dtype are still checked when
tracing); a policy with any invalid row (non-finite,
an entry below ``-atol``, mass above ``atol`` on an illegal action, or a row whose
legal entries do not sum to 1 within ``atol``) gives NaN results, never a
valid-looking number. Valid rows are renormalized over legal actions (rounding).
"""

from __future__ import annotations

import functools
import numbers
from typing import NamedTuple

import jax
import jax.numpy as jnp
import numpy as np

from games_tensor import Game
from jaxcfr import _sequence_form as sf
from jaxcfr._solver import (
    check_game,
    check_number,
    materialized,
    normalize_rows,
    rounded,
    sum_actions,
    tree_sum,
)

DEFAULT_ATOL = 1e-5


def validate_policy(game: Game, policy, *, atol: float = DEFAULT_ATOL) -> None:
    """Raise ``ValueError`` unless ``policy`` is a valid ``[I, A]`` profile of ``game``.

    Checks: shape ``[I, A]``, finite, no negative entry (below ``-atol``), no mass
    above ``atol`` on an illegal action, and every row sums to 1 within ``atol``.
    """
    check_game(game)
    check_number("atol", atol, 0.0)
    shape = (game.num_infosets, game.num_actions)
    _check_policy_type(policy)
    if isinstance(policy, jax.core.Tracer):
        if tuple(policy.shape) != shape:
            raise ValueError(
                f"policy has shape {tuple(policy.shape)}, expected {shape} for {game.name}"
            )
        return
    p = np.asarray(policy, dtype=np.float64)
    if p.shape != shape:
        raise ValueError(f"policy has shape {p.shape}, expected [I, A] = {shape} for {game.name}")
    if not np.isfinite(p).all():
        raise ValueError("policy has non-finite entries")
    if (p < -atol).any():
        i, a = np.argwhere(p < -atol)[0]
        raise ValueError(f"policy has a negative entry {p[i, a]:.3g} at infoset {i}, action {a}")
    mask = game.meta.host["legal_mask"]
    illegal = np.where(mask, 0.0, np.abs(p))
    if (illegal > atol).any():
        i, a = np.argwhere(illegal > atol)[0]
        raise ValueError(
            f"policy puts mass {p[i, a]:.3g} on illegal action {a} at infoset {i} "
            f"({game.infoset_keys[i]!r})"
        )
    sums = np.where(mask, p, 0.0).sum(axis=1)
    bad = np.abs(sums - 1.0) > atol
    if bad.any():
        i = int(np.argmax(bad))
        raise ValueError(
            f"policy row {i} ({game.infoset_keys[i]!r}) sums to {sums[i]:.6g} over legal "
            f"actions, not 1 (atol={atol})"
        )


def _check_policy_type(policy) -> None:
    """A real numeric array-like (bool, int, float); not a dict, string, complex array."""
    if isinstance(policy, (jax.Array, np.ndarray, np.generic)):
        dtype = policy.dtype
    elif hasattr(policy, "_fields"):  # a solver state or a RunResult (NamedTuples)
        raise ValueError(
            f"policy must be an [I, A] array, got a {type(policy).__name__}; for a solver "
            "state pass jaxcfr.average_policy(game, state) (or current_policy)"
        )
    elif isinstance(policy, (list, tuple)):
        try:
            dtype = np.asarray(policy).dtype
        except ValueError as exc:  # ragged nested lists
            raise ValueError(f"policy must be a rectangular [I, A] array: {exc}") from exc
    else:
        raise ValueError(
            "policy must be an [I, A] array (e.g. jaxcfr.average_policy(game, state)), got "
            f"{type(policy).__name__} {policy!r:.80}"
        )
    if not (np.issubdtype(dtype, np.floating) or np.issubdtype(dtype, np.integer)) and not (
        np.issubdtype(dtype, np.bool_)
    ):
        raise ValueError(f"policy must hold real numbers, got dtype {dtype}")


def _policy_ok(game: Game, policy: jax.Array, atol: float = DEFAULT_ATOL) -> jax.Array:
    """Inside jit: whether every row of ``policy`` is valid (the checks of
    :func:`validate_policy`, computed on device: :func:`_entries_ok` and the row sums)."""
    sums = jnp.sum(jnp.where(game.legal_mask, policy, 0.0), axis=1)
    return _entries_ok(game, policy, atol) & jnp.all(jnp.abs(sums - 1.0) <= atol)


def _prepare(game: Game, policy, check: bool):
    """``(normalized, ok)``: the normalized ``[I, A]`` policy and, with ``check`` (the
    in-jit path), the flag :func:`_policy_ok`, the policy then all NaN unless it holds
    (``ok`` None without ``check``)."""
    policy = _as_float(game, policy)
    normalized = sf.normalize_policy(game, policy)
    if not check:
        return normalized, None
    ok = _policy_ok(game, policy)
    # after normalizing: its uniform fallback would turn a NaN row into a uniform one
    return jnp.where(ok, normalized, jnp.nan), ok


def _as_float(game: Game, policy) -> jax.Array:
    policy = jnp.asarray(policy)
    if not jnp.issubdtype(policy.dtype, jnp.floating):
        policy = policy.astype(game.sf_payoff.dtype)
    return policy


def _traced(game: Game, policy) -> bool:
    """Whether ``game`` or ``policy`` is being traced (inside jit, vmap, grad)."""
    leaves = (policy, *jax.tree_util.tree_leaves(game))
    return any(isinstance(x, jax.core.Tracer) for x in leaves)


def _evaluate(impl, game: Game, policy, *static):
    """Run ``impl(game, policy, check, *static) -> (result, ok)`` the public way.

    Traced (inside the caller's jit / vmap): shape and dtype checks, then ``impl`` with
    ``check`` (NaN results for an invalid policy, see the module docstring). Concrete:
    one call of the jitted ``impl`` (compiled once per game shape, policy dtype and
    ``static``; no per-op dispatch) whose in-jit validity flag ``ok`` is read back; only
    where it is False does the host check (:func:`validate_policy`) run, to raise its
    ``ValueError`` naming the bad entry. A policy that the host check accepts but the
    device check refused (a row sum within float32 rounding of ``atol``) gets the
    unchecked result, as before this fast path; conversely a policy whose float32 copy
    passes the device check is not re-checked in float64, so a row sum off by ``atol``
    plus less than float32 rounding gets a value instead of the host check's
    ``ValueError``. The compiled kernel is cached per game, policy shape and dtype,
    ``static`` and the kernel layout the game runs (``sf.uses_compact``), so a layout
    switch is seen on the next call."""
    check_game(game)
    _check_policy_type(policy)
    if isinstance(policy, (list, tuple)):
        policy = np.asarray(policy)
    if _traced(game, policy):
        validate_policy(game, policy)  # a traced policy: its shape; a concrete one: all
        return impl(game, policy, isinstance(policy, jax.core.Tracer), *static)[0]
    shape = (game.num_infosets, game.num_actions)
    if tuple(policy.shape) != shape:
        raise ValueError(
            f"policy has shape {tuple(policy.shape)}, expected [I, A] = {shape} for {game.name}"
        )
    layout = sf.uses_compact(game)
    result, ok = _jitted(game, policy, impl, True, static, layout)
    if isinstance(ok, jax.core.Tracer):  # concrete values closed over inside a trace
        validate_policy(game, policy)
        return _jitted(game, policy, impl, False, static, layout)[0]
    if not bool(ok):
        validate_policy(game, policy)  # raises, naming the bad entry
        return _jitted(game, policy, impl, False, static, layout)[0]
    return result


@functools.partial(jax.jit, static_argnums=(2, 3, 4, 5))
def _jitted(game: Game, policy, impl, check: bool, static: tuple, layout: bool):
    """``impl`` compiled; ``layout`` (``sf.uses_compact(game)``, read while tracing
    ``impl``) is only part of the cache key."""
    del layout
    return impl(game, policy, check, *static)


def _check_player(player: int) -> int:
    ok = isinstance(player, numbers.Integral) and not isinstance(player, (bool, np.bool_))
    if not ok or player not in (0, 1):
        raise ValueError(f"player must be the integer 0 or 1, got {player!r}")
    return int(player)


def expected_value(game: Game, policy) -> jax.Array:
    """Expected utility of both players, ``[2]`` = ``(u_0, -u_0)``, under the profile
    ``policy``: the sum over terminals z of chance reach x both players' realization
    plans x u_0(z) (sequence form). Kuhn's equilibrium value: ``-1/18`` for player 0.

    Args:
      game: a compiled ``games_tensor.Game`` (``games_tensor.load("kuhn_poker")``).
      policy: ``[I, A]`` profile, both players' rows (``jaxcfr.average_policy(game,
        state)``, ``games_tensor.uniform_policy(game)``); rows over legal actions sum
        to 1 (within 1e-5), no mass on illegal actions. One profile: ``jax.vmap`` over
        a batch ``[B, I, A]`` with ``in_axes=(None, 0)``.

    Raises:
      ValueError: outside jit, a policy that is not a valid ``[I, A]`` profile of
        ``game`` (the message names the infoset and action); a wrong shape also under
        jit. ``ArgumentTypeError`` (a ``ValueError``) for a game that is not compiled.
        Inside jit / vmap an invalid policy gives NaN, never a plausible number.
    """
    return _evaluate(_expected_value, game, policy)


def _expected_value(game: Game, policy, check: bool):
    policy, ok = _prepare(game, policy, check)
    x = sf.realization_plan(game, policy)
    v0 = tree_sum(rounded(x[game.sf_seq0] * x[game.sf_seq1] * game.sf_payoff.astype(x.dtype)))
    return jnp.stack([v0, -v0]), ok


class CounterfactualValues(NamedTuple):
    """Per infoset-action counterfactual values for one player.

    values: [I, A] v(i, a) under the policy (rows of the other player are zero).
    infoset_values: [I] sum_a policy(i, a) v(i, a).
    best_response_values: [I, A] CBV(i, a): counterfactual value of taking a at i,
      then playing the counterfactual best response below.
    best_response_infoset_values: [I] CBV(i) = max_a CBV(i, a).
    """

    values: jax.Array
    infoset_values: jax.Array
    best_response_values: jax.Array
    best_response_infoset_values: jax.Array


def _prepared_blocks(game: Game, policy, check: bool):
    """``policy`` -> ``(blocks, compact, ok)``: the two players' normalized blocks in the
    kernel's layout, that layout's ``compact`` flag, and ``ok``, None without ``check``
    (the policy was validated on the host) or, with it, the scalar "every row is valid"
    (:func:`_entries_ok` and the row sums on the blocks) that the caller applies to its results with
    :func:`_poisoned` (NaN results for an invalid policy; applied to the few results,
    not to the blocks, where XLA would fuse the scalar's reductions into every element).

    The ``[I, A]`` table is read once for the entry checks (:func:`_entries_ok`) and once
    by :func:`jaxcfr._sequence_form.policy_blocks` (a transpose, or in the compact layout a
    gather of its legal slots); the row sums, renormalization and uniform fallback run on
    the action-major blocks (sums over the major axis); the row-sum check compares the
    sums the normalization computed (one buffer per piece) and all pieces' flags are
    reduced at once. Per row, the same operations as
    :func:`jaxcfr._sequence_form.normalize_policy` in the same order, so the same bits."""
    policy = _as_float(game, policy)
    compact = sf.uses_compact(game)
    raw = sf.policy_blocks(game, policy, compact)
    blocks = []
    for p in (0, 1):
        legal, uniform = sf.legal_block(game, p, compact), sf.uniform_block(game, p, compact)
        blocks.append(sf.by_level(game, p, compact, _normalize_block, raw[p], legal, uniform))
    if not check:
        return tuple(blocks), compact, None
    bad = []  # per-infoset "row sum off by more than atol", every piece's
    for p in (0, 1):
        legal = sf.legal_block(game, p, compact)
        for w, m in sf.level_pieces_of(game, p, compact, raw[p], legal):
            # the sum normalize_rows computes (same ops, materialized: XLA merges the two)
            sums = materialized(sum_actions(jnp.where(m, w, 0.0), axis=0))
            bad.append(~(jnp.abs(sums - 1.0) <= DEFAULT_ATOL))
    ok = _entries_ok(game, policy) & ~jnp.any(jnp.concatenate(bad))
    return tuple(blocks), compact, ok


def _poisoned(ok, x: jax.Array) -> jax.Array:
    """``x``, or NaN where ``ok`` (from :func:`_prepared_blocks`) is False."""
    return x if ok is None else jnp.where(ok, x, jnp.nan)


def _normalize_block(weights, legal, uniform):
    return normalize_rows(weights, legal, uniform, axis=0)


# The entry check ORs the flat [I, A] badness over this many equal chunks (one elementwise
# loop that XLA:CPU vectorizes) before its any-reduction: a boolean reduction over the whole
# table runs as a chain of scalar reduce-windows (II-Goofspiel(6): 240 us of a 2.5 ms call,
# session 30; docs/cfr.md "Exact exploitability").
ENTRY_CHUNKS = 12


def _entries_ok(game: Game, policy: jax.Array, atol: float = DEFAULT_ATOL) -> jax.Array:
    """Inside jit: no entry of the ``[I, A]`` ``policy`` is NaN or infinite, below
    ``-atol``, or above ``atol`` on an illegal action.

    ``not (badness <= atol)`` is also true for NaN, so no separate finiteness test runs
    (one comparison per slot instead of a finiteness select and a max). ``+inf`` on a
    legal action passes here and fails the row sums, which every caller checks with it.
    The flat badness is ORed across :data:`ENTRY_CHUNKS` equal chunks, then reduced (the
    remainder of the division separately)."""
    p, legal = policy.reshape(-1), game.legal_mask.reshape(-1)  # flat: vectorized loops
    bad = ~(jnp.where(legal, -p, jnp.abs(p)) <= atol)
    n = bad.shape[0] // ENTRY_CHUNKS
    if n == 0:
        return ~jnp.any(bad)
    folded = bad[:n]
    for k in range(1, ENTRY_CHUNKS):
        folded = folded | bad[k * n : (k + 1) * n]
    rest = bad[ENTRY_CHUNKS * n :]
    return ~(jnp.any(folded) | jnp.any(rest)) if rest.shape[0] else ~jnp.any(folded)


def _player_passes(game: Game, blocks, compact: bool, player: int, combines):
    """Bottom-up passes of ``player`` (one per combine) against the profile's ``blocks``,
    in the kernel's layout (compact where :func:`jaxcfr._sequence_form.uses_compact`)."""
    opp_plan = sf.plan_block(game, blocks[1 - player], 1 - player, compact)
    g, g_root = sf.own_terminal_values(game, opp_plan, player, compact, grouped=True)
    return [sf.bottom_up(game, g, player, blocks[player], c, g_root, compact) for c in combines]


def _player_rows(game: Game, player: int, block: jax.Array) -> jax.Array:
    """A player's action-value block (the kernel's layout) -> ``[I, A]``, zero on the
    other player's rows."""
    if sf.uses_compact(game):
        other = jnp.zeros((sf.compact_size(game, 1 - player),), block.dtype)
        return sf.block_rows(game, (block, other) if player == 0 else (other, block), True)
    return sf.to_full(game, player, block.T)


def counterfactual_values(game: Game, policy, player: int) -> CounterfactualValues:
    """Counterfactual values of ``player``'s infoset-action pairs (weighted by the
    opponent's and chance's reach only), and the counterfactual best-response values
    (Zinkevich et al. 2007: v_i(sigma, I, a) = sum over histories h in I and terminals
    z below (h, a) of pi_{-i}(h) pi(ha, z) u_i(z)).

    Args:
      game: a compiled ``games_tensor.Game`` (``games_tensor.load("kuhn_poker")``).
      policy: ``[I, A]`` profile, both players' rows (``jaxcfr.average_policy(game,
        state)``, ``games_tensor.uniform_policy(game)``); rows over legal actions sum
        to 1 (within 1e-5), no mass on illegal actions. One profile: ``jax.vmap`` over
        a batch ``[B, I, A]`` with ``in_axes=(None, 0)``.
      player: 0 or 1 (a Python or NumPy integer).

    Returns:
      :class:`CounterfactualValues`: ``[I, A]`` and ``[I]`` arrays, zero on the other
      player's infosets and on illegal actions.

    Raises:
      ValueError: outside jit, a policy that is not a valid ``[I, A]`` profile of
        ``game`` (the message names the infoset and action); a wrong shape also under
        jit. ``ArgumentTypeError`` (a ``ValueError``) for a game that is not compiled.
        Inside jit / vmap an invalid policy gives NaN, never a plausible number.
    """
    return _evaluate(_counterfactual_values, game, policy, _check_player(player))


def _counterfactual_values(game: Game, policy, check: bool, player: int):
    blocks, compact, ok = _prepared_blocks(game, policy, check)
    pol, br = _player_passes(game, blocks, compact, player, (sf.combine_policy, sf.combine_max))
    out = CounterfactualValues(
        _player_rows(game, player, pol.action_values),
        sf.to_full(game, player, pol.infoset_values),
        _player_rows(game, player, br.action_values),
        sf.to_full(game, player, br.infoset_values),
    )
    return CounterfactualValues(*(_poisoned(ok, x) for x in out)), ok


def best_response(game: Game, policy, player: int) -> tuple[jax.Array, jax.Array]:
    """Best response of ``player`` to the other player's part of ``policy``.

    Returns:
      (br_policy, value): ``br_policy`` is ``[I, A]``, one-hot (first maximizing legal
      action) on ``player``'s infosets and equal to ``policy`` on the opponent's, so it
      is the profile (BR, sigma_{-p}); ``value`` is the best-response value (scalar).
    """
    return _evaluate(_best_response, game, policy, _check_player(player))


def _best_response(game: Game, policy, check: bool, player: int):
    policy, ok = _prepare(game, policy, check)
    compact = sf.uses_compact(game)
    blocks = sf.policy_blocks(game, policy, compact)
    (res,) = _player_passes(game, blocks, compact, player, (sf.combine_max,))
    values = _player_rows(game, player, res.action_values)
    masked = jnp.where(game.legal_mask, values, sf.NEG_INF)
    onehot = jax.nn.one_hot(jnp.argmax(masked, axis=-1), game.num_actions, dtype=policy.dtype)
    mine = (game.infoset_player == player)[:, None]
    return (jnp.where(mine, onehot, policy), res.root_value), ok


def best_response_values(game: Game, policy) -> jax.Array:
    """``[2]``: player p's best-response value against the other player's part of
    ``policy`` (``BR_0(sigma_1)``, ``BR_1(sigma_0)``), each from its own point of view;
    ``nash_conv`` is their sum in a zero-sum game.

    Args:
      game: a compiled ``games_tensor.Game`` (``games_tensor.load("kuhn_poker")``).
      policy: ``[I, A]`` profile, both players' rows (``jaxcfr.average_policy(game,
        state)``, ``games_tensor.uniform_policy(game)``); rows over legal actions sum
        to 1 (within 1e-5), no mass on illegal actions. One profile: ``jax.vmap`` over
        a batch ``[B, I, A]`` with ``in_axes=(None, 0)``.

    Raises:
      ValueError: outside jit, a policy that is not a valid ``[I, A]`` profile of
        ``game`` (the message names the infoset and action); a wrong shape also under
        jit. ``ArgumentTypeError`` (a ``ValueError``) for a game that is not compiled.
        Inside jit / vmap an invalid policy gives NaN, never a plausible number.
    """
    return _evaluate(_best_response_values, game, policy)


def _best_response_values(game: Game, policy, check: bool):
    blocks, compact, ok = _prepared_blocks(game, policy, check)
    return _poisoned(ok, _br_values(game, blocks, compact)), ok


def _nash_conv(game: Game, policy, check: bool):
    br, ok = _best_response_values(game, policy, check)
    return br[0] + br[1], ok


def _exploitability(game: Game, policy, check: bool):
    nc, ok = _nash_conv(game, policy, check)
    return nc / 2, ok


def br_values_unchecked(game: Game, policy: jax.Array) -> jax.Array:
    """``[2]`` best-response values for a policy already normalized (no host checks;
    for use inside jitted loops such as the runner)."""
    compact = sf.uses_compact(game)
    return _br_values(game, sf.policy_blocks(game, policy, compact), compact)


def _br_values(game: Game, blocks, compact: bool) -> jax.Array:
    """Both players' best-response values from the profile's blocks. Each plan is
    computed once into its own buffer (:func:`_plan`: written level by level, or
    :func:`jaxcfr._solver.materialized`): XLA:CPU otherwise fuses the deepest level's
    plan (two gathers and a product) into the gather at every payoff entry (518,400 on
    II-Goofspiel(6) for 102,799 plan slots)."""
    plans = [_plan(game, blocks[p], p, compact) for p in (0, 1)]
    values = []
    for p in (0, 1):
        g, g_root = sf.own_terminal_values(game, plans[1 - p], p, compact, grouped=True)
        bu = sf.bottom_up(game, g, p, blocks[p], sf.combine_max, g_root, compact)
        values.append(bu.root_value)
    return jnp.stack(values)


def _plan(game: Game, block: jax.Array, player: int, compact: bool) -> jax.Array:
    """A player's plan in its own buffer: the compact layout's levels written into it
    (``plan_block(..., written=True)``; the concatenation ran slower, II-Goofspiel(6) CPU
    median 3.45 vs 3.14 ms in one process, session 31), else the concatenated plan
    materialized."""
    if compact:
        return sf.plan_block(game, block, player, True, written=True)
    return materialized(sf.plan_block(game, block, player, compact))


def nash_conv(game: Game, policy) -> jax.Array:
    """NashConv (OpenSpiel's name): sum over players of the best-response gain,
    ``sum_p (BR_p(sigma_-p) - u_p(sigma))``; ``0`` exactly at a Nash equilibrium. In a
    zero-sum game, ``BR_0(sigma_1) + BR_1(sigma_0)``. Scalar. Kuhn's uniform profile:
    ``11/12``; Leduc's: ``4.747222...``.

    Args:
      game: a compiled ``games_tensor.Game`` (``games_tensor.load("kuhn_poker")``).
      policy: ``[I, A]`` profile, both players' rows (``jaxcfr.average_policy(game,
        state)``, ``games_tensor.uniform_policy(game)``); rows over legal actions sum
        to 1 (within 1e-5), no mass on illegal actions. One profile: ``jax.vmap`` over
        a batch ``[B, I, A]`` with ``in_axes=(None, 0)``.

    Raises:
      ValueError: outside jit, a policy that is not a valid ``[I, A]`` profile of
        ``game`` (the message names the infoset and action); a wrong shape also under
        jit. ``ArgumentTypeError`` (a ``ValueError``) for a game that is not compiled.
        Inside jit / vmap an invalid policy gives NaN, never a plausible number.

    Example::

        game = games_tensor.load("kuhn_poker")
        jaxcfr.nash_conv(game, games_tensor.uniform_policy(game))   # 0.9166666 (float32 of 11/12)
    """
    return _evaluate(_nash_conv, game, policy)


def exploitability(game: Game, policy) -> jax.Array:
    """``nash_conv / 2`` (OpenSpiel's ``exploitability``): the mean best-response
    gain, ``(BR_0(sigma_1) + BR_1(sigma_0)) / 2`` in a zero-sum game. Scalar, in the
    game's payoff units; ``0`` exactly at a Nash equilibrium.

    Args:
      game: a compiled ``games_tensor.Game`` (``games_tensor.load("kuhn_poker")``).
      policy: ``[I, A]`` profile, both players' rows (``jaxcfr.average_policy(game,
        state)``, ``games_tensor.uniform_policy(game)``); rows over legal actions sum
        to 1 (within 1e-5), no mass on illegal actions. One profile: ``jax.vmap`` over
        a batch ``[B, I, A]`` with ``in_axes=(None, 0)``.

    Raises:
      ValueError: outside jit, a policy that is not a valid ``[I, A]`` profile of
        ``game`` (the message names the infoset and action); a wrong shape also under
        jit. ``ArgumentTypeError`` (a ``ValueError``) for a game that is not compiled.
        Inside jit / vmap an invalid policy gives NaN, never a plausible number.

    Example::

        state = jaxcfr.run(jaxcfr.cfr_plus(), game, 1000, 100).state  # batched [1, ...]
        policy = jaxcfr.average_policy(game, jax.tree.map(lambda x: x[0], state))
        jaxcfr.exploitability(game, policy)
    """
    return _evaluate(_exploitability, game, policy)
