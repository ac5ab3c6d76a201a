"""Experiments: size tables, benchmarks, convergence studies (``python -m experiments --help``)."""
