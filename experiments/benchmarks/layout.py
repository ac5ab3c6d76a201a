"""Why the kernel is action-major: ``python -m experiments.benchmarks layout``.

Times the same computation on Leduc-sized arrays (I = 936 infosets, A = 3 actions;
payoff blocks G = 274 of 6 x 6) in the two layouts the sequence-form kernel could
use, each inside a ``lax.scan`` of 4000 steps, best of 3, on this machine's
default JAX device:

* regret matching over a minor action axis (``[I, A]``, sum over axis -1) vs the
  major one (``[A, I]``, sum over axis 0);
* in the major layout, the row sums broadcast back through a kept ``[1, I]`` axis
  (``keepdims``) vs an explicit ``broadcast_in_dim`` (``jaxcfr._solver.over_actions``);
* the payoff-block products as a batched ``einsum`` (a dot) vs an unrolled sum of
  elementwise products.

Only the ratios within one run mean anything (shared machines are noisy).
"""

from __future__ import annotations

import argparse
import time

import jax
import jax.numpy as jnp
import numpy as np

from experiments.benchmarks._cli import Parser
from experiments.sizes import format_table
from jaxcfr._solver import regret_matching


def _time(step, x, length=4000, repeats=3):
    fn = jax.jit(lambda x: jax.lax.scan(lambda c, _: (step(c), None), x, None, length=length)[0])
    jax.block_until_ready(fn(x))
    best = np.inf
    for _ in range(repeats):
        t0 = time.perf_counter()
        jax.block_until_ready(fn(x))
        best = min(best, (time.perf_counter() - t0) / length)
    return best * 1e6


def cases(n=936, A=3, G=274, R=6):  # Leduc: n = I infosets
    rng = np.random.default_rng(0)
    regrets = rng.normal(size=(n, A)).astype(np.float32)
    mask = rng.uniform(size=(n, A)) < 0.8
    mask[:, 0] = True
    uniform = (mask / mask.sum(1, keepdims=True)).astype(np.float32)
    pay = rng.normal(size=(G, R, R)).astype(np.float32)
    opp = rng.uniform(size=(G, R)).astype(np.float32)

    def rm_minor(r):
        return r + 1e-3 * regret_matching(r, mask, uniform)

    def rm_major(r):
        return r + 1e-3 * regret_matching(r, mask.T, uniform.T, axis=0)

    def rm_major_unit_axis(r):  # the same regret matching, sums kept as [1, I]
        w = jnp.where(mask.T, jnp.maximum(r, 0.0), 0.0)
        total = jnp.sum(w, axis=0, keepdims=True)
        pol = jnp.where(total > 0, w / jnp.where(total > 0, total, 1.0), uniform.T)
        return r + 1e-3 * pol

    def block_dot(o):
        return o * 0.999 + 1e-3 * jnp.einsum("grc,gc->gr", pay, o)

    def block_unrolled(o):
        return o * 0.999 + 1e-3 * sum(pay[:, :, c] * o[:, c, None] for c in range(R))

    rt = regrets.T.copy()
    return [
        ("regret matching", "[I, A], sum over axis -1", rm_minor, regrets),
        ("regret matching", "[A, I], sum over axis 0", rm_major, rt),
        ("regret matching", "[A, I], sums kept as [1, I]", rm_major_unit_axis, rt),
        ("payoff blocks [G, R, C] @ [G, C]", "batched einsum (dot)", block_dot, opp),
        ("payoff blocks [G, R, C] @ [G, C]", "unrolled elementwise sum", block_unrolled, opp),
    ]


def main(argv=None):
    parser = Parser(
        prog="python -m experiments.benchmarks layout",
        description=__doc__,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.parse_args(argv)
    rows, base = [], {}
    for what, how, step, x in cases():
        us = _time(step, jnp.asarray(x))
        base.setdefault(what, us)
        rows.append([what, how, f"{us:.2f}", f"{base[what] / us:.2f}x"])
        print(" | ".join(rows[-1]), flush=True)
    print()
    print(f"device: {jax.devices()[0].platform}; microseconds per scan step, best of 3")
    print(format_table(["computation", "layout", "us/step", "speed-up vs first"], rows))


if __name__ == "__main__":
    main()
