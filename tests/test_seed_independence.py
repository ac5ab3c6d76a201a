"""A seed fully determines its run: bitwise the same curves and final state whatever the
batch around it (1, 4 or 8 seeds) and however many devices share the batch (issue 17;
docs/cfr.md, "Reproducibility")."""

import os
import subprocess
import sys
import textwrap

import jax
import numpy as np
import pytest

import games_tensor as gt
import jaxcfr

SOLVERS = [
    "cfr",
    "cfr_plus",
    "linear_cfr",
    "dcfr",
    "pcfr_plus",
    "outcome_sampling",
    "external_sampling",
]
ITERATIONS, EVAL_EVERY = 60, 20
pytestmark = pytest.mark.slow  # 7 solvers x 4 compiles: ~140 s CPU, 9 min on the shared machine


def _run(name, num_seeds, game):
    solver = getattr(jaxcfr, name)()
    kwargs = {} if solver.needs_key else {"init_scale": 1.0}  # seeds differ for all solvers
    return jaxcfr.run(solver, game, ITERATIONS, EVAL_EVERY, num_seeds=num_seeds, **kwargs)


def _host(tree, n):
    return [np.asarray(x)[:n] for x in jax.tree.leaves(tree)]


@pytest.mark.parametrize("name", SOLVERS)
def test_seed_curves_and_states_independent_of_batch_size(name):
    game = gt.load("leduc_poker")
    runs = {b: _run(name, b, game) for b in (1, 4, 8)}
    for small, big in ((1, 4), (4, 8), (1, 8)):
        np.testing.assert_array_equal(runs[big].nash_conv[:small], runs[small].nash_conv)
        for a, b in zip(
            _host(runs[big].state, small), _host(runs[small].state, small), strict=True
        ):
            np.testing.assert_array_equal(a, b)
    assert len(np.unique(runs[8].nash_conv[:, -1])) > 1  # the seeds do differ


_TWO_DEVICES = """
import sys, jax, numpy as np, games_tensor as gt, jaxcfr
assert len(jax.devices()) == 2, jax.devices()
game = gt.load("leduc_poker")
out = {}
for name in %(solvers)r:
    solver = getattr(jaxcfr, name)()
    kwargs = {} if solver.needs_key else {"init_scale": 1.0}
    res = jaxcfr.run(solver, game, %(its)d, %(every)d, num_seeds=4, **kwargs)
    assert len(res.state.regrets.sharding.device_set) == 2
    out[name + "/nash_conv"] = res.nash_conv
    out[name + "/regrets"] = np.asarray(res.state.regrets)
    out[name + "/strategy_sum"] = np.asarray(res.state.strategy_sum)
np.savez(sys.argv[1], **out)
"""


def test_two_devices_match_one(tmp_path):
    """The batch of 4 sharded over 2 forced host devices (2 seeds each) gives the bits of
    the unsharded batch, for every solver."""
    code = textwrap.dedent(_TWO_DEVICES) % {
        "solvers": SOLVERS,
        "its": ITERATIONS,
        "every": EVAL_EVERY,
    }
    env = {
        **os.environ,
        "XLA_FLAGS": "--xla_force_host_platform_device_count=2",
        "JAX_PLATFORMS": "cpu",
    }
    path = tmp_path / "two.npz"
    subprocess.run([sys.executable, "-c", code, str(path)], check=True, env=env, timeout=600)
    two = np.load(path)
    game = gt.load("leduc_poker")
    for name in SOLVERS:
        one = _run(name, 4, game)
        np.testing.assert_array_equal(two[name + "/nash_conv"], one.nash_conv, err_msg=name)
        np.testing.assert_array_equal(two[name + "/regrets"], one.state.regrets, err_msg=name)
        np.testing.assert_array_equal(
            two[name + "/strategy_sum"], one.state.strategy_sum, err_msg=name
        )
