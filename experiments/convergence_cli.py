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
as an uninterrupted run (a damaged checkpoint is detected by its checksum and its
chunk recomputed). An output folder holding a different study, or one another process
is running, is refused; so is a study that would not fit in memory, before it starts.
Guarantees: docs/guarantees.md.

Output folder: config.json, results.json, timing.json, environment.json, runs/*.csv,
runs/*.npz, exploitability_vs_iterations.png, exploitability_vs_seconds.png, report.md.

Several processes (``jax.distributed``; the seeds, a multiple of the processes'
devices, are sharded across them; process 0 alone writes the output folder, and the
results equal a single-process study's):

    # N CPU processes on this machine, started and stopped by this command
    python -m experiments convergence --config experiments/studies/default.toml \\
        --out results/default --processes 2
    # several hosts: the same command on each, host 0's address as coordinator
    python -m experiments convergence ... --out results/x \\
        --coordinator HOST0:12345 --num-processes 2 --process-id 0   # on HOST0
    python -m experiments convergence ... --out results/x \\
        --coordinator HOST0:12345 --num-processes 2 --process-id 1   # on the other host
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Any

import games_tensor as gt
from experiments import algorithms, processes, report
from experiments import study_config as sc
from experiments import study_store as store
from experiments.algorithms import ConfigError
from experiments.convergence import run_study
from experiments.study_store import StudyError


def listing() -> str:
    """The games and algorithms a study can name, with their parameters' defaults."""
    games = "\n".join(
        f"  {n}(" + ", ".join(f"{k}={v!r}" for k, v in p.items()) + ")"
        for n, p in gt.available().items()
    )
    return f"games:\n{games}\nalgorithms:\n{algorithms.describe()}"


def build_parser() -> argparse.ArgumentParser:
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
    p.add_argument("--key", type=int, help="base PRNG key, 0 to 2**32 - 1 (default 0)")
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
        "--evaluate",
        choices=sc.EVALUATE,
        help="policy to evaluate (default average); full_regret: the full-game regret of "
        "an imperfect-recall run (solvers with full_average=true)",
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
    processes.add_arguments(p)
    return p


def config_from_args(args) -> sc.StudyConfig:
    """The study the parsed flags describe: the ``--config`` file (if given) with the
    flags' overrides; a ``--game`` other than the file's drops the file's game_params."""
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


def check_launch(args) -> None:
    """ConfigError for a ``--processes N`` study every process would refuse: no ``--out``,
    a bad configuration, or seeds that do not divide among the N processes (each process
    runs its share of every algorithm's seed batch)."""
    if not args.out:
        raise ConfigError("--out DIR is required")
    config = config_from_args(args)
    if config.seeds % args.processes:
        raise ConfigError(
            f"--seeds {config.seeds} does not divide among --processes {args.processes}: "
            "every process runs an equal share of the seeds; choose --seeds as a multiple "
            f"of {args.processes}"
        )


def main(argv=None) -> int:
    args = build_parser().parse_args(argv)
    if args.list:
        print(listing())
        return 0
    try:
        processes.check_arguments(args)
    except ValueError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    if args.processes is not None and args.processes > 1:  # start them, wait, report
        try:  # what every process would refuse, refused once before any is started
            check_launch(args)
        except ConfigError as exc:
            print(f"error: {exc}", file=sys.stderr)
            return 2
        argv = processes.strip_launch_flags(list(sys.argv[1:] if argv is None else argv))
        command = [sys.executable, "-m", "experiments", "convergence", *argv]
        try:
            return processes.launch(command, args.processes, timeout=args.launch_timeout)
        except processes.LaunchError as exc:
            print(f"error: {exc}", file=sys.stderr)
            return 1
        except KeyboardInterrupt:  # the processes are stopped; checkpoints are kept
            print(
                f"\ninterrupted: progress up to the last chunk is saved in {args.out}; "
                "run the same command again to resume",
                file=sys.stderr,
            )
            return 130
    lead = True
    try:
        if not args.out:
            raise ConfigError("--out DIR is required")
        if args.coordinator is not None:  # before any JAX computation (config checks too)
            processes.initialize(args.coordinator, args.num_processes, args.process_id)
            lead = args.process_id == 0
        config = config_from_args(args)
        for name in config.skipped if lead else ():
            print(f"note: optional algorithm {name!r} is not available in this jaxcfr; skipped")
        out = Path(args.out)
        if lead:
            print(
                f"study: {config.game}, {len(config.algorithms)} algorithms "
                f"({', '.join(a.label for a in config.algorithms)}), {config.seeds} seeds "
                f"-> {out}" + (f" ({args.num_processes} processes)" if args.coordinator else ""),
                flush=True,
            )
        results = run_study(config, out, progress=lead and not args.no_progress)
    except (ConfigError, StudyError) as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    except FloatingPointError as exc:  # jaxcfr stopped a run whose state became NaN or inf
        print(
            f"error: {exc}\nThe study stopped; its outputs so far are in {args.out} (marked "
            "incomplete). Rerunning it would stop at the same point: change the algorithm's "
            "parameters (or use --x64) with another --out",
            file=sys.stderr,
        )
        return 1
    except ValueError as exc:  # jaxcfr refused an argument (e.g. a batch too large to fit)
        print(f"error: {exc}", file=sys.stderr)
        return 2
    except OSError as exc:  # disk full, permissions, ... while the study runs
        where = f" ({exc.filename})" if exc.filename else ""
        print(
            f"error: cannot write the study in {args.out}: {exc.strerror or exc}{where}. "
            "Every completed chunk is kept: fix that (free disk space, permissions) and run "
            "the same command again to resume",
            file=sys.stderr,
        )
        return 1
    except MemoryError:
        print(
            f"error: out of memory (the estimate made before the study was too low). "
            f"Every completed chunk is kept in {args.out}; free memory and run the same "
            "command again to resume",
            file=sys.stderr,
        )
        return 1
    except KeyboardInterrupt:
        print(
            f"\ninterrupted: progress up to the last chunk is saved in {args.out}; "
            "run the same command again to resume",
            file=sys.stderr,
        )
        return 130
    if not lead:  # process 0 writes and reports
        return 0
    print()
    print(report.results_table(results, store.read_json(out / store.TIMING)))
    print()
    print(f"plots:  {out / report.PLOT_ITERATIONS}\n        {out / report.PLOT_SECONDS}")
    print(f"report: {out / store.REPORT}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
