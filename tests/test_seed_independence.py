"""A seed fully determines its run: bitwise the same curves and final state whatever the
batch around it (1, 4 or 8 seeds) and however many devices share the batch (1, or 2
forced host devices), for every solver ``jaxcfr.run`` takes (issue 17; docs/cfr.md,
"Reproducibility"; docs/guarantees.md).

The solvers come from one place: every algorithm a study can name
(``experiments.algorithms.available()``, which finds jaxcfr's exported solver factories),
each with its defaults and with every discrete option that changes its arithmetic
(``pruning`` in ``jaxcfr.pruning.MODES``, ``chance_sampling=True``,
``alternating=False``), read from the factory's signature.

Each configuration runs in two fresh processes, one with 1 CPU device (batches 1, 4
and 8) and one with ``XLA_FLAGS=--xla_force_host_platform_device_count=2`` (batches 4
and 8, sharded 2 or 4 seeds per device; a batch of 1 is never sharded). Default run:
every solver with its defaults, Kuhn, 20 iterations, float32 (each solver x batch is
its own compile: ~50 compiles). Slow: every solver and option, Leduc, 60 iterations,
float32 and float64.
"""

import inspect
import textwrap
from pathlib import Path

import numpy as np
import pytest
from forced_devices import run_worker

import jaxcfr
from experiments import algorithms

BATCHES = (1, 4, 8)

# Options whose every value is a different computation (read from the signatures).
OPTION_VALUES = {
    "pruning": tuple(jaxcfr.pruning.MODES),
    "chance_sampling": (True,),
    "alternating": (False,),
}


def solver_specs() -> list[tuple[str, str, dict]]:
    """``(label, factory name, kwargs)`` for every solver ``jaxcfr.run`` takes."""
    specs = []
    for name, factory in algorithms.available().items():
        specs.append((name, name, {}))
        params = inspect.signature(factory).parameters
        for option, values in OPTION_VALUES.items():
            if option in params:
                for value in values:
                    specs.append((f"{name}({option}={value!r})", name, {option: value}))
    return specs


SPECS = solver_specs()
DEFAULTS = [spec for spec in SPECS if not spec[2]]  # each solver with its defaults

_WORKER = textwrap.dedent(
    """
    import json, sys
    import jax, numpy as np
    import games_tensor as gt, jaxcfr
    job = json.loads(sys.argv[1])
    assert len(jax.devices()) == job["devices"], jax.devices()
    game = gt.load(job["game"])
    out = {}
    for label, name, kwargs in job["specs"]:
        solver = getattr(jaxcfr, name)(**kwargs)
        extra = {} if solver.needs_key else {"init_scale": 1.0}  # seeds differ for all
        for b in job["batches"]:
            res = jaxcfr.run(
                solver, game, job["iterations"], job["eval_every"], num_seeds=b, **extra
            )
            leaves = jax.tree.leaves(res.state)
            sharded = {len(x.sharding.device_set) for x in leaves}
            want = job["devices"] if b % job["devices"] == 0 else 1
            assert sharded == {want}, (label, b, sharded)
            out[f"{label}|{b}|nash_conv"] = res.nash_conv
            for i, x in enumerate(leaves):
                out[f"{label}|{b}|{i}"] = np.asarray(x)
    np.savez(sys.argv[2], **out)
    """
)


def _run_worker(tmp: Path, devices, specs, game: str, iterations: int, eval_every: int, x64):
    job = {
        "devices": devices,
        "game": game,
        "specs": specs,
        "batches": BATCHES if devices == 1 else [b for b in BATCHES if b % devices == 0],
        "iterations": iterations,
        "eval_every": eval_every,
    }
    path = tmp / f"{game}-{devices}-{x64}.npz"
    return run_worker(_WORKER, job, path, devices, x64=x64, timeout=3000)


def _check(specs, one: dict, two: dict) -> None:
    """Seeds 0..b-1 of every batch b are the bits of the bigger batches' first b seeds;
    the 2-device process gives the 1-device process's bits for its batches."""
    assert two and two.keys() <= one.keys()
    for key in two:
        np.testing.assert_array_equal(two[key], one[key], err_msg=f"2 devices vs 1: {key}")
    for label, _, _ in specs:
        for small, big in ((1, 4), (4, 8), (1, 8)):
            prefix = f"{label}|{small}|"
            for key in [k for k in one if k.startswith(prefix)]:
                bigger = one[key.replace(prefix, f"{label}|{big}|")]
                np.testing.assert_array_equal(
                    bigger[:small], one[key], err_msg=f"batch {small} vs {big}: {key}"
                )
        finals = one[f"{label}|8|nash_conv"][:, -1]
        assert len(np.unique(finals)) > 1, (label, finals)  # the seeds do differ


def test_solver_list_is_every_solver_and_option():
    """The list holds every exported solver factory (and the families' options)."""
    labels = {label for label, _, _ in SPECS}
    for name in ("cfr", "cfr_plus", "linear_cfr", "dcfr", "pcfr_plus", "outcome_sampling"):
        assert name in labels
    for name in ("external_sampling", "uct", "smooth_uct"):
        assert name in labels
    for mode in jaxcfr.pruning.MODES:
        assert f"cfr(pruning={mode!r})" in labels
        assert f"cfr_plus(pruning={mode!r})" in labels
    assert "dcfr(chance_sampling=True)" in labels


@pytest.mark.slow
def test_seed_independent_of_batch_and_devices_kuhn(tmp_path):
    one = _run_worker(tmp_path, 1, DEFAULTS, "kuhn_poker", 20, 10, x64=False)
    two = _run_worker(tmp_path, 2, DEFAULTS, "kuhn_poker", 20, 10, x64=False)
    _check(DEFAULTS, one, two)


@pytest.mark.slow
@pytest.mark.parametrize("x64", [False, True], ids=["float32", "float64"])
def test_seed_independent_of_batch_and_devices_leduc(tmp_path, x64):
    one = _run_worker(tmp_path, 1, SPECS, "leduc_poker", 60, 20, x64=x64)
    two = _run_worker(tmp_path, 2, SPECS, "leduc_poker", 60, 20, x64=x64)
    _check(SPECS, one, two)
