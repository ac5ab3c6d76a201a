"""Command-line entry: ``python -m experiments <command> [options]``.

Commands:
  sizes         compile every registered game at its defaults and print the size table
  convergence   convergence-rate study: algorithms x seeds, resumable, plots and a report
  reproduce     regenerate a figure or table of a seed paper (--list names them)
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

    return importlib.import_module(commands[argv[0]]).main(argv[1:])


if __name__ == "__main__":
    sys.exit(main() or 0)
