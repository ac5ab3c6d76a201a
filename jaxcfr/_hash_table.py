"""Fixed-capacity open-addressing hash table: information-state key -> row index.

For games too large to compile (``games_tensor.step``), a bot's statistics live in
dense ``[R, A]`` arrays whose rows are handed out, in insertion order, to the
information-state keys the bot meets. This module maps keys to those rows without any
Python-side dictionary, as pure functions over a NamedTuple of fixed-shape arrays, so
``jax.jit`` and ``jax.vmap`` (one table per match) apply.

* A key (``[W]`` uint32 words, ``games_tensor.step`` packing) is reduced to a 64-bit
  fingerprint (two uint32 words, :func:`fingerprint64`); the table stores only
  fingerprints, so two keys with the same fingerprint would share a row (measured: none
  on LD(1,1), II-GS(6) and GP(3,3,2,2), docs/large_games.md).
* Linear probing from a bucket-aligned home: the key's window is the ``P = max_probes``
  slots ``s, s + 1, ...`` (mod C) from ``s = (fp[0] mod C)`` rounded down to a multiple
  of the bucket (:data:`BUCKET` = 4 slots); it lives in the first window slot that is
  free or holds its fingerprint. Slots are never freed, so the key is present iff its
  fingerprint is in the window, and absent once a free slot precedes it.
* One slot is 4 uint32 words ``(fp[0], fp[1], row + 1, 0)`` (0: free), so a bucket is
  one 64-byte cache line. A probe reads the home bucket as one aligned slice and
  answers from it (found, row, first free slot: reductions, no index gathers); the
  whole window is read only when some key of the batch is not settled there (neither
  its fingerprint nor a free slot in the home bucket), under a ``lax.cond`` on CPU:
  on a sparse table one line per probe, where the two ``[P]`` windows of separate
  fingerprint and row arrays were 3-5 (docs/large_games.md, session 27). Session 28:
  the slice and the reductions instead of a 4-index gather, an ``argmax`` gather and a
  ``[P, 4]`` window padded with placeholders: 13 top-level kernels per probe down to
  10 (II-GS(13) ISMCTS at B = 256) and about 1.4x the probes per CPU second at
  B = 256 on 2^14 slots (micro-benchmark, docs/large_games.md).
* A full table is never silent: when the window has no free slot, or all
  ``max_rows`` rows are handed out, the insert is refused (row -1) and the table's
  ``refusals`` counter grows by one.

Shapes: C slots (capacity, a power of two), W key words, P probe window, N keys.
Memory: ``16 C + 8`` bytes per table (:func:`table_bytes`).

Usage::

    table_fns = hash_table(capacity=1 << 16)
    table = table_fns.init()
    table, row, found, inserted = table_fns.insert(table, key)   # key [W] uint32
    row, found = table_fns.lookup(table, key)
"""

from __future__ import annotations

from collections.abc import Callable
from typing import NamedTuple

import jax
import jax.numpy as jnp

from jaxcfr._sampling import _mix32, batch_all, materialize

_SEED_A = 0x243F6A88  # digits of pi
_SEED_B = 0x85A308D3
_ODD = 0x9E3779B9
BUCKET = 4  # slots per bucket: 4 x 4 uint32 words, one 64-byte cache line


def fingerprint64(key: jax.Array) -> jax.Array:
    """``[..., W]`` uint32 key -> ``[..., 2]`` uint32 64-bit fingerprint.

    Two 32-bit lanes over the words, each step a lowbias32 mix (a bijection):
    ``a = mix(a ^ w)``, ``b = mix(b ^ mix(w * odd + 1))``, then ``b = mix(b ^ a)``. For
    one-word keys the map is injective (lane a is a bijection of the word).
    """
    key = jnp.asarray(key, jnp.uint32)
    a = jnp.full(key.shape[:-1], _SEED_A, jnp.uint32)
    b = jnp.full(key.shape[:-1], _SEED_B, jnp.uint32)
    for i in range(key.shape[-1]):
        w = key[..., i]
        a = _mix32(a ^ w)
        b = _mix32(b ^ _mix32(w * jnp.uint32(_ODD) + jnp.uint32(1)))
    b = _mix32(b ^ a)
    return jnp.stack([a, b], axis=-1)


class HashTable(NamedTuple):
    """One table (``jax.vmap`` for many).

    slots: [C, 4] uint32: each slot's ``(fp[0], fp[1], row + 1, 0)``, all 0 when free.
    size: [] int32: rows handed out so far (the next row).
    refusals: [] int32: inserts refused because no slot or row was free.
    """

    slots: jax.Array
    size: jax.Array
    refusals: jax.Array


class HashTableFns(NamedTuple):
    """The pure functions of a table with static sizes (see :func:`hash_table`)."""

    init: Callable[[], HashTable]
    lookup: Callable[[HashTable, jax.Array], tuple[jax.Array, jax.Array]]
    insert: Callable[[HashTable, jax.Array], tuple[HashTable, jax.Array, jax.Array, jax.Array]]
    insert_many: Callable[[HashTable, jax.Array], tuple[HashTable, jax.Array, jax.Array, jax.Array]]
    capacity: int
    max_rows: int
    max_probes: int


def table_bytes(capacity: int) -> int:
    """Bytes of one :class:`HashTable` with ``capacity`` slots (16 per slot + 8)."""
    return 16 * capacity + 8


def hash_table(
    capacity: int,
    *,
    max_rows: int | None = None,
    max_probes: int = 32,
    fingerprint: Callable[[jax.Array], jax.Array] = fingerprint64,
) -> HashTableFns:
    """Build the functions of a key -> row table with ``capacity`` slots.

    Args:
      capacity: C, number of slots, a power of two (>= 1).
      max_rows: rows available for keys (default C); inserts beyond are refused.
      max_probes: P, slots probed from the start of the home bucket (the home slot
        rounded down to a multiple of the bucket size; capped at C).
      fingerprint: ``[W] uint32 -> [2] uint32`` (default :func:`fingerprint64`); tests
        pass a weak one to force probe collisions.

    Returns:
      :class:`HashTableFns` with
      ``init() -> HashTable``;
      ``lookup(table, key [W]) -> (row [] int32, found [] bool)``, row -1 if absent;
      ``insert(table, key [W], enabled=True) -> (table, row, found, inserted)``: the
      key's row if present (found), else a new row ``size`` (inserted), else -1 with
      ``refusals + 1``; ``enabled`` ([] bool) False: the table unchanged (row -1 if
      absent, nothing counted) -- a conditional insert that writes one slot instead
      of selecting between two whole tables;
      ``insert_many(table, keys [N, W]) -> (table, rows [N], found [N], inserted [N])``,
      the inserts in order (a ``lax.scan``).
    """
    if isinstance(capacity, bool) or not isinstance(capacity, int) or capacity < 1:
        raise ValueError(f"capacity must be a positive power of two, got {capacity!r}")
    if capacity & (capacity - 1):
        raise ValueError(f"capacity must be a power of two, got {capacity!r}")
    if max_rows is None:
        max_rows = capacity
    if isinstance(max_rows, bool) or not isinstance(max_rows, int) or not 0 < max_rows <= capacity:
        raise ValueError(
            f"max_rows must be an integer in [1, capacity={capacity}], got {max_rows!r}"
        )
    if isinstance(max_probes, bool) or not isinstance(max_probes, int) or max_probes < 1:
        raise ValueError(f"max_probes must be a positive integer, got {max_probes!r}")
    probes = min(max_probes, capacity)
    mask = capacity - 1
    # the home bucket: the largest power of two <= min(BUCKET, P) (divides C)
    head = 1 << (min(BUCKET, probes).bit_length() - 1)

    def init() -> HashTable:
        return HashTable(
            slots=jnp.zeros((capacity, 4), jnp.uint32),
            size=jnp.zeros((), jnp.int32),
            refusals=jnp.zeros((), jnp.int32),
        )

    def _scan(seen, fp, first_slot):
        """``(found, row, free slot)`` of a window ``seen`` [n, 4] whose slot j is
        ``first_slot + j`` (mod C): reductions only (no argmax gather), so they fuse."""
        n = seen.shape[0]
        occupied = seen[:, 2] != 0
        match = occupied & (seen[:, 0] == fp[0]) & (seen[:, 1] == fp[1])
        found = jnp.any(match)
        # at most one slot of a window holds a fingerprint (inserts stop at the first)
        row = jnp.where(found, jnp.max(jnp.where(match, seen[:, 2], 0)).astype(jnp.int32) - 1, -1)
        j = jnp.min(jnp.where(occupied, n, jnp.arange(n, dtype=jnp.int32)))  # first free
        free = jnp.where(j < n, (first_slot + j) & mask, capacity)  # C: none
        return found, row, free, j < n

    def _probe(table: HashTable, key: jax.Array):
        """``(fp [2], found [], row [] (-1 if absent), free [] the first free slot of
        the window (C if none))``."""
        # computed once by a kernel of its own (materialize), not in each gather's kernel
        fp = materialize(fingerprint(jnp.asarray(key, jnp.uint32)))
        start = (fp[0] & jnp.uint32(mask & ~(head - 1))).astype(jnp.int32)
        # the home bucket: one aligned slice of ``head`` slots (one 64-byte line)
        home = jax.lax.dynamic_slice(table.slots, (start, 0), (head, 4))
        found, row, free, has_free = _scan(home, fp, start)
        if probes == head:
            return fp, found, row, free
        settled = found | has_free

        def whole():  # the whole window (its home bucket again: the same line)
            window = (start + jnp.arange(probes, dtype=jnp.int32)) & mask
            f, r, e, _ = _scan(table.slots[window], fp, start)
            # settled keys keep their home bucket's answer (the same one, as slots are
            # never freed: nothing of the key lies past a free slot)
            return (
                jnp.where(settled, found, f),
                jnp.where(settled, row, r),
                jnp.where(settled, free, e),
            )

        if jax.default_backend() == "cpu":
            # under vmap (batch_all: unbatched) a real branch: the rest of the window is
            # not read at all once every table of the batch settled in its home bucket
            found, row, free = jax.lax.cond(batch_all(settled), lambda: (found, row, free), whole)
        else:
            # an accelerator fetches a branch predicate to the host on every probe
            # (step bots on an H100 at B = 256: 15-25% fewer it/s with the branch);
            # the same values, read unconditionally
            found, row, free = whole()
        return fp, found, row, free

    def lookup(table: HashTable, key: jax.Array):
        _, found, row, _ = _probe(table, key)
        return row, found

    def insert(table: HashTable, key: jax.Array, enabled=True):
        fp, found, row, free = _probe(table, key)
        insert_now = ~found & (free < capacity) & (table.size < max_rows) & enabled
        refused = ~found & ~insert_now & enabled
        slot = jnp.where(insert_now, free, capacity)  # C: dropped
        entry = jnp.stack([fp[0], fp[1], (table.size + 1).astype(jnp.uint32), jnp.uint32(0)])
        new = HashTable(
            slots=table.slots.at[slot].set(entry, mode="drop"),
            size=table.size + insert_now.astype(jnp.int32),
            refusals=table.refusals + refused.astype(jnp.int32),
        )
        row = jnp.where(insert_now, table.size, row)
        return new, row, found, insert_now

    def insert_many(table: HashTable, keys: jax.Array):
        def body(t, key):
            t, row, found, inserted = insert(t, key)
            return t, (row, found, inserted)

        table, (rows, found, inserted) = jax.lax.scan(body, table, keys)
        return table, rows, found, inserted

    return HashTableFns(init, lookup, insert, insert_many, capacity, max_rows, probes)
