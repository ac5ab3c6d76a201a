"""The reproduction CLI: discovery, listing, bad input, and the report it writes."""

import numpy as np
import pytest

from experiments.reproduce import Context, Target, _cli, targets
from experiments.reproduce._stats import mean_ci95, win_rate_ci95


def test_targets_have_unique_prefixed_names():
    for name, target in targets().items():
        assert name == target.name
        assert name == name.lower() and " " not in name


def test_unknown_target_lists_valid_ones(capsys):
    with pytest.raises(SystemExit):
        _cli.main(["no-such-target", "--quick"])
    assert "unknown target" in capsys.readouterr().err


def test_key_out_of_range_is_refused(capsys):
    with pytest.raises(SystemExit):
        _cli.main(["all", "--key", str(2**32)])
    assert "--key" in capsys.readouterr().err


def test_help_states_every_default(capsys):
    with pytest.raises(SystemExit):
        _cli.main(["--help"])
    out = " ".join(capsys.readouterr().out.split())
    assert "(default: results/reproduce)" in out and "(default: 0)" in out
    assert "default: the paper's sizes" in out


def test_convergence_help_keeps_its_line_continuations():
    from experiments import convergence_cli

    assert "default.toml \\\n        --out results/default --processes 2" in convergence_cli.__doc__


def test_run_target_writes_report_with_header(tmp_path):
    target = Target("test-dummy", "A paper", "Fig. 0", lambda ctx: f"quick={ctx.quick}\n")
    report = _cli.run_target(target, Context(tmp_path / "d", quick=True), ["test-dummy"])
    text = report.read_text()
    assert text.startswith("# A paper: Fig. 0")
    assert "quick mode" in text and "quick=True" in text


def test_main_says_which_target_started_before_its_report(tmp_path, monkeypatch, capsys):
    seen = []

    def body(ctx):
        seen.append(capsys.readouterr().out)  # what the user saw while the target ran
        return "body\n"

    target = Target("test-dummy", "A paper", "Fig. 0", body)
    monkeypatch.setattr(_cli, "targets", lambda: {"test-dummy": target})
    assert _cli.main(["test-dummy", "--quick", "--out", str(tmp_path)]) == 0
    assert "[1/1] test-dummy (quick mode, key 0)" in seen[0] and "started" in seen[0]
    assert "report.md (" in capsys.readouterr().out


def test_confidence_intervals_by_hand():
    mean, half = mean_ci95([1.0, 3.0])  # t(0.975, 1) = 12.7062; sd = sqrt(2); /sqrt(2) -> 12.7062
    assert mean == 2.0 and half == pytest.approx(12.7062, rel=1e-4)
    rate, _ = win_rate_ci95([1.0, -1.0, 0.0, 2.0])  # 1 + 0 + 0.5 + 1 = 2.5 of 4
    assert rate == pytest.approx(62.5)


@pytest.mark.slow  # ~20 s: three compiles of an ISMCTS search and NashConv
def test_root_curve_resumed_from_its_checkpoint_equals_an_unbroken_one(tmp_path):
    """Fig. 3 root curves save the search state after every checkpoint; a rerun with
    more checkpoints continues from the saved one and gives the unbroken run's curve."""
    import jax

    import games_tensor as gt
    import jaxcfr
    from experiments.reproduce.oos import _root_curve

    game, bot, key = gt.load("kuhn_poker"), jaxcfr.ismcts("rm"), jax.random.key(3)
    whole, _ = _root_curve(game, bot, 2, [20, 50, 90], key)
    ckpt = tmp_path / "curve.npz"
    first, _ = _root_curve(game, bot, 2, [20, 50], key, ckpt=ckpt)
    resumed, _ = _root_curve(game, bot, 2, [20, 50, 90], key, ckpt=ckpt)
    np.testing.assert_array_equal(first, whole[:2])
    np.testing.assert_array_equal(resumed, whole)
    with pytest.raises(ValueError, match="not a prefix"):  # other checkpoints: refused
        _root_curve(game, bot, 2, [30, 60, 90], key, ckpt=ckpt)
    # states of another layout (as saved before the one statistics table: separate
    # [R, A] tables): a finished curve still reads back, going on is refused
    with np.load(ckpt) as data:
        saved = dict(data)
    stats = saved.pop("leaf0")
    old = {k: v for k, v in saved.items() if not k.startswith("leaf")}
    old.update(leaf0=stats[:, :, 0], leaf1=stats[:, :, 1], leaf2=stats[:, :, 2])
    old.update({f"leaf{int(k[4:]) + 2}": v for k, v in saved.items() if k.startswith("leaf")})
    np.savez(ckpt, **old)
    again, _ = _root_curve(game, bot, 2, [20, 50, 90], key, ckpt=ckpt)
    np.testing.assert_array_equal(again, whole)
    with pytest.raises(ValueError, match="another layout"):
        _root_curve(game, bot, 2, [20, 50, 90, 120], key, ckpt=ckpt)
