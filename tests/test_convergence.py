"""The convergence study (experiments/convergence.py, its command line convergence_cli.py
and its output folder study_store.py): end to end on Kuhn, resume, refusal of a different
study, bad input, and the rate estimate."""

import json

import matplotlib.image
import numpy as np
import pytest

from experiments import convergence, convergence_cli, plots, rates, report
from experiments import study_config as sc
from experiments import study_store as store
from experiments.algorithms import ConfigError

TINY = [
    "--game",
    "kuhn_poker",
    "--algorithms",
    "cfr,cfr_plus",
    "--seeds",
    "2",
    "--iterations",
    "40",
    "--eval-every",
    "10",
    "--bootstrap",
    "200",
    "--no-progress",
]
FILES = [
    "config.json",
    "results.json",
    "timing.json",
    "environment.json",
    "report.md",
    report.PLOT_ITERATIONS,
    report.PLOT_SECONDS,
    "runs/cfr.csv",
    "runs/cfr.npz",
    "runs/cfr_plus.csv",
    "runs/cfr_plus.npz",
]


@pytest.fixture(scope="module")
def study(tmp_path_factory):
    """The tiny study, run once through the command line."""
    out = tmp_path_factory.mktemp("study") / "kuhn"
    assert convergence_cli.main(TINY + ["--out", str(out)]) == 0
    return out


def _tiny_config():
    args = convergence_cli.build_parser().parse_args(TINY + ["--out", "unused"])
    return convergence_cli.config_from_args(args)


def _report_rows(text):
    """Rows of the report's results table: label -> cells."""
    section = text.split("## Results", 1)[1].split("##", 1)[0]
    rows = [line for line in section.splitlines() if line.startswith("|")][2:]
    return {
        cells[0]: cells for cells in ([c.strip() for c in r.strip("|").split("|")] for r in rows)
    }


def test_end_to_end(study):
    for name in FILES:
        assert (study / name).is_file(), name
    for png in (report.PLOT_ITERATIONS, report.PLOT_SECONDS):
        image = matplotlib.image.imread(study / png)
        assert image.shape[:2] == (plots.FIGSIZE[1] * plots.DPI, plots.FIGSIZE[0] * plots.DPI)
    results = json.loads((study / "results.json").read_text())
    assert results["complete"] and all(a["complete"] for a in results["algorithms"])
    assert [a["label"] for a in results["algorithms"]] == ["cfr", "cfr_plus"]
    for a in results["algorithms"]:
        assert a["iterations"] == [10, 20, 30, 40]
        assert np.asarray(a["exploitability"]).shape == (2, 4)
        assert a["seeds_vary"] == "initial regrets"
    text = (study / "report.md").read_text()
    assert "Status: complete" in text and "INCOMPLETE" not in text
    rows = _report_rows(text)
    assert set(rows) == {"cfr", "cfr_plus"}
    for a in results["algorithms"]:
        row, final, rate = rows[a["label"]], a["final"], a["rate"]
        assert row[1] == "complete" and int(row[2]) == 40
        assert float(row[3]) == pytest.approx(final["median"], rel=1e-3)
        q25, q75 = (float(x) for x in row[4].split(" - "))
        assert (q25, q75) == (
            pytest.approx(final["q25"], rel=1e-3),
            pytest.approx(final["q75"], rel=1e-3),
        )
        assert float(row[5]) == pytest.approx(rate["slope"], abs=1e-3)
        lo, hi = (float(x) for x in row[6].strip("[]").split(","))
        assert (lo, hi) == (
            pytest.approx(rate["ci_low"], abs=1e-3),
            pytest.approx(rate["ci_high"], abs=1e-3),
        )
        assert -3 < rate["slope"] < 0
    # the curves CSV holds the same numbers as results.json
    csv = np.loadtxt(study / "runs" / "cfr.csv", delimiter=",", skiprows=1)
    cfr = results["algorithms"][0]
    np.testing.assert_array_equal(csv[:, 0], cfr["iterations"])
    np.testing.assert_allclose(csv[:, 3:].T, cfr["exploitability"], rtol=1e-6)
    # the written config reruns the same study
    written = json.loads((study / "config.json").read_text())
    assert sc.from_dict(written).to_dict() == written == _tiny_config().to_dict()
    env = json.loads((study / "environment.json").read_text())
    assert env["sessions"][-1]["status"] == "complete"
    assert {"jax", "jaxlib", "numpy", "jaxcfr"} <= set(env["sessions"][-1]["versions"])


def test_resume_after_interrupt_gives_identical_results(study, tmp_path):
    config, out = _tiny_config(), tmp_path / "resumed"

    def stop(label, iteration):
        raise KeyboardInterrupt

    with pytest.raises(KeyboardInterrupt):
        convergence.run_study(config, out, progress=False, after_chunk=stop)
    partial = json.loads((out / "results.json").read_text())
    assert not partial["complete"]
    assert [(a["complete"], a["iterations_done"]) for a in partial["algorithms"]] == [
        (False, 10),
        (False, 0),
    ]
    text = (out / "report.md").read_text()
    assert "Status: INCOMPLETE" in text and "Status: complete" not in text
    assert "complete" not in [row[1] for row in _report_rows(text).values()]

    convergence.run_study(config, out, progress=False)
    assert (out / "results.json").read_bytes() == (study / "results.json").read_bytes()
    sessions = json.loads((out / "environment.json").read_text())["sessions"]
    assert [s["status"] for s in sessions] == ["interrupted", "complete"]
    timing = json.loads((out / "timing.json").read_text())["algorithms"]["cfr"]
    assert timing["session"] == [0, 1, 1, 1] and np.all(np.diff(timing["seconds"]) >= 0)


def test_refuses_a_different_study_in_the_same_folder(study, capsys):
    before = {p: (study / p).read_bytes() for p in FILES}
    assert convergence_cli.main(TINY + ["--seeds", "3", "--out", str(study)]) == 2
    err = capsys.readouterr().err
    assert "different study" in err and "seeds: 2 -> 3" in err
    assert {p: (study / p).read_bytes() for p in FILES} == before


def test_refuses_a_non_study_folder(tmp_path, capsys):
    (tmp_path / "notes.txt").write_text("mine")
    assert convergence_cli.main(TINY + ["--out", str(tmp_path)]) == 2
    assert "holds no study" in capsys.readouterr().err
    assert sorted(p.name for p in tmp_path.iterdir()) == ["notes.txt"]


@pytest.mark.parametrize(
    "args, words",
    [
        (
            ["--game", "nope", "--algorithms", "cfr"],
            ["unknown game 'nope'", "kuhn_poker", "leduc_poker"],
        ),
        (
            ["--game", "kuhn_poker", "--algorithms", "cfr,nope"],
            ["unknown algorithm 'nope'", "cfr", "cfr_plus", "dcfr"],
        ),
        (["--game", "kuhn_poker", "--algorithms", "cfr,dcfr:alpha=-1"], ["alpha"]),
        (["--game", "kuhn_poker", "--algorithms", "cfr:foo=1"], ["foo", "alternating"]),
        (
            ["--game", "leduc_poker", "--game-params", "sutis=1", "--algorithms", "cfr"],
            ["sutis", "suits"],
        ),
        (["--game", "kuhn_poker", "--algorithms", "cfr", "--seeds", "0"], ["seeds"]),
        (
            [
                "--game",
                "kuhn_poker",
                "--algorithms",
                "cfr",
                "--iterations",
                "10",
                "--eval-every",
                "20",
            ],
            ["eval_every"],
        ),
        (["--game", "kuhn_poker", "--algorithms", "cfr:iterations=-3"], ["iterations"]),
        (["--game", "kuhn_poker", "--algorithms", "cfr,cfr"], ["label"]),
        (["--game", "kuhn_poker", "--algorithms", "cfr:label=x.prev"], ["'.prev'"]),
        (  # inf in float32: every regret NaN, a "complete" study at the uniform policy
            ["--game", "kuhn_poker", "--algorithms", "cfr", "--init-scale", "1e308"],
            ["init_scale (algorithm 'cfr') must be a number >= 0.0 and <= 3.4028235e+38"],
        ),
        (  # 10**1e308 overflowed in the rate fit after the whole study had run
            ["--game", "kuhn_poker", "--algorithms", "cfr", "--rate-decades", "1e308"],
            ["rate_decades must be a number > 0.0 and <= 10.0, got 1e+308"],
        ),
    ],
)
def test_bad_input_is_named_and_nothing_is_written(args, words, tmp_path, capsys):
    out = tmp_path / "out"
    assert convergence_cli.main(args + ["--out", str(out), "--no-progress"]) == 2
    err = capsys.readouterr().err
    for word in words:
        assert word in err
    assert not out.exists()


def test_config_file_toml_and_json(tmp_path):
    toml = tmp_path / "study.toml"
    toml.write_text(
        'game = "kuhn_poker"\nseeds = 2\niterations = 40\neval_every = 10\nbootstrap = 200\n'
        '[[algorithms]]\nname = "cfr"\n[[algorithms]]\nname = "cfr_plus"\n'
    )
    from_toml = sc.from_dict(sc.read_file(toml))
    assert from_toml.to_dict() == _tiny_config().to_dict()
    js = tmp_path / "study.json"
    js.write_text(json.dumps(from_toml.to_dict()))
    assert sc.from_dict(sc.read_file(js)) == from_toml
    # flags override the file's top-level keys; per-algorithm settings win over them
    args = convergence_cli.build_parser().parse_args(
        ["--config", str(toml), "--seeds", "3", "--out", "x"]
    )
    assert convergence_cli.config_from_args(args).seeds == 3
    bad = tmp_path / "bad.toml"
    bad.write_text('game = "kuhn_poker"\nsedes = 3\nalgorithms = ["cfr"]\n')
    with pytest.raises(ConfigError, match="sedes"):
        sc.from_dict(sc.read_file(bad))


def test_algorithm_entries():
    cfg = sc.from_dict(
        {
            "game": "kuhn_poker",
            "algorithms": [
                "dcfr",
                {"name": "dcfr", "params": {"alpha": 2.0}},
                {"name": "not_an_algorithm_yet", "optional": True},
                {"name": "cfr", "iterations": 100, "eval_every": 5, "init_scale": 0.0},
            ],
        }
    )
    assert [a.label for a in cfg.algorithms] == ["dcfr", "dcfr(alpha=2.0)", "cfr"]
    assert cfg.algorithms[1].params == {
        "alpha": 2.0,
        "beta": 0.0,
        "gamma": 2.0,
        "alternating": True,
        "keying": "auto",
        "chance_sampling": False,
        "full_average": False,
    }
    assert cfg.skipped == ("not_an_algorithm_yet",)
    assert (cfg.algorithms[2].iterations, cfg.algorithms[2].eval_every) == (100, 5)
    assert cfg.algorithms[0].eval_every == sc.DEFAULTS["iterations"] // sc.EVAL_POINTS
    parsed = sc.parse_algorithms("cfr,outcome_sampling:epsilon=0.4:iterations=1000:label=os")
    assert parsed == [
        {"name": "cfr"},
        {"name": "outcome_sampling", "iterations": 1000, "label": "os", "params": {"epsilon": 0.4}},
    ]


def test_rate_recovers_a_known_slope():
    t = np.arange(1, 101) * 100
    rng = np.random.default_rng(1)
    curves = 3.0 * t[None, :] ** -1.0 * np.exp(rng.normal(0, 0.05, (16, t.size)))
    rate = rates.convergence_rate(t, curves, decades=1.0, num_bootstrap=500)
    assert rate.slope == pytest.approx(-1.0, abs=0.03)
    assert rate.ci_low < -1.0 < rate.ci_high and rate.ci_high - rate.ci_low < 0.1
    assert (rate.fit_from, rate.fit_to, rate.points) == (1000, 10000, 91)
    assert rates.convergence_rate(t, curves, decades=1.0, num_bootstrap=500) == rate  # reproducible
    one = rates.convergence_rate(t, curves[:1])
    assert one.ci_low == pytest.approx(one.slope) == pytest.approx(one.ci_high)
    assert rates.convergence_rate(t[:1], curves[:, :1]) is None


def test_refuses_a_folder_another_study_is_running_in(study, tmp_path, capsys):
    before = {p: (study / p).read_bytes() for p in FILES}
    with store.lock(study):  # flock: a second open file description is refused, even here
        assert convergence_cli.main(TINY + ["--out", str(study)]) == 2
        assert "another process" in capsys.readouterr().err
    assert {p: (study / p).read_bytes() for p in FILES} == before
    # two different studies starting in one new folder: the second is refused, untouched
    out = tmp_path / "new"
    out.mkdir()
    with store.lock(out):
        assert convergence_cli.main(TINY + ["--seeds", "3", "--out", str(out)]) == 2
        assert "another process" in capsys.readouterr().err
        assert [p.name for p in out.iterdir()] == [store.LOCK]
    assert not (out / store.LOCK).exists()


def test_sampling_solver_resumes_identically(tmp_path):
    import jaxcfr

    if getattr(jaxcfr, "outcome_sampling", None) is None:
        pytest.skip("jaxcfr does not export outcome_sampling")
    config = sc.from_dict(
        {
            "game": "kuhn_poker",
            "seeds": 2,
            "iterations": 300,
            "eval_every": 100,
            "bootstrap": 50,
            "algorithms": ["outcome_sampling"],
        }
    )

    def stop(label, iteration):
        raise KeyboardInterrupt

    convergence.run_study(config, tmp_path / "a", progress=False)
    with pytest.raises(KeyboardInterrupt):
        convergence.run_study(config, tmp_path / "b", progress=False, after_chunk=stop)
    convergence.run_study(config, tmp_path / "b", progress=False)
    a, b = ((tmp_path / d / "results.json").read_bytes() for d in "ab")
    assert a == b
    result = json.loads(a)["algorithms"][0]
    assert result["seeds_vary"] == "sampling"
    curves = np.asarray(result["exploitability"])
    assert not np.array_equal(curves[0], curves[1])  # the seeds differ


# ---------------------------------------------------------------- bad input and interrupted work
# (issues 16 and 17; the guarantees are listed in docs/guarantees.md, "Convergence studies")
import contextlib  # noqa: E402
import errno  # noqa: E402
import os  # noqa: E402
import shutil  # noqa: E402
import signal  # noqa: E402
import subprocess  # noqa: E402
import sys  # noqa: E402
from pathlib import Path  # noqa: E402

import jax  # noqa: E402

import games_tensor as gt  # noqa: E402
import jaxcfr  # noqa: E402
from experiments import study_memory as memory  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]
KUHN = ["--game", "kuhn_poker", "--algorithms", "cfr", "--no-progress"]


def _copy(study, tmp_path):
    out = tmp_path / "copy"
    shutil.copytree(study, out)
    return out


def _curves(path):
    """Iteration and per-seed columns of a curves CSV (the time columns left out)."""
    table = np.loadtxt(path, delimiter=",", skiprows=1, ndmin=2)
    return np.concatenate([table[:, :1], table[:, 3:]], axis=1)


def _assert_same_study(out, study):
    assert (out / "results.json").read_bytes() == (study / "results.json").read_bytes()
    for slug in ("cfr", "cfr_plus"):
        np.testing.assert_array_equal(
            _curves(out / "runs" / f"{slug}.csv"), _curves(study / "runs" / f"{slug}.csv")
        )
    assert not list(out.rglob("*.tmp")) and not (out / store.LOCK).exists()


def _main(args, capsys):
    """(exit code, stdout + stderr) of the command line."""
    code = convergence_cli.main(args)
    captured = capsys.readouterr()
    return code, captured.out + captured.err


@pytest.mark.parametrize(
    "key, ok", [("4294967295", True), ("4294967296", False), ("99999999999999999999", False)]
)
def test_prng_key_range(key, ok, tmp_path, capsys):
    """PRNGKey keeps 32 bits without x64: 2**32 would silently be key 0, so it is refused."""
    args = convergence_cli.build_parser().parse_args(KUHN + ["--key", key, "--out", "x"])
    if ok:
        assert convergence_cli.config_from_args(args).key == int(key)
        return
    code, text = _main(KUHN + ["--key", key, "--out", str(tmp_path / "o")], capsys)
    assert code == 2 and "key must be an integer in [0, 4294967295]" in text and key in text
    assert not (tmp_path / "o").exists()
    study_file = tmp_path / "s.toml"
    study_file.write_text('game = "kuhn_poker"\nkey = 1099511627776\nalgorithms = ["cfr"]\n')
    code, text = _main(["--config", str(study_file), "--out", str(tmp_path / "o")], capsys)
    assert code == 2 and "key must be an integer in [0, 4294967295], got 1099511627776" in text


@pytest.mark.parametrize(
    "content, words",
    [
        (None, ["is a folder", "config.json"]),  # --config <directory>
        (bytes(range(256)) * 4, ["not UTF-8 text", "byte 0x80"]),
        ('game = "kuhn_poker"  # café\nalgorithms = ["cfr"]\n'.encode("latin-1"), ["0xe9"]),
        (b'game = "kuhn_poker"\x00\nalgorithms = ["cfr"]\n', ["NUL"]),
        (b'game = "kuhn_poker"\niterations = 1e30\nalgorithms = ["cfr"]\n', ["iterations"]),
        (
            b'game = "kuhn_poker"\nalgorithms = [{name = ["cfr"]}]\n',
            ["algorithms[0].name must be an algorithm name (string), got ['cfr']"],
        ),
        (
            b'game = "kuhn_poker"\n[[algorithms]]\nname = "cfr"\noptional = "yes"\n',
            ["optional (algorithm 'cfr') must be true or false, got 'yes'"],
        ),
    ],
)
def test_bad_study_files_are_named(content, words, tmp_path, capsys):
    path = tmp_path / "study.toml"
    if content is None:
        path.mkdir()
    else:
        path.write_bytes(content)
    code, text = _main(["--config", str(path), "--out", str(tmp_path / "o")], capsys)
    assert code == 2 and "Traceback" not in text
    assert all(w in text for w in words), text
    if content is not None and b"1e30" in content:
        assert "iterations must be an integer in [1, 2147483647], got 1e+30" in text
    assert not (tmp_path / "o").exists()


@pytest.mark.parametrize("text", ['"a string"', "[1, 2]", "[" * 100000])
def test_json_study_file_that_is_not_an_object(text, tmp_path, capsys):
    path = _write(tmp_path / "study.json", text)
    code, out = _main(["--config", str(path), "--out", str(tmp_path / "o")], capsys)
    assert code == 2 and str(path) in out and "Traceback" not in out


def test_study_files_with_a_byte_order_mark_are_read(tmp_path):
    toml = 'game = "kuhn_poker"\nseeds = 3\nalgorithms = ["cfr"]\n'
    (tmp_path / "a.toml").write_bytes(toml.encode("utf-8-sig"))
    (tmp_path / "b.json").write_bytes(
        json.dumps({"game": "kuhn_poker", "seeds": 3, "algorithms": ["cfr"]}).encode("utf-8-sig")
    )
    expected = sc.from_dict(sc.read_file(_write(tmp_path / "c.toml", toml)))
    for name in ("a.toml", "b.json"):
        assert sc.from_dict(sc.read_file(tmp_path / name)) == expected


def _write(path, text):
    path.write_text(text)
    return path


def test_output_path_under_a_file_or_unwritable(tmp_path, capsys, monkeypatch):
    (tmp_path / "f").write_text("x")
    code, text = _main(KUHN + ["--out", str(tmp_path / "f" / "sub")], capsys)
    assert code == 2 and "is a file, not a folder" in text
    code, text = _main(KUHN + ["--out", str(tmp_path / "f")], capsys)
    assert code == 2 and "exists and is not a folder" in text
    # an existing folder this process may not write in (root ignores chmod: injected)
    out = tmp_path / "ro"
    out.mkdir()
    real_open = os.open

    def deny(path, *args, **kwargs):
        if str(path).startswith(str(out)):
            raise PermissionError(errno.EACCES, os.strerror(errno.EACCES), str(path))
        return real_open(path, *args, **kwargs)

    monkeypatch.setattr(os, "open", deny)
    code, text = _main(KUHN + ["--out", str(out)], capsys)
    assert code == 2 and f"cannot write in {out} (Permission denied" in text
    monkeypatch.undo()
    if os.geteuid() != 0:  # the real thing, where chmod binds
        out.chmod(0o555)
        try:
            code, text = _main(KUHN + ["--out", str(out / "sub")], capsys)
            assert code == 2 and "cannot be created (Permission denied)" in text
        finally:
            out.chmod(0o755)


@pytest.mark.parametrize("name", ["config.json", "environment.json"])
@pytest.mark.parametrize("garbage", [b"\x00\xff{not json", b"[1, 2]"])
def test_corrupted_study_json_is_named(name, garbage, study, tmp_path, capsys):
    out = _copy(study, tmp_path)
    (out / name).write_bytes(garbage)
    before = {p: (out / p).read_bytes() for p in FILES}
    code, text = _main(TINY + ["--out", str(out)], capsys)
    assert code == 2 and f"{out / name} is corrupted" in text and "Traceback" not in text
    assert {p: (out / p).read_bytes() for p in FILES} == before


def test_stale_or_missing_csv_is_rewritten_from_the_checkpoint(study, tmp_path, capsys):
    out = _copy(study, tmp_path)
    (out / "runs" / "cfr.csv").unlink()
    (out / "runs" / "cfr_plus.csv").write_text("iteration,seconds\n10,garbage\n")
    assert convergence_cli.main(TINY + ["--out", str(out)]) == 0
    for slug in ("cfr", "cfr_plus"):  # the CSV is derived from the checkpoint: same bytes
        csv = f"runs/{slug}.csv"
        assert (out / csv).read_bytes() == (study / csv).read_bytes()


def test_interrupt_between_checkpoint_and_csv(study, tmp_path, monkeypatch):
    """Ctrl-C right after a checkpoint: the CSV still ends up with every checkpointed row
    (rewritten on the way out and on resume), and the resumed study is identical."""
    real = store.write_csv
    calls = []

    def interrupted(path, run):
        calls.append(path.name)
        if len(calls) == 2:  # cfr's second chunk: checkpoint saved, CSV not yet written
            raise KeyboardInterrupt
        real(path, run)

    monkeypatch.setattr(store, "write_csv", interrupted)
    out = tmp_path / "o"
    with pytest.raises(KeyboardInterrupt):
        convergence.run_study(_tiny_config(), out, progress=False)
    monkeypatch.undo()
    assert _curves(out / "runs" / "cfr.csv")[:, 0].tolist() == [10, 20]
    convergence.run_study(_tiny_config(), out, progress=False)
    _assert_same_study(out, study)


def _flip_byte(path):
    data = bytearray(path.read_bytes())
    data[len(data) // 2] ^= 0x10
    path.write_bytes(bytes(data))


def _edit_curves(path):
    """What a hand edit does: change a curve value and save the file again."""
    with np.load(path) as z:
        data = {k: z[k] for k in z.files}
    data["nash_conv"] = data["nash_conv"] * 0.5
    with open(path, "wb") as f:
        np.savez(f, **data)


@pytest.mark.parametrize(
    "damage",
    [
        lambda p: p.write_bytes(p.read_bytes()[: p.stat().st_size // 2]),  # truncated
        _flip_byte,
        _edit_curves,
        lambda p: p.write_bytes(b""),
    ],
    ids=["truncated", "bit-flipped", "hand-edited", "empty"],
)
def test_damaged_checkpoint_is_detected_and_its_chunk_recomputed(damage, study, tmp_path, capsys):
    out = _copy(study, tmp_path)
    damage(out / "runs" / "cfr.npz")
    code, text = _main(TINY + ["--out", str(out)], capsys)
    assert code == 0, text
    assert "runs/cfr.npz is damaged" in text and "at iteration 30 (the lost chunk" in text
    _assert_same_study(out, study)


def test_both_checkpoints_damaged_restarts_the_algorithm(study, tmp_path, capsys):
    out = _copy(study, tmp_path)
    _edit_curves(out / "runs" / "cfr.npz")
    _flip_byte(out / "runs" / "cfr.prev.npz")
    code, text = _main(TINY + ["--out", str(out)], capsys)
    assert code == 0 and "no usable checkpoint, cfr restarts from iteration 0" in text
    _assert_same_study(out, study)


def test_disk_full_is_a_clear_error_and_the_study_resumes(study, tmp_path, capsys, monkeypatch):
    real = store._atomic
    writes = []

    @contextlib.contextmanager
    def full_disk(path):
        writes.append(path.name)
        with real(path) as tmp:
            if len(writes) > 5:  # config, environment, cfr@10 + csv, cfr@20, then full
                tmp.write_bytes(b"partial")
                raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC), str(tmp))
            yield tmp

    monkeypatch.setattr(store, "_atomic", full_disk)
    out = tmp_path / "o"
    code, text = _main(TINY + ["--out", str(out)], capsys)
    monkeypatch.undo()
    assert code == 1 and "No space left on device" in text and "Traceback" not in text
    assert "run the same command again to resume" in text
    assert not list(out.rglob("*.tmp")) and not (out / store.LOCK).exists()
    assert convergence_cli.main(TINY + ["--out", str(out)]) == 0
    _assert_same_study(out, study)


def test_memory_is_estimated_before_the_study_runs(tmp_path, capsys, monkeypatch):
    leduc = ["--game", "leduc_poker", "--algorithms", "cfr", "--iterations", "20"]
    leduc += ["--eval-every", "10", "--no-progress", "--out", str(tmp_path / "o")]
    monkeypatch.setattr(memory, "device_available", lambda: 6 << 30)  # a 6 GiB machine
    monkeypatch.setattr(memory, "host_available", lambda: 6 << 30)
    for seeds in ("150000", "1000000"):
        code, text = _main(leduc + ["--seeds", seeds], capsys)
        assert code == 2 and f"seeds = {seeds}: cfr on leduc_poker would need about" in text
        # Leduc's CFR state is 33,700 bytes per seed; ~7 of them per seed fit ~27,000 in 6 GiB
        fit = int(text.split("use at most ")[1].split()[0])
        assert "KiB per seed" in text and 20_000 < fit < 30_000
    code, text = _main(KUHN + ["--bootstrap", "1000000000", "--out", str(tmp_path / "o")], capsys)
    assert code == 2 and "bootstrap = 1000000000" in text and "GiB" in text
    assert not (tmp_path / "o").exists()


def test_a_run_the_library_stops_is_a_clear_error(tmp_path, capsys, monkeypatch):
    """jaxcfr stops a run whose state became NaN or inf (FloatingPointError) or refuses a
    batch (ValueError): one line, the outputs so far written and marked incomplete."""
    for exc, code in (
        (FloatingPointError("cfr: NaN regrets at iterations 11-20"), 1),
        (ValueError("a batch of 2 runs needs an estimated 9 GiB"), 2),
    ):

        def stop(*args, exc=exc, **kwargs):
            raise exc

        monkeypatch.setattr(jaxcfr, "run", stop)
        out = tmp_path / type(exc).__name__
        got, text = _main(TINY + ["--out", str(out)], capsys)
        assert got == code and f"error: {exc}" in text and "Traceback" not in text
        assert json.loads((out / "results.json").read_text())["complete"] is False
        sessions = json.loads((out / "environment.json").read_text())["sessions"]
        assert sessions[-1]["status"] == "failed"


@pytest.mark.parametrize(
    "name", ["kuhn_poker", pytest.param("leduc_poker", marks=pytest.mark.slow)]
)
def test_memory_estimate_covers_the_compiled_chunk(name):
    """The per-seed estimate is at least XLA's own account of a vmapped chunk (state in and
    out, temporaries) at 64 seeds."""
    game, solver, seeds = gt.load(name), jaxcfr.cfr(), 64

    def chunk(state):
        state = jax.lax.fori_loop(0, 10, lambda _, s: solver.update(game, s), state)
        return state, jaxcfr.nash_conv(game, jaxcfr.average_policy(game, state))

    batched = jax.vmap(lambda _: solver.init(game))(np.arange(seeds))
    stats = jax.jit(jax.vmap(chunk)).lower(batched).compile().memory_analysis()
    xla = stats.argument_size_in_bytes + stats.output_size_in_bytes + stats.temp_size_in_bytes
    per_seed = memory.batch_bytes(solver, game, 2) - memory.batch_bytes(solver, game, 1)
    assert xla <= memory.batch_bytes(solver, game, seeds) and seeds * per_seed <= 3 * xla


def test_memory_estimate_uses_the_library_estimate_when_there_is_one(monkeypatch):
    game, solver = gt.load("kuhn_poker"), jaxcfr.cfr()
    state = memory.state_bytes(solver, game)
    monkeypatch.setattr(jaxcfr, "estimate_run_memory", lambda s, g, b: 1000 + 5 * b, raising=False)
    assert memory.batch_bytes(solver, game, 10) == 1000 + 50 + 10 * state  # + host copy


LOCK_WORKER = """
import os, sys, time
from pathlib import Path
from experiments import study_store as store
out, marker, n = Path(sys.argv[1]), Path(sys.argv[2]), int(sys.argv[3])
ready = marker.with_name("ready")
ready.mkdir(exist_ok=True)
(ready / str(os.getpid())).touch()
while len(os.listdir(ready)) < 2:  # start together
    time.sleep(0.01)
taken = overlaps = 0
while taken < n:
    try:
        with store.lock(out):
            try:
                os.close(os.open(marker, os.O_CREAT | os.O_EXCL | os.O_WRONLY))
            except FileExistsError:
                overlaps += 1
                continue
            os.sched_yield()
            os.unlink(marker)
            taken += 1
    except store.StudyError:
        os.sched_yield()
print(taken, overlaps)
"""


def test_study_lock_is_exclusive_across_processes(tmp_path):
    out, marker = tmp_path / "o", tmp_path / "inside"
    out.mkdir()
    procs = [
        subprocess.Popen(
            [sys.executable, "-c", LOCK_WORKER, str(out), str(marker), "1000"],
            cwd=ROOT,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        for _ in range(2)
    ]
    try:
        results = [p.communicate(timeout=240) for p in procs]
    finally:
        for p in procs:
            p.kill()
    for (stdout, stderr), p in zip(results, procs, strict=True):
        assert p.returncode == 0, stderr
        # 1000 entries each, never two inside together (the lock this replaced, a pid file
        # taken over when empty, let them overlap thousands of times in this very test)
        assert stdout.split() == ["1000", "0"]
    assert not (out / store.LOCK).exists()
    # a lock file nobody holds (empty, or naming a live pid) is not a lock
    for content in ("", str(os.getppid())):
        (out / store.LOCK).write_text(content)
        with store.lock(out):
            assert (out / store.LOCK).read_text() == str(os.getpid())


KILL_WORKER = """
import os, signal, sys
from experiments import convergence_cli, study_store as store
target, nth = sys.argv[1], int(sys.argv[2])
seen = []
real_csv = store.write_csv
def write_csv(path, run):  # SIGKILL just before the nth write of CSV target
    if path.name == target:
        seen.append(path.name)
        if len(seen) == nth:
            os.kill(os.getpid(), signal.SIGKILL)
    real_csv(path, run)
store.write_csv = write_csv
sys.exit(convergence_cli.main(sys.argv[3:]))
"""


def _killed_at(target, nth, out):
    proc = subprocess.run(
        [sys.executable, "-c", KILL_WORKER, target, str(nth), *TINY, "--out", str(out)],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=240,
    )
    assert proc.returncode == -signal.SIGKILL, proc.stderr


def test_study_killed_between_checkpoint_and_csv_resumes_identically(study, tmp_path):
    """SIGKILL (no cleanup at all) after a checkpoint, before its CSV: the resumed study is
    identical to the uninterrupted one, CSV included. (Random moments: the slow test.)"""
    out = tmp_path / "o"
    _killed_at("cfr.csv", 2, out)  # cfr at 20: checkpoint saved, CSV one row short
    assert (out / "runs" / "cfr.csv").read_text().count("\n") == 2
    convergence.run_study(_tiny_config(), out, progress=False)
    _assert_same_study(out, study)
    sessions = json.loads((out / "environment.json").read_text())["sessions"]
    assert [s["status"] for s in sessions] == ["killed", "complete"]


def test_killed_between_the_renames_of_a_checkpoint(study, tmp_path, capsys):
    """What a kill between ``npz -> prev.npz`` and ``tmp -> npz`` leaves (the temporary
    and the previous checkpoint, no checkpoint): the lost chunk is recomputed."""
    out = _copy(study, tmp_path)
    runs = out / "runs"
    os.replace(runs / "cfr_plus.npz", runs / "cfr_plus.npz.tmp")
    code, text = _main(TINY + ["--out", str(out)], capsys)
    assert code == 0 and "resuming cfr_plus at iteration 30/40" in text
    _assert_same_study(out, study)


@pytest.mark.slow
def test_study_killed_at_random_moments_resumes_identically(tmp_path):
    """Six times: start the study, wait until it writes a checkpoint, let it run a seeded
    random while longer (0-2 s), SIGKILL it; then finish it and compare with one run."""
    import time

    args = TINY[:6] + ["--seeds", "3", "--iterations", "600", "--eval-every", "20"]
    args += ["--bootstrap", "100", "--no-progress"]
    config = convergence_cli.config_from_args(
        convergence_cli.build_parser().parse_args(args + ["--out", "x"])
    )
    convergence.run_study(config, tmp_path / "ref", progress=False)
    rng = np.random.default_rng(17)
    out, kills = tmp_path / "o", 0

    def stamps():
        return {p.name: p.stat().st_mtime_ns for p in (out / "runs").glob("*.npz")}

    for _ in range(6):
        before = stamps() if (out / "runs").exists() else {}
        proc = subprocess.Popen(
            [sys.executable, "-m", "experiments", "convergence", *args, "--out", str(out)],
            cwd=ROOT,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        try:
            for _ in range(2400):  # at most 120 s for this round's first checkpoint
                if proc.poll() is not None or ((out / "runs").exists() and stamps() != before):
                    break
                time.sleep(0.05)
            time.sleep(float(rng.uniform(0.0, 2.0)))
        finally:
            proc.kill()
            proc.wait(timeout=60)
        if proc.returncode == 0:
            break
        assert proc.returncode == -signal.SIGKILL
        kills += 1
    convergence.run_study(config, out, progress=False)
    assert kills >= 2  # it was interrupted
    ref = tmp_path / "ref"
    assert (out / "results.json").read_bytes() == (ref / "results.json").read_bytes()
