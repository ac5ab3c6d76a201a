"""Benchmark sampling MCCFR against OpenSpiel C++: ``python -m experiments.benchmarks mccfr``.

Leduc poker (OpenSpiel's, 936 infosets). For outcome sampling (epsilon 0.6,
alternating) and external sampling, iterations per second of B = 1, 64, 1024
independent seeds (``jax.vmap`` over keys of ``lax.scan`` over iterations, the
runner's program without the evaluation), against OpenSpiel C++
``OutcomeSamplingMCCFRSolver`` / ``ExternalSamplingMCCFRSolver`` on one core,
measured in the same process (interleaved with the JAX runs; a best-of-R
timing for each). One iteration is one trajectory (traversal) per player for
both. Compile time (lower + compile of the chunk, and the first call) is reported
apart from the steady state.

``--layouts`` also times the alternatives behind the chosen layout (docs/mccfr.md):
how a batch of seeds adds its sampled rows to its tables (vmapped scatter-add,
one flat scatter over the folded batch, dense one-hot), how the uniforms of
one update are drawn (``jax.random.uniform`` vs one 64-bit draw and a counter
mixer), and the unrolled depth loop with and without static pruning by what
each depth can hold.
"""

from __future__ import annotations

import argparse
import time

import jax
import jax.numpy as jnp

import games_tensor as gt
import jaxcfr
from experiments.benchmarks._cli import Parser
from experiments.sizes import format_table
from jaxcfr import _prng
from jaxcfr._solver import jit_options


def _chunk_fn(solver, length):
    def chunk(game, state, key):
        def body(st, _):
            return solver.update(game, st, _prng.fold_in(key, st.iteration)), None

        return jax.lax.scan(body, state, None, length=length)[0]

    options = jit_options(solver)
    vmapped = jax.vmap(chunk, in_axes=(None, 0, 0))
    return jax.jit(vmapped, donate_argnums=1, compiler_options=options)


def _openspiel_rate(kind, iterations):
    import pyspiel

    game = pyspiel.load_game("leduc_poker")
    if kind == "os":
        solver = pyspiel.OutcomeSamplingMCCFRSolver(game, 0.6, 1)
    else:
        solver = pyspiel.ExternalSamplingMCCFRSolver(game, seed=1)
    for _ in range(min(iterations, 1000)):  # warm the infoset tables
        solver.run_iteration()
    t0 = time.perf_counter()
    for _ in range(iterations):
        solver.run_iteration()
    return iterations / (time.perf_counter() - t0)


class _Case:
    def __init__(self, game, solver, batch, length):
        self.game, self.batch, self.length = game, batch, length
        keys = jax.random.split(jax.random.PRNGKey(0), batch)
        self.keys = keys
        self.fn = _chunk_fn(solver, length)
        t0 = time.perf_counter()
        self.state = jax.jit(jax.vmap(lambda k: solver.init(game)))(keys)
        jax.block_until_ready(self.state)
        t1 = time.perf_counter()
        compiled = self.fn.lower(game, self.state, keys).compile()
        t2 = time.perf_counter()
        self.state = compiled(game, self.state, keys)
        jax.block_until_ready(self.state)
        t3 = time.perf_counter()
        self.compile_s = t2 - t1
        self.first_call_s = (t1 - t0) + (t3 - t1)
        self.compiled = compiled
        self.times = []

    def time_once(self):
        t0 = time.perf_counter()
        self.state = self.compiled(self.game, self.state, self.keys)
        jax.block_until_ready(self.state)
        self.times.append(time.perf_counter() - t0)

    @property
    def rate(self):
        return self.batch * self.length / min(self.times)


def solver_table(batches, seconds, repeats, os_iterations, es_iterations):
    game = gt.load("leduc_poker")
    kinds = {
        "os": ("outcome sampling (eps 0.6)", jaxcfr.outcome_sampling(epsilon=0.6), os_iterations),
        "es": ("external sampling", jaxcfr.external_sampling(), es_iterations),
    }
    rows = []
    for kind, (label, solver, os_iters) in kinds.items():
        cases = []
        for b in batches:
            probe = _Case(game, solver, b, 8)
            probe.time_once()
            length = max(8, int(seconds * probe.rate / b))
            case = _Case(game, solver, b, length)
            cases.append(case)
            print(
                f"{kind} B={b}: compile {case.compile_s:.2f} s, {length} iterations per call",
                flush=True,
            )
        theirs = []
        for _ in range(repeats):  # interleave OpenSpiel with the JAX timings
            theirs.append(_openspiel_rate(kind, os_iters))
            for case in cases:
                case.time_once()
        ref = max(theirs)
        for case in cases:
            rows.append(
                [
                    label,
                    case.batch,
                    f"{case.compile_s:.2f}",
                    f"{case.first_call_s:.2f}",
                    f"{case.rate:,.0f}",
                    f"{case.rate / case.batch:,.0f}",
                    f"{ref:,.0f}",
                    f"{case.rate / ref:.2f}x",
                ]
            )
        print(
            f"  OpenSpiel C++ {kind}: " + ", ".join(f"{t:,.0f}" for t in theirs) + " it/s",
            flush=True,
        )
    print(
        f"\nLeduc poker, {jax.devices()[0].platform}, {jax.device_count()} device(s), float32; "
        f"best of {repeats} interleaved timings."
    )
    print(
        format_table(
            [
                "solver",
                "B",
                "compile s",
                "first call s",
                "it/s (all seeds)",
                "it/s per seed",
                "OpenSpiel C++ it/s",
                "ratio",
            ],
            rows,
        )
    )


def layout_table(batch, repeats):
    """Alternatives for the two batched hot spots, timed in a lax.scan of 100 steps."""
    game = gt.load("leduc_poker")
    I, A, D, steps = game.num_infosets, game.num_actions, game.meta.max_depth, 100  # noqa: E741
    rows_key, vals_key = jax.random.split(jax.random.PRNGKey(0))
    rows = jax.random.randint(rows_key, (batch, D), 0, I)
    vals = jax.random.normal(vals_key, (batch, D, A))
    tables = jnp.zeros((batch, I, A))

    def looped(add):
        def run(t, r, v):
            def body(t, k):
                return add(t, (r + k) % I, v), None

            return jax.lax.scan(body, t, jnp.arange(steps))[0]

        return jax.jit(run)

    def vmapped(t, r, v):
        return jax.vmap(lambda t, r, v: t.at[r].add(v, mode="drop"))(t, r, v)

    def flat(t, r, v):
        fr = (r + (jnp.arange(batch) * I)[:, None]).reshape(-1)
        return (
            t.reshape(batch * I, A).at[fr].add(v.reshape(-1, A), mode="drop").reshape(batch, I, A)
        )

    def onehot(t, r, v):
        return t + jnp.einsum("bdi,bda->bia", jax.nn.one_hot(r, I, dtype=v.dtype), v)

    out = []
    for name, fn in [
        ("vmapped .at[rows].add (chosen)", vmapped),
        ("flat scatter, batch folded into rows", flat),
        ("dense one-hot matmul", onehot),
    ]:
        f = looped(fn)
        jax.block_until_ready(f(tables, rows, vals))
        best = min(_timed(f, tables, rows, vals) for _ in range(repeats))
        out.append([name, f"{best / steps * 1e6:.1f}"])
    print(f"\nAdding {D} rows of [{I}, {A}] per seed, B = {batch} (in a scan; us per step):")
    print(format_table(["layout", "us per step"], out))

    keys = jax.random.split(jax.random.PRNGKey(1), batch)
    from jaxcfr import _sampling as smp

    def rng_loop(draw):
        def run(keys):
            def one(k):
                def body(c, t):
                    return c + jnp.sum(draw(jax.random.fold_in(k, t))), None

                return jax.lax.scan(body, 0.0, jnp.arange(steps))[0]

            return jax.vmap(one)(keys)

        return jax.jit(run)

    out = []
    for name, draw in [
        ("jax.random.uniform(key, (2, D))", lambda k: jax.random.uniform(k, (2, D))),
        (
            "bits(key, (2,)) + lowbias32 counter (chosen)",
            lambda k: smp.uniforms(k, (2, D), jnp.float32),
        ),
        ("fold_in only (floor)", lambda k: jax.random.key_data(k).astype(jnp.float32)),
    ]:
        f = rng_loop(draw)
        jax.block_until_ready(f(keys))
        best = min(_timed(f, keys) for _ in range(repeats))
        out.append([name, f"{best / steps * 1e6:.1f}"])
    print(f"\nDrawing the {2 * D} uniforms of one outcome-sampling update, B = {batch}:")
    print(format_table(["generator", "us per update"], out))


def pruning_table(batch, repeats):
    """Static pruning by level kinds (what each depth can hold) on and off."""
    from jaxcfr import _sampling as smp

    game = gt.load("leduc_poker")
    pruned = smp.level_kinds

    def generic(g):
        K = g.meta.max_children
        return tuple(smp.LevelKinds(True, (True, True), True, K) for _ in g.meta.node_levels)

    out = []
    for label, solver, length in [
        ("outcome sampling", jaxcfr.outcome_sampling(), 100),
        ("external sampling", jaxcfr.external_sampling(), 40),
    ]:
        cases = {}
        for name, kinds in [
            ("pruned (chosen)", pruned),
            ("every depth may hold anything", generic),
        ]:
            smp.level_kinds = kinds
            try:
                cases[name] = _Case(game, solver, batch, length)
            finally:
                smp.level_kinds = pruned
        for _ in range(repeats):
            for case in cases.values():
                case.time_once()
        out += [[label, name, f"{case.rate:,.0f}"] for name, case in cases.items()]
    print(f"\nStatic pruning of the unrolled depth loop, B = {batch} (it/s, all seeds):")
    print(format_table(["solver", "depth loop", "it/s"], out))


def _timed(f, *args):
    t0 = time.perf_counter()
    jax.block_until_ready(f(*args))
    return time.perf_counter() - t0


def main(argv=None):
    parser = Parser(
        prog="python -m experiments.benchmarks mccfr",
        description=__doc__,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("--batches", default="1,64,1024", help="','-separated seed batch sizes B")
    parser.add_argument("--seconds", type=float, default=0.5, help="target seconds per timed call")
    parser.add_argument("--repeats", type=int, default=5, help="timed calls per cell (best of)")
    parser.add_argument(
        "--os-iterations", type=int, default=100_000, help="OpenSpiel OS iterations per timing"
    )
    parser.add_argument(
        "--es-iterations", type=int, default=20_000, help="OpenSpiel ES iterations per timing"
    )
    parser.add_argument("--layouts", action="store_true", help="also time the layout alternatives")
    args = parser.parse_args(argv)
    solver_table(
        [int(b) for b in args.batches.split(",")],
        args.seconds,
        args.repeats,
        args.os_iterations,
        args.es_iterations,
    )
    if args.layouts:
        layout_table(1024, args.repeats)
        pruning_table(1024, args.repeats)


if __name__ == "__main__":
    main()
