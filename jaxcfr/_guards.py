"""Guards of ``jaxcfr.run``: argument checks, the batch's memory estimate, the solver
identity of states, and the stop on a non-finite state.

* :func:`estimate_run_memory` -- bytes a run of ``B = G * num_seeds`` will hold on the
  device, from the state's exact shapes (``jax.eval_shape``, nothing allocated) and
  the game's arrays; ``run`` refuses (:class:`BatchTooLargeError`) before allocating
  when it exceeds the memory it may use (:func:`available_memory`).
* Solver identity: every state ``run`` returns (or hands to ``on_chunk``) is recorded
  with the solver that made it (name and hyper-parameters) and the game's structure
  fingerprint, so ``run(..., state=...)`` refuses a state of another solver, other
  hyper-parameters or another game. The identity rides *beside* the state (a registry
  keyed by the state's ``iteration`` array, dropped when that array is freed; and
  ``RunResult.solver``), not in the state NamedTuples: a string field there would be a
  pytree leaf (breaking ``jit``/``vmap``), and the NamedTuples are shared by every
  solver and its options. States the runner did not make (``init`` by hand, loaded
  from a checkpoint) are checked by structure: the state type (solver family), field
  names, shapes and dtypes must be those this run's ``init`` makes.
* Non-finite numbers: each compiled chunk also returns, per run, whether every float
  field of the state is finite; the first chunk with a NaN or inf stops the run with
  :class:`NonFiniteStateError` naming the iterations, the run, the fields and the
  solver -- never a curve computed from it (an all-NaN strategy sum would otherwise be
  evaluated as the uniform policy).
"""

from __future__ import annotations

import weakref
from pathlib import Path
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np

from games_tensor import Game
from jaxcfr._solver import Solver, check_game, check_int

# Device bytes per run / the state's bytes. XLA's ``compiled.memory_analysis()`` of the
# runner's chunk (arguments + outputs + temporaries per extra run, batch 64, float32)
# gives 4.1-5.2 (CFR family 4.5-5.2, outcome/external sampling 4.1-4.9) on Kuhn, Leduc,
# Liar's Dice LD(1,1) and II-Goofspiel(4): ``python -m experiments.benchmarks
# run_memory``. 6 leaves a margin.
_STATE_FACTOR = 6
# Fraction of the available memory (host, or the accelerator's) a run may take.
_MEMORY_FRACTION = 0.8


class BatchTooLargeError(ValueError):
    """The batch's estimated memory exceeds what the run may use; raised before allocating."""


class NonFiniteStateError(FloatingPointError):
    """A solver state became NaN or infinite during ``jaxcfr.run``."""


def _tree_bytes(tree) -> int:
    return int(
        sum(np.prod(x.shape, dtype=np.int64) * x.dtype.itemsize for x in jax.tree.leaves(tree))
    )


def state_shapes(solver, game: Game):
    """Shapes and dtypes (``jax.ShapeDtypeStruct``) of one run's state, nothing allocated."""
    return jax.eval_shape(solver.init, game)


def estimate_run_memory(solver, game: Game, batch: int = 1) -> int:
    """Estimated peak device bytes of ``jaxcfr.run(solver, game, ...)`` with ``batch``
    runs (``num_seeds`` times the hyper-parameter grid size).

    ``solver`` is a built :class:`jaxcfr.Solver` (for a factory, build one setting:
    ``jaxcfr.dcfr(alpha=2.0)``). The game's arrays once, plus per run ``_STATE_FACTOR``
    times the state's bytes (exact shapes from ``jax.eval_shape``; the factor covers the
    chunk's input, output and temporaries, measured with XLA's memory analysis).
    Milliseconds; nothing is allocated. An estimate: a guard against batches that
    cannot fit, not an exact peak.
    """
    batch = check_int("batch", batch, 1)
    check_game(game)
    if not isinstance(solver, Solver):
        hint = (
            f" (a factory: build one setting, e.g. {getattr(solver, '__name__', 'factory')}())"
            if callable(solver)
            else ""
        )
        raise ValueError(f"solver must be a built jaxcfr Solver, got {solver!r:.80}{hint}")
    per_run = _STATE_FACTOR * _tree_bytes(state_shapes(solver, game))
    return int(_tree_bytes(game) + batch * per_run)


def _read_int(path) -> int | None:
    """The integer a one-line file holds (``memory.max`` etc.); ``None`` when the file is
    missing or holds something else (``max``: no limit)."""
    try:
        with open(path) as f:
            text = f.read().strip()
    except OSError:
        return None
    return int(text) if text.isdigit() else None


def _device_free_memory() -> int | None:
    """Free bytes of the first local accelerator (``memory_stats``), ``None`` on CPU or
    when the backend reports none."""
    dev = jax.local_devices()[0]
    if dev.platform == "cpu":
        return None
    try:
        stats = dev.memory_stats() or {}
    except Exception:  # noqa: BLE001 - backends without memory stats
        return None
    if "bytes_limit" not in stats:
        return None
    return int(stats["bytes_limit"]) - int(stats.get("bytes_in_use", 0))


def _proc_kib(path: Path, field: str) -> int | None:
    """``field`` of a ``/proc`` file of ``Name:  1234 kB`` lines, in bytes."""
    try:
        with open(path) as f:
            for line in f:
                k, _, v = line.partition(":")
                if k == field:
                    return int(v.split()[0]) * 1024
    except (OSError, ValueError, IndexError):
        pass
    return None


def _cgroup_dir(root: Path, rel: str) -> Path | None:
    """This process's cgroup folder under ``root``: ``/proc/self/cgroup`` gives the path
    from the hierarchy's root, which a container may mount lower down (its own cgroup
    at ``root``), so the longest suffix of the path that exists under ``root`` is it."""
    parts = [p for p in rel.split("/") if p]
    for i in range(len(parts) + 1):
        candidate = root.joinpath(*parts[i:])
        if candidate.is_dir():
            return candidate
    return None


# cgroup v1 reports "no limit" as a huge number (9223372036854771712 on 4 KiB pages)
_NO_LIMIT = 1 << 60


def _cgroup_free(proc: Path, cgroup_root: Path) -> int | None:
    """The least headroom (limit minus usage) of this process's memory cgroups: v2
    (``memory.max`` - ``memory.current`` of its cgroup and every ancestor mounted under
    ``cgroup_root``) and v1 (``memory/memory.limit_in_bytes`` -
    ``memory.usage_in_bytes``); ``None`` without a limit."""
    try:
        lines = (proc / "self" / "cgroup").read_text().splitlines()
    except OSError:
        return None
    free = []
    for line in lines:
        parts = line.split(":", 2)
        if len(parts) != 3:
            continue
        _, controllers, rel = parts
        if controllers == "":  # v2: the unified hierarchy
            base = _cgroup_dir(cgroup_root, rel)
            names = ("memory.max", "memory.current")
            top = cgroup_root
        elif "memory" in controllers.split(","):  # v1: the memory controller's hierarchy
            top = cgroup_root / "memory"
            base = _cgroup_dir(top, rel)
            names = ("memory.limit_in_bytes", "memory.usage_in_bytes")
        else:
            continue
        while base is not None:  # the cgroup and its ancestors: each limit applies
            lim, use = _read_int(base / names[0]), _read_int(base / names[1])
            if lim is not None and use is not None and lim < _NO_LIMIT:
                free.append(lim - use)
            base = base.parent if base != top and top in base.parents else None
    return min(free) if free else None


def host_available_memory(
    *, proc: str | Path = "/proc", cgroup_root: str | Path = "/sys/fs/cgroup"
) -> int | None:
    """Bytes this process can still allocate on the host: the least of

    * ``MemAvailable`` of ``/proc/meminfo`` (the kernel's estimate),
    * the headroom of its memory cgroups, v2 (``memory.max - memory.current``, the
      process's cgroup from ``/proc/self/cgroup`` and its ancestors) and v1
      (``memory.limit_in_bytes - memory.usage_in_bytes``),
    * the room under ``ulimit -v`` (``RLIMIT_AS`` minus ``VmSize``).

    ``None`` where none is known (not Linux). ``proc`` and ``cgroup_root`` are for tests.
    The one implementation: ``experiments.study_memory`` calls it.
    """
    proc, cgroup_root = Path(proc), Path(cgroup_root)
    limits = [
        x
        for x in (_proc_kib(proc / "meminfo", "MemAvailable"), _cgroup_free(proc, cgroup_root))
        if x is not None
    ]
    try:
        import resource

        soft = resource.getrlimit(resource.RLIMIT_AS)[0]
        if soft != resource.RLIM_INFINITY and soft > 0:
            limits.append(soft - (_proc_kib(proc / "self" / "status", "VmSize") or 0))
    except (ImportError, ValueError, OSError):  # pragma: no cover - not POSIX
        pass
    return max(min(limits), 0) if limits else None


def available_memory() -> int | None:
    """Bytes a run may still allocate where its batch lives: an accelerator's free memory
    (``memory_stats``), else (CPU: buffers in host memory)
    :func:`host_available_memory`. ``None`` when none is known."""
    device = _device_free_memory()
    if device is not None:
        return max(device, 0)
    return host_available_memory()


def _gib(n: float) -> str:
    for unit, size in (("GiB", 2**30), ("MiB", 2**20), ("KiB", 2**10)):
        if n >= size:
            return f"{n / size:.3g} {unit}"
    return f"{n:.3g} bytes"


def check_run_memory(solver, game: Game, batch: int, limit: int | None = None) -> int:
    """Raise :class:`BatchTooLargeError` (before anything is allocated) when the batch's
    estimated memory exceeds ``limit`` (default: ``_MEMORY_FRACTION`` of
    :func:`available_memory`); return the estimate in bytes."""
    need = estimate_run_memory(solver, game, batch)
    if limit is None:
        avail = available_memory()
        limit = None if avail is None else int(avail * _MEMORY_FRACTION)
    if limit is not None and need > limit:
        per_run = (need - _tree_bytes(game)) / batch
        fit = max(int((limit - _tree_bytes(game)) // per_run), 0)
        raise BatchTooLargeError(
            f"a batch of {batch} runs of {solver!r} on {game.name} needs an estimated "
            f"{_gib(need)} ({_gib(per_run)} per run), more than the {_gib(limit)} it may use; "
            f"at most about {fit} runs fit: use fewer seeds or hyper-parameter settings "
            "(or run them in several calls)"
        )
    return need


# ---------------------------------------------------------------- arguments
def check_devices(devices):
    """``None`` or a non-empty sequence of ``jax.Device`` (e.g. ``jax.devices()[:2]``)."""
    if devices is None:
        return None
    given = devices
    try:
        devices = list(devices)
    except TypeError:
        devices = None
    if not devices or not all(isinstance(d, jax.Device) for d in devices):
        hint = f" ([{given!r}] for one device)" if isinstance(given, jax.Device) else ""
        raise ValueError(
            "devices must be None (all local devices) or a non-empty list of jax.Device "
            f"objects such as jax.devices()[:2], got {given!r}{hint}"
        )
    if len(set(devices)) != len(devices):
        raise ValueError(f"devices must be distinct, got {given!r}")
    return devices


def check_hparams(hparams) -> dict:
    """``None`` or a non-empty dict name -> non-empty 1-D numeric array (equal lengths)."""
    if hparams is None:
        return {}
    if not isinstance(hparams, dict) or not hparams:
        raise ValueError(
            "hparams must be None or a non-empty dict of equal-length 1-D arrays, e.g. "
            f"{{'alpha': jnp.array([1.0, 2.0])}}, got {hparams!r}"
        )
    grid = {}
    for k, v in hparams.items():
        try:
            arr = v if isinstance(v, jax.Array) else np.asarray(v)
        except (TypeError, ValueError) as exc:
            raise ValueError(f"hparams[{k!r}] must be a 1-D numeric array, got {v!r}") from exc
        numeric = np.issubdtype(arr.dtype, np.number) and not np.issubdtype(
            arr.dtype, np.complexfloating
        )
        if arr.ndim != 1 or arr.shape[0] == 0 or not numeric:
            raise ValueError(f"hparams[{k!r}] must be a non-empty 1-D numeric array, got {v!r}")
        grid[k] = jnp.asarray(arr)
    return grid


# ---------------------------------------------------------------- solver identity
# id(iteration array) -> (weakref to it, identity); entries vanish with the array.
_IDENTITY: dict[int, tuple[Any, tuple]] = {}


def _anchor(state):
    leaf = getattr(state, "iteration", None)
    if leaf is None:
        leaves = jax.tree.leaves(state)
        leaf = leaves[0] if leaves else None
    return leaf


def remember(state, identity: tuple) -> None:
    """Record that ``state`` was made by ``identity`` = (solver, game fingerprint)."""
    leaf = _anchor(state)
    if leaf is None:
        return
    key = id(leaf)
    try:
        ref = weakref.ref(leaf, lambda _, k=key: _IDENTITY.pop(k, None))
    except TypeError:  # not weak-referenceable (e.g. a NumPy array): structure checks only
        return
    _IDENTITY[key] = (ref, identity)


def recall(state) -> tuple | None:
    """The identity recorded for ``state`` by :func:`remember`, or ``None``."""
    leaf = _anchor(state)
    entry = _IDENTITY.get(id(leaf)) if leaf is not None else None
    if entry is None or entry[0]() is not leaf:
        return None
    return entry[1]


def check_resume(state, expected, identity: tuple, batch: int) -> None:
    """Refuse a state to resume from unless it is of this run: same solver and game when
    known (:func:`recall`), and in any case the type, fields, batch, shapes and dtypes
    that this run's ``init`` makes (``expected``: its ``ShapeDtypeStruct`` tree)."""
    known = recall(state)
    if known is not None and known != identity:
        solver, want = known[0], identity[0]
        what = (
            f"was made by {solver}, but this run's solver is {want}"
            if solver != want
            else "was made on another game (structure fingerprint differs)"
        )
        raise ValueError(
            f"state {what}; resume a state only with the solver, hyper-parameters and "
            "game that made it"
        )
    if type(state) is not type(expected):
        raise ValueError(
            f"state is a {type(state).__name__}, but this run's solver {identity[0]} makes "
            f"{type(expected).__name__} states: a state of another solver family"
        )
    got, want = jax.tree.leaves(state), jax.tree.leaves(expected)
    fields = getattr(expected, "_fields", None) or [str(i) for i in range(len(want))]
    if len(got) != len(want):
        raise ValueError(
            f"state has {len(got)} arrays, expected {len(want)} ({', '.join(fields)}) "
            f"for {identity[0]}"
        )
    for name, g, w in zip(fields, got, want, strict=True):
        g_shape = tuple(np.shape(g))
        if g_shape[:1] != (batch,):
            raise ValueError(
                f"state is batched as {g_shape[:1]}, but this run has B = {batch} runs; "
                "resume with the same batch (seeds times hyper-parameter settings)"
            )
        if g_shape[1:] != tuple(w.shape) or np.dtype(g.dtype) != np.dtype(w.dtype):
            raise ValueError(
                f"state.{name} is {np.dtype(g.dtype)}{list(g_shape[1:])} per run, expected "
                f"{np.dtype(w.dtype)}{list(w.shape)}: a state of another game or float type"
            )


# ---------------------------------------------------------------- non-finite states
def finite_flags(state) -> jax.Array:
    """``[F]`` bool (inside the compiled chunk): each float field of one run's state is
    entirely finite."""

    leaves = [x for x in jax.tree.leaves(state) if jnp.issubdtype(x.dtype, jnp.inexact)]
    if not leaves:
        return jnp.ones((0,), bool)
    return jnp.stack([jnp.all(jnp.isfinite(x)) for x in leaves])


def raise_if_non_finite(flags, nash_conv, state, solver, game: Game, first: int, last: int):
    """Stop the run (:class:`NonFiniteStateError`) if any run's state or NashConv is not
    finite after the chunk of iterations ``first..last``."""
    flags = np.asarray(flags)
    nash_conv = np.asarray(nash_conv)
    bad_state = ~flags.all(axis=-1) if flags.size else np.zeros(nash_conv.shape, bool)
    bad = bad_state | ~np.isfinite(nash_conv)
    if not bad.any():
        return
    leaves = jax.tree.leaves(state)
    names = getattr(state, "_fields", None) or [str(i) for i in range(len(leaves))]
    floats = [n for n, x in zip(names, leaves, strict=True) if np.issubdtype(x.dtype, np.inexact)]
    b = int(np.argmax(bad))
    which = [n for n, ok in zip(floats, flags[b], strict=True) if not ok] if flags.size else []
    what = f"state.{'/'.join(which)}" if which else "its NashConv"
    finfo = np.finfo(game.sf_payoff.dtype)
    raise NonFiniteStateError(
        f"{solver} on {game.name}: {int(bad.sum())} of {bad.size} runs became NaN or "
        f"infinite in iterations {first}-{last} (first: run {b}, {what}). Cause: numbers "
        f"outside the {finfo.dtype} range (largest {finfo.max:.3g}), typically "
        "hyper-parameters that grow weights or regrets too fast, init_scale, or payoffs "
        "near the float limit. No result is reported from this chunk on; use smaller "
        "values or float64 (jax_enable_x64)."
    )
