"""A convergence study's output folder on disk.

``OUT/config.json`` is the resolved study: it decides whether a folder holds the same
study (:func:`prepare_out`). Beside it: ``results.json``, ``timing.json``,
``environment.json`` (versions, devices and git commit of every session),
``report.md``, the plots, and per algorithm ``runs/<slug>.npz`` (the last checkpoint:
batched solver state and curves so far, with a SHA-256 of its arrays),
``runs/<slug>.prev.npz`` (the checkpoint before it, to fall back on when the last one
is damaged) and ``runs/<slug>.csv`` (the curves, always rewritten from the checkpoint).
``OUT/.lock`` is held (``fcntl.flock``) while a process runs the study (:func:`lock`).

Files are written atomically (a temporary file, then ``os.replace``): a reader, or a
resumed run, sees the old file or the new one. What this guarantees is listed in
``docs/guarantees.md`` ("Convergence studies").
"""

from __future__ import annotations

import contextlib
import datetime
import errno
import fcntl
import hashlib
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

from experiments.study_config import CONFIG_NAME as CONFIG

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
    """Yield a temporary path to write; it replaces ``path`` if the block succeeds, and is
    removed if it fails (disk full, interrupt), leaving ``path`` as it was."""
    tmp = path.with_name(path.name + ".tmp")
    try:
        yield tmp
        os.replace(tmp, path)
    except BaseException:
        with contextlib.suppress(OSError):
            tmp.unlink()
        raise


def write_text(path: Path, text: str) -> None:
    with _atomic(path) as tmp:
        tmp.write_text(text)


def write_json(path: Path, data) -> None:
    write_text(path, json.dumps(data, indent=1) + "\n")


def read_json(path: Path):
    return json.loads(path.read_text())


def read_study_json(path: Path, what: str, hint: str) -> dict:
    """A JSON object the study wrote (``config.json``, ``environment.json``); anything
    else is a StudyError naming the file, what it holds and ``hint`` (what to do)."""
    try:
        data = json.loads(path.read_bytes().decode("utf-8"))
    except (UnicodeDecodeError, json.JSONDecodeError, RecursionError) as exc:
        raise StudyError(
            f"{path} is corrupted (not valid JSON: {exc}); it holds {what}. {hint}"
        ) from exc
    except OSError as exc:
        raise StudyError(
            f"{path} cannot be read ({exc.strerror}); it holds {what}. {hint}"
        ) from exc
    if not isinstance(data, dict):
        raise StudyError(
            f"{path} is corrupted (a JSON {type(data).__name__}, not an object); "
            f"it holds {what}. {hint}"
        )
    return data


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
    """Package versions, Python, platform, JAX devices and processes, git commit and argv
    of this process."""
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
        "processes": jax.process_count(),  # > 1: a jax.distributed run (devices: all of it)
        "git": _git(),
        "argv": sys.argv,
    }


def _now() -> str:
    return datetime.datetime.now().astimezone().isoformat(timespec="seconds")


def read_environment(out: Path) -> dict[str, Any]:
    """``environment.json``, or no sessions yet. A corrupted file is a StudyError naming it."""
    path = out / ENVIRONMENT
    if not path.exists():
        return {"sessions": []}
    env = read_study_json(
        path,
        "the record of the study's sessions (versions, devices, commits), not its results",
        f"Restore it, or delete it to start a new record (the results are kept): rm {path}",
    )
    sessions = env.get("sessions")
    if not isinstance(sessions, list) or not all(isinstance(x, dict) for x in sessions):
        raise StudyError(
            f"{path} is corrupted (no list of sessions); it holds the record of the study's "
            f"sessions, not its results. Restore it, or delete it to start a new record "
            f"(the results are kept): rm {path}"
        )
    return env


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


def create_out(out: Path) -> None:
    """Create the output folder (and its parents), or raise a StudyError saying why not:
    a file in the way, no permission, a full disk."""
    if out.exists() and not out.is_dir():
        raise StudyError(f"--out {str(out)!r} exists and is not a folder; choose a folder")
    for parent in out.parents:
        if parent.exists():
            if not parent.is_dir():
                raise StudyError(
                    f"--out {str(out)!r} cannot be created: {str(parent)!r} is a file, "
                    "not a folder; choose a path under a folder"
                )
            break
    try:
        out.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise StudyError(f"--out {str(out)!r} cannot be created ({exc.strerror})") from exc


def remove_temporaries(out: Path) -> None:
    """Delete the ``*.tmp`` files a killed process left half-written (holding the lock)."""
    for folder in (out, out / RUNS):
        for tmp in folder.glob("*.tmp"):
            tmp.unlink(missing_ok=True)


def prepare_out(out: Path, config: dict) -> bool:
    """Write ``config.json`` into the (existing) folder ``out``, or check it holds this
    very study. Call it holding the :func:`lock`, so two processes cannot both start a
    study there.

    Returns True when ``out`` already holds the study (resume). Raises StudyError for a
    folder with a different config, or a non-empty folder that is not a study.
    """
    config = json.loads(json.dumps(config))
    cfg_path = out / CONFIG
    if cfg_path.exists():
        old = read_study_json(
            cfg_path,
            "the study this folder holds",
            f"Nothing was changed; restore the file, or choose another --out (to restart "
            f"here, delete {out})",
        )
        diff = _config_diff(old, config)
        if diff:
            shown = "; ".join(diff[:8]) + ("; ..." if len(diff) > 8 else "")
            raise StudyError(
                f"{out} holds a different study (its config.json differs: {shown}). Nothing was "
                f"changed; choose another --out, or rerun it with --config {cfg_path}."
            )
        return True
    if any(p.name != LOCK for p in out.iterdir()):
        raise StudyError(
            f"{out} is not empty and holds no study ({CONFIG} missing); "
            "refusing to write into it; choose another --out"
        )
    (out / RUNS).mkdir(exist_ok=True)
    write_json(cfg_path, config)
    return False


@contextlib.contextmanager
def lock(out: Path):
    """One process per output folder: an exclusive ``fcntl.flock`` on ``OUT/.lock``
    (which also records the owner's pid, for the error message only). The kernel
    releases it when its process ends, however it ends, so a killed study leaves no
    stale lock; a second process (or a second ``lock`` in this one) is refused with a
    StudyError. The file is removed on release, while still locked; a process that
    locked a removed file notices (the path no longer names it) and tries again."""
    path = out / LOCK
    while True:
        try:
            fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o644)
        except OSError as exc:
            raise StudyError(f"cannot write in {out} ({exc.strerror}: {path})") from exc
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError as exc:
            owner = os.read(fd, 32).decode("ascii", "replace").strip()
            os.close(fd)
            if exc.errno not in (errno.EAGAIN, errno.EACCES):
                raise StudyError(f"cannot lock {path} ({exc.strerror})") from exc
            who = f"pid {owner}" if owner.isdigit() else "pid not yet written"
            raise StudyError(
                f"another process ({who}) is running a study in {out}; wait for it to "
                "finish (two processes never write one folder)"
            ) from None
        try:
            same = os.path.samestat(os.fstat(fd), os.stat(path))
        except FileNotFoundError:
            same = False
        if same:
            break
        os.close(fd)  # the previous owner removed the file between our open and flock
    try:
        os.ftruncate(fd, 0)
        os.write(fd, str(os.getpid()).encode())
        yield
    finally:
        with contextlib.suppress(OSError):
            path.unlink()
        os.close(fd)


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


def previous_checkpoint_path(path: Path) -> Path:
    """The checkpoint of the chunk before ``path``'s, kept to recover from a damaged one."""
    return path.with_name(path.stem + ".prev.npz")


def curves_path(out: Path, slug: str) -> Path:
    return out / RUNS / f"{slug}.csv"


def _digest(arrays: dict[str, np.ndarray]) -> str:
    """SHA-256 over every array's name, dtype, shape and bytes (in name order)."""
    h = hashlib.sha256()
    for name in sorted(arrays):
        x = np.ascontiguousarray(arrays[name])
        h.update(f"{name}|{x.dtype.str}|{x.shape}|".encode())
        h.update(x.tobytes())
    return h.hexdigest()


def save_checkpoint(path: Path, label: str, run: AlgorithmRun, state) -> None:
    """Write the state and curves so far, with a checksum, atomically; the checkpoint it
    replaces is kept as :func:`previous_checkpoint_path` (one chunk back)."""
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
    arrays["sha256"] = np.asarray(_digest(arrays))
    with _atomic(path) as tmp:
        with open(tmp, "wb") as f:
            np.savez(f, **arrays)
        if path.exists():
            os.replace(path, previous_checkpoint_path(path))


class _Damaged(Exception):
    """A checkpoint file that cannot be trusted (unreadable, truncated, checksum wrong)."""


def _read_verified(path: Path) -> dict[str, np.ndarray]:
    try:
        with np.load(path, allow_pickle=False) as z:
            data = {k: z[k] for k in z.files}
    except Exception as exc:  # zipfile.BadZipFile, EOFError, ValueError, OSError, ...
        raise _Damaged(f"unreadable: {type(exc).__name__}: {exc}") from exc
    stored = data.pop("sha256", None)
    if stored is None:
        raise _Damaged("no checksum (written by an older version, or edited)")
    if str(stored) != _digest(data):
        raise _Damaged("checksum mismatch: the file was damaged or edited")
    return data


def load_checkpoint(
    path: Path, label: str, template, batch: int, upgrade=None
) -> tuple[AlgorithmRun, str | None]:
    """The last trustworthy checkpoint of one algorithm, checked against the state's
    shapes ``template``: ``(run, note)``.

    A damaged ``path`` (unreadable, truncated, bit-flipped, edited: its checksum tells)
    is removed and the previous chunk's checkpoint used instead, so that chunk is
    recomputed; if that one is damaged too the algorithm restarts from iteration 0.
    ``note`` says what was done (None when the checkpoint was fine or absent). A
    checkpoint that is intact but belongs to another algorithm or state shape is a
    StudyError (the folder was tampered with; nothing is guessed). ``upgrade(x, t)``
    (optional) converts a stored leaf ``x`` of an earlier state layout to the template
    leaf ``t``'s (returning ``x`` when there is nothing to convert): checkpoints written
    before the CFR state kept compact-layout games' tables flat hold them ``[I, A]``.
    """
    prev = previous_checkpoint_path(path)
    problems = []
    for candidate in (path, prev):
        if not candidate.exists():
            continue
        try:
            data = _read_verified(candidate)
        except _Damaged as exc:
            problems.append(f"{candidate} is damaged ({exc})")
            candidate.unlink()
            continue
        run = _run_from(candidate, data, label, template, batch, upgrade)
        note = None
        if problems:
            note = "; ".join(problems) + (
                f"; resuming {label} from {candidate.name} at iteration {run.done} "
                "(the lost chunk is recomputed)"
            )
        if candidate == prev:
            os.replace(prev, path)
        return run, note
    note = None
    if problems:
        note = "; ".join(problems) + f"; no usable checkpoint, {label} restarts from iteration 0"
    return AlgorithmRun(), note


def _run_from(
    path: Path, data: dict, label: str, template, batch: int, upgrade=None
) -> AlgorithmRun:
    hint = f"delete {path} (and {path.with_suffix('.csv')}) to restart this algorithm"
    leaves, treedef = jax.tree.flatten(template)
    if str(data.get("label")) != label or int(data.get("num_leaves", -1)) != len(leaves):
        raise StudyError(f"checkpoint {path} does not belong to algorithm {label!r}; {hint}")
    state = []
    for i, t in enumerate(leaves):
        x = data[f"leaf_{i}"]
        if upgrade is not None:
            x = np.asarray(upgrade(x, t))
        if x.shape != (batch, *t.shape) or x.dtype != t.dtype:
            raise StudyError(
                f"checkpoint {path}: state leaf {i} is {x.dtype}{list(x.shape)}, "
                f"expected {t.dtype}{[batch, *t.shape]}; {hint}"
            )
        state.append(jax.numpy.asarray(x))
    run = AlgorithmRun()
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
