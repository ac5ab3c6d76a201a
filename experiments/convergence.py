"""Convergence-rate study: algorithms x seeds on one game, resumable, with plots and a report.

    python -m experiments convergence --game leduc_poker \\
        --algorithms cfr,cfr_plus,dcfr,outcome_sampling:iterations=400000:eval_every=20000 \\
        --seeds 32 --iterations 20000 --eval-every 500 --out results/leduc
    python -m experiments convergence --config experiments/studies/default.toml \\
        --out results/default

Each algorithm runs all its seeds as one vmapped batch (``jaxcfr.run``), evaluating the
exact exploitability every ``eval_every`` iterations. After every compiled chunk the
batched solver state and the curves so far are checkpointed (atomically) under
``OUT/runs/``, so an interrupted study (Ctrl-C, killed process) resumes from its last
chunk when run again with the same ``--out`` and ends with the same ``results.json``
as an uninterrupted run. An output folder holding a different study is refused.

Output folder: config.json, results.json, timing.json, environment.json, runs/*.csv,
runs/*.npz, exploitability_vs_iterations.png, exploitability_vs_seconds.png, report.md.
"""

from __future__ import annotations

import argparse
import contextlib
import datetime
import importlib.metadata
import json
import os
import platform
import subprocess
import sys
import time
from pathlib import Path
from typing import Any, Callable

import jax
import numpy as np

import games_tensor as gt
import jaxcfr
from experiments import algorithms, plots, rates, report
from experiments import study_config as sc
from experiments.algorithms import ConfigError
from experiments.sizes import format_table

CONFIG = "config.json"
RESULTS = "results.json"
TIMING = "timing.json"
ENVIRONMENT = "environment.json"
REPORT = "report.md"
RUNS = "runs"
LOCK = ".lock"


class StudyError(ValueError):
    """The study cannot run in this output folder (or its checkpoint is unusable)."""


# ---------------------------------------------------------------- small file helpers
def _write_text(path: Path, text: str) -> None:
    """Write atomically: a reader (or a resumed run) sees the old file or the new one."""
    tmp = path.with_name(path.name + ".tmp")
    tmp.write_text(text)
    os.replace(tmp, path)


def _write_json(path: Path, data) -> None:
    _write_text(path, json.dumps(data, indent=1) + "\n")


def _read_json(path: Path):
    return json.loads(path.read_text())


def _num(v) -> float:
    """A float32/float64 value as the shortest decimal that reads back to the same value."""
    return float(str(v))


def _now() -> str:
    return datetime.datetime.now().astimezone().isoformat(timespec="seconds")


# ---------------------------------------------------------------- environment
def _git() -> dict[str, Any]:
    root = Path(__file__).resolve().parent.parent
    try:
        commit = subprocess.run(
            ["git", "rev-parse", "HEAD"], cwd=root, capture_output=True, text=True, timeout=10
        )
        if commit.returncode != 0:
            return {"commit": None}
        dirty = subprocess.run(
            ["git", "status", "--porcelain", "--untracked-files=no"],
            cwd=root,
            capture_output=True,
            text=True,
            timeout=10,
        )
        return {"commit": commit.stdout.strip(), "dirty": bool(dirty.stdout.strip())}
    except (OSError, subprocess.SubprocessError):
        return {"commit": None}


def environment() -> dict[str, Any]:
    versions = {}
    for dist in ("jaxcfr", "jax", "jaxlib", "numpy", "matplotlib"):
        try:
            versions[dist] = importlib.metadata.version(dist)
        except importlib.metadata.PackageNotFoundError:
            versions[dist] = None
    return {
        "versions": versions,
        "python": platform.python_version(),
        "platform": platform.platform(),
        "devices": [f"{d.platform}:{d.id} ({d.device_kind})" for d in jax.devices()],
        "git": _git(),
        "argv": sys.argv,
    }


# ---------------------------------------------------------------- output folder
def _flatten(data, prefix=""):
    if isinstance(data, dict):
        for k, v in data.items():
            yield from _flatten(v, f"{prefix}.{k}" if prefix else str(k))
    elif isinstance(data, list):
        for i, v in enumerate(data):
            yield from _flatten(v, f"{prefix}[{i}]")
        yield f"{prefix}.length", len(data)
    else:
        yield prefix, data


def _config_diff(old: dict, new: dict) -> list[str]:
    """Readable differences: top-level keys, the list of algorithm labels, and then each
    common algorithm's fields."""
    old, new = dict(old), dict(new)
    algos_old, algos_new = old.pop("algorithms", []), new.pop("algorithms", [])
    a, b = dict(_flatten(old)), dict(_flatten(new))
    diff = [
        f"{k}: {a.get(k, '(absent)')!r} -> {b.get(k, '(absent)')!r}"
        for k in sorted(set(a) | set(b))
        if a.get(k, "(absent)") != b.get(k, "(absent)")
    ]
    labels_old = [x.get("label") for x in algos_old if isinstance(x, dict)]
    labels_new = [x.get("label") for x in algos_new if isinstance(x, dict)]
    if labels_old != labels_new:
        diff.append(f"algorithms: {labels_old} -> {labels_new}")
    else:
        for x, y in zip(algos_old, algos_new, strict=True):
            fx, fy = dict(_flatten(x)), dict(_flatten(y))
            diff += [
                f"{x['label']}.{k}: {fx.get(k, '(absent)')!r} -> {fy.get(k, '(absent)')!r}"
                for k in sorted(set(fx) | set(fy))
                if fx.get(k, "(absent)") != fy.get(k, "(absent)")
            ]
    return diff


def prepare_out(out: Path, config: dict) -> bool:
    """Create ``out`` with ``config.json``, or check it holds this very study.

    Returns True when ``out`` already holds the study (resume). Raises StudyError for a
    folder with a different config, or a non-empty folder that is not a study.
    """
    config = json.loads(json.dumps(config))
    if out.exists() and not out.is_dir():
        raise StudyError(f"--out {str(out)!r} exists and is not a folder")
    cfg_path = out / CONFIG
    if cfg_path.exists():
        try:
            old = _read_json(cfg_path)
        except json.JSONDecodeError as exc:
            raise StudyError(
                f"{cfg_path} is not valid JSON ({exc}); refusing to touch {out}"
            ) from exc
        diff = _config_diff(old, config)
        if diff:
            shown = "; ".join(diff[:8]) + ("; ..." if len(diff) > 8 else "")
            raise StudyError(
                f"{out} holds a different study (its config.json differs: {shown}). Nothing was "
                f"changed; choose another --out, or rerun it with --config {cfg_path}."
            )
        return True
    if out.exists() and any(out.iterdir()):
        raise StudyError(
            f"{out} is not empty and holds no study ({CONFIG} missing); "
            "refusing to write into it; choose another --out"
        )
    (out / RUNS).mkdir(parents=True, exist_ok=True)
    _write_json(cfg_path, config)
    return False


# ---------------------------------------------------------------- checkpoints
class Run:
    """One algorithm's progress: curves so far and the batched solver state."""

    def __init__(self):
        self.iterations: list[int] = []
        self.nash_conv: list[np.ndarray] = []  # each [B]
        self.chunk_seconds: list[
            float
        ] = []  # elapsed per chunk (a session's first includes compile)
        self.session: list[int] = []  # index into environment.json's sessions, per chunk
        self.state = None

    @property
    def done(self) -> int:
        return self.iterations[-1] if self.iterations else 0

    def timing(self) -> tuple[np.ndarray, float]:
        """(cumulative seconds excluding compilation [E], estimated compile seconds).

        The first chunk of each session also compiles (and initializes); its cost is
        replaced by the median of the other chunks of the same length (that session's,
        else any session's), and the difference is counted as compilation.
        """
        secs = np.asarray(self.chunk_seconds, np.float64)
        if secs.size == 0:
            return secs, 0.0
        lengths = np.diff(np.asarray([0, *self.iterations]))
        sessions = np.asarray(self.session)
        firsts = {int(np.flatnonzero(sessions == k)[0]) for k in set(self.session)}
        steady = secs.copy()
        compile_s = 0.0
        for i in sorted(firsts):
            same = [j for j in range(secs.size) if j not in firsts and lengths[j] == lengths[i]]
            mine = [j for j in same if sessions[j] == sessions[i]]
            if same:
                est = float(np.median(secs[mine or same]))
                if est < secs[i]:
                    compile_s += secs[i] - est
                    steady[i] = est
        return np.cumsum(steady), compile_s

    def exploitability(self) -> np.ndarray:
        """[S, E] (E may be 0)."""
        if not self.nash_conv:
            return np.zeros((0, 0), np.float32)
        return np.stack(self.nash_conv, axis=1) / 2


def save_checkpoint(path: Path, label: str, run: Run, state) -> None:
    leaves = [np.asarray(x) for x in jax.tree.leaves(state)]
    arrays = {f"leaf_{i}": x for i, x in enumerate(leaves)}
    arrays.update(
        label=np.asarray(label),
        num_leaves=np.asarray(len(leaves)),
        iterations=np.asarray(run.iterations, np.int64),
        nash_conv=np.stack(run.nash_conv),
        chunk_seconds=np.asarray(run.chunk_seconds),
        session=np.asarray(run.session, np.int64),
    )
    tmp = path.with_name(path.name + ".tmp")
    with open(tmp, "wb") as f:
        np.savez(f, **arrays)
    os.replace(tmp, path)


def load_checkpoint(path: Path, label: str, template, batch: int) -> Run:
    """Read ``path`` (if present) and check it against the state's shapes ``template``."""
    run = Run()
    if not path.exists():
        return run
    hint = f"delete {path} (and {path.with_suffix('.csv')}) to restart this algorithm"
    try:
        with np.load(path) as z:
            data = {k: z[k] for k in z.files}
    except (OSError, ValueError) as exc:
        raise StudyError(f"checkpoint {path} is unreadable ({exc}); {hint}") from exc
    leaves, treedef = jax.tree.flatten(template)
    if str(data.get("label")) != label or int(data.get("num_leaves", -1)) != len(leaves):
        raise StudyError(f"checkpoint {path} does not belong to algorithm {label!r}; {hint}")
    state = []
    for i, t in enumerate(leaves):
        x = data[f"leaf_{i}"]
        if x.shape != (batch, *t.shape) or x.dtype != t.dtype:
            raise StudyError(
                f"checkpoint {path}: state leaf {i} is {x.dtype}{list(x.shape)}, "
                f"expected {t.dtype}{[batch, *t.shape]}; {hint}"
            )
        state.append(jax.numpy.asarray(x))
    run.state = jax.tree.unflatten(treedef, state)
    run.iterations = [int(t) for t in data["iterations"]]
    run.nash_conv = list(data["nash_conv"])
    run.chunk_seconds = [float(s) for s in data["chunk_seconds"]]
    run.session = [int(k) for k in data["session"]]
    iteration = np.asarray(jax.tree.leaves(run.state.iteration)[0]).reshape(-1)
    if not run.iterations or int(iteration[0]) != run.iterations[-1]:
        raise StudyError(f"checkpoint {path}: state and curves disagree; {hint}")
    return run


def write_csv(path: Path, run: Run) -> None:
    curves = run.exploitability()
    header = ["iteration", "seconds", "chunk_seconds"] + [
        f"seed_{i}" for i in range(curves.shape[0])
    ]
    lines = [",".join(header)]
    seconds, _ = run.timing()
    for e, t in enumerate(run.iterations):
        lines.append(
            ",".join(
                [str(t), f"{seconds[e]:.4f}", f"{run.chunk_seconds[e]:.4f}"]
                + [str(v) for v in curves[:, e]]
            )
        )
    _write_text(path, "\n".join(lines) + "\n")


# ---------------------------------------------------------------- results
def _seeds_vary(algo: sc.AlgorithmConfig, solver: jaxcfr.Solver) -> str:
    if solver.needs_key:
        return "sampling"
    return "initial regrets" if algo.init_scale > 0 else "none"


def build_results(config: sc.StudyConfig, runs: dict[str, Run], solvers) -> dict[str, Any]:
    """Everything deterministic about the study (no times, no paths)."""
    out = []
    for a in config.algorithms:
        run, expl = runs[a.label], runs[a.label].exploitability()
        final = rate = None
        if run.iterations:
            final = rates.summarize(expl[:, -1])._asdict()
            r = rates.convergence_rate(
                run.iterations,
                expl,
                decades=config.rate_decades,
                num_bootstrap=config.bootstrap,
                confidence=config.confidence,
                seed=config.key,
            )
            rate = None if r is None else r._asdict()
        out.append(
            {
                "label": a.label,
                "name": a.name,
                "params": a.params,
                "target_iterations": a.iterations,
                "eval_every": a.eval_every,
                "evaluate": a.evaluate,
                "init_scale": a.init_scale,
                "seeds_vary": _seeds_vary(a, solvers[a.label]),
                "complete": run.done >= a.iterations,
                "iterations_done": run.done,
                "final": final,
                "rate": rate,
                "iterations": run.iterations,
                "exploitability": [[_num(v) for v in row] for row in expl],
            }
        )
    return {
        "config": config.to_dict(),
        "complete": all(a["complete"] for a in out),
        "algorithms": out,
    }


def build_timing(config: sc.StudyConfig, runs: dict[str, Run]) -> dict[str, Any]:
    out = {}
    for a in config.algorithms:
        run = runs[a.label]
        seconds, compile_s = run.timing()
        out[a.label] = {
            "iterations": run.iterations,
            "seconds": [float(f"{s:.6g}") for s in seconds],
            "chunk_seconds": [float(f"{s:.6g}") for s in run.chunk_seconds],
            "session": run.session,
            "total_seconds": round(float(seconds[-1]), 4) if seconds.size else None,
            "compile_seconds": round(compile_s, 4),
            "elapsed_seconds": round(float(sum(run.chunk_seconds)), 4),
        }
    return {
        "note": "seconds: cumulative wall-clock seconds of the whole batch of seeds at each "
        "evaluation, compilation excluded (each session's first chunk, which also "
        "compiles, counted at the median cost of the other chunks of its length); "
        "chunk_seconds: raw elapsed time per chunk; session: index into "
        "environment.json's sessions",
        "algorithms": out,
    }


def write_outputs(out: Path, config: sc.StudyConfig, runs: dict[str, Run], solvers) -> dict:
    """results.json, timing.json, the two plots and report.md, from the runs so far."""
    results = build_results(config, runs, solvers)
    timing = build_timing(config, runs)
    _write_json(out / RESULTS, results)
    _write_json(out / TIMING, timing)
    its, secs = [], []
    for a in results["algorithms"]:
        if not a["iterations"]:
            continue
        curves = np.asarray(a["exploitability"])
        its.append(plots.Series(a["label"], np.asarray(a["iterations"]), curves, a["complete"]))
        secs.append(plots.Series(a["label"], runs[a["label"]].timing()[0], curves, a["complete"]))
    title = f"{config.game}, {config.seeds} seeds: median and IQR"
    plots.plot_exploitability(its, out / report.PLOT_ITERATIONS, xlabel="iterations", title=title)
    plots.plot_exploitability(
        secs,
        out / report.PLOT_SECONDS,
        xlabel="wall-clock seconds (whole batch of seeds, compilation excluded)",
        title=title,
    )
    env = _read_json(out / ENVIRONMENT) if (out / ENVIRONMENT).exists() else {}
    _write_text(out / REPORT, report.render(results, timing, env, str(out)))
    return results


# ---------------------------------------------------------------- the study
def run_study(
    config: sc.StudyConfig,
    out: str | Path,
    *,
    progress: bool = True,
    after_chunk: Callable[[str, int], None] | None = None,
    echo: Callable[[str], None] = print,
) -> dict[str, Any]:
    """Run (or resume) ``config`` into ``out`` and return the results dictionary.

    Args:
      progress: show a tqdm bar over the whole study (iterations of all algorithms).
      after_chunk: ``fn(label, iteration)`` called after each checkpoint (tests use it
        to interrupt a study).
      echo: where status lines go.
    Raises:
      StudyError / ConfigError before anything is written; KeyboardInterrupt after
      writing the partial outputs (marked incomplete).
    """
    with jax.enable_x64(config.x64):
        return _run_study(config, Path(out), progress=progress, after_chunk=after_chunk, echo=echo)


def _run_study(config, out: Path, *, progress, after_chunk, echo) -> dict[str, Any]:
    try:
        game = gt.load(config.game, **config.game_params)
    except (ValueError, TypeError) as exc:
        raise ConfigError(str(exc)) from exc
    solvers = {a.label: algorithms.build(a.name, a.params) for a in config.algorithms}
    resuming = prepare_out(out, config.to_dict())
    with _lock(out):
        return _run_locked(
            config,
            out,
            game,
            solvers,
            resuming,
            progress=progress,
            after_chunk=after_chunk,
            echo=echo,
        )


@contextlib.contextmanager
def _lock(out: Path):
    """One process per output folder: ``OUT/.lock`` holds the owner's pid; a lock left by
    a process that no longer runs (killed) is taken over."""
    path = out / LOCK
    for _ in range(2):
        try:
            fd = os.open(path, os.O_CREAT | os.O_EXCL | os.O_WRONLY)
        except FileExistsError:
            try:
                pid = int(path.read_text().strip() or 0)
            except (OSError, ValueError):
                pid = 0
            if pid > 0 and pid != os.getpid() and _alive(pid):
                raise StudyError(
                    f"another process (pid {pid}) is running the study in {out}; "
                    f"wait for it, or delete {path} if that is wrong"
                ) from None
            path.unlink(missing_ok=True)  # stale
            continue
        with os.fdopen(fd, "w") as f:
            f.write(str(os.getpid()))
        break
    else:
        raise StudyError(f"could not lock {out} ({path})")
    try:
        yield
    finally:
        path.unlink(missing_ok=True)


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def _run_locked(
    config, out: Path, game, solvers, resuming: bool, *, progress, after_chunk, echo
) -> dict[str, Any]:
    (out / RUNS).mkdir(exist_ok=True)
    runs: dict[str, Run] = {}
    for a in config.algorithms:
        template = jax.eval_shape(lambda s=solvers[a.label]: s.init(game))
        runs[a.label] = load_checkpoint(
            out / RUNS / f"{a.slug}.npz", a.label, template, config.seeds
        )
        done = runs[a.label].done
        if done >= a.iterations:
            echo(f"{a.label}: already complete ({done} iterations)")
        elif resuming and done:
            echo(f"resuming {a.label} at iteration {done}/{a.iterations}")
    env = _read_json(out / ENVIRONMENT) if (out / ENVIRONMENT).exists() else {"sessions": []}
    for s in env["sessions"]:
        if s.get("status") == "running":  # we hold the lock: that process ended without a word
            s["status"] = "killed"
    env["sessions"].append(
        {"started": _now(), "finished": None, "status": "running", **environment()}
    )
    session = len(env["sessions"]) - 1
    _write_json(out / ENVIRONMENT, env)

    bar = None
    say = echo
    if progress and any(runs[a.label].done < a.iterations for a in config.algorithms):
        from tqdm.auto import tqdm

        bar = tqdm(
            total=sum(a.iterations for a in config.algorithms),
            initial=sum(min(runs[a.label].done, a.iterations) for a in config.algorithms),
            unit="it",
            desc="study",
            dynamic_ncols=True,
            mininterval=0.0,
        )
        say = bar.write
    status = "failed"
    try:
        for a in config.algorithms:
            run = runs[a.label]
            if run.done >= a.iterations:
                continue
            ck_path, csv_path = out / RUNS / f"{a.slug}.npz", out / RUNS / f"{a.slug}.csv"
            if bar is not None:
                bar.set_description(a.label)
            clock = [time.perf_counter()]

            def on_chunk(
                iteration,
                nash_conv,
                state,
                a=a,
                run=run,
                clock=clock,
                ck_path=ck_path,
                csv_path=csv_path,
            ):
                now = time.perf_counter()
                step = iteration - run.done
                run.iterations.append(int(iteration))
                run.nash_conv.append(np.asarray(nash_conv))
                run.chunk_seconds.append(now - clock[0])
                run.session.append(session)
                save_checkpoint(ck_path, a.label, run, state)
                write_csv(csv_path, run)
                if bar is not None:
                    bar.set_postfix_str(
                        f"median exploitability {np.median(nash_conv) / 2:.3g}", refresh=False
                    )
                    bar.update(step)
                if after_chunk is not None:
                    after_chunk(a.label, int(iteration))
                clock[0] = time.perf_counter()  # checkpoint writing is not counted

            jaxcfr.run(
                solvers[a.label],
                game,
                a.iterations - run.done,
                a.eval_every,
                key=jax.random.PRNGKey(config.key),
                num_seeds=config.seeds,
                evaluate=a.evaluate,
                init_scale=a.init_scale,
                state=run.state,
                on_chunk=on_chunk,
            )
            final = rates.summarize(run.exploitability()[:, -1])
            seconds, compile_s = run.timing()
            say(
                f"{a.label}: {run.done} iterations in {seconds[-1]:.3g} s "
                f"(+ {compile_s:.2g} s compile), final exploitability median {final.median:.4g} "
                f"(IQR {final.q25:.4g} - {final.q75:.4g})"
            )
            write_outputs(out, config, runs, solvers)
        status = "complete"
    except KeyboardInterrupt:
        status = "interrupted"
        raise
    finally:
        if bar is not None:
            bar.close()
        env["sessions"][-1].update(finished=_now(), status=status)
        _write_json(out / ENVIRONMENT, env)
        results = write_outputs(out, config, runs, solvers)
    return results


# ---------------------------------------------------------------- command line
def listing() -> str:
    games = "\n".join(
        f"  {n}(" + ", ".join(f"{k}={v!r}" for k, v in p.items()) + ")"
        for n, p in gt.available().items()
    )
    return f"games:\n{games}\nalgorithms:\n{algorithms.describe()}"


def _parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(
        prog="python -m experiments convergence",
        formatter_class=argparse.RawDescriptionHelpFormatter,
        description=__doc__,
        epilog="Flags override the corresponding top-level keys of --config; per-algorithm "
        "settings in the file win over them. See experiments/study_config.py for the file format.",
    )
    p.add_argument(
        "--config",
        metavar="FILE",
        help="study file (.toml or .json), e.g. "
        "experiments/studies/default.toml or an earlier study's config.json",
    )
    p.add_argument(
        "--out", metavar="DIR", help="output folder (created; resumed if it holds this study)"
    )
    p.add_argument("--game", help="game name (see --list)")
    p.add_argument("--game-params", metavar="K=V,...", help="game parameters, e.g. suits=false")
    p.add_argument(
        "--algorithms",
        metavar="SPEC,...",
        help="comma-separated NAME[:KEY=VALUE...], e.g. "
        "'cfr,dcfr:alpha=2,outcome_sampling:epsilon=0.6:iterations=100000'; "
        "KEY is a solver parameter or one of iterations, eval_every, evaluate, "
        "init_scale, label",
    )
    p.add_argument(
        "--seeds", type=int, help=f"seeds per algorithm (default {sc.DEFAULTS['seeds']})"
    )
    p.add_argument("--key", type=int, help="base PRNG key (default 0)")
    p.add_argument(
        "--iterations",
        type=int,
        help=f"iterations per algorithm (default {sc.DEFAULTS['iterations']})",
    )
    p.add_argument(
        "--eval-every",
        type=int,
        help=f"iterations between exact evaluations (default iterations // {sc.EVAL_POINTS})",
    )
    p.add_argument(
        "--evaluate", choices=("average", "current"), help="policy to evaluate (default average)"
    )
    p.add_argument(
        "--init-scale",
        type=float,
        help="deterministic solvers: initial regrets uniform in "
        f"[0, s) per seed; 0 = identical seeds (default {sc.DEFAULTS['init_scale']})",
    )
    p.add_argument(
        "--rate-decades", type=float, help="fit the rate over the last D decades (default 1)"
    )
    p.add_argument(
        "--bootstrap", type=int, help="bootstrap resamples for the rate CI (default 1000)"
    )
    p.add_argument(
        "--confidence", type=float, help="confidence level of the rate CI (default 0.95)"
    )
    p.add_argument(
        "--x64",
        action=argparse.BooleanOptionalAction,
        default=None,
        help="float64 arrays (slower; float32 exploitability floors near 1e-6; default off)",
    )
    p.add_argument("--no-progress", action="store_true", help="no progress bar")
    p.add_argument(
        "--list", action="store_true", help="list games and algorithms with their parameters"
    )
    return p


def config_from_args(args) -> sc.StudyConfig:
    raw: dict[str, Any] = sc.read_file(args.config) if args.config else {}
    if not args.config and (args.game is None or args.algorithms is None):
        raise ConfigError(
            "give --config FILE, or at least --game and --algorithms (see --list)\n" + listing()
        )
    if args.game is not None:
        if raw.get("game") != args.game:
            raw.pop("game_params", None)
        raw["game"] = args.game
    if args.game_params is not None:
        raw["game_params"] = sc.parse_assignments(args.game_params, ",", "--game-params")
    if args.algorithms is not None:
        raw["algorithms"] = sc.parse_algorithms(args.algorithms)
    for key in (
        "seeds",
        "key",
        "iterations",
        "eval_every",
        "evaluate",
        "init_scale",
        "rate_decades",
        "bootstrap",
        "confidence",
        "x64",
    ):
        value = getattr(args, key)
        if value is not None:
            raw[key] = value
    return sc.from_dict(raw)


def main(argv=None) -> int:
    args = _parser().parse_args(argv)
    if args.list:
        print(listing())
        return 0
    try:
        if not args.out:
            raise ConfigError("--out DIR is required")
        config = config_from_args(args)
        for name in config.skipped:
            print(f"note: optional algorithm {name!r} is not available in this jaxcfr; skipped")
        out = Path(args.out)
        print(
            f"study: {config.game}, {len(config.algorithms)} algorithms "
            f"({', '.join(a.label for a in config.algorithms)}), {config.seeds} seeds -> {out}",
            flush=True,
        )
        results = run_study(config, out, progress=not args.no_progress)
    except (ConfigError, StudyError) as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        print(
            f"\ninterrupted: progress up to the last chunk is saved in {args.out}; "
            "run the same command again to resume",
            file=sys.stderr,
        )
        return 130
    timing = _read_json(out / TIMING)
    print()
    print(
        format_table(
            [
                c if c != "CI" else f"{round(100 * config.confidence)}% CI"
                for c in report.RESULT_COLUMNS
            ],
            report.result_rows(results, timing),
        )
    )
    print()
    print(f"plots:  {out / report.PLOT_ITERATIONS}\n        {out / report.PLOT_SECONDS}")
    print(f"report: {out / REPORT}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
