"""The solver interface shared by every algorithm, and small pure pieces.

Every algorithm is a lower-case factory (``cfr()``, ``outcome_sampling(epsilon=0.6)``)
returning a :class:`Solver`, which unpacks as the ``(init, update)`` pair::

    init, update = jaxcfr.cfr_plus()
    state = init(game)
    state = jax.jit(update)(game, state)            # deterministic solvers
    init, update = jaxcfr.outcome_sampling()
    state = jax.jit(update)(game, state, key)       # sampling solvers consume a key

State is a NamedTuple of fixed-shape arrays holding at least ``regrets`` [I, A],
``strategy_sum`` [I, A] and ``iteration`` (int32 scalar), so
:func:`average_policy` and :func:`current_policy` work on every solver's state. The
full-width CFR family keeps its tables in the kernel's layout: flat ``[P_0 + P_1]`` on
games that run the compact layout (``jaxcfr._sequence_form.uses_compact``);
``jaxcfr.infoset_table(game, table)`` gives the ``[I, A]`` view of one.
"""

from __future__ import annotations

import dataclasses
import numbers
from typing import Any, Callable

import jax
import jax.numpy as jnp
import numpy as np

from games_tensor import Game
from games_tensor._game import ArgumentTypeError


@dataclasses.dataclass(frozen=True)
class Solver:
    """An ``(init, update)`` pair with a name and its hyper-parameters.

    init: ``init(game) -> state``.
    update: ``update(game, state) -> state``, or ``update(game, state, key) -> state``
      when ``needs_key`` (sampling algorithms).
    cache_key: set by the built-in factories, whose ``(name, hyperparams)`` determine
      the computation, so ``jaxcfr.run`` reuses compiled code across equal solvers;
      ``None`` (custom solvers) caches per Solver object.
    compiler_options: XLA options (``(name, value)`` pairs) with which ``jaxcfr.run``
      and the benchmarks jit the solver's batched update (through :func:`jit_options`:
      ``xla_cpu_*`` options only on the CPU backend); ``()`` for the defaults. The MCTS
      solvers set :func:`jaxcfr._sampling.sampling_compiler_options`.
    """

    init: Callable[..., Any]
    update: Callable[..., Any]
    name: str
    needs_key: bool = False
    hyperparams: tuple[tuple[str, Any], ...] = ()
    cache_key: Any = dataclasses.field(default=None, compare=False)
    compiler_options: tuple[tuple[str, Any], ...] = ()

    def __iter__(self):
        return iter((self.init, self.update))

    def __repr__(self):
        args = ", ".join(f"{k}={v!r}" for k, v in self.hyperparams)
        return f"{self.name}({args})"


def jit_options(solver) -> dict | None:
    """``solver.compiler_options`` for ``jax.jit(..., compiler_options=...)`` on the
    current backend: ``xla_cpu_*`` options are kept only on CPU; ``None`` when none
    remain. Called when jitting, so building a solver never starts a JAX backend."""
    return backend_options(dict(getattr(solver, "compiler_options", ())))


def backend_options(options: dict) -> dict | None:
    """XLA ``options`` for the current backend: ``xla_cpu_*`` ones are kept only on CPU;
    ``None`` when none remain (what ``jax.jit(..., compiler_options=...)`` takes)."""
    if options and jax.default_backend() != "cpu":
        options = {k: v for k, v in options.items() if not k.startswith("xla_cpu_")}
    return options or None


def builtin_cache_key(name: str, hyperparams) -> Any:
    """``(name, hyperparams)`` when hashable (concrete values), else ``None``."""
    key = ("builtin", name, tuple(hyperparams))
    try:
        hash(key)
    except TypeError:
        return None
    return key


def check_number(name: str, value, lo: float = -np.inf, hi: float = np.inf, *, lo_open=False):
    """Raise ``ValueError`` unless ``value`` is a real number in [lo, hi] ((lo, hi] with
    ``lo_open``). Concrete 0-d arrays are checked as numbers; tracers (a factory called
    inside a vmap over a hyper-parameter grid) pass: the runner builds every setting
    concretely first, so bad grid values still raise before compiling."""
    if isinstance(value, (jax.Array, np.ndarray, np.generic)) and not isinstance(
        value, jax.core.Tracer
    ):
        if np.ndim(value) == 0:
            value = float(value)
    if isinstance(value, jax.core.Tracer):
        return
    ok = isinstance(value, (int, float)) and not isinstance(value, bool) and np.isfinite(value)
    if ok:
        ok = (lo < value if lo_open else lo <= value) and value <= hi
    if not ok:
        interval = f"{'(' if lo_open else '['}{lo}, {hi}]"
        raise ValueError(f"{name} must be a finite number in {interval}, got {value!r}")


def check_bool(name: str, value) -> None:
    """Raise ``ValueError`` unless ``value`` is True or False."""
    if not isinstance(value, bool):
        raise ValueError(f"{name} must be True or False, got {value!r}")


def check_int(name: str, value, lo: int = 1) -> int:
    """``value`` as an ``int`` (Python or NumPy integer, not bool), or ``ValueError``
    naming ``name`` unless it is an integer ``>= lo``."""
    if isinstance(value, numbers.Integral) and not isinstance(value, (bool, np.bool_)):
        if value >= lo:
            return int(value)
    raise ValueError(f"{name} must be an integer >= {lo}, got {value!r}")


def check_game(game, name: str = "game", *, step_form: bool = False) -> None:
    """Raise :class:`ArgumentTypeError` unless ``game`` is a compiled
    :class:`games_tensor.Game` (or, with ``step_form``, where the search bots also take
    a game's step form, a ``games_tensor.step.StepGame``); for a string, the message
    says how to compile it."""
    from games_tensor.step import StepGame

    if not isinstance(game, Game) and not (step_form and isinstance(game, StepGame)):
        hint = " (compile it first: games_tensor.load(name))" if isinstance(game, str) else ""
        kinds = "a compiled games_tensor.Game"
        if step_form:
            kinds += " or a games_tensor.step game"
        raise ArgumentTypeError(
            f"{name} must be {kinds}, got {type(game).__name__} {game!r:.80}{hint}"
        )


def check_key(key, name: str = "key") -> None:
    """Raise :class:`ArgumentTypeError` unless ``key`` is one PRNG key: ``jax.random.key(seed)``
    (a typed key, shape ``()``) or ``jax.random.PRNGKey(seed)`` (uint32, shape ``(2,)``).
    Integers are refused: seeds are folded in by the caller (``PRNGKey(seed)``)."""
    if isinstance(key, jax.core.Tracer):
        return
    dtype = getattr(key, "dtype", None)
    shape = tuple(getattr(key, "shape", (None,)))
    if dtype is not None and jax.dtypes.issubdtype(dtype, jax.dtypes.prng_key):
        ok = shape == ()
    else:
        ok = isinstance(key, (jax.Array, np.ndarray)) and dtype == np.uint32 and shape == (2,)
    if not ok:
        raise ArgumentTypeError(
            f"{name} must be one PRNG key, jax.random.key(seed) or jax.random.PRNGKey(seed), "
            f"got {key!r:.80} ({type(key).__name__})"
        )


def check_count(name: str, value, lo: int = 0) -> None:
    """Raise ``ValueError`` unless ``value`` is an integer ``>= lo`` (Python or NumPy
    integer, not bool; a concrete 0-d integer array counts). Traced integers (inside
    ``jit``, e.g. ``jaxcfr.play``'s iterations per move) pass when their dtype is an
    integer; their value cannot be checked."""
    if isinstance(value, jax.core.Tracer):
        if not jnp.issubdtype(value.dtype, jnp.integer):
            raise ValueError(f"{name} must be an integer, got a traced {value.dtype} value")
        return
    if isinstance(value, (jax.Array, np.ndarray)) and np.ndim(value) == 0:
        if np.issubdtype(value.dtype, np.integer):
            value = int(value)
    if isinstance(value, numbers.Integral) and not isinstance(value, (bool, np.bool_)):
        if value >= lo:
            return
    raise ValueError(f"{name} must be an integer >= {lo}, got {value!r}")


def check_state(game: Game, state, rows: int | None = None, size: int | None = None) -> None:
    """Raise ``ValueError`` (at trace time) unless the state's tables are ``[I, A]``
    of ``game`` (e.g. a state batched by ``vmap`` passed to an unbatched update);
    ``rows`` replaces I for tables keyed by an abstraction (``[J, A]``); ``size``
    expects flat ``[size]`` tables instead (the kernel's compact layout,
    ``jaxcfr._sequence_form.kernel_table``)."""
    check_game(game)
    if not all(hasattr(state, f) for f in ("regrets", "strategy_sum", "iteration")):
        raise ValueError(
            f"state must be a solver state (from the solver's init), got {type(state).__name__}"
        )
    shape = (game.num_infosets if rows is None else rows, game.num_actions)
    what = "[I, A]"
    if size is not None:
        shape, what = (size,), "the compact [P_0 + P_1] (jaxcfr._sequence_form.kernel_table)"
    for name in ("regrets", "strategy_sum"):
        got = tuple(getattr(state, name).shape)
        if got != shape:
            raise ValueError(
                f"state.{name} has shape {got}, expected {what} = {shape} for {game.name}"
            )


def regret_matching(
    regrets: jax.Array,
    legal_mask: jax.Array,
    uniform: jax.Array | None = None,
    *,
    axis: int = -1,
    tolerance: float = 0.0,
):
    """Regret matching with a noise floor ``tolerance`` (tau, see :func:`regret_tolerance`):

        R+_tau(I, a) = R(I, a) if R(I, a) > tau else 0
        sigma(I, a)  = R+_tau(I, a) / sum_a' R+_tau(I, a'),  uniform over legal actions
                       when the sum is 0.

    Positive regrets at or below tau are rounding noise (e.g. +8.7e-19 left where the
    exact regret is 0), which plain regret matching would turn into a pure strategy.
    ``tolerance=0`` is the textbook rule; every solver of the library passes
    ``regret_tolerance(game)``.

    ``[..., A] -> [..., A]`` (actions on ``axis``; ``axis=0`` for the kernel's action-major
    ``[A, I]`` layout); illegal actions get 0. ``uniform`` (``game.legal_uniform``, in the
    same layout) is the fallback, computed from the mask when not given.
    """
    for name, x in (("legal_mask", legal_mask), ("uniform", uniform)):
        if x is None:
            continue
        try:  # a mask shared by a batch of regrets broadcasts to their shape
            fits = np.broadcast_shapes(np.shape(x), np.shape(regrets)) == np.shape(regrets)
        except ValueError:
            fits = False
        if not fits:
            raise ValueError(
                f"regret_matching: {name} has shape {tuple(np.shape(x))}, which does not "
                f"broadcast to the shape of regrets {tuple(np.shape(regrets))} (e.g. "
                "game.legal_mask [I, A])"
            )
    positive = jnp.where(regrets > tolerance, regrets, jnp.zeros((), regrets.dtype))
    return normalize_rows(positive, legal_mask, uniform, axis=axis)


# Rounding noise of a counterfactual regret is a few ulps of the values summed into it;
# those are bounded by the payoff scale U (reach weights are probabilities), and the
# noise seen in practice is below 1 eps * U (goofspiel: 0.004 eps U in float64).
REGRET_TOLERANCE_EPS = 16.0


def payoff_scale(game: Game) -> float:
    """U = max over terminals z of |u_0(z)| (a host float, known at trace time)."""
    host = game.meta.host
    scale = host.get("payoff_scale")
    if scale is None:
        utility = np.asarray(host["node_utility"], dtype=np.float64)
        scale = host["payoff_scale"] = float(np.max(np.abs(utility), initial=0.0))
    return scale


def regret_tolerance(game: Game | float, dtype=None) -> float:
    """The noise floor of regret matching: tau = 16 * eps(dtype) * U.

    Args:
      game: a compiled game (U = :func:`payoff_scale`), a step-form game (U = its
        ``max_utility``) or the payoff scale U itself.
      dtype: the float type the regrets are held in (default: the game's, float32 or
        float64 under x64). eps is its machine epsilon (2^-23 or 2^-52).

    Returns:
      tau as a Python float, e.g. 16 * 2^-52 * 13 = 4.6e-14 for Leduc in float64 and
      16 * 2^-23 * 13 = 2.5e-5 in float32. Positive regrets at or below tau are treated
      as zero by :func:`regret_matching`. Solvers built on regret matching (CFR family,
      MCCFR, search, pruning) pass ``tolerance=regret_tolerance(game)``.
    """
    from games_tensor.step import StepGame

    if isinstance(game, Game):
        scale = payoff_scale(game)
        dtype = game.sf_payoff.dtype if dtype is None else dtype
    elif isinstance(game, StepGame):  # the step form (search bots): U = its max_utility
        scale = float(game.max_utility)
        if dtype is None:
            raise ValueError("regret_tolerance(step_game, dtype) needs the dtype")
    else:
        scale = float(game)
        if dtype is None:
            raise ValueError("regret_tolerance(scale, dtype) needs the dtype with a number")
    return REGRET_TOLERANCE_EPS * float(np.finfo(dtype).eps) * scale


def sum_actions(x: jax.Array, axis: int = -1) -> jax.Array:
    """Sum over the (small, static) action axis in a fixed left-to-right order.

    ``x[..., 0] + x[..., 1] + ...`` as elementwise adds, so the result of every row is
    the same bits whatever the batch shape around it: XLA's ``reduce`` leaves the
    association order to the backend, and XLA:CPU picks a different one for ``[1, n, 3]``
    than for ``[B, n, 3]`` (docs/cfr.md, "Reproducibility").
    """
    axis = axis % x.ndim
    n = x.shape[axis]
    if n == 0:
        return jnp.zeros(x.shape[:axis] + x.shape[axis + 1 :], x.dtype)
    total = jax.lax.index_in_dim(x, 0, axis, keepdims=False)
    for a in range(1, n):
        total = total + jax.lax.index_in_dim(x, a, axis, keepdims=False)
    return total


def materialized(x: jax.Array) -> jax.Array:
    """``x`` (the same bits) computed once into its own buffer.

    For per-infoset sums over actions that are then broadcast back over the actions
    (regret matching's normalizer, an infoset's value): XLA:CPU otherwise fuses the sum
    into the ``[A, n]`` consumer and recomputes it for every action (A times the work).
    An optimization barrier does not stop it (XLA:CPU removes barriers before fusion;
    ``python -m experiments.benchmarks materialize`` times both); a division does,
    because XLA does not duplicate an expensive op into a consumer that reuses its
    elements. ``x / d`` with ``d = 2`` where ``x`` is NaN and ``1`` elsewhere is ``x``
    bit for bit (NaN stays NaN, signed zeros and infinities are kept), and XLA cannot
    fold ``d`` away."""
    return x / jnp.where(jnp.isnan(x), jnp.asarray(2, x.dtype), jnp.asarray(1, x.dtype))


def rounded(x: jax.Array) -> jax.Array:
    """``x`` kept as a separately rounded value: a product passed through it is never
    fused with a following add.

    XLA:CPU lets LLVM contract ``a * b + c`` into one fused multiply-add (one rounding
    instead of two) and LLVM picks which products to contract by their place in the
    unrolled, vectorized loop, so the same element rounds differently in a batch of 1 and
    in a batch of 8 (docs/cfr.md, "Reproducibility"). A select that LLVM cannot remove
    breaks the pattern; NaN stays NaN.
    """
    return jnp.where(jnp.isnan(x), jnp.nan, x)


def tree_sum(x: jax.Array, axis: int = 0) -> jax.Array:
    """Sum along ``axis`` by halving (pairwise) with elementwise adds: a fixed order, the
    same bits in any batch shape (``jnp.sum`` leaves the order to the backend)."""
    x = jnp.moveaxis(x, axis, 0)
    if x.shape[0] == 0:
        return jnp.zeros(x.shape[1:], x.dtype)
    while x.shape[0] > 1:
        if x.shape[0] % 2:
            x = jnp.concatenate([x, jnp.zeros((1,) + x.shape[1:], x.dtype)])
        half = x.shape[0] // 2
        x = x[:half] + x[half:]
    return x[0]


def normalize_rows(
    weights: jax.Array, legal_mask: jax.Array, uniform: jax.Array | None = None, *, axis: int = -1
):
    """Nonnegative weights -> distributions over legal actions along ``axis`` (uniform if all 0).

    With ``axis=0`` (the action-major ``[A, n]`` layout) the sums broadcast back with
    :func:`over_actions` (see there).
    """
    if axis % weights.ndim == 0:
        expand = lambda x: over_actions(x, weights.shape)  # noqa: E731
    else:
        expand = lambda x: jnp.expand_dims(x, axis)  # noqa: E731
    if uniform is None:
        uniform = legal_mask / expand(jnp.sum(legal_mask, axis=axis))
    w = jnp.where(legal_mask, weights, 0.0)
    total = materialized(sum_actions(w, axis=axis))
    # times the reciprocal, explicitly: XLA rewrites some divisions by a broadcast sum
    # into that (1 ulp from w / total) and not others, depending on the fusion, which
    # depends on the batch shape
    inv = 1.0 / jnp.where(total > 0, total, 1.0)
    return jnp.where(expand(total > 0), w * expand(inv), uniform.astype(weights.dtype))


def over_actions(x: jax.Array, shape) -> jax.Array:
    """Broadcast per-infoset values ``[n]`` (or ``[..., n]``) across the leading action
    axis of an action-major ``[A, n]`` (``[A, ..., n]``) array.

    An explicit ``broadcast_in_dim`` onto the trailing axes: safe under
    ``jax_numpy_rank_promotion='raise'``, and no ``[1, n]`` unit axis, which in this
    session's profiles of the kernel sometimes kept XLA:CPU's fused loops scalar.
    """
    shape = tuple(shape)
    return jax.lax.broadcast_in_dim(x, shape, tuple(range(len(shape) - x.ndim, len(shape))))


def _full_rows(game: Game, table: jax.Array) -> jax.Array:
    """``[I, A]`` rows of a state table: one keyed by the game's abstraction (``[J, A]``)
    gets its abstract infosets' rows, one in the kernel's compact layout (flat) is
    scattered into ``[I, A]`` (``jaxcfr._sequence_form.infoset_table``)."""
    from jaxcfr._sequence_form import infoset_table  # that module imports this one

    table = infoset_table(game, table)
    if table.shape[0] == game.num_infosets:
        return table
    return table[game.abstract_infoset]


def check_solver_state(state, field: str, fn: str) -> None:
    """Raise ``ValueError`` unless ``state`` is a solver state holding ``field`` (a
    policy, a ``RunResult`` or a number passed instead gets a message saying what to
    pass)."""
    if hasattr(state, field):
        return
    hint = ""
    if hasattr(state, "nash_conv") and hasattr(state, "state"):
        hint = f"; for a RunResult pass result.state (jax.vmap({fn}, (None, 0)) for the batch)"
    elif isinstance(state, (jax.Array, np.ndarray)):
        hint = "; a policy array is already a policy (evaluate it with jaxcfr.exploitability)"
    raise ValueError(
        f"state must be a solver state with a {field} table (from a solver's init / "
        f"update, e.g. jaxcfr.cfr().init(game)), got {type(state).__name__}{hint}"
    )


def average_policy(game: Game, state) -> jax.Array:
    """The average policy ``[I, A]`` (normalized ``strategy_sum``) of any solver's state.

    For a state keyed by an abstraction: the full game's average when the state
    accumulates it (``full_strategy_sum`` [I, A]), else each full infoset gets its
    abstract infoset's average."""
    check_game(game)
    check_solver_state(state, "strategy_sum", "jaxcfr.average_policy")
    ssum = getattr(state, "full_strategy_sum", None)
    if ssum is None or ssum.shape[0] != game.num_infosets:
        ssum = _full_rows(game, state.strategy_sum)
    return normalize_rows(ssum, game.legal_mask, game.legal_uniform)


def current_policy(game: Game, state) -> jax.Array:
    """The current policy ``[I, A]`` of any solver's state (regret matching on
    ``regrets``, plus the prediction for predictive solvers)."""
    check_game(game)
    check_solver_state(state, "regrets", "jaxcfr.current_policy")
    regrets = state.regrets
    prediction = getattr(state, "prediction", None)
    if prediction is not None and prediction.shape == regrets.shape:  # [0, A]: unused
        regrets = regrets + prediction
    return regret_matching(
        _full_rows(game, regrets),
        game.legal_mask,
        game.legal_uniform,
        tolerance=regret_tolerance(game),
    )
