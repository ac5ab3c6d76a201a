"""A convergence study's output folder on disk.

``OUT/config.json`` is the resolved study: it decides whether a folder holds the same
study (:func:`prepare_out`). Beside it: ``results.json``, ``timing.json``,
``environment.json`` (versions, devices and git commit of every session),
``report.md``, the plots, and per algorithm ``runs/<slug>.npz`` (the last checkpoint:
batched solver state and curves so far) and ``runs/<slug>.csv`` (the curves).
``OUT/.lock`` exists while a process runs the study (:func:`lock`).

Files are written atomically (a temporary file, then ``os.replace``): a reader, or a
resumed run, sees the old file or the new one.
"""

from __future__ import annotations

import contextlib
import datetime
import importlib.metadata
import json
import os
import platform
import subprocess
import sys
from pathlib import Path
from typing import Any

import jax
import numpy as np

CONFIG = "config.json"
RESULTS = "results.json"
TIMING = "timing.json"
ENVIRONMENT = "environment.json"
REPORT = "report.md"
RUNS = "runs"
LOCK = ".lock"


class StudyError(ValueError):
    """The study cannot run in this output folder (or its checkpoint is unusable)."""


# ---------------------------------------------------------------- atomic files
@contextlib.contextmanager
def _atomic(path: Path):
    """Yield a temporary path to write; it replaces ``path`` if the block succeeds."""
    tmp = path.with_name(path.name + ".tmp")
    yield tmp
    os.replace(tmp, path)


def write_text(path: Path, text: str) -> None:
    with _atomic(path) as tmp:
        tmp.write_text(text)


def write_json(path: Path, data) -> None:
    write_text(path, json.dumps(data, indent=1) + "\n")


def read_json(path: Path):
    return json.loads(path.read_text())


# ---------------------------------------------------------------- environment and sessions
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


def current_environment() -> dict[str, Any]:
    """Package versions, Python, platform, JAX devices, git commit and argv of this process."""
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


def _now() -> str:
    return datetime.datetime.now().astimezone().isoformat(timespec="seconds")


def read_environment(out: Path) -> dict[str, Any]:
    """``environment.json``, or no sessions yet."""
    path = out / ENVIRONMENT
    return read_json(path) if path.exists() else {"sessions": []}


def start_session(out: Path) -> dict[str, Any]:
    """Append a running session (this process's environment) to ``environment.json`` and
    return the file's contents. Call it holding the lock: a session still marked running
    is then one whose process ended without a word, and is marked killed."""
    env = read_environment(out)
    for s in env["sessions"]:
        if s.get("status") == "running":
            s["status"] = "killed"
    env["sessions"].append(
        {"started": _now(), "finished": None, "status": "running", **current_environment()}
    )
    write_json(out / ENVIRONMENT, env)
    return env


def end_session(out: Path, env: dict[str, Any], status: str) -> None:
    """Mark the last session of ``env`` (from :func:`start_session`) finished."""
    env["sessions"][-1].update(finished=_now(), status=status)
    write_json(out / ENVIRONMENT, env)


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


def _changes(old, new, prefix: str = "") -> list[str]:
    """``prefix + key: old -> new`` for each flattened key whose value differs."""
    a, b = dict(_flatten(old)), dict(_flatten(new))
    return [
        f"{prefix}{k}: {a.get(k, '(absent)')!r} -> {b.get(k, '(absent)')!r}"
        for k in sorted(set(a) | set(b))
        if a.get(k, "(absent)") != b.get(k, "(absent)")
    ]


def _config_diff(old: dict, new: dict) -> list[str]:
    """Readable differences: top-level keys, the list of algorithm labels, and then each
    common algorithm's fields."""
    old, new = dict(old), dict(new)
    algos_old, algos_new = old.pop("algorithms", []), new.pop("algorithms", [])
    diff = _changes(old, new)
    labels_old = [x.get("label") for x in algos_old if isinstance(x, dict)]
    labels_new = [x.get("label") for x in algos_new if isinstance(x, dict)]
    if labels_old != labels_new:
        diff.append(f"algorithms: {labels_old} -> {labels_new}")
    else:
        for x, y in zip(algos_old, algos_new, strict=True):
            diff += _changes(x, y, f"{x['label']}.")
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
            old = read_json(cfg_path)
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
    write_json(cfg_path, config)
    return False


@contextlib.contextmanager
def lock(out: Path):
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
    except PermissionError:  # it exists, owned by another user
        pass
    return True


# ---------------------------------------------------------------- checkpoints and curves
class AlgorithmRun:
    """One algorithm's progress: curves so far and the batched solver state."""

    def __init__(self):
        self.iterations: list[int] = []
        self.nash_conv: list[np.ndarray] = []  # each [B]
        # elapsed seconds per chunk (a session's first chunk includes compilation)
        self.chunk_seconds: list[float] = []
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


def checkpoint_path(out: Path, slug: str) -> Path:
    return out / RUNS / f"{slug}.npz"


def curves_path(out: Path, slug: str) -> Path:
    return out / RUNS / f"{slug}.csv"


def save_checkpoint(path: Path, label: str, run: AlgorithmRun, state) -> None:
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
    with _atomic(path) as tmp, open(tmp, "wb") as f:
        np.savez(f, **arrays)


def load_checkpoint(path: Path, label: str, template, batch: int) -> AlgorithmRun:
    """Read ``path`` (if present) and check it against the state's shapes ``template``."""
    run = AlgorithmRun()
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


def write_csv(path: Path, run: AlgorithmRun) -> None:
    """The curves: iteration, seconds (compilation excluded), chunk_seconds, one column per
    seed."""
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
    write_text(path, "\n".join(lines) + "\n")
