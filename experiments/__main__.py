"""Command-line entry: ``python -m experiments <command> [options]``.

Commands:
  sizes         compile every registered game at its defaults and print the size table
  convergence   convergence-rate study: algorithms x seeds, resumable, plots and a report
  reproduce     regenerate a figure or table of a seed paper (--list names them)

Option of every command: --host-devices N splits the CPU into N XLA devices (set in
XLA_FLAGS before jax is imported; jaxcfr.play splits its matches over them). Default:
one per core for `reproduce` of the OOS paper's targets (oos-*), none otherwise; 0 adds
no flag; a flag XLA_FLAGS already sets wins (experiments/host_devices.py).
"""

import sys


def main(argv=None):
    argv = list(sys.argv[1:] if argv is None else argv)
    commands = {
        "sizes": "experiments.sizes",
        "convergence": "experiments.convergence_cli",
        "reproduce": "experiments.reproduce._cli",
    }
    if not argv or argv[0] in ("-h", "--help") or argv[0] not in commands:
        print(__doc__)
        if argv and argv[0] not in ("-h", "--help"):
            print(f"unknown command {argv[0]!r}; valid commands: {', '.join(commands)}")
            return 2
        return 0
    import importlib

    from experiments import host_devices

    rest = host_devices.setup(argv[0], argv[1:])  # before anything imports jax
    return importlib.import_module(commands[argv[0]]).main(rest)


if __name__ == "__main__":
    sys.exit(main() or 0)
