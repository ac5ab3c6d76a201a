"""Running a convergence study: algorithms x seeds on one game, resumable.

Each algorithm runs all its seeds as one vmapped batch (``jaxcfr.run``), evaluating the
exact exploitability every ``eval_every`` iterations. After every compiled chunk the
batched solver state and the curves so far are checkpointed (atomically) under
``OUT/runs/``, so an interrupted study (Ctrl-C, killed process) resumes from its last
chunk when run again with the same output folder and ends with the same
``results.json`` as an uninterrupted run. An output folder holding a different study is
refused. The folder's files are handled by :mod:`experiments.study_store`; the command
line is :mod:`experiments.convergence_cli`.

Several processes (after ``jax.distributed.initialize``, every process calling
:func:`run_study` with the same config): the seeds are sharded across the processes'
devices; process 0 alone touches the output folder (lock, checkpoints, results); it
broadcasts what it resumes from, and each chunk's state is gathered to it
(``process_allgather``, a collective) for its checkpoint. The results are those of a
single-process study (``tests/test_multiprocess.py``).
"""

from __future__ import annotations

import contextlib
import functools
import time
from pathlib import Path
from typing import Any, Callable

import jax
import numpy as np
from jax.experimental import multihost_utils

import games_tensor as gt
import jaxcfr
from experiments import algorithms, plots, rates, report
from experiments import study_config as sc
from experiments import study_memory as memory
from experiments import study_store as store
from experiments.algorithms import ConfigError
from experiments.study_store import AlgorithmRun, StudyError


def _num(v) -> float:
    """A float32/float64 value as the shortest decimal that reads back to the same value."""
    return float(str(v))


# ---------------------------------------------------------------- results
def _seeds_vary(algo: sc.AlgorithmConfig, solver: jaxcfr.Solver) -> str:
    if solver.needs_key:
        return "sampling"
    return "initial regrets" if algo.init_scale > 0 else "none"


def build_results(config: sc.StudyConfig, runs: dict[str, AlgorithmRun], solvers) -> dict[str, Any]:
    """Everything deterministic about the study (no times, no paths)."""
    out, errors = [], {}
    for a in config.algorithms:
        run = runs[a.label]
        expl = run.exploitability()
        final = rate = None
        if run.iterations:
            final = rates.summarize(expl[:, -1])._asdict()
            try:
                r = rates.convergence_rate(
                    run.iterations,
                    expl,
                    decades=config.rate_decades,
                    num_bootstrap=config.bootstrap,
                    confidence=config.confidence,
                    seed=config.key,
                )
            except MemoryError:  # checked beforehand (study_memory); never lose the curves
                r = None
                errors[a.label] = f"out of memory for {config.bootstrap} bootstrap resamples"
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
        if a.label in errors:
            out[-1]["rate_error"] = errors[a.label]
    return {
        "config": config.to_dict(),
        "complete": all(a["complete"] for a in out),
        "algorithms": out,
    }


def build_timing(config: sc.StudyConfig, runs: dict[str, AlgorithmRun]) -> dict[str, Any]:
    """Wall-clock seconds per algorithm and evaluation (see the returned ``note``)."""
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


def write_outputs(
    out: Path, config: sc.StudyConfig, runs: dict[str, AlgorithmRun], solvers
) -> dict:
    """results.json, timing.json, runs/*.csv, the two plots and report.md, from the runs
    so far (so every file follows the checkpoints, whatever happened before)."""
    results = build_results(config, runs, solvers)
    timing = build_timing(config, runs)
    for a in config.algorithms:  # the CSVs always follow the checkpoints
        csv = store.curves_path(out, a.slug)
        if runs[a.label].iterations:
            store.write_csv(csv, runs[a.label])
        else:
            csv.unlink(missing_ok=True)
    store.write_json(out / store.RESULTS, results)
    store.write_json(out / store.TIMING, timing)
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
    env = store.read_environment(out)
    store.write_text(out / store.REPORT, report.render(results, timing, env, str(out)))
    return results


# ---------------------------------------------------------------- several processes
def _is_lead() -> bool:
    """This process writes the study (process 0; the only one without jax.distributed)."""
    return jax.process_index() == 0


def _agree(ok: bool) -> bool:
    """Process 0's ``ok``, in every process (the others wait for it)."""
    if jax.process_count() == 1:
        return ok
    flag = multihost_utils.broadcast_one_to_all(np.int32(ok), is_source=_is_lead())
    return bool(np.asarray(flag))


def _share_run(run: AlgorithmRun, template, seeds: int) -> AlgorithmRun:
    """Process 0's progress (iterations done and state to resume from) in every process;
    the other processes keep only what they compute with."""
    if jax.process_count() == 1:
        return run
    zeros = jax.tree.map(lambda t: np.zeros((seeds, *t.shape), t.dtype), template)
    lead = _is_lead()
    has_state = run.state is not None
    source = (np.int64(run.done), np.int32(has_state), run.state if has_state else zeros)
    done, has_state, state = multihost_utils.broadcast_one_to_all(source, is_source=lead)
    if lead:
        return run
    shared = AlgorithmRun()
    if int(np.asarray(done)):
        shared.iterations = [int(np.asarray(done))]
    if int(np.asarray(has_state)):
        shared.state = jax.tree.map(np.asarray, state)
    return shared


def _to_host(state):
    """A batched state as NumPy arrays (gathered from every process: a collective)."""
    if jax.process_count() == 1:
        return state
    return multihost_utils.process_allgather(state, tiled=True)


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
      StudyError / ConfigError before anything is written (a study that would not fit
      in memory included); KeyboardInterrupt after writing the partial outputs (marked
      incomplete); OSError (disk full, ...) with every completed chunk kept.

    In a run of several processes, every process calls this; process 0 writes ``out``
    and returns the results, the others compute their seeds and return ``None``.
    """
    out = Path(out)
    lead = _is_lead()
    with jax.enable_x64(config.x64):
        try:
            game = gt.load(config.game, **config.game_params)
        except (ValueError, TypeError) as exc:
            raise ConfigError(str(exc)) from exc
        solvers = {a.label: algorithms.build(a.name, a.params) for a in config.algorithms}
        memory.check(config, solvers, game)
        with contextlib.ExitStack() as stack:
            resuming = False
            if lead:
                try:
                    store.create_out(out)
                    stack.enter_context(store.lock(out))
                    resuming = store.prepare_out(out, config.to_dict())
                except BaseException:
                    _agree(False)  # the other processes stop too
                    raise
            if not _agree(True):
                raise StudyError(f"process 0 refused the study in {out} (see its output)")
            return _run_locked(
                config,
                out,
                game,
                solvers,
                resuming,
                progress=progress and lead,
                after_chunk=after_chunk,
                echo=echo if lead else (lambda _: None),
            )


def _upgrade_leaf(game, x: np.ndarray, template) -> np.ndarray:
    """A checkpoint leaf of an earlier layout of a compact-layout game's CFR tables ->
    ``[seeds, P_0 + P_1]`` (the template's layout): ``[seeds, I, A]`` (written before the
    state kept them flat) or the flat layout before levels were split by legal count
    (session 26; LD(1,1): ``[seeds, 172026]``); anything else unchanged."""
    if len(template.shape) == 1 and x.ndim == 2 and x.shape[1:] != template.shape:
        x = _unsplit_to_infoset_table(game, x)
    if x.ndim == 3 and len(template.shape) == 1 and x.shape[1:] != template.shape:
        return np.asarray(jax.vmap(functools.partial(jaxcfr.kernel_table, game))(x))
    return x


def _unsplit_to_infoset_table(game, x: np.ndarray) -> np.ndarray:
    """``[seeds, P]`` in the unsplit compact layout -> ``[seeds, I, A]`` (zero where
    illegal); ``x`` unchanged when ``P`` is not that layout's size."""
    from games_tensor._table import compact_layout

    legal = np.asarray(game.legal_mask)
    levels = game.meta.infoset_levels
    old = compact_layout(legal, np.asarray(game.parent_seq), levels, split=False)
    if x.shape[1] != len(old["index"]):
        return x
    flat = np.zeros((x.shape[0], legal.size + 1), x.dtype)
    flat[:, old["index"]] = x
    return flat[:, :-1].reshape(x.shape[0], *legal.shape)


def _run_locked(
    config, out: Path, game, solvers, resuming: bool, *, progress, after_chunk, echo
) -> dict[str, Any]:
    lead = _is_lead()
    if lead:
        (out / store.RUNS).mkdir(exist_ok=True)
        store.remove_temporaries(out)
    runs: dict[str, AlgorithmRun] = {}
    for a in config.algorithms:
        template = jax.eval_shape(lambda s=solvers[a.label]: s.init(game))
        note = None
        if lead:
            runs[a.label], note = store.load_checkpoint(
                store.checkpoint_path(out, a.slug),
                a.label,
                template,
                config.seeds,
                upgrade=functools.partial(_upgrade_leaf, game),
            )
        else:
            runs[a.label] = AlgorithmRun()
        runs[a.label] = _share_run(runs[a.label], template, config.seeds)
        if note:
            echo(f"warning: {note}")
        done = runs[a.label].done
        if done >= a.iterations:
            echo(f"{a.label}: already complete ({done} iterations)")
        elif resuming and done:
            echo(f"resuming {a.label} at iteration {done}/{a.iterations}")
    if not lead:  # compute only: the same chunks, nothing written
        for a in config.algorithms:
            if runs[a.label].done < a.iterations:
                _run_algorithm(
                    config,
                    a,
                    runs[a.label],
                    solvers[a.label],
                    game,
                    out,
                    0,
                    None,
                    after_chunk,
                    write=False,
                )
        return None
    env = store.start_session(out)
    session = len(env["sessions"]) - 1

    bar = _progress_bar(config, runs) if progress else None
    say = echo if bar is None else bar.write
    status = "failed"
    try:
        for a in config.algorithms:
            run = runs[a.label]
            if run.done >= a.iterations:
                continue
            if bar is not None:
                bar.set_description(a.label)
            _run_algorithm(config, a, run, solvers[a.label], game, out, session, bar, after_chunk)
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
        store.end_session(out, env, status)
        results = write_outputs(out, config, runs, solvers)
    return results


def _progress_bar(config: sc.StudyConfig, runs: dict[str, AlgorithmRun]):
    """A tqdm bar over the iterations of all algorithms, or None if nothing is left to run."""
    if all(runs[a.label].done >= a.iterations for a in config.algorithms):
        return None
    from tqdm.auto import tqdm

    return tqdm(
        total=sum(a.iterations for a in config.algorithms),
        initial=sum(min(runs[a.label].done, a.iterations) for a in config.algorithms),
        unit="it",
        desc="study",
        dynamic_ncols=True,
        mininterval=0.0,
    )


def _run_algorithm(
    config: sc.StudyConfig,
    algo: sc.AlgorithmConfig,
    run: AlgorithmRun,
    solver: jaxcfr.Solver,
    game,
    out: Path,
    session: int,
    bar,
    after_chunk,
    write: bool = True,
) -> None:
    """Run ``algo`` from where ``run`` stands to its target, recording each chunk in
    ``run`` and checkpointing it (with its curves CSV) when ``write``."""
    ck_path, csv_path = store.checkpoint_path(out, algo.slug), store.curves_path(out, algo.slug)
    chunk_started = time.perf_counter()

    def on_chunk(iteration, nash_conv, state):
        nonlocal chunk_started
        now = time.perf_counter()
        step = iteration - run.done
        run.iterations.append(int(iteration))
        run.nash_conv.append(np.asarray(nash_conv))
        run.chunk_seconds.append(now - chunk_started)
        run.session.append(session)
        state = _to_host(state)  # every process takes part in the gather
        if write:
            store.save_checkpoint(ck_path, algo.label, run, state)
            store.write_csv(csv_path, run)
        if bar is not None:
            bar.set_postfix_str(
                f"median exploitability {np.median(nash_conv) / 2:.3g}", refresh=False
            )
            bar.update(step)
        if after_chunk is not None:
            after_chunk(algo.label, int(iteration))
        chunk_started = time.perf_counter()  # checkpoint writing is not counted

    jaxcfr.run(
        solver,
        game,
        algo.iterations - run.done,
        algo.eval_every,
        key=jax.random.PRNGKey(config.key),
        num_seeds=config.seeds,
        evaluate=algo.evaluate,
        init_scale=0.0 if solver.needs_key else algo.init_scale,  # sampling: seeds differ by key
        state=run.state,
        on_chunk=on_chunk,
    )
