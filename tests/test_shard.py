"""A batch split over devices (``jaxcfr._shard``: ``shard_map``, each device its own rows)
gives every searcher and every match the result it has on one device.

Golden values: the same computation in a process with one CPU device (today's unsplit
code path). Each check runs the worker twice in fresh processes, with
``XLA_FLAGS=--xla_force_host_platform_device_count=1`` and ``=2`` (set before jax is
imported), and compares the arrays bit for bit; the 2-device process also asserts that
its outputs really are spread over 2 devices, so the test cannot pass by not
splitting. Default run (about 35 CPU seconds): a batched search state
(``jaxcfr.sharded_vmap(bot.search)``, an odd batch of 5 searchers, padded to 6) and
``jaxcfr.play`` on a compiled game (OOS vs ISMCTS-UCT on Kuhn, 9 matches: one chunk
padded to 10, and chunks of 4 with the aggregate method's ``collect``). Slow:
``jaxcfr.play`` on the step form of LD(1,1) (the host-driven engine; compiling its
searches takes about a minute).
"""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
from pathlib import Path

import jax
import numpy as np
import pytest
from forced_devices import run_worker

import games_tensor as gt
import jaxcfr
from jaxcfr import _shard

ROOT = Path(__file__).resolve().parents[1]

_WORKER = textwrap.dedent(
    """
    import json, sys
    import jax, jax.numpy as jnp, numpy as np
    import games_tensor as gt, games_tensor.step as gs, jaxcfr
    from jaxcfr.search import _match, compiler_options
    job = json.loads(sys.argv[1])
    n = job["devices"]
    assert jax.local_device_count() == n, jax.devices()
    out = {}

    def spread(x):  # on every device of this process
        return len(x.sharding.device_set) == n

    if job["part"] == "compiled":
        game = gt.load("kuhn_poker")
        bot = jaxcfr.oos("pst")
        for B in (5,):  # odd: padded to 6 on 2 devices, the pad dropped
            states = jax.vmap(lambda _: bot.init(game))(jnp.arange(B))
            keys = jax.random.split(jax.random.key(7), B)
            search = jax.jit(
                jaxcfr.sharded_vmap(bot.search, (None, 0, None, 0, None)),
                compiler_options=compiler_options(game),
            )
            res = search(game, states, jaxcfr.root_view(), keys, jnp.int32(40))
            for i, x in enumerate(jax.tree.leaves(res)):
                assert spread(x), (B, i, x.sharding)
                out[f"search|{B}|{i}"] = np.asarray(x)
        uct = jaxcfr.ismcts("uct")
        key = jax.random.key(3)
        out["play"] = jaxcfr.play(game, bot, uct, 9, 30, key)  # one chunk, padded to 10
        u, w = jaxcfr.play(game, bot, uct, 9, 30, key, collect=0, chunk_size=4)  # 3 chunks
        out["collect|u"], out["collect|w"] = u, w
        devs = _match.split_devices()
        chunk = _match._play_chunk(game, bot, uct, 30, jnp.arange(4), key, None, devs)
        assert spread(chunk), chunk.sharding
    else:
        game = gs.load("liars_dice", dice0=1, dice1=1)
        oos = jaxcfr.oos("pst", capacity=64)
        uct = jaxcfr.ismcts("uct", capacity=64)
        u, r = jaxcfr.play(game, oos, uct, 5, 20, jax.random.key(5))
        out["step|u"], out["step|r"] = u, r
        chunk = _match._play_chunk(
            game, oos, uct, 20, jnp.arange(4), jax.random.key(5), None, _match.split_devices()
        )
        assert all(spread(x) for x in chunk), [x.sharding for x in chunk]
    np.savez(sys.argv[2], **{k: np.asarray(v) for k, v in out.items()})
    """
)


def _run(tmp: Path, devices: int, part: str) -> dict:
    job = {"devices": devices, "part": part}
    return run_worker(_WORKER, job, tmp / f"{part}-{devices}.npz", devices)


def _same(one: dict, two: dict) -> None:
    assert one.keys() == two.keys() and one
    for k in one:
        np.testing.assert_array_equal(two[k], one[k], err_msg=f"2 devices vs 1: {k}")


def test_split_search_states_and_compiled_matches_equal_one_device(tmp_path):
    one, two = _run(tmp_path, 1, "compiled"), _run(tmp_path, 2, "compiled")
    _same(one, two)
    # the matches differ (the comparison is not of constants); neither the chunk size
    # nor collect changes them
    assert len(np.unique(one["play"])) > 1, one["play"]
    np.testing.assert_array_equal(one["collect|u"], one["play"])


@pytest.mark.slow  # two processes each compiling the step-form searches (~1 min each)
def test_split_step_form_matches_equal_one_device(tmp_path):
    _same(_run(tmp_path, 1, "step"), _run(tmp_path, 2, "step"))


def test_one_device_is_the_unsplit_function():
    f = lambda x: x + 1  # noqa: E731
    assert _shard.shard_batch(f, 0, jax.devices()[:1]) is f


@pytest.mark.parametrize("in_axes", [1, (0,), (0, 1), "batch"])
def test_bad_in_axes_raise_value_error_naming_it(in_axes):
    """The split path's check of in_axes (one device returns ``fn`` itself, so it is
    called directly: a 1-device process has no two distinct devices to split over)."""
    with pytest.raises(ValueError, match="in_axes"):
        _shard._check_axes(in_axes, 2)


def test_bad_devices_raise_value_error_naming_them():
    with pytest.raises(ValueError, match="devices"):
        jaxcfr.sharded_vmap(lambda x: x, 0, devices=jax.devices()[0])
    with pytest.raises(ValueError, match="devices"):
        rnd = jaxcfr.random_bot()
        jaxcfr.play(gt.load("kuhn_poker"), rnd, rnd, 1, 0, jax.random.key(0), devices=[])
    d = jax.devices()[0]
    with pytest.raises(ValueError, match="devices must be distinct"):
        jaxcfr.sharded_vmap(lambda x: x, 0, devices=[d, d])


# ------------------------------------------------ --host-devices (experiments/host_devices)
def test_host_devices_option_is_taken_off_the_command_line():
    from experiments import host_devices as hd

    assert hd.take(["--games", "ld", "--host-devices", "3", "-x"]) == (["--games", "ld", "-x"], 3)
    assert hd.take(["--host-devices=0"]) == ([], 0)
    assert hd.take(["--games", "ld"]) == (["--games", "ld"], None)
    for bad in (["--host-devices"], ["--host-devices", "two"], ["--host-devices=-1"]):
        with pytest.raises(SystemExit):
            hd.take(bad)


def test_host_devices_defaults_split_search_commands_only():
    from experiments import host_devices as hd

    for name in ("search", "step_bots", "search_step"):
        assert hd.default_for(name, []) == hd.cores()
    assert hd.default_for("reproduce", ["oos-fig4", "--quick"]) == hd.cores()
    # an option's value is not a target name (review: --out / --key turned the split off)
    assert hd.default_for("reproduce", ["oos-fig4", "--out", "x", "--key", "3"]) == hd.cores()
    assert hd.default_for("reproduce", ["oos-fig4-large", "--out=x"]) == hd.cores()
    assert hd.default_for("reproduce", ["oos-fig4", "rbp-fig2"]) == 0
    assert hd.default_for("reproduce", ["oos-fig3-root"]) == 0  # vmaps on one device
    for name in ("cfr", "mccfr", "convergence", "step_compile"):
        assert hd.default_for(name, []) == 0


def test_host_devices_keep_flags_already_set_and_refuse_after_jax_import(monkeypatch):
    from experiments import host_devices as hd

    set_already = f"{hd.COUNT}=3 {hd.EIGEN}=true"
    monkeypatch.setenv("XLA_FLAGS", set_already)
    assert hd.apply(2) == set_already  # the environment wins; nothing to change
    monkeypatch.setenv("XLA_FLAGS", "")
    assert hd.apply(0) == ""  # 0: no flag
    with pytest.raises(RuntimeError, match="already imported"):
        hd.apply(2)  # jax is imported in this process: the flag would be ignored
    assert hd.apply(2, explicit=False) == ""  # a default in-process: left out, no error
    monkeypatch.setenv("XLA_FLAGS", f"{hd.COUNT}=1")
    assert hd.apply(2) == f"{hd.COUNT}=1"  # Eigen's threads stay on with the user's count


@pytest.mark.parametrize("command,count", [("search", 2), ("cfr", 0)])
def test_host_devices_set_before_jax_starts(command, count):
    """In a fresh process, ``setup`` before ``import jax`` gives the device count."""
    code = (
        "import sys; from experiments import host_devices as hd; "
        f"rest = hd.setup({command!r}, ['--host-devices', '{count}'] if {count} else []); "
        "import jax; print(jax.local_device_count(), hd.cores())"
    )
    env = {**os.environ, "JAX_PLATFORMS": "cpu", "PYTHONPATH": str(ROOT)}
    env.pop("XLA_FLAGS", None)
    proc = subprocess.run(
        [sys.executable, "-c", code], env=env, cwd=ROOT, capture_output=True, text=True
    )
    assert proc.returncode == 0, proc.stderr[-2000:]
    got, cores = map(int, proc.stdout.split())
    assert got == (count or (cores if command == "search" else 1))
