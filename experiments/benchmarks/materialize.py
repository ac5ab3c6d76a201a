"""Per-infoset sums broadcast back over actions: ``python -m experiments.benchmarks materialize``.

The kernel's pattern ``v - broadcast(sum_a w(a, i))`` on an action-major ``[A, n]``
block (LD(1,1)'s level width by default), in a ``fori_loop`` of 50 steps, with the sum
(``jaxcfr._solver.sum_actions``) passed on in four ways: plainly; through
``lax.optimization_barrier``; through ``lax.reduce`` over the action axis; and through
``jaxcfr._solver.materialized`` (a division by 1 that XLA does not duplicate). Prints
the number of fusions XLA:CPU compiles, CPU milliseconds per step (best of 5; CPU time
of the process, steadier than wall clock on a shared machine) and whether the result
equals the plain one bit for bit.
"""

from __future__ import annotations

import argparse
import os
import time

import jax
import jax.numpy as jnp
import numpy as np

from experiments.benchmarks._cli import Parser
from experiments.sizes import format_table
from jaxcfr._solver import materialized, sum_actions

VARIANTS = {
    "plain": lambda w: sum_actions(w, 0),
    "optimization_barrier": lambda w: jax.lax.optimization_barrier(sum_actions(w, 0)),
    "lax.reduce": lambda w: jax.lax.reduce(w, np.zeros((), w.dtype), jax.lax.add, (0,)),
    "materialized (divide)": lambda w: materialized(sum_actions(w, 0)),
}


def main(argv=None):
    parser = Parser(
        prog="python -m experiments.benchmarks materialize",
        description=__doc__,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("--actions", type=int, default=13, help="rows A of the [A, n] block")
    parser.add_argument("--infosets", type=int, default=12288, help="columns n of the [A, n] block")
    args = parser.parse_args(argv)
    A, n, steps = args.actions, args.infosets, 50
    k0, k1 = jax.random.split(jax.random.key(0))
    v = jax.random.normal(k0, (A, n))
    p = jax.random.uniform(k1, (A, n))
    m = p > 0.3
    print(f"load: {os.getloadavg()}")
    rows, ref = [], None
    for name, total in VARIANTS.items():

        def step(v, p, m, total=total):
            s = total(jnp.where(m, v * p, 0.0))
            return jnp.where(m, v - jax.lax.broadcast_in_dim(s, (A, n), (1,)), 0.0)

        def many(v, p, m, step=step):
            return jax.lax.fori_loop(0, steps, lambda i, x: step(x, p, m) * 0.5 + x, v)

        compiled = jax.jit(many).lower(v, p, m).compile()
        out = jax.block_until_ready(compiled(v, p, m))
        best = np.inf
        for _ in range(5):
            c0 = time.process_time()
            jax.block_until_ready(compiled(v, p, m))
            best = min(best, time.process_time() - c0)
        bits = np.asarray(out).view(np.int32)
        ref = bits if ref is None else ref
        rows.append(
            [
                name,
                compiled.as_text().count(" fusion("),
                f"{best / steps * 1e3:.3f}",
                "yes" if np.array_equal(bits, ref) else "no",
            ]
        )
    print(f"load: {os.getloadavg()}")
    print(format_table(["sum passed", "fusions", "CPU ms / step", "bits = plain"], rows))


if __name__ == "__main__":
    main()
