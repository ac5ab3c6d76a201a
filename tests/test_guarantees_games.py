"""Library guarantees for bad input to games_tensor (docs/guarantees.md, "Library"):
absurd sizes are refused from closed forms before anything is enumerated (measured
under a memory limit), non-finite payoffs and malformed arguments get a ValueError
naming the value and what is valid."""

import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import numpy as np
import pytest

import games_tensor as gt

ROOT = Path(__file__).resolve().parents[1]

# Absurd sizes of every game whose size grows with a parameter (the other parameters are
# bounded by range checks, see test_every_integer_parameter_is_bounded_or_estimated).
ABSURD = [
    ("liars_dice", {"faces": 10**6}),
    ("liars_dice", {"faces": 10**4}),
    ("liars_dice", {"dice0": 10**9}),
    ("liars_dice", {"dice0": 10**18, "dice1": 10**18, "faces": 10**18}),
    ("ii_goofspiel", {"num_cards": 10**6}),
    ("ii_goofspiel", {"num_cards": 10**9}),
    ("ii_goofspiel", {"num_cards": 10**6, "decide_last_card": False}),
    ("ii_goofspiel", {"num_cards": 30}),
]

_CHILD = textwrap.dedent(
    """
    import json, resource, sys
    limit = 2 * 2**30
    resource.setrlimit(resource.RLIMIT_AS, (limit, limit))
    import games_tensor as gt
    out = []
    for name, params in json.loads(sys.argv[1]):
        try:
            gt.load(name, **params)
            out.append("compiled")
        except gt.GameTooLargeError as exc:
            out.append(str(exc))
    # VmHWM: this process image's peak RSS (ru_maxrss would include the parent's at fork)
    hwm = [ln for ln in open("/proc/self/status") if ln.startswith("VmHWM:")]
    peak_mb = int(hwm[0].split()[1]) / 1024
    print(json.dumps({"messages": out, "peak_mb": peak_mb}))
    """
)


@pytest.mark.skipif(sys.platform != "linux", reason="RLIMIT_AS and /proc/self/status: Linux")
def test_absurd_sizes_refused_before_enumeration_under_a_memory_limit():
    """Under a 2 GiB address-space limit, every absurd size is refused with
    GameTooLargeError naming the estimate, the whole process peaking below 300 MB
    (Python + NumPy + JAX imports included), within a bounded time (the timeout)."""
    env = dict(os.environ, PYTHONPATH=str(ROOT), JAX_PLATFORMS="cpu")
    proc = subprocess.run(
        [sys.executable, "-c", _CHILD, json.dumps(ABSURD)],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert proc.returncode == 0, proc.stderr[-2000:]
    result = json.loads(proc.stdout.strip().splitlines()[-1])
    assert result["peak_mb"] < 300, result
    for (name, params), msg in zip(ABSURD, result["messages"], strict=True):
        assert msg != "compiled", (name, params)
        assert "histories" in msg and "max_histories=" in msg, msg
        assert "estimated" in msg, msg
        for key, value in params.items():
            assert f"{key}={value}" in msg, msg  # names the parameters


def test_estimates_stay_exact_where_they_were():
    """The closed forms still give the exact/documented counts for ordinary sizes."""
    assert gt.make_rules("ii_goofspiel", num_cards=6).estimated_histories() == 2_006_323
    assert gt.make_rules("liars_dice").estimated_histories() == 36 * 4096 * 2
    assert gt.make_rules("ii_goofspiel", num_cards=10**6).estimated_histories() == float("inf")


def test_every_integer_parameter_is_bounded_or_estimated():
    """Every integer parameter of every registered game, set to 10**9, is refused at once:
    by the game's range check (ValueError naming it) or by the size estimate. ``recall``,
    ``first_point`` and ``left_leaf`` (a payoff) do not change the tree's size."""
    unsized = {
        ("liars_dice", "recall"),
        ("ii_goofspiel", "first_point"),
        ("nonlocality", "left_leaf"),
    }
    seen = 0
    for name, params in gt.available().items():
        for param, default in params.items():
            if (name, param) in unsized or isinstance(default, bool):
                continue
            if not isinstance(default, int):
                continue
            seen += 1
            with pytest.raises(ValueError, match=param) as info:
                gt.load(name, **{param: 10**9})
            assert isinstance(info.value, gt.GameTooLargeError) or "must be" in str(info.value)
    assert seen >= 7  # liars_dice x3, ii_goofspiel, generic_poker x4


@pytest.mark.parametrize(
    "call, words",
    [
        (lambda: gt.load(["kuhn_poker"]), "name must be a string"),
        (lambda: gt.load(7), "name must be a string"),
        (lambda: gt.load("liars_dice", faces=[3]), "faces must be an integer"),
        (lambda: gt.load("liars_dice", faces="6"), "faces must be an integer"),
        (lambda: gt.load("kuhn_poker", max_histories=-1), "max_histories must be an integer"),
        (lambda: gt.load("kuhn_poker", max_histories=1e6), "max_histories must be an integer"),
        (lambda: gt.load("kuhn_poker", max_histories=None), "max_histories must be an integer"),
        (lambda: gt.load("kuhn_poker", max_histories="100"), "max_histories must be an integer"),
        (lambda: gt.load("kuhn_poker", max_histories=True), "max_histories must be an integer"),
        (lambda: gt.compile("kuhn_poker"), "Rules instance"),
        (lambda: gt.from_openspiel(123), "OpenSpiel game name"),
        (lambda: gt.load("nonlocality", left_leaf=1e39), "left_leaf=1e\\+39"),
        (lambda: gt.load("die_roll_poker", skew=1e308), "skew=1e\\+308"),
    ],
)
def test_bad_game_arguments_are_named(call, words):
    with pytest.raises(ValueError, match=words):
        call()


def test_huge_counts_do_not_overflow_the_message():
    """Astronomical estimates (beyond float) are formatted, not an OverflowError."""
    for name, params in [
        ("liars_dice", {"faces": 10**400}),
        ("liars_dice", {"dice1": 10**400}),
        ("ii_goofspiel", {"num_cards": 10**400}),
    ]:
        with pytest.raises(gt.GameTooLargeError, match="astronomical"):
            gt.load(name, **params)


def test_numpy_scalars_are_taken_as_python_values():
    a = gt.load("liars_dice", faces=np.int64(3))
    b = gt.load("liars_dice", faces=3)
    assert a.meta == b.meta and a.meta.params == b.meta.params
    assert isinstance(dict(a.meta.params)["faces"], int)


def test_non_finite_utilities_name_the_parameter():
    """A payoff beyond float32 is refused naming the game's parameters; the nan/inf
    parameter itself is refused by the game."""
    with pytest.raises(ValueError, match="not finite in float32.*left_leaf"):
        gt.load("nonlocality", left_leaf=1e39)
    with pytest.raises(ValueError, match="not finite.*skew"):
        gt.load("die_roll_poker", skew=1e308)
    with pytest.raises(ValueError, match="left_leaf must be a finite number"):
        gt.load("nonlocality", left_leaf=float("inf"))


def test_non_finite_utilities_fine_in_float64(x64):
    """1e39 is finite in float64: the same parameter compiles there."""
    game = gt.load("nonlocality", left_leaf=1e39)
    assert np.isfinite(game.meta.host["node_utility"]).all()


def test_tabular_policy_of_another_game_is_named():
    pyspiel = pytest.importorskip("pyspiel")
    from open_spiel.python import policy as os_policy

    kuhn = gt.from_openspiel("kuhn_poker")
    with pytest.raises(ValueError, match="not a policy of openspiel:kuhn_poker"):
        gt.from_tabular_policy(kuhn, os_policy.TabularPolicy(pyspiel.load_game("leduc_poker")))
