"""Hashed infoset tables: fingerprint collisions on step-form keys, insert/lookup throughput.

``python -m experiments.benchmarks hash_table [--games ...] [--capacity C] [--skip-timing]``

1. Collisions (exact, no timing). For each small game (default LD(1,1), II-GS(6),
   GP(3,3,2,2)) the step form is enumerated (``games_tensor.step.enumerate_tree``, node h
   = compiled history h) and every decision node's information-state key is reduced to
   its 64-bit fingerprint (``jaxcfr._hash_table.fingerprint64``). Reported: the compiled
   infosets, the distinct step keys and fingerprints, and the collisions = distinct keys
   that share a fingerprint, plus whether the fingerprints partition the histories
   exactly as the compiled infoset ids. For the large games (LD(2,2), II-GS(13),
   GP(4,6,4,4)) the keys met by 32,768 uniformly random playouts are checked the same way
   (no compiled ids there).
2. Throughput. ``lax.scan`` over N = C/2 steps; each step inserts (then, in a second
   pass, looks up) one random 3-word key per table, for 1 table and 256 tables at once
   (``vmap``). Reference measured in the same run: the dense gather the compiled bots
   use (row = infoset id), the same scan shape. Each lookup's key depends on the previous
   result, as in a tree descent (so XLA cannot vectorize the scan away). Only ratios
   within one run mean much on a shared machine.
"""

from __future__ import annotations

import time

import jax
import jax.numpy as jnp
import numpy as np

import games_tensor as gt
from experiments.benchmarks._cli import Parser
from experiments.sizes import format_table
from games_tensor import step
from jaxcfr._hash_table import fingerprint64, hash_table, table_bytes

SMALL = {
    "LD(1,1)": ("liars_dice", {"dice0": 1, "dice1": 1}),
    "II-GS(6)": ("ii_goofspiel", {"num_cards": 6}),
    "GP(3,3,2,2)": ("generic_poker", {}),
}
LARGE = step.LARGE_GAMES


def _rows(x: np.ndarray) -> np.ndarray:
    x = np.ascontiguousarray(x.astype(np.uint64))
    return x.view(np.dtype((np.void, 8 * x.shape[1]))).ravel()


def _distinct(x: np.ndarray) -> int:
    return int(np.unique(_rows(x)).size)


def collisions_small(label: str) -> list:
    name, params = SMALL[label]
    game = gt.load(name, **params)
    sg = step.load(name, **params)
    tree = step.enumerate_tree(sg)
    decide = tree.player >= 0
    keys = tree.info_key[decide]
    fps = np.asarray(jax.jit(fingerprint64)(jnp.asarray(keys)))
    ids = np.asarray(game.node_infoset)[decide][:, None]
    n_keys, n_fps = _distinct(keys), _distinct(fps)
    same = _distinct(ids) == n_fps == _distinct(np.concatenate([ids, fps], axis=1))
    return [label, game.num_infosets, n_keys, n_fps, n_keys - n_fps, sg.key_words, same]


def collisions_large(label: str, playouts: int = 32768) -> list:
    name, params = LARGE[label]
    sg = step.load(name, **params)
    traj = jax.jit(jax.vmap(lambda k: step.random_playout(sg, k)))(
        jax.random.split(jax.random.key(0), playouts)
    )
    players = np.asarray(traj.players).ravel()
    keys = np.asarray(traj.keys).reshape(-1, sg.key_words)[players >= 0]
    fps = np.asarray(jax.jit(fingerprint64)(jnp.asarray(keys)))
    n_keys, n_fps = _distinct(keys), _distinct(fps)
    return [f"{label} ({playouts} playouts)", "-", n_keys, n_fps, n_keys - n_fps, sg.key_words, "-"]


def _best(fn, *args, repeats=3):
    jax.block_until_ready(fn(*args))
    best = np.inf
    for _ in range(repeats):
        t0 = time.perf_counter()
        jax.block_until_ready(fn(*args))
        best = min(best, time.perf_counter() - t0)
    return best


def throughput(capacity: int, batch: int, words: int = 3) -> list:
    fns = hash_table(capacity)
    n = capacity // 2
    rng = np.random.default_rng(0)
    keys = rng.integers(0, 2**32, size=(n, batch, words), dtype=np.uint64).astype(np.uint32)
    keys = jnp.asarray(keys)
    tables = jax.vmap(lambda _: fns.init())(jnp.arange(batch))

    def insert_scan(tables, keys):
        def body(t, k):
            t, row, _, _ = jax.vmap(fns.insert)(t, k)
            return t, row

        return jax.lax.scan(body, tables, keys)

    # Each step's key depends on the previous step's result (``acc >> 31`` is 0 here, but
    # XLA cannot know it), as in a tree descent, so no scan is vectorized away.
    def lookup_scan(tables, keys):
        def body(acc, k):
            k = k.at[:, 0].set(k[:, 0] ^ (acc >> 31).astype(jnp.uint32))
            row, _ = jax.vmap(fns.lookup)(tables, k)
            return acc + row, None

        return jax.lax.scan(body, jnp.zeros((batch,), jnp.int32), keys)[0]

    dense = jnp.zeros((batch, capacity), jnp.int32)

    def dense_scan(dense, keys):  # reference: row = id, one gather per step and table
        def body(acc, k):
            ids = (k[:, 0] ^ (acc >> 31).astype(jnp.uint32)) & jnp.uint32(capacity - 1)
            ids = ids.astype(jnp.int32)
            return acc + jnp.take_along_axis(dense, ids[:, None], axis=1)[:, 0], None

        return jax.lax.scan(body, jnp.zeros((batch,), jnp.int32), keys)[0]

    t_ins = _best(jax.jit(insert_scan), tables, keys)
    filled, _ = jax.jit(insert_scan)(tables, keys)
    t_look = _best(jax.jit(lookup_scan), filled, keys)
    t_ref = _best(jax.jit(dense_scan), dense, keys)
    ops = n * batch
    return [
        capacity,
        batch,
        f"{ops / t_ins:,.0f}",
        f"{ops / t_look:,.0f}",
        f"{ops / t_ref:,.0f}",
        f"{t_ins / t_ref:.1f}",
        f"{t_look / t_ref:.1f}",
        f"{table_bytes(capacity) / 2**20:.2f}",
    ]


def main(argv=None):
    parser = Parser(prog="python -m experiments.benchmarks hash_table")
    parser.add_argument("--games", nargs="*", default=list(SMALL) + list(LARGE))
    parser.add_argument("--capacity", type=int, default=1 << 16)
    parser.add_argument("--skip-timing", action="store_true")
    parser.add_argument("--skip-collisions", action="store_true")
    args = parser.parse_args(argv)
    if not args.skip_collisions:
        rows = []
        for label in args.games:
            t0 = time.perf_counter()
            if label in SMALL:
                rows.append(collisions_small(label))
            elif label in LARGE:
                rows.append(collisions_large(label))
            else:
                parser.error(f"unknown game {label!r}; valid: {', '.join([*SMALL, *LARGE])}")
            print(f"  ({label}: {time.perf_counter() - t0:.1f} s)", flush=True)
        print("64-bit fingerprint collisions on information-state keys")
        print(
            format_table(
                [
                    "game",
                    "compiled infosets",
                    "distinct keys",
                    "distinct fingerprints",
                    "collisions",
                    "key words",
                    "same partition as compiled ids",
                ],
                rows,
            )
        )
    if not args.skip_timing:
        rows = [throughput(args.capacity, b) for b in (1, 256)]
        print(f"\ninsert / lookup throughput, capacity {args.capacity}, {args.capacity // 2} keys")
        print(
            format_table(
                [
                    "capacity",
                    "tables",
                    "inserts/s",
                    "lookups/s",
                    "dense gathers/s (ref)",
                    "insert / ref time",
                    "lookup / ref time",
                    "MiB per table",
                ],
                rows,
            )
        )
        print(f"device: {jax.devices()[0].device_kind}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
