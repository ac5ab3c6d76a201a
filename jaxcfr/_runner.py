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

Multiple devices: when more than one local device is present (or ``devices`` is
given) the batch axis is sharded with a 1-D ``jax.sharding.Mesh`` and
``NamedSharding``; B must be divisible by the number of devices. Across hosts,
call ``jax.distributed.initialize()`` in every process first, then pass
``devices=jax.devices()`` (all global devices); each host then runs its part of
the batch and the curves come back replicated.
"""

from __future__ import annotations

import inspect
import time
from typing import Any, Callable, NamedTuple

import jax
import jax.numpy as jnp
import numpy as np
from jax.sharding import Mesh, NamedSharding, PartitionSpec

from games_tensor import Game
from jaxcfr import _sequence_form as sf
from jaxcfr._evaluation import br_values_unchecked
from jaxcfr._solver import Solver, average_policy, current_policy


class RunResult(NamedTuple):
    """Curves of one ``run``.

    iterations: [E] int, iterations completed at each evaluation.
    nash_conv: [..., E] NashConv per evaluation ([num_seeds, E], or [G, num_seeds, E]).
    exploitability: [..., E] = nash_conv / 2.
    wall_seconds: [E] cumulative wall-clock seconds at each evaluation (compile included
      in the first chunk; see ``compile_seconds``).
    compile_seconds: seconds spent in the first call of each compiled chunk shape.
    state: final solver state, batched along the leading axis (B = G * num_seeds).
    """

    iterations: np.ndarray
    nash_conv: np.ndarray
    exploitability: np.ndarray
    wall_seconds: np.ndarray
    compile_seconds: float
    state: Any


def _nash_conv_unchecked(game: Game, policy: jax.Array) -> jax.Array:
    return jnp.sum(br_values_unchecked(game, sf.normalize_policy(game, policy)))


def _as_factory(solver) -> Callable[..., Solver]:
    if isinstance(solver, Solver):
        return lambda **_: solver
    if callable(solver):
        return solver
    raise ValueError(f"solver must be a jaxcfr Solver or a factory of one, got {solver!r}")


def _sharding(devices, batch: int):
    if devices is None:
        devices = jax.local_devices()
    devices = list(devices)
    if len(devices) <= 1:
        return None
    if batch % len(devices):
        raise ValueError(
            f"the batch of {batch} runs is not divisible by the {len(devices)} devices; "
            "choose num_seeds (times the hyper-parameter grid size) as a multiple"
        )
    mesh = Mesh(np.asarray(devices), ("batch",))
    return NamedSharding(mesh, PartitionSpec("batch"))


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
      evaluate: ``"average"`` (default) or ``"current"`` policy.
      init_scale: for deterministic solvers, draw initial regrets uniformly in
        [0, init_scale) from the seed key (0 = all seeds identical).
      devices: devices to shard the batch over (default: all local devices).
      progress: ``True`` for a tqdm bar, or ``fn(iterations_done, total, seconds)``.
      state: resume from this batched state (e.g. ``previous.state``); iteration
        counting continues from it.
      target_exploitability: stop after the first chunk at which every run's
        exploitability (NashConv / 2) is at or below this value.
      on_chunk: ``fn(iteration, nash_conv [B], state)`` called after every chunk (for
        checkpoints: a run resumed from a saved state gives identical numbers).

    Returns:
      :class:`RunResult` with NumPy curves.
    """
    if not isinstance(num_iterations, int) or num_iterations < 1:
        raise ValueError(f"num_iterations must be an integer >= 1, got {num_iterations!r}")
    if not isinstance(eval_every, int) or eval_every < 1:
        raise ValueError(f"eval_every must be an integer >= 1, got {eval_every!r}")
    if not isinstance(num_seeds, int) or num_seeds < 1:
        raise ValueError(f"num_seeds must be an integer >= 1, got {num_seeds!r}")
    if evaluate not in ("average", "current"):
        raise ValueError(f"evaluate must be 'average' or 'current', got {evaluate!r}")
    factory = _as_factory(solver)
    grid = {} if hparams is None else {k: jnp.asarray(v) for k, v in hparams.items()}
    sizes = {v.shape[0] if v.ndim else -1 for v in grid.values()}
    if len(sizes) > 1 or -1 in sizes:
        raise ValueError("hparams must be 1-D arrays of equal length")
    G = sizes.pop() if sizes else 1
    B = G * num_seeds
    try:  # builds every setting once on the host: bad values raise before compiling
        probe = [factory(**{k: v[g] for k, v in grid.items()}) for g in range(G)][0]
    except TypeError as exc:
        valid = list(inspect.signature(factory).parameters)
        raise ValueError(
            f"invalid hparams {sorted(grid)} for {factory}: {exc}; valid: {valid}"
        ) from exc
    needs_key = probe.needs_key
    key = jax.random.PRNGKey(0) if key is None else key
    seed_keys = jax.vmap(lambda i: jax.random.fold_in(key, i))(jnp.arange(num_seeds))
    seed_keys = jnp.tile(seed_keys, (G,) + (1,) * (seed_keys.ndim - 1))
    flat_grid = {k: jnp.repeat(v, num_seeds) for k, v in grid.items()}
    policy_fn = average_policy if evaluate == "average" else current_policy

    def init_one(hp, k):
        s = factory(**hp)
        if needs_key or init_scale <= 0:
            return s.init(game)
        return s.init(game, k, scale=init_scale)

    def chunk_one(game, st, hp, k, length):
        s = factory(**hp)

        def body(carry, _):
            if needs_key:
                t = carry.iteration
                carry = s.update(game, carry, jax.random.fold_in(k, t))
            else:
                carry = s.update(game, carry)
            return carry, None

        st, _ = jax.lax.scan(body, st, None, length=length)
        return st, _nash_conv_unchecked(game, policy_fn(game, st))

    sharding = _sharding(devices, B)
    if state is None:
        state = jax.jit(jax.vmap(init_one))(flat_grid, seed_keys)
    if sharding is not None:
        put = lambda x: jax.device_put(x, sharding)  # noqa: E731
        state, seed_keys = jax.tree.map(put, state), put(seed_keys)
        flat_grid = jax.tree.map(put, flat_grid)

    chunks: dict[int, Callable] = {}

    def get_chunk(length):
        if length not in chunks:
            chunks[length] = jax.jit(
                jax.vmap(
                    lambda g, st, hp, k: chunk_one(g, st, hp, k, length), in_axes=(None, 0, 0, 0)
                )
            )
        return chunks[length]

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
    start_iter = (
        int(np.asarray(state.iteration).reshape(-1)[0]) if hasattr(state, "iteration") else 0
    )
    t_start = time.perf_counter()
    while done < num_iterations:
        length = min(eval_every, num_iterations - done)
        first = length not in chunks
        t0 = time.perf_counter()
        state, nc = get_chunk(length)(game, state, flat_grid, seed_keys)
        nc = np.asarray(jax.block_until_ready(nc))
        if first:
            compile_s += time.perf_counter() - t0
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
    )
