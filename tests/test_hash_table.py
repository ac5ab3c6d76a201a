"""The key -> row hash table (jaxcfr._hash_table) against a plain Python dict."""

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from jaxcfr._hash_table import fingerprint64, hash_table, table_bytes


def dict_reference(keys, max_rows):
    """Rows handed out in first-seen order by a dict, -1 once ``max_rows`` are used."""
    table, rows, found, refused = {}, [], [], 0
    for k in map(tuple, keys):
        if k in table:
            rows.append(table[k])
            found.append(True)
        elif len(table) < max_rows:
            table[k] = len(table)
            rows.append(table[k])
            found.append(False)
        else:
            rows.append(-1)
            found.append(False)
            refused += 1
    return table, np.array(rows), np.array(found), refused


def random_keys(rng, n, words, distinct):
    base = rng.integers(0, 2**32, size=(distinct, words), dtype=np.uint64).astype(np.uint32)
    return base[rng.integers(0, distinct, size=n)]


def check_against_dict(fns, keys, absent):
    table, rows, found, inserted = jax.jit(fns.insert_many)(fns.init(), jnp.asarray(keys))
    ref, ref_rows, ref_found, refused = dict_reference(keys, fns.max_rows)
    np.testing.assert_array_equal(rows, ref_rows)
    np.testing.assert_array_equal(found, ref_found)
    np.testing.assert_array_equal(inserted, ~ref_found & (ref_rows >= 0))
    assert int(table.size) == len(ref) and int(table.refusals) == refused
    lookup = jax.jit(jax.vmap(fns.lookup, in_axes=(None, 0)))
    got_rows, got_found = lookup(table, jnp.asarray(np.array(list(ref), np.uint32)))
    np.testing.assert_array_equal(got_rows, list(ref.values()))
    assert got_found.all()
    got_rows, got_found = lookup(table, jnp.asarray(absent))
    assert not got_found.any() and (got_rows == -1).all()
    return table


def test_random_keys_match_a_dict():
    rng = np.random.default_rng(0)
    keys = random_keys(rng, 3000, 3, 1000)
    absent = random_keys(rng, 200, 3, 200)
    check_against_dict(hash_table(4096, max_probes=32), keys, absent)


def test_forced_probe_collisions_match_a_dict():
    # a weak fingerprint: 4 home slots for all keys, so keys share windows and probe
    rng = np.random.default_rng(1)
    keys = random_keys(rng, 400, 2, 50)
    absent = random_keys(rng, 50, 2, 50)

    def weak(key):
        return jnp.stack([key[0] & jnp.uint32(3), key[1]])

    check_against_dict(hash_table(64, max_probes=64, fingerprint=weak), keys, absent)


def test_full_table_counts_refusals():
    rng = np.random.default_rng(2)
    keys = random_keys(rng, 40, 1, 12)
    fns = hash_table(8)
    table, rows, found, inserted = jax.jit(fns.insert_many)(fns.init(), jnp.asarray(keys))
    _, ref_rows, _, refused = dict_reference(keys, 8)
    assert refused > 0
    assert int(table.size) == 8 and int(table.refusals) == refused
    np.testing.assert_array_equal(rows, ref_rows)
    assert int(inserted.sum()) == 8


def test_probe_window_full_is_refused_with_free_slots_left():
    fns = hash_table(16, max_probes=4, fingerprint=lambda k: jnp.stack([k[0] * 0, k[0]]))
    keys = np.arange(1, 7, dtype=np.uint32)[:, None]
    table, rows, found, inserted = jax.jit(fns.insert_many)(fns.init(), jnp.asarray(keys))
    np.testing.assert_array_equal(rows, [0, 1, 2, 3, -1, -1])
    assert int(table.refusals) == 2 and int(table.size) == 4


def test_max_rows_limits_rows():
    fns = hash_table(16, max_rows=3)
    keys = np.arange(5, dtype=np.uint32)[:, None]
    table, rows, _, _ = fns.insert_many(fns.init(), jnp.asarray(keys))
    np.testing.assert_array_equal(rows, [0, 1, 2, -1, -1])
    assert int(table.refusals) == 2


def test_vmap_over_tables_equals_one_by_one():
    rng = np.random.default_rng(3)
    keys = np.stack([random_keys(rng, 300, 2, 100) for _ in range(3)])
    fns = hash_table(256)
    tables = jax.vmap(lambda _: fns.init())(jnp.arange(3))
    batched = jax.jit(jax.vmap(fns.insert_many))(tables, jnp.asarray(keys))
    for i in range(3):
        one = jax.jit(fns.insert_many)(fns.init(), jnp.asarray(keys[i]))
        for a, b in zip(
            jax.tree_util.tree_leaves(one), jax.tree_util.tree_leaves(batched), strict=True
        ):
            np.testing.assert_array_equal(a, b[i])


def test_vmap_tables_settled_and_overflowing_match_a_dict():
    # identity fingerprint, so fp[0] = key[0] picks the home bucket (4 slots): table 0's
    # 12 distinct keys share one bucket and overflow into the rest of the window, table
    # 1's spread over the buckets and settle in their home bucket (the batched probe
    # reads the rest of the window for some tables of the batch only)
    rng = np.random.default_rng(4)
    n = 40
    crowd = np.stack([rng.integers(0, 4, n), rng.integers(0, 3, n)], 1).astype(np.uint32)
    spread = np.stack([4 * rng.integers(0, 16, n), rng.integers(0, 1, n)], 1).astype(np.uint32)
    fns = hash_table(64, max_probes=16, fingerprint=lambda k: k[:2])
    tables = jax.vmap(lambda _: fns.init())(jnp.arange(2))
    keys = jnp.asarray(np.stack([crowd, spread]))
    tables, rows, found, _ = jax.jit(jax.vmap(fns.insert_many))(tables, keys)
    for i, k in enumerate((crowd, spread)):
        ref, ref_rows, ref_found, refused = dict_reference(k, 64)
        assert refused == 0
        np.testing.assert_array_equal(rows[i], ref_rows)
        np.testing.assert_array_equal(found[i], ref_found)
    assert len(dict_reference(crowd, 64)[0]) > 4  # the crowded bucket overflowed
    got_rows, got_found = jax.jit(jax.vmap(jax.vmap(fns.lookup, (None, 0)), (0, 0)))(tables, keys)
    np.testing.assert_array_equal(got_rows, rows)
    assert got_found.all()


def test_one_word_fingerprints_are_injective():
    words = np.arange(0, 1 << 20, dtype=np.uint32)[:, None] * np.uint32(4099)
    fp = np.asarray(jax.jit(fingerprint64)(jnp.asarray(words)))
    assert np.unique(fp[:, 0]).size == words.shape[0]


def test_table_bytes():
    fns = hash_table(1 << 10)
    leaves = jax.tree_util.tree_leaves(fns.init())
    assert sum(x.nbytes for x in leaves) == table_bytes(1 << 10)


@pytest.mark.parametrize(
    "kwargs,match",
    [
        (dict(capacity=0), "capacity"),
        (dict(capacity=12), "power of two"),
        (dict(capacity=8, max_probes=0), "max_probes"),
        (dict(capacity=8, max_rows=9), "max_rows"),
    ],
)
def test_bad_parameters_raise_value_error(kwargs, match):
    with pytest.raises(ValueError, match=match):
        hash_table(**kwargs)


def test_insert_traces_once():
    traces = []
    fns = hash_table(64)

    @jax.jit
    def insert(table, key):
        traces.append(1)
        return fns.insert(table, key)

    table = fns.init()
    for k in range(5):
        table, row, found, inserted = insert(table, jnp.array([k, 7], jnp.uint32))
        assert int(row) == k and bool(inserted) and not bool(found)
    assert len(traces) == 1
