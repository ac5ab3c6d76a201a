"""jaxcfr._prng: the unrolled Threefry equals jax.random bit for bit (the golden values
are JAX's own rolled-loop implementation)."""

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from jaxcfr import _prng
from jaxcfr import _sampling as smp


def _keys(n=2000):
    return jax.random.split(jax.random.PRNGKey(11), n)


def test_fold_in_equals_jax():
    keys = _keys()
    data = (jnp.arange(keys.shape[0], dtype=jnp.int32) * 104729) ^ 0x55AA
    ours = jax.jit(jax.vmap(_prng.fold_in))(keys, data)
    theirs = jax.jit(jax.vmap(jax.random.fold_in))(keys, data)
    np.testing.assert_array_equal(np.asarray(ours), np.asarray(theirs))
    assert _prng.fold_in(keys[0], 3).dtype == jnp.uint32


@pytest.mark.parametrize("partitionable", [True, False])
def test_bits2_equals_jax(partitionable):
    keys = _keys()
    with jax.threefry_partitionable(partitionable):
        ours = jax.jit(jax.vmap(_prng.bits2))(keys)
        theirs = jax.jit(jax.vmap(lambda k: jax.random.bits(k, (2,), jnp.uint32)))(keys)
    np.testing.assert_array_equal(np.asarray(ours), np.asarray(theirs))


def test_typed_keys_keep_their_type():
    key = jax.random.key(5)
    folded = _prng.fold_in(key, 7)
    assert folded.dtype == jax.random.fold_in(key, 7).dtype
    np.testing.assert_array_equal(
        jax.random.key_data(folded), jax.random.key_data(jax.random.fold_in(key, 7))
    )
    np.testing.assert_array_equal(_prng.bits2(key), jax.random.bits(key, (2,), jnp.uint32))


def test_other_implementations_fall_back():
    key = jax.random.key(5, impl="rbg")
    np.testing.assert_array_equal(
        jax.random.key_data(_prng.fold_in(key, 7)),
        jax.random.key_data(jax.random.fold_in(key, 7)),
    )


def test_stream_seed_is_jax_bits_and_the_loop_is_gone():
    key = jax.random.PRNGKey(2)
    np.testing.assert_array_equal(smp.stream_seed(key), jax.random.bits(key, (2,), jnp.uint32))
    hlo = jax.jit(lambda k: smp.uniforms(_prng.fold_in(k, 3), (2, 4), jnp.float32)).lower(key)
    assert " while(" not in hlo.compile().as_text()
