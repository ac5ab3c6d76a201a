"""Compile every registered game at its default parameters and print a size table."""

from __future__ import annotations

import argparse
import time

import games_tensor as gt
from experiments.catalog import params_str

COLUMNS = [
    "game",
    "parameters",
    "infosets/player",
    "(I,a) pairs",
    "sequences",
    "terminals",
    "histories",
    "max depth",
    "compile s",
]


def rows(instances):
    for name, params in instances:
        t0 = time.perf_counter()
        game = gt.load(name, **params)
        seconds = time.perf_counter() - t0
        s = game.sizes
        yield [
            name,
            params_str(game.params),
            "/".join(map(str, s["infosets_per_player"])),
            s["infoset_actions"],
            s["sequences"],
            s["terminals"],
            s["histories"],
            s["max_depth"],
            f"{seconds:.2f}",
        ]


def format_table(header, body) -> str:
    body = [[str(c) for c in r] for r in body]
    widths = [max(len(h), *(len(r[i]) for r in body)) for i, h in enumerate(header)]
    line = lambda r: "| " + " | ".join(c.ljust(w) for c, w in zip(r, widths, strict=True)) + " |"  # noqa: E731
    sep = "|" + "|".join("-" * (w + 2) for w in widths) + "|"
    return "\n".join([line(header), sep, *map(line, body)])


def main(argv=None):
    parser = argparse.ArgumentParser(prog="python -m experiments sizes", description=__doc__)
    parser.parse_args(argv)
    defaults = [(name, {}) for name in gt.available()]
    table = []
    for r in rows(defaults):
        table.append(r)
        print(f"compiled {r[0]} in {r[-1]} s", flush=True)
    print()
    print(format_table(COLUMNS, table))


if __name__ == "__main__":
    main()
