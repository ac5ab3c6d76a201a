"""Memory a convergence study will need, estimated before it runs, and what is available.

A study refuses to start (:func:`check`) when its batch of seeds or its bootstrap would
not fit, instead of being killed by the kernel, dying with RESOURCE_EXHAUSTED, or
running for hours and then failing in the rate estimate with no ``results.json``.

:func:`batch_bytes` is the one place the command line estimates an algorithm's batch:
it uses jaxcfr's runner estimate (``jaxcfr.estimate_run_memory``) when the library
exports one, and its own (below) until then.
"""

from __future__ import annotations

import math

import jax
import numpy as np

import jaxcfr
from experiments.algorithms import ConfigError
from jaxcfr import _guards

# Peak bytes per seed, in units of the solver state's bytes per seed: the state passed
# in (1) and returned (1) by a compiled chunk, XLA's temporaries (measured with
# ``jax.jit(...).lower(...).compile().memory_analysis()`` on a 10-iteration chunk at 16
# and 64 seeds: 2.0-3.7 states per seed for cfr, dcfr, pcfr_plus, outcome and external
# sampling on kuhn, leduc, liar's dice, II-goofspiel and nonlocality; 7.4 only for the
# 36-byte state of external sampling on nonlocality), and the host copy of the state a
# checkpoint writes (1).
STATE_MULTIPLE = 7
FIXED_BYTES = 64 << 20  # the compiled game, executables, runtime: per study, not per seed


def state_bytes(solver, game) -> int:
    """Bytes of one seed's solver state (from shapes alone; nothing is allocated)."""
    shapes = jax.eval_shape(lambda: solver.init(game))
    return int(
        sum(math.prod(x.shape) * np.dtype(x.dtype).itemsize for x in jax.tree.leaves(shapes))
    )


def batch_bytes(solver, game, seeds: int) -> int:
    """Estimated peak bytes of running ``seeds`` seeds of ``solver`` on ``game`` as one
    batch: jaxcfr's own estimate of ``jaxcfr.run`` where the library has one
    (``jaxcfr.estimate_run_memory``) plus the checkpoint's host copy of the state, else
    ``STATE_MULTIPLE`` states per seed and ``FIXED_BYTES``."""
    library = getattr(jaxcfr, "estimate_run_memory", None)
    if library is not None:
        return int(library(solver, game, seeds)) + state_bytes(solver, game) * seeds
    return FIXED_BYTES + STATE_MULTIPLE * state_bytes(solver, game) * seeds


def bootstrap_bytes(num_bootstrap: int, seeds: int, evaluations: int) -> int:
    """Peak bytes of :func:`experiments.rates.convergence_rate`: the resampled seed
    indices (int64) and log-curves (float64) of every resample, ``[num_bootstrap,
    seeds, evaluations]``, plus their means."""
    return num_bootstrap * (seeds * (8 + 8 * evaluations) + 16 * evaluations)


def host_available() -> int | None:
    """Bytes this process can still allocate on the host: the least of MemAvailable, the
    cgroup (v1 or v2) limit's headroom and ``ulimit -v``'s; None where none is known.
    jaxcfr's implementation (:func:`jaxcfr._guards.host_available_memory`), the one the
    library's own batch check uses."""
    return _guards.host_available_memory()


def device_available() -> int | None:
    """Bytes free on the default device: its allocator's limit for accelerators, the
    host's for CPU (:func:`jaxcfr._guards.available_memory`)."""
    return _guards.available_memory()


def _gib(n: int) -> str:
    return f"{n / 2**30:.3g} GiB"


def check(config, solvers, game, available=None, host=None) -> None:
    """Raise a ConfigError naming the numbers when the study will not fit in memory.

    Args:
      config: the :class:`~experiments.study_config.StudyConfig`.
      solvers: label -> built solver.
      available / host: free bytes on the device / host (default: measured now).
    """
    available = device_available() if available is None else available
    host = host_available() if host is None else host
    if available is not None:
        for a in config.algorithms:
            need = batch_bytes(solvers[a.label], game, config.seeds)
            if need > available:
                one = batch_bytes(solvers[a.label], game, 1)
                per_seed = batch_bytes(solvers[a.label], game, 2) - one
                fit = max(0, int((available - one + per_seed) // per_seed))
                raise ConfigError(
                    f"seeds = {config.seeds}: {a.label} on {config.game} would need about "
                    f"{_gib(need)} ({per_seed / 1024:.4g} KiB per seed, estimated before "
                    f"allocating) but about {_gib(available)} is free; use at most "
                    f"{fit} seeds here"
                )
    if host is not None:
        evaluations = max(-(-a.iterations // a.eval_every) for a in config.algorithms)
        need = bootstrap_bytes(config.bootstrap, config.seeds, evaluations)
        if need > host:
            per = need / config.bootstrap
            raise ConfigError(
                f"bootstrap = {config.bootstrap}: the rate's confidence interval would need "
                f"about {_gib(need)} ({config.seeds} seeds x up to {evaluations} evaluations "
                f"per resample) but about {_gib(host)} is free; use at most "
                f"{int(host // per)} resamples (1000-10000 is plenty)"
            )
