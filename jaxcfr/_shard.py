"""A batch split over devices: each device runs its own share of a vmapped function.

``shard_batch(fn, in_axes, devices)`` wraps a *batched* function (its arguments with
``in_axes`` 0 carry a leading batch axis B, its outputs all do) in
``jax.shard_map`` over a 1-D mesh of ``devices`` (the mesh of
``jaxcfr._runner._sharding``, as ``jaxcfr.run`` shards its seed batch): device d
runs ``fn`` on rows ``[d B/n, (d+1) B/n)`` as its own program. Arguments with
``in_axes`` None are shared by every device (replicated). ``sharded_vmap(fn,
in_axes, devices)`` = ``shard_batch(jax.vmap(fn, in_axes), in_axes, devices)``.

Why ``shard_map`` and not a ``NamedSharding`` of the vmapped batch: a searcher's
``lax.while_loop`` (or a match's ``lax.cond`` "does this bot act anywhere in the
batch") vmapped over a sharded batch keeps one loop whose condition reduces over the
whole batch, a cross-device collective every trip; under ``shard_map`` each device
runs its own loop on its rows. On the 2-core CPU with
``XLA_FLAGS=--xla_force_host_platform_device_count=2 --xla_cpu_multi_thread_eigen=false``
a vmapped batch of 512 LD(1,1) searchers ran 1.19x (OOS), 1.35x (UCT), 1.30x (RM) the
iterations/s of one device on the quiet machine (session 29, ``python -m
experiments.benchmarks search --games ld --batches 512`` with ``--host-devices 2`` / ``0``;
XLA's intra-op threads do not help kernels this small); see
``experiments/host_devices.py`` and docs/search.md.

Rules:
  * One device (or ``devices`` of length 1), or a batch of one row: ``fn`` itself,
    today's code path, on jax's default device (``devices=[d]`` does not move the work
    to ``d``: place the inputs there, or use ``jax.default_device(d)``). A batch
    smaller than the device count uses one device per row.
  * A batch not divisible by the device count is padded with copies of its last row,
    computed, and the padded rows dropped from the outputs; every row's result is
    the one it has alone (rows are independent under ``vmap``), so the split never
    changes a result. Callers that loop (``jaxcfr.play``'s step-form engine) choose
    batches that divide, to keep outputs on their devices between calls.
  * Default ``devices``: all local devices in a single process; in a run spanning
    several processes (``jax.distributed``) no split (each process its own batch).

Call the result inside ``jax.jit`` (the library does not jit for the user, except
in ``jaxcfr.run`` and ``jaxcfr.play``).
"""

from __future__ import annotations

from typing import Any, Callable, Sequence

import jax
import jax.numpy as jnp
from jax.sharding import PartitionSpec

from jaxcfr import _guards
from jaxcfr._runner import _sharding


def split_devices(devices=None) -> tuple:
    """The devices a batch is split over: ``devices`` checked (a non-empty sequence of
    ``jax.Device``), or by default all local devices (one device in a multi-process
    run). A tuple, hashable, for compiled-function caches."""
    devices = _guards.check_devices(devices)
    if devices is None:
        devices = jax.local_devices() if jax.process_count() == 1 else jax.local_devices()[:1]
    return tuple(devices)


def _batch_size(args, in_axes) -> int:
    sizes = {
        leaf.shape[0]
        for arg, ax in zip(args, in_axes, strict=True)
        if ax is not None
        for leaf in jax.tree_util.tree_leaves(arg)
    }
    if len(sizes) != 1:
        raise ValueError(
            f"the batched arguments (in_axes 0) must share one leading batch size, got "
            f"{sorted(sizes) or 'no batched argument'}"
        )
    return sizes.pop()


def _check_axes(in_axes, nargs: int) -> tuple:
    axes = tuple(in_axes) if isinstance(in_axes, (tuple, list)) else (in_axes,) * nargs
    if len(axes) != nargs or any(not (a is None or (type(a) is int and a == 0)) for a in axes):
        raise ValueError(
            f"in_axes must be 0, None or a tuple of 0/None per argument ({nargs} "
            f"arguments), got {in_axes!r}"
        )
    return axes


def shard_batch(fn: Callable, in_axes: Any = 0, devices: Sequence | None = None) -> Callable:
    """``fn`` (already batched along axis 0) with its batch split over ``devices``.

    Args:
      fn: ``fn(*args) -> outputs``, a pytree whose every leaf has the batch axis first.
      in_axes: 0 (every argument batched), None, or a tuple of 0/None per argument.
      devices: devices to split over (default: all local devices, see above).

    Returns:
      a function of the same arguments and outputs ([B, ...] leaves).
    """
    devs = split_devices(devices)
    if len(devs) == 1:
        return fn

    def call(*args):
        axes = _check_axes(in_axes, len(args))
        B = _batch_size(args, axes)
        use = devs[:B]  # a batch smaller than the device count: one row per device
        if len(use) <= 1:  # one row, or an empty batch
            return fn(*args)
        pad = -B % len(use)
        if pad:  # copies of the last row, dropped below
            grow = lambda x: jnp.concatenate([x, jnp.repeat(x[-1:], pad, axis=0)])  # noqa: E731
            args = tuple(
                a if ax is None else jax.tree_util.tree_map(grow, a)
                for a, ax in zip(args, axes, strict=True)
            )
        mesh = _sharding(use, B + pad).mesh
        batched = tuple(a for a, ax in zip(args, axes, strict=True) if ax is not None)

        def local(*rows):  # one device's rows; the shared arguments are closed over
            it = iter(rows)
            return fn(*(a if ax is None else next(it) for a, ax in zip(args, axes, strict=True)))

        out = jax.shard_map(
            local,
            mesh=mesh,
            in_specs=(PartitionSpec("batch"),) * len(batched),
            out_specs=PartitionSpec("batch"),
            check_vma=False,
        )(*batched)
        return jax.tree_util.tree_map(lambda x: x[:B], out) if pad else out

    return call


def sharded_vmap(fn: Callable, in_axes: Any = 0, devices: Sequence | None = None) -> Callable:
    """``jax.vmap(fn, in_axes)`` with its batch split over ``devices`` by ``shard_map``
    (each device its own vmapped program; see the module docstring for the rules).

    Example (a batch of 512 searchers over both CPU cores; set
    ``XLA_FLAGS=--xla_force_host_platform_device_count=2`` before importing jax)::

        search = jax.jit(jaxcfr.sharded_vmap(bot.search, (None, 0, None, 0, None)))
        states = search(game, states, jaxcfr.root_view(), keys, 1000)

    Args:
      fn: an unbatched function (one searcher, one match).
      in_axes: 0, None, or a tuple of 0/None per argument (as ``jax.vmap``, axis 0 only).
      devices: devices to split over (default: all local devices).

    Returns:
      the batched function; its outputs have the batch axis first.
    """
    devs = split_devices(devices)
    return shard_batch(jax.vmap(fn, in_axes), in_axes, devs)


def batch_sharding(batch: int, devices: Sequence | None = None):
    """Where a batch of ``batch`` rows lives when ``shard_batch`` splits it over
    ``devices``: a ``NamedSharding`` of axis 0 (``jax.device_put(states, it)`` places a
    batch of searcher states before a timed call), or None (one device, or a batch
    that does not divide: it is padded inside the call)."""
    devs = split_devices(devices)
    devs = devs[:batch]
    if len(devs) == 1 or batch % len(devs):
        return None
    return _sharding(devs, batch)
