"""``jax.random.fold_in`` and the 64 bits of ``jax.random.bits(key, (2,), uint32)`` for
threefry keys, bit for bit, with the 20 Threefry-2x32 rounds unrolled.

Why: on CPU, JAX lowers its ``threefry2x32`` primitive with a rolled ``fori_loop`` (5
iterations of 4 rounds) to keep compile times down. Inside a sampling solver's scan of
updates that is two ``while`` loops per update (the runner's ``fold_in(key, t)`` and the
update's draw of its stream seed), each iteration a handful of tiny kernels and
loop-carry copies: about 80 kernel launches per update, a quarter of a Smooth UCT
episode's time at B = 1024 on Leduc (docs/mcts.md). Unrolled, the hash is ~100
elementwise uint32 ops that XLA fuses into one kernel. Integer arithmetic mod 2^32: the
same bits as JAX's (tested against ``jax.random`` on many keys).

Threefry-2x32 (Salmon et al., SC 2011), as ``jax._src.random.threefry2x32``: key words
(k0, k1), k2 = k0 ^ k1 ^ 0x1BD11BDA; x += (k0, k1); five groups of four rounds
``x0 += x1; x1 = rotl(x1, r) ^ x0`` with rotations (13, 15, 26, 6) and (17, 29, 16, 24)
alternating, group g followed by ``x0 += k[(g + 1) % 3]; x1 += k[(g + 2) % 3] + g + 1``.

Keys other than threefry (typed keys of another implementation, or raw keys when the
default implementation is not threefry) go through ``jax.random`` unchanged.
"""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np

_ROTATIONS = ((13, 15, 26, 6), (17, 29, 16, 24))


def threefry2x32(k0, k1, x0, x1):
    """Threefry-2x32 of the counters ``(x0, x1)`` (uint32, broadcastable) under the key
    words ``(k0, k1)``: the two output words, as JAX's ``threefry2x32`` primitive."""
    u32 = jnp.uint32
    ks = (k0, k1, k0 ^ k1 ^ u32(0x1BD11BDA))
    x0, x1 = x0 + ks[0], x1 + ks[1]
    for g in range(5):
        for r in _ROTATIONS[g % 2]:
            x0 = x0 + x1
            x1 = ((x1 << u32(r)) | (x1 >> u32(32 - r))) ^ x0
        x0 = x0 + ks[(g + 1) % 3]
        x1 = x1 + ks[(g + 2) % 3] + u32(g + 1)
    return x0, x1


def _raw(key):
    """(uint32[2] key data, impl to re-wrap with or None for a raw key), or None when the
    key is not a threefry key."""
    if jax.dtypes.issubdtype(key.dtype, jax.dtypes.prng_key):
        impl = jax.random.key_impl(key)
        if "threefry" not in str(impl):
            return None
        return jax.random.key_data(key), impl
    if str(jax.config.jax_default_prng_impl) != "threefry2x32":
        return None
    return key, None


def fold_in(key: jax.Array, data) -> jax.Array:
    """``jax.random.fold_in(key, data)`` (one key, ``data`` a scalar integer), the same bits
    and the same key type."""
    raw = _raw(key)
    if raw is None:
        return jax.random.fold_in(key, data)
    k, impl = raw
    d = jnp.asarray(data).astype(jnp.uint32)
    y0, y1 = threefry2x32(k[0], k[1], jnp.zeros((), jnp.uint32), d)
    out = jnp.stack([y0, y1])
    return out if impl is None else jax.random.wrap_key_data(out, impl=impl)


def bits2(key: jax.Array) -> jax.Array:
    """``jax.random.bits(key, (2,), jnp.uint32)``: uint32[2], the same bits."""
    raw = _raw(key)
    if raw is None:
        return jax.random.bits(key, (2,), jnp.uint32)
    k = raw[0]
    if jax.config.jax_threefry_partitionable:
        # counters (hi, lo) of iota(2) as uint64: (0, 0), (0, 1); bits = word0 ^ word1
        lo = jnp.arange(2, dtype=np.uint32)
        y0, y1 = threefry2x32(k[0], k[1], jnp.zeros((2,), jnp.uint32), lo)
        return y0 ^ y1
    # counters iota(2) split in halves: x0 = [0], x1 = [1]; bits = concat(y0, y1)
    y0, y1 = threefry2x32(k[0], k[1], jnp.zeros((), jnp.uint32), jnp.ones((), jnp.uint32))
    return jnp.stack([y0, y1])
