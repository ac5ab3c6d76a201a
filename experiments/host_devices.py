"""``--host-devices N``: split the CPU into N XLA devices, set before jax is imported.

Online search and matches are many small kernels per searcher; XLA's intra-op
threads do not spread them over the cores, but N forced host devices do:
``jaxcfr.play`` and ``jaxcfr.sharded_vmap`` split their batch over all local
devices by ``shard_map`` (each device runs its own loop on its rows,
``jaxcfr._shard``). XLA reads ``XLA_FLAGS`` once, when jax's CPU backend starts, so
the entry points (``python -m experiments ...``, ``python -m experiments.benchmarks
...``) take the option off the command line before anything imports jax and add

    --xla_force_host_platform_device_count=N --xla_cpu_multi_thread_eigen=false

to ``XLA_FLAGS`` (the second only when N > 1: with one device per core, Eigen's own
threads only compete with the other device). A flag ``XLA_FLAGS`` already sets is
kept: the environment wins over the default. ``--host-devices 0`` adds nothing.

Defaults per command (``default_for``): the number of cores this process may use for
the search and match commands (benchmarks ``search``, ``step_bots``, ``search_step``;
``reproduce`` of the OOS paper's match targets ``oos-fig4*`` and ``oos-fig3-aggregate``,
which run ``jaxcfr.play``), nothing for the others (``step_compile`` compiles pieces on
one device; ``oos-fig3-root`` vmaps its seeds on one device)
(full-width CFR and ``jaxcfr.run``'s seed batches are single large kernels that
XLA's intra-op threads already spread; they keep the flags of their environment).

In a notebook, set the variable in the first cell, before ``import jax``::

    import os
    os.environ["XLA_FLAGS"] = "--xla_force_host_platform_device_count=2"
"""

from __future__ import annotations

import os
import sys

OPTION = "--host-devices"
COUNT = "--xla_force_host_platform_device_count"
EIGEN = "--xla_cpu_multi_thread_eigen"

# commands whose work is batches of searchers or matches (default: one device per core)
SEARCH_BENCHMARKS = ("search", "step_bots", "search_step")
# reproduce targets whose work is jaxcfr.play (oos-fig3-root vmaps its seeds on one device)
MATCH_TARGET_PREFIXES = ("oos-fig4", "oos-fig3-aggregate")
VALUED_OPTIONS = ("--out", "--key")  # reproduce options that take the next token


def cores() -> int:
    """CPU cores this process may run on (its affinity mask, e.g. under ``taskset``)."""
    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:  # pragma: no cover - not Linux
        return os.cpu_count() or 1


def default_for(command: str, rest: list[str]) -> int:
    """Host devices a command gets by default: ``cores()`` for search and matches, 0
    (no flag: one device) for everything else."""
    if command in SEARCH_BENCHMARKS:
        return cores()
    if command == "reproduce":
        named, skip = [], False
        for a in rest:
            if skip:
                skip = False
            elif a in VALUED_OPTIONS:
                skip = True  # the next token is the option's value, not a target
            elif not a.startswith("-"):
                named.append(a)
        if named and all(a.startswith(MATCH_TARGET_PREFIXES) for a in named):
            return cores()
    return 0


def take(argv: list[str]) -> tuple[list[str], int | None]:
    """``argv`` without ``--host-devices N`` (or ``--host-devices=N``) and N (None if
    absent). Raises ``SystemExit`` (usage error) on a value that is not an integer >= 0."""
    out, value = [], None
    it = iter(argv)
    for arg in it:
        if arg == OPTION or arg.startswith(OPTION + "="):
            raw = arg.partition("=")[2] if "=" in arg else next(it, None)
            if raw is None or not raw.isdigit():
                print(f"{OPTION} needs an integer >= 0, got {raw!r}", file=sys.stderr)
                raise SystemExit(2)
            value = int(raw)
        else:
            out.append(arg)
    return out, value


def apply(count: int, *, explicit: bool = True) -> str:
    """Add the flags for ``count`` host devices to ``XLA_FLAGS`` (unless the device
    count is set there already, or ``count`` is 0; Eigen's threads are turned off only
    together with a device count this call adds); returns the resulting ``XLA_FLAGS``.
    Raises ``RuntimeError`` if jax was imported already and ``explicit`` (the user asked
    for ``--host-devices``: the flag would be ignored); a default is then left out."""
    flags = os.environ.get("XLA_FLAGS", "")
    if count > 0:
        extra = []
        if COUNT not in flags:
            extra.append(f"{COUNT}={count}")
            if count > 1 and EIGEN not in flags:
                extra.append(f"{EIGEN}=false")
        if extra:
            if "jax" in sys.modules:
                if not explicit:  # called in-process (a test, a notebook): keep jax's devices
                    return flags
                raise RuntimeError(
                    f"{OPTION} {count}: jax is already imported, so XLA_FLAGS can no longer "
                    "change; pass it to the entry point or set XLA_FLAGS before importing jax"
                )
            flags = " ".join([flags, *extra]).strip()
            os.environ["XLA_FLAGS"] = flags
    return flags


def setup(command: str, rest: list[str]) -> list[str]:
    """Entry points: take ``--host-devices`` off ``rest`` (the command's arguments),
    apply it or ``command``'s default, and return the remaining arguments."""
    rest, count = take(rest)
    if count is None:
        apply(default_for(command, rest), explicit=False)
    else:
        apply(count)
    return rest


def describe() -> str:
    """``N device(s) (XLA_FLAGS=...)`` for a benchmark's output (imports jax)."""
    import jax

    n = jax.local_device_count()
    return f"{n} {jax.default_backend()} device(s) (XLA_FLAGS={os.environ.get('XLA_FLAGS', '')!r})"
