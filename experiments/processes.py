"""Runs that span several JAX processes: joining one, and launching N on this machine.

Every process of a distributed JAX run calls ``jax.distributed.initialize(coordinator,
num_processes, process_id)`` before any JAX computation, then runs the same program
(``jaxcfr.run`` shards the seed batch over all processes' devices). On several hosts
each host starts its own process(es) with the flags of :func:`add_arguments`; on one
machine :func:`launch` starts them all (CPU processes, a free local port for the
coordinator), bounded in time, and stops the others as soon as one fails, since the
survivors would otherwise wait in a collective for a peer that is gone.
"""

from __future__ import annotations

import argparse
import os
import socket
import subprocess
import tempfile
import time
from pathlib import Path

POLL_SECONDS = 0.2
TAIL_CHARS = 4000


def free_port() -> int:
    """A TCP port free on 127.0.0.1 now (the OS picks it; free until someone takes it)."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """The flags of a process of a distributed run (and ``--processes`` to launch them)."""
    g = parser.add_argument_group("several processes (jax.distributed)")
    g.add_argument(
        "--processes",
        type=int,
        metavar="N",
        help="start N CPU processes on this machine (coordinator on 127.0.0.1, a free "
        "port), the seeds sharded across them; process 0 writes the results",
    )
    g.add_argument(
        "--launch-timeout",
        type=float,
        metavar="S",
        help="with --processes: stop all the processes after S seconds (default: no limit)",
    )
    g.add_argument(
        "--coordinator",
        metavar="HOST:PORT",
        help="this process joins a distributed run whose process 0 listens on HOST:PORT "
        "(give the same value on every host, with --num-processes and --process-id)",
    )
    g.add_argument("--num-processes", type=int, metavar="N", help="processes of the run")
    g.add_argument("--process-id", type=int, metavar="I", help="this process's index, 0 to N - 1")


def check_arguments(args) -> None:
    """ValueError naming the bad flag unless the distributed flags are consistent."""
    if args.processes is not None:
        if args.processes < 1:
            raise ValueError(f"--processes must be >= 1, got {args.processes}")
        if args.launch_timeout is not None and args.launch_timeout <= 0:
            raise ValueError(f"--launch-timeout must be > 0 seconds, got {args.launch_timeout}")
        if args.coordinator is not None:
            raise ValueError(
                "--processes N starts the processes itself; --coordinator, --num-processes "
                "and --process-id are for starting each process by hand (several hosts)"
            )
    given = [args.coordinator, args.num_processes, args.process_id]
    if args.launch_timeout is not None and args.processes is None:
        raise ValueError("--launch-timeout applies to --processes N only")
    if any(v is not None for v in given):
        if any(v is None for v in given):
            raise ValueError(
                "a process of a distributed run needs all of --coordinator HOST:PORT, "
                f"--num-processes N and --process-id I; got --coordinator {args.coordinator}, "
                f"--num-processes {args.num_processes}, --process-id {args.process_id}"
            )
        host, _, port = args.coordinator.rpartition(":")
        if not host or not port.isdigit():
            raise ValueError(f"--coordinator must be HOST:PORT, got {args.coordinator!r}")
        if args.num_processes < 1:
            raise ValueError(f"--num-processes must be >= 1, got {args.num_processes}")
        if not 0 <= args.process_id < args.num_processes:
            raise ValueError(
                f"--process-id must be 0 to {args.num_processes - 1} (--num-processes "
                f"{args.num_processes}), got {args.process_id}"
            )


def initialize(coordinator: str, num_processes: int, process_id: int) -> None:
    """Join the distributed run (before any JAX computation in this process)."""
    import jax

    jax.distributed.initialize(
        coordinator_address=coordinator, num_processes=num_processes, process_id=process_id
    )


LAUNCH_FLAGS = ("--processes", "--launch-timeout")


def strip_launch_flags(argv: list[str]) -> list[str]:
    """``argv`` without the launcher's own flags (``--processes N``, ``--launch-timeout S``,
    also in their ``--flag=value`` form), for the processes it starts."""
    out, skip = [], False
    for a in argv:
        if skip:
            skip = False
        elif a in LAUNCH_FLAGS:
            skip = True
        elif not a.startswith(tuple(f + "=" for f in LAUNCH_FLAGS)):
            out.append(a)
    return out


def _tail(path: Path) -> str:
    text = path.read_text(errors="replace")
    return text[-TAIL_CHARS:]


class LaunchError(RuntimeError):
    """A launched process failed or the run overran its time; carries the output tails."""


def launch(
    command: list[str],
    num_processes: int,
    *,
    timeout: float | None = None,
    env: dict[str, str] | None = None,
    show_first: bool = True,
) -> int:
    """Run ``command + ['--coordinator', '127.0.0.1:PORT', '--num-processes', N,
    '--process-id', i]`` for i = 0..N-1 as CPU processes of one distributed run.

    Process 0's output goes to this process's stdout/stderr when ``show_first`` (the
    others' output is kept in temporary files and shown if they fail). Returns 0 when
    all exit 0, else the exit status of the first process that failed, after stopping
    the others. Raises :class:`LaunchError` (all stopped) after ``timeout`` seconds.
    """
    if num_processes < 1:
        raise ValueError(f"num_processes must be >= 1, got {num_processes}")
    port = free_port()
    env = dict(os.environ if env is None else env)
    env.setdefault("JAX_PLATFORMS", "cpu")
    procs: list[subprocess.Popen] = []
    with tempfile.TemporaryDirectory(prefix="jaxcfr-processes-") as tmp:
        logs = [Path(tmp) / f"process-{i}.log" for i in range(num_processes)]
        files = []
        try:
            for i in range(num_processes):
                flags = ["--coordinator", f"127.0.0.1:{port}"]
                flags += ["--num-processes", str(num_processes), "--process-id", str(i)]
                if i == 0 and show_first:
                    out = None
                else:
                    out = open(logs[i], "w")  # noqa: SIM115 - closed in finally
                    files.append(out)
                err = None if out is None else subprocess.STDOUT
                procs.append(subprocess.Popen(command + flags, env=env, stdout=out, stderr=err))
            deadline = None if timeout is None else time.monotonic() + timeout
            while True:
                codes = [p.poll() for p in procs]
                failed = [i for i, c in enumerate(codes) if c not in (None, 0)]
                if failed:
                    i = failed[0]
                    if i != 0 or not show_first:
                        print(f"process {i} failed (exit {codes[i]}):\n{_tail(logs[i])}")
                    return codes[i]
                if all(c == 0 for c in codes):
                    return 0
                if deadline is not None and time.monotonic() > deadline:
                    tails = "\n".join(
                        f"--- process {i}:\n{_tail(logs[i])}"
                        for i in range(num_processes)
                        if logs[i].exists()
                    )
                    raise LaunchError(
                        f"{num_processes} processes did not finish in {timeout} s; stopped "
                        f"them.\n{tails}"
                    )
                time.sleep(POLL_SECONDS)
        finally:
            for p in procs:  # stop the survivors (each by its own handle), then reap them
                if p.poll() is None:
                    p.kill()
            for p in procs:
                p.wait()
            for f in files:
                f.close()
