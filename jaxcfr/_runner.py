"""The runner: many iterations per compiled call, evaluation in the same program,
a batch of seeds (and hyper-parameter settings) with ``jax.vmap``, sharded over
devices.

``run`` compiles one chunk = ``lax.scan`` over ``eval_every`` solver updates
followed by the exact NashConv of the average (or current) policy, all vmapped
over the batch, and calls it ``num_iterations / eval_every`` times from the
host, reporting progress after each chunk.

Batch layout: ``B = G * num_seeds`` runs, G hyper-parameter settings (1 without
``hparams``) times the seeds; curves come back as ``[G, num_seeds, E]`` (or
``[num_seeds, E]`` without ``hparams``). Seed ``i`` uses the key
``fold_in(key, i)`` whatever the batch size, and iteration ``t`` of a sampling
solver consumes ``fold_in(seed_key, t)``, so a seed fully determines its run.

Multiple devices: when more than one local device is present and the batch
divides evenly among them (or when ``devices`` is given, where it must divide),
the batch axis is sharded with a 1-D ``jax.sharding.Mesh`` and
``NamedSharding``; the NashConv curves (and finiteness flags) come back
replicated, so every process can read them.

Several processes (one or several hosts): call ``jax.distributed.initialize(...)``
in every process first, then make the same ``run`` call in every process. The
batch is then sharded over all global devices (``jax.devices()``, which it must
divide); each process computes its own rows, ``nash_conv`` is the whole batch in
every process, and ``state`` (and the state given to ``on_chunk``) is a global
array whose rows live in their processes: ``jax.experimental.multihost_utils.
process_allgather(state, tiled=True)`` (a collective: every process calls it)
brings it to the host. Seeds use the same keys as in one process, and the curves
are bit-identical to a single-process run of the same seeds
(``tests/test_multiprocess.py``: 2 and 4 CPU processes on one machine). Compiled
chunks are cached per (solver, evaluation, chunk length), so repeated or resumed
runs do not recompile.
"""

from __future__ import annotations

import inspect
import numbers
import time
from typing import Any, Callable, NamedTuple

import jax
import jax.numpy as jnp
import numpy as np
from jax.sharding import Mesh, NamedSharding, PartitionSpec

from games_tensor import Game
from jaxcfr import _guards, _prng
from jaxcfr._abstraction import full_game_regret
from jaxcfr._evaluation import br_values_unchecked
from jaxcfr._solver import (
    Solver,
    average_policy,
    check_game,
    check_key,
    check_number,
    current_policy,
    jit_options,
)


class RunResult(NamedTuple):
    """Curves of one ``run``.

    iterations: [E] int, iterations completed at each evaluation.
    nash_conv: [..., E] NashConv per evaluation ([num_seeds, E], or [G, num_seeds, E]).
    exploitability: [..., E] = nash_conv / 2.
    wall_seconds: [E] cumulative wall-clock seconds at each evaluation (compile included
      in the first chunk; see ``compile_seconds``).
    compile_seconds: seconds spent in the first call of each compiled chunk shape.
    state: final solver state, batched along the leading axis (B = G * num_seeds).
    solver: the solver (name and hyper-parameters, per grid setting) that made ``state``;
      ``run(..., state=result.state)`` refuses to resume it with another one.
    """

    iterations: np.ndarray
    nash_conv: np.ndarray
    exploitability: np.ndarray
    wall_seconds: np.ndarray
    compile_seconds: float
    state: Any
    solver: str = ""


def _nash_conv_unchecked(game: Game, policy: jax.Array) -> jax.Array:
    """NashConv of a policy already normalized (average_policy / current_policy are)."""
    br = br_values_unchecked(game, policy)
    return br[0] + br[1]  # a fixed order (jnp.sum leaves it to the backend)


def _as_factory(solver, hparams) -> tuple[Callable[..., Solver], Any]:
    """The factory behind ``solver`` and a hashable key for compiled-function caching."""
    if isinstance(solver, Solver):
        if hparams:
            raise ValueError(
                "hparams need a solver factory (e.g. jaxcfr.dcfr), not a built Solver "
                f"({solver!r}), whose hyper-parameters are already fixed"
            )
        key = solver.cache_key
        if key is None:
            try:  # custom solver: cache per object (the key holds it, so ids are not reused)
                key = ("solver", solver, hash(solver))
            except TypeError:  # unhashable hyper-parameter values: no sharing
                key = ("uncached", object())
        return (lambda **_: solver), key
    if callable(solver):
        return solver, ("factory", solver)
    raise ValueError(f"solver must be a jaxcfr Solver or a factory of one, got {solver!r}")


def _check_evaluate(evaluate, solver: Solver, game: Game) -> None:
    """Refuse (``ValueError``, before compiling) an ``evaluate`` function that cannot be
    called as ``fn(game, state)`` or does not return one number per run."""
    shapes = _guards.state_shapes(solver, game)
    try:
        out = jax.eval_shape(evaluate, game, shapes)
    except TypeError as exc:
        raise ValueError(
            f"evaluate must be a function (game, state) -> scalar, called with one run's "
            f"state; calling {evaluate!r} failed: {exc}"
        ) from exc
    if not isinstance(out, jax.ShapeDtypeStruct) or out.shape != ():
        got = out.shape if isinstance(out, jax.ShapeDtypeStruct) else type(out).__name__
        raise ValueError(
            f"evaluate must return one scalar per run (it is reported in place of "
            f"NashConv), got {got} from {evaluate!r}"
        )


def _describe(solver: Solver) -> str:
    """``name(k=v, ...)`` with concrete 0-d arrays shown as numbers (identity of a setting)."""
    args = ", ".join(
        f"{k}={v.item() if isinstance(v, (jax.Array, np.ndarray)) and v.ndim == 0 else v!r}"
        for k, v in solver.hyperparams
    )
    return f"{solver.name}({args})"


def _sharding(devices, batch: int):
    """1-D batch sharding over ``devices``. By default: in a single process, over all
    local devices when the batch divides evenly among them (else unsharded); in a run
    spanning several processes (``jax.distributed.initialize``), over all global devices,
    which the batch must divide."""
    multi = jax.process_count() > 1
    explicit = devices is not None or multi
    if devices is None:
        devices = jax.devices() if multi else jax.local_devices()
    devices = list(devices)
    if multi:
        procs = {d.process_index for d in devices}
        if procs != set(range(jax.process_count())):
            raise ValueError(
                f"devices span processes {sorted(procs)} of the {jax.process_count()} "
                "processes of this distributed run; every process runs the same program, "
                "so pass devices=None or jax.devices() (all global devices)"
            )
    if len(devices) <= 1:
        return None
    if batch % len(devices):
        if not explicit:
            return None
        raise ValueError(
            f"the batch of {batch} runs is not divisible by the {len(devices)} devices"
            + (f" of the {jax.process_count()} processes" if multi else "")
            + "; choose num_seeds (times the hyper-parameter grid size) as a multiple"
        )
    mesh = Mesh(np.asarray(devices), ("batch",))
    return NamedSharding(mesh, PartitionSpec("batch"))


def _first_iteration(state) -> int:
    """Iteration counter of a batched state (read from an addressable shard)."""
    it = getattr(state, "iteration", None)
    if it is None:
        return 0
    if isinstance(it, jax.Array) and not it.is_fully_addressable:
        it = it.addressable_shards[0].data
    return int(np.asarray(it).reshape(-1)[0])


# Iteration counters are int32 (every solver state's ``iteration``).
_MAX_ITERATION = 2**31 - 1


def _is_integer(x) -> bool:
    return isinstance(x, numbers.Integral) and not isinstance(x, bool)


# Compiled chunk functions, shared by every ``run`` call with the same solver,
# evaluation and chunk length (jax.jit then caches one executable per game shape).
_COMPILED: dict[Any, Callable] = {}
_MAX_COMPILED = 128
_TRACED: set = set()  # (length, key, game-meta hash, batch) compiled: timing bookkeeping


def _compiled(key, build):
    fn = _COMPILED.get(key)
    if fn is None:
        if len(_COMPILED) >= _MAX_COMPILED:
            _COMPILED.pop(next(iter(_COMPILED)))
        fn = _COMPILED[key] = build()
    return fn


def run(
    solver,
    game: Game,
    num_iterations: int,
    eval_every: int,
    *,
    key: jax.Array | None = None,
    num_seeds: int = 1,
    hparams: dict[str, Any] | None = None,
    evaluate: str = "average",
    init_scale: float = 0.0,
    devices=None,
    progress: Callable[[int, int, float], None] | bool | None = None,
    state=None,
    on_chunk: Callable[[int, np.ndarray, Any], None] | None = None,
    target_exploitability: float | None = None,
) -> RunResult:
    """Run ``solver`` on ``game`` for a batch of seeds, evaluating every ``eval_every``.

    Args:
      solver: a :class:`Solver` (e.g. ``jaxcfr.cfr_plus()``), or a factory called with
        the ``hparams`` entries as keyword arguments (e.g. ``jaxcfr.dcfr``).
      game: the compiled game.
      num_iterations: total iterations (a multiple of ``eval_every`` is cheapest; a
        shorter last chunk compiles once more).
      eval_every: iterations per compiled chunk; NashConv is computed after each.
      key: PRNG key (default ``PRNGKey(0)``); seed i uses ``fold_in(key, i)``.
      num_seeds: runs per hyper-parameter setting.
      hparams: optional dict of equal-length 1-D arrays, a grid of G settings vmapped
        together with the seeds, e.g. ``{"alpha": jnp.array([1.0, 1.5, 2.0])}``.
      evaluate: ``"average"`` (default) or ``"current"`` policy, ``"full_regret"``
        (:func:`jaxcfr.full_game_regret`, the full-game regret of an abstraction-keyed
        run), or a jittable ``fn(game, state) -> scalar`` reported in place of NashConv.
      init_scale: for deterministic solvers, draw initial regrets uniformly in
        [0, init_scale) from the seed key (0 = all seeds identical).
      devices: devices to shard the batch over (default: all local devices; all global
        devices when ``jax.distributed`` runs several processes).
      progress: ``True`` for a tqdm bar, or ``fn(iterations_done, total, seconds)``.
      state: resume from this batched state (e.g. ``previous.state``, or ``previous``);
        iteration counting continues from it. Refused (``ValueError``) when it was made
        by another solver, other hyper-parameters or another game, or does not have the
        type, batch, shapes and dtypes this run's ``init`` makes (see ``jaxcfr._guards``).
      target_exploitability: stop after the first chunk at which every run's
        exploitability (NashConv / 2) is at or below this value.
      on_chunk: ``fn(iteration, nash_conv [B], state)`` called after every chunk (for
        checkpoints: a run resumed from a saved state gives identical numbers).

    Returns:
      :class:`RunResult` with NumPy curves.

    Raises:
      ValueError: a bad argument, naming it and what is valid; ``BatchTooLargeError``
        (a ``ValueError``) before allocating when the batch's estimated memory
        (``jaxcfr.estimate_run_memory``) exceeds the memory available.
      NonFiniteStateError: (a ``FloatingPointError``) a run's state or NashConv became
        NaN or infinite; names the iterations; nothing from that chunk is reported.
    """
    for name, value in (
        ("num_iterations", num_iterations),
        ("eval_every", eval_every),
        ("num_seeds", num_seeds),
    ):
        if not _is_integer(value) or not 1 <= value <= _MAX_ITERATION:
            raise ValueError(
                f"{name} must be an integer in [1, {_MAX_ITERATION}], got {value!r}"
                + (" (iteration counters are int32)" if name != "num_seeds" else "")
            )
    num_iterations, eval_every, num_seeds = int(num_iterations), int(eval_every), int(num_seeds)
    if evaluate == "full_regret":
        evaluate = full_game_regret
    if not callable(evaluate) and evaluate not in ("average", "current"):
        raise ValueError(
            "evaluate must be 'average', 'current', 'full_regret' or a function "
            f"(game, state) -> scalar, got {evaluate!r}"
        )
    check_game(game)
    if key is not None:
        check_key(key)
    check_number("init_scale", init_scale, 0.0)
    if target_exploitability is not None:
        check_number("target_exploitability", target_exploitability, 0.0)
    if not (progress is None or isinstance(progress, bool) or callable(progress)):
        raise ValueError(
            f"progress must be True (a tqdm bar), False/None, or fn(done, total, seconds), "
            f"got {progress!r}"
        )
    if on_chunk is not None and not callable(on_chunk):
        raise ValueError(
            f"on_chunk must be fn(iteration, nash_conv, state) or None, got {on_chunk!r}"
        )
    devices = _guards.check_devices(devices)
    factory, solver_key = _as_factory(solver, hparams)
    grid = _guards.check_hparams(hparams)
    sizes = {v.shape[0] for v in grid.values()}
    if len(sizes) > 1:
        raise ValueError(f"hparams must be 1-D arrays of equal length, got lengths {sorted(sizes)}")
    G = sizes.pop() if sizes else 1
    B = G * num_seeds
    try:  # builds every setting once on the host: bad values raise before compiling
        settings = [factory(**{k: v[g] for k, v in grid.items()}) for g in range(G)]
    except TypeError as exc:
        valid = list(inspect.signature(factory).parameters)
        raise ValueError(
            f"invalid hparams {sorted(grid)} for {factory}: {exc}; valid: {valid}"
        ) from exc
    probe = settings[0]
    if not isinstance(probe, Solver):
        raise ValueError(f"solver factory {factory!r} returned {probe!r}, not a jaxcfr Solver")
    needs_key = probe.needs_key
    if callable(evaluate):
        _check_evaluate(evaluate, probe, game)
    options = jit_options(probe)  # the solver's XLA options for this backend
    if needs_key and init_scale > 0:
        raise ValueError(
            f"init_scale applies to deterministic solvers; {probe.name} varies by its key"
        )
    # identity of the states this run makes: solver settings and the game's structure
    identity = ("; ".join(_describe(s) for s in settings), game.meta.fingerprint)
    _guards.check_run_memory(probe, game, B)  # refuse before allocating anything
    key = jax.random.PRNGKey(0) if key is None else key
    seed_keys = jax.vmap(lambda i: jax.random.fold_in(key, i))(jnp.arange(num_seeds))
    seed_keys = jnp.tile(seed_keys, (G,) + (1,) * (seed_keys.ndim - 1))
    flat_grid = {k: jnp.repeat(v, num_seeds) for k, v in grid.items()}
    policy_fn = average_policy if evaluate == "average" else current_policy

    def init_one(game, hp, k):
        s = factory(**hp)
        if needs_key or init_scale <= 0:
            return s.init(game)
        return s.init(game, k, scale=init_scale)

    def chunk_one(game, st, hp, k, length):
        s = factory(**hp)

        def body(carry, _):
            if needs_key:
                t = carry.iteration
                carry = s.update(game, carry, _prng.fold_in(k, t))  # = jax.random.fold_in
            else:
                carry = s.update(game, carry)
            return carry, None

        st, _ = jax.lax.scan(body, st, None, length=length)
        if callable(evaluate):
            value = evaluate(game, st)
        else:
            value = _nash_conv_unchecked(game, policy_fn(game, st))
        return st, value, _guards.finite_flags(st)

    sharding = _sharding(devices, B)
    mesh_key = None if sharding is None else tuple(d.id for d in sharding.mesh.devices.flat)
    opts_key = tuple(sorted((options or {}).items()))
    base_key = (solver_key, tuple(sorted(grid)), needs_key, evaluate, float(init_scale), mesh_key)
    base_key += (opts_key,)
    out_shardings = None
    if sharding is not None:
        # seed keys and settings are computed identically in every process: each places
        # its own rows (device_put of a process-replicated value onto a global sharding)
        put = lambda x: jax.device_put(x, sharding)  # noqa: E731
        seed_keys, flat_grid = put(seed_keys), jax.tree.map(put, flat_grid)
        replicated = NamedSharding(sharding.mesh, PartitionSpec())
        state_sharding = jax.tree.map(lambda _: sharding, _guards.state_shapes(probe, game))
        # curves and finiteness flags come back replicated: every process can read them
        out_shardings = (state_sharding, replicated, replicated)
    if state is None:

        def build_init():
            batched = jax.vmap(init_one, (None, 0, 0))
            if out_shardings is None:
                return jax.jit(batched, compiler_options=options)
            return jax.jit(batched, out_shardings=out_shardings[0], compiler_options=options)

        state = _compiled(("init", base_key), build_init)(game, flat_grid, seed_keys)
    else:
        if isinstance(state, RunResult):
            state = state.state
        _guards.check_resume(state, _guards.state_shapes(probe, game), identity, B)
        if sharding is not None:  # a host (NumPy) state must be the same in every process
            state = jax.tree.map(put, state)
    start_iter = _first_iteration(state)
    if start_iter + num_iterations > _MAX_ITERATION:
        raise ValueError(
            f"num_iterations={num_iterations} after the resumed state's {start_iter} would "
            f"pass {_MAX_ITERATION} iterations, the int32 iteration counter's limit"
        )

    def get_chunk(length):
        def build():
            batched = jax.vmap(
                lambda g, st, hp, k: chunk_one(g, st, hp, k, length), in_axes=(None, 0, 0, 0)
            )
            if out_shardings is None:
                return jax.jit(batched, compiler_options=options)
            return jax.jit(batched, out_shardings=out_shardings, compiler_options=options)

        return _compiled(("chunk", length, base_key), build)

    bar = None
    if progress is True:
        try:
            from tqdm.auto import tqdm
        except ImportError as exc:  # pragma: no cover - depends on the environment
            raise ImportError(
                "progress=True needs tqdm (pip install tqdm); or pass a callable"
            ) from exc

        bar = tqdm(total=num_iterations, unit="it", desc=f"{probe.name} on {game.name}")
    iterations, curves, walls = [], [], []
    compile_s = 0.0
    done = 0
    t_start = time.perf_counter()
    try:  # the bar is closed however the loop ends (NonFiniteStateError, Ctrl-C)
        while done < num_iterations:
            length = min(eval_every, num_iterations - done)
            fn = get_chunk(length)
            signature = (length, base_key, hash(game.meta), B)  # bookkeeping only: no refs
            first = signature not in _TRACED
            _TRACED.add(signature)
            t0 = time.perf_counter()
            state, nc, finite = fn(game, state, flat_grid, seed_keys)
            nc = np.asarray(jax.block_until_ready(nc))
            if first:
                compile_s += time.perf_counter() - t0
            _guards.raise_if_non_finite(
                finite,
                nc,
                state,
                identity[0],
                game,
                start_iter + done + 1,
                start_iter + done + length,
            )
            _guards.remember(state, identity)
            done += length
            iterations.append(start_iter + done)
            curves.append(nc)
            walls.append(time.perf_counter() - t_start)
            if on_chunk is not None:
                on_chunk(start_iter + done, nc, state)
            if bar is not None:
                bar.update(length)
                bar.set_postfix(nash_conv=f"{np.median(nc):.3g}")
            elif callable(progress):
                progress(done, num_iterations, walls[-1])
            if target_exploitability is not None and np.all(nc / 2 <= target_exploitability):
                break
    finally:
        if bar is not None:
            bar.close()
    nash = np.stack(curves, axis=-1)  # [B, E]
    shape = (G, num_seeds, len(curves)) if hparams is not None else (num_seeds, len(curves))
    nash = nash.reshape(shape)
    return RunResult(
        iterations=np.asarray(iterations),
        nash_conv=nash,
        exploitability=nash / 2,
        wall_seconds=np.asarray(walls),
        compile_seconds=compile_s,
        state=state,
        solver=identity[0],
    )
