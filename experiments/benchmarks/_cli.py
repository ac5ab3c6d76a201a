"""The benchmarks' argument parser: every option's default in ``--help``.

``Parser`` is ``argparse.ArgumentParser`` whose options state their default in their
help text (appended as ``(default: ...)`` where the text does not mention one; an option
without a help text gets just that), so ``python -m experiments.benchmarks <name> --help``
says what a bare run measures.
"""

from __future__ import annotations

import argparse

HOST_DEVICES_EPILOG = (
    "--host-devices N (after the benchmark's name, taken by python -m "
    "experiments.benchmarks before jax is imported): split the CPU into N XLA devices "
    "(default: one per core for search, step_bots and search_step, none otherwise); "
    "experiments/host_devices.py"
)


class Parser(argparse.ArgumentParser):
    """``argparse.ArgumentParser`` stating each option's default in ``--help``, and the
    entry point's ``--host-devices`` in its epilog."""

    def __init__(self, *args, **kwargs):
        kwargs.setdefault("epilog", HOST_DEVICES_EPILOG)
        super().__init__(*args, **kwargs)

    def add_argument(self, *args, **kwargs):
        action = super().add_argument(*args, **kwargs)
        default = action.default
        # by identity: 0 == False, and a default of 0 is worth stating
        shown = action.option_strings and not any(
            default is hidden for hidden in (None, False, argparse.SUPPRESS)
        )
        if shown and isinstance(action, argparse._StoreTrueAction):
            shown = False
        text = action.help or ""
        if shown and "%(default)" not in text and "default" not in text.lower():
            action.help = f"{text} (default: %(default)s)".strip()
        return action
