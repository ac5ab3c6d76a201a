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


def test_refuses_a_folder_another_live_process_is_running(study, capsys):
    import os

    (study / store.LOCK).write_text(str(os.getppid()))  # a live process that is not us
    try:
        assert convergence_cli.main(TINY + ["--out", str(study)]) == 2
        assert "another process" in capsys.readouterr().err
    finally:
        (study / store.LOCK).unlink()


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
