"""Memory of jaxcfr.run's batch: XLA's memory analysis per run against the state's bytes.

``python -m experiments.benchmarks run_memory [--games kuhn_poker,leduc_poker] [--batch 64]``

For each game and solver, compiles the runner's chunk (``lax.scan`` of ``--length``
updates, then the exact NashConv of the average policy), vmapped over a batch of B and
of 1 run, from ``jax.ShapeDtypeStruct`` arguments (nothing allocated), and prints
XLA's ``memory_analysis()`` (arguments + outputs + temporaries) per extra run divided by
the state's bytes: the factor behind ``jaxcfr._guards._STATE_FACTOR`` (the estimate of
``jaxcfr.estimate_run_memory``). Deterministic: no timings.
"""

from __future__ import annotations

import jax
import jax.numpy as jnp

import games_tensor as gt
import jaxcfr
from experiments.benchmarks._cli import Parser
from jaxcfr import _guards
from jaxcfr._runner import _nash_conv_unchecked

SOLVERS = ("cfr", "pcfr_plus", "outcome_sampling", "external_sampling")


def chunk_bytes(solver, game, batch: int, length: int) -> int:
    """Arguments + outputs + temporaries of the vmapped chunk, per XLA."""

    def chunk(state, key):
        def body(carry, _):
            if solver.needs_key:
                return solver.update(game, carry, jax.random.fold_in(key, carry.iteration)), None
            return solver.update(game, carry), None

        state, _ = jax.lax.scan(body, state, None, length=length)
        return state, _nash_conv_unchecked(game, jaxcfr.average_policy(game, state))

    shapes = _guards.state_shapes(solver, game)
    batched = jax.tree.map(lambda x: jax.ShapeDtypeStruct((batch,) + x.shape, x.dtype), shapes)
    keys = jax.ShapeDtypeStruct((batch, 2), jnp.uint32)
    m = jax.jit(jax.vmap(chunk)).lower(batched, keys).compile().memory_analysis()
    return m.argument_size_in_bytes + m.output_size_in_bytes + m.temp_size_in_bytes


def main(argv=None) -> None:
    parser = Parser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "--games",
        default="kuhn_poker,leduc_poker,ii_goofspiel,liars_dice",
        help="','-separated games_tensor game names",
    )
    parser.add_argument("--solvers", default=",".join(SOLVERS), help="','-separated solver names")
    parser.add_argument("--batch", type=int, default=64, help="runs B compiled at once")
    parser.add_argument("--length", type=int, default=10, help="updates per compiled chunk")
    args = parser.parse_args(argv)
    print(f"state factor used by jaxcfr.estimate_run_memory: {_guards._STATE_FACTOR}")
    print("game | solver | state bytes | XLA bytes per run | factor | estimate per run / XLA")
    for name in args.games.split(","):
        game = gt.load(name)
        for sname in args.solvers.split(","):
            solver = getattr(jaxcfr, sname)()
            state = _guards._tree_bytes(_guards.state_shapes(solver, game))
            one = chunk_bytes(solver, game, 1, args.length)
            many = chunk_bytes(solver, game, args.batch, args.length)
            per_run = (many - one) / (args.batch - 1)
            est = _guards._STATE_FACTOR * state
            print(
                f"{name} | {sname} | {state} | {per_run:.0f} | {per_run / state:.2f} | "
                f"{est / per_run:.2f}",
                flush=True,
            )


if __name__ == "__main__":
    main()
