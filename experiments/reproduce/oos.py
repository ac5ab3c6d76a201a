"""OOS paper (Lisý, Lanctot, Bowling, AAMAS 2015): Fig. 4 head-to-head tables, Fig. 3 root
convergence, Fig. 3 aggregate method and the OOS parameter sweeps.

The paper gave each bot 0.1 s per move to Java code running about 170k-300k OOS
iterations per second; we give every bot the same iteration budget per move instead,
20,000 iterations (trajectories / simulations) in the full mode (about 0.1 s at 200k
iterations/s). Seconds per move on this machine follow from
``python -m experiments.benchmarks search`` (docs/search.md).
"""

from __future__ import annotations

import functools
import os
import sys
import time

import jax
import jax.numpy as jnp
import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402

import games_tensor as gt  # noqa: E402
import jaxcfr  # noqa: E402
from experiments.reproduce import Context, Target  # noqa: E402
from experiments.reproduce._stats import mean_ci95, win_rate_ci95  # noqa: E402
from jaxcfr.search import compiler_options as search_compiler_options  # noqa: E402
from jaxcfr.search import fixed_random_policy, table_policy  # noqa: E402

PAPER = "Lisý, Lanctot, Bowling, AAMAS 2015"
ITERATIONS_PER_MOVE = 20_000
GAMES = {
    "II-GS(6)": ("ii_goofspiel", {"num_cards": 6}, "ist"),
    "LD(1,1)": ("liars_dice", {}, "pst"),
    "GP(3,3,2,2)": ("generic_poker", {}, "pst"),
}
NAMES = ("OOS", "UCT", "RM", "RND")
# Fig. 4 (a)-(c): row player (first position) vs column player, (value, 95% half-width)
PAPER_FIG4 = {
    "II-GS(6)": [
        [(49.3, 2.7), (50.0, 1.3), (50.5, 1.3), (83.1, 1.5)],
        [(51.2, 2.2), (62.9, 2.6), (62.7, 2.5), (84.0, 2.1)],
        [(52.3, 1.4), (70.6, 1.7), (73.1, 2.1), (87.8, 1.4)],
        [(17.1, 2.2), (15.7, 2.2), (10.3, 1.8), (49.7, 3.0)],
    ],
    "LD(1,1)": [
        [(48.5, 2.0), (51.7, 2.0), (56.8, 2.8), (83.3, 1.5)],
        [(45.7, 2.0), (49.7, 2.0), (52.9, 2.8), (87.2, 1.3)],
        [(47.9, 2.8), (49.0, 2.8), (54.3, 2.8), (84.8, 2.0)],
        [(16.9, 1.5), (19.5, 1.6), (18.1, 2.2), (47.7, 2.0)],
    ],
    "GP(3,3,2,2)": [
        [(0.25, 0.53), (-0.45, 0.10), (-0.40, 0.10), (1.85, 0.16)],
        [(0.53, 0.10), (0.21, 0.15), (0.20, 0.15), (1.35, 0.36)],
        [(0.39, 0.13), (0.21, 0.40), (-0.12, 0.32), (1.75, 0.44)],
        [(-2.17, 0.20), (-2.22, 0.54), (-3.24, 0.55), (1.07, 0.61)],
    ],
}


def _slug(label: str) -> str:
    """A file-name form of a game label: ``LD(1,1)`` -> ``LD_1_1``."""
    return label.replace("(", "_").replace(")", "").replace(",", "_")


def _save_npz(path, **arrays) -> None:
    """Write ``path`` atomically (a temporary file, then ``os.replace``), so an
    interrupted run never leaves a truncated cache that every rerun would fail on."""
    tmp = path.with_name(path.stem + ".tmp.npz")
    np.savez(tmp, **arrays)
    os.replace(tmp, path)


def _load(label):
    name, params, targeting = GAMES[label]
    return gt.load(name, **params), targeting


def _bot(label, targeting, delta=0.9, epsilon=0.4):
    if label == "OOS":
        return jaxcfr.oos(targeting, delta=delta, epsilon=epsilon)
    if label == "UCT":
        return jaxcfr.ismcts("uct")
    if label == "RM":
        return jaxcfr.ismcts("rm")
    return jaxcfr.random_bot()


# ---------------------------------------------------------------- Fig. 4
def _fig4(ctx: Context) -> str:
    """Fig. 4 (a)-(c): 16 cells x 500 matches per game in the full mode; each finished
    cell is kept in ``ctx.out`` (``fig4-small-{mode}-key{key}-{game}-{row}-{col}.npz``:
    the utilities and the seconds it took), so an interrupted run resumes."""
    if ctx.quick:
        games, matches, iters = ["LD(1,1)"], 32, 1000
        cells = [("OOS", "UCT"), ("UCT", "OOS"), ("OOS", "RND"), ("RND", "OOS")]
    else:
        games, matches, iters = list(GAMES), 500, ITERATIONS_PER_MOVE
        cells = [(r, c) for r in NAMES for c in NAMES]
    lines = [
        f"Settings: {matches} matches per cell, {iters} iterations per move for every "
        "searching bot (the paper: 0.1 s per move, >= 500 matches); OOS delta 0.9, "
        "epsilon 0.4, IST in II-GS and PST otherwise; UCT C = 2 x max outcome, "
        "most-visited move; RM gamma 0.2, move sampled from the mean strategy; OOS "
        f"samples its move from its mean strategy. Seed {ctx.key}; match m of a cell "
        "uses fold_in(key_cell, m). Entries: row (first player) vs column, win % (ties "
        "half) or, in GP, mean reward minus the game value; [95% half-width]. "
        "Paper's value in parentheses.",
        "",
    ]
    for g_i, label in enumerate(games):
        game, targeting = _load(label)
        value = float(jaxcfr.solve_lp(game).value) if label.startswith("GP") else None
        table, seconds = {}, {}
        for r, c in cells:
            key = jax.random.fold_in(jax.random.key(ctx.key), 100 * g_i + 10 * NAMES.index(r))
            key = jax.random.fold_in(key, NAMES.index(c))
            mode = "quick" if ctx.quick else "full"
            # the name holds every setting the cell depends on: a changed setting
            # never reuses a stale cell
            cell = f"{_slug(label)}-{matches}m-{iters}it-key{ctx.key}-{r}-{c}"
            cache = ctx.out / f"fig4-small-{mode}-{cell}.npz"
            if cache.exists():  # a finished cell: a rerun resumes after it
                with np.load(cache) as saved:
                    u, dt = saved["u"], float(saved["seconds"])
            else:
                t0 = time.time()
                u = jaxcfr.play(game, _bot(r, targeting), _bot(c, targeting), matches, iters, key)
                u, dt = np.asarray(u), time.time() - t0
                _save_npz(cache, u=u, seconds=np.asarray(dt))
            u = u.astype(np.float64)
            if value is None:
                table[r, c] = win_rate_ci95(u)
            else:
                table[r, c] = mean_ci95(u - value)
            seconds[r, c] = dt
            print(f"  {label} {r} vs {c}: {table[r, c]} ({dt:.0f} s)", flush=True)
        lines += [f"### {label}" + (f" (game value {value:.4f})" if value is not None else ""), ""]
        lines += ["| row \\ col | " + " | ".join(NAMES) + " |", "|---" * 5 + "|"]
        for i, r in enumerate(NAMES):
            cells_md = []
            for j, c in enumerate(NAMES):
                pv, ph = PAPER_FIG4[label][i][j]
                if (r, c) in table:
                    m, h = table[r, c]
                    cells_md.append(f"{m:.2f} [{h:.2f}] ({pv} [{ph}])")
                else:
                    cells_md.append(f"- ({pv} [{ph}])")
            lines.append(f"| {r} | " + " | ".join(cells_md) + " |")
        lines += [
            "",
            "Wall-clock seconds per cell (compile included; each finished cell is kept "
            "under `--out` as `fig4-small-*.npz`, so a rerun resumes): "
            + ", ".join(f"{r} vs {c} {t:,.0f}" for (r, c), t in seconds.items())
            + ".",
            "",
        ]
    return "\n".join(lines)


# ---------------------------------------------------------------- Fig. 4 (d)-(f)
JAVA_RATE = 170_000  # iterations/s of the paper's Java code (the low end it reports)
# label: (seconds per move, OOS epsilon); the paper's Fig. 4 (d)-(f). OOS targets the
# infoset (IST) in II-GS and the public state (PST) otherwise, as in the paper.
LARGE = {
    "II-GS(13)": (1.0, 0.4),
    "LD(2,2)": (5.0, 0.8),
    "GP(4,6,4,4)": (1.0, 0.4),
}
PAPER_LARGE = {
    "II-GS(13)": "OOS (row) 28% vs UCT, 35% vs RM at 1 s; 35% vs UCT at 5 s (text)",
    "LD(2,2)": "OOS at least 50% vs UCT at 5 s; at 1 s (text) OOS first 45% vs UCT, 40% vs RM",
    "GP(4,6,4,4)": "OOS loses as the first player",
}


@functools.lru_cache(maxsize=None)
def _large_bot(label, targeting, epsilon, capacity):
    """One bot object per setting, so every cell reuses its compiled search
    (``jaxcfr.play`` compiles a step-form search once per bot object and game)."""
    if label == "OOS":
        return jaxcfr.oos(targeting, delta=0.9, epsilon=epsilon, capacity=capacity)
    if label == "UCT":
        return jaxcfr.ismcts("uct", capacity=capacity)
    if label == "RM":
        return jaxcfr.ismcts("rm", capacity=capacity)
    return jaxcfr.random_bot()


# The text's extra points beside Fig. 4 (d)-(f): (label, seconds, OOS epsilon, cells,
# the paper's words). LD(2,2) at 1 s keeps the default epsilon 0.4 (the paper raises it to
# 0.8 only "with 5 seconds"); the II-GS(13) sentence does not say OOS's seat: we put it first.
LARGE_TEXT = [
    (
        "II-GS(13)",
        5.0,
        0.4,
        [("OOS", "UCT")],
        "at 5 s per move OOS wins 35% of matches against UCT (seat not stated)",
    ),
    (
        "LD(2,2)",
        1.0,
        0.4,
        [("OOS", "UCT"), ("OOS", "RM"), ("UCT", "OOS"), ("RM", "OOS")],
        "at 1 s per move OOS wins 45% vs UCT and 40% vs RM from the first position and "
        "loses 69% and 66% from the second (OOS as column: 31% and 34%)",
    ),
]


def _large_tables(ctx: Context, settings, tag: str, key_base: int) -> str:
    """Head-to-head tables on the step form (games too large to compile).

    ``settings``: (label, seconds per move, OOS epsilon, cells or None for all 16, paper's
    words). Iterations per move = seconds x ``JAVA_RATE`` (full mode) or 200 (quick mode,
    where ``None`` cells shrink to OOS vs UCT). Each finished cell is kept in ``ctx.out``
    (``fig4-{tag}-{mode}-{game}-{row}-{col}.npz``), so a rerun resumes. Match keys fold
    ``key_base + 100 x game index`` and the cell into ``ctx.key``: each target has its own
    ``key_base``, so two targets never replay the same matches.
    """
    import games_tensor.step as gs

    if ctx.quick:  # each searcher compiles once per game, ~5-10 CPU-s
        matches, iters_of, capacity = 16, (lambda sec: 200), 1 << 12
    else:
        matches, iters_of, capacity = 500, (lambda sec: int(sec * JAVA_RATE)), 1 << 22
    all_cells = [(r, c) for r in NAMES for c in NAMES]
    lines = [
        f"Settings: {matches} matches per cell; iterations per move = the paper's seconds "
        f"x {JAVA_RATE:,} (its Java rate) in the full mode, 200 in the quick mode; hashed "
        f"tables of {capacity:,} rows per bot (refused infosets are played out and counted "
        "below); OOS delta 0.9, IST in II-GS and PST otherwise, epsilon as stated per game; "
        "UCT C = 2 x max outcome; RM gamma 0.2. Entries: row (first player) vs "
        "column, win % (ties half) or, in GP, mean reward of the row player; [95% "
        "half-width]; refusals = infosets refused by full tables, summed over matches.",
        "",
    ]
    total_iters, total_time, full = 0, 0.0, 0
    for g_i, (label, seconds, epsilon, cells, paper) in enumerate(settings):
        name, params = gs.LARGE_GAMES[label]
        game = gs.load(name, **params)
        targeting = "ist" if label.startswith("II-GS") else "pst"
        full_cells = all_cells if cells is None else cells
        if cells is None:
            cells = [("OOS", "UCT")] if ctx.quick else all_cells
        iters = iters_of(seconds)
        seats = sum((r != "RND") + (c != "RND") for r, c in full_cells)
        full += 500 * int(seconds * JAVA_RATE) * game.max_depth // 2 * seats
        lines += [
            f"### {label}: {seconds:g} s per move -> {iters:,} iterations, OOS epsilon {epsilon:g}",
            "",
            f"Paper: {paper}.",
            "",
            "| row | col | result [95%] | refusals | s |",
            "|---|---|---|---|---|",
        ]
        for r, c in cells:
            t0 = time.time()
            key = jax.random.fold_in(jax.random.key(ctx.key), key_base + 100 * g_i)
            key = jax.random.fold_in(key, 10 * NAMES.index(r) + NAMES.index(c))
            mode = "quick" if ctx.quick else "full"
            cache = ctx.out / f"fig4-{tag}-{mode}-{g_i}-{r}-{c}.npz"
            if cache.exists():
                with np.load(cache) as saved:
                    u, refused = saved["u"], saved["refused"]
            else:
                bots = [_large_bot(x, targeting, epsilon, capacity) for x in (r, c)]
                u, refused = jaxcfr.play(game, *bots, matches, iters, key)
                _save_npz(cache, u=np.asarray(u), refused=np.asarray(refused))
            u = np.asarray(u, np.float64)
            m, h = mean_ci95(u) if label.startswith("GP") else win_rate_ci95(u)
            dt = time.time() - t0
            searchers = (r != "RND") + (c != "RND")
            total_iters += matches * iters * game.max_depth // 2 * searchers
            total_time += dt
            ref = int(np.asarray(refused).sum())
            lines.append(f"| {r} | {c} | {m:.2f} [{h:.2f}] | {ref} | {dt:.0f} |")
            print(f"  {label} {r} vs {c}: {m:.2f} [{h:.2f}] refusals {ref} ({dt:.0f} s)")
        lines.append("")
    rate = total_iters / max(total_time, 1e-9)
    lines += [
        f"Measured here: about {rate:,.0f} iterations/s over all matches of this run "
        "(an upper bound on iterations: a match can end before max_depth moves; "
        "compile time included; cells resumed from `--out` count as zero seconds).",
        f"Full mode: about {full:.2e} iterations in all (500 matches per cell, "
        "max_depth / 2 moves per searching seat); at this rate about "
        f"{full / max(rate, 1e-9) / 86400:,.0f} days on this CPU (not run here; "
        "no GPU was lent to this session).",
    ]
    return "\n".join(lines)


def _fig4_large(ctx: Context) -> str:
    """Fig. 4 (d)-(f): all 16 cells per game at the paper's seconds per move."""
    settings = [
        (label, seconds, epsilon, None, PAPER_LARGE[label])
        for label, (seconds, epsilon) in LARGE.items()
    ]
    return _large_tables(ctx, settings, "large", 1000)


def _fig4_large_text(ctx: Context) -> str:
    """The text's extra points: II-GS(13) at 5 s, LD(2,2) at 1 s per move."""
    return _large_tables(ctx, LARGE_TEXT, "large-text", 2000)


# ---------------------------------------------------------------- Fig. 3 root
def _root_curve(game, bot, seeds, checkpoints, key, ckpt=None, name="bot"):
    """NashConv of the searcher's root strategy at each checkpoint, per seed [C, S].

    ckpt: a ``.npz`` path; after every checkpoint the batched search state, the curve so
    far, the checkpoints reached and the seconds spent are saved there, and a rerun
    resumes from the last one (the search keys fold in the checkpoint's index, so a
    resumed curve equals an unbroken one). A saved run whose seeds or checkpoints are not
    a prefix of this call's raises ``ValueError`` naming the file (never reused silently).
    Returns ``(curve [C, S], seconds)``: the search and evaluation time of all segments.
    """
    fallback = fixed_random_policy(game, seed=0)
    states = jax.vmap(lambda _: bot.init(game))(jnp.arange(seeds))
    keys = jax.random.split(key, seeds)
    run = jax.jit(
        jax.vmap(bot.search, (None, 0, None, 0, None)),
        compiler_options=search_compiler_options(game),
    )

    @jax.jit
    def evaluate(states):
        def one(st):
            w, mem = bot.strategy(game, st)
            return jaxcfr.nash_conv(game, table_policy(game, w, mem, fallback))

        return jax.lax.map(one, states)

    out, done, earlier = [], 0, 0.0
    if ckpt is not None and ckpt.exists():
        with np.load(ckpt) as data:
            reached = [int(n) for n in data["checkpoints"]]
            curve = data["curve"]
            if reached != list(checkpoints[: len(reached)]) or curve.shape[1:] != (seeds,):
                raise ValueError(
                    f"{ckpt} holds {curve.shape[1]} seeds to checkpoints {reached}, not a "
                    f"prefix of this run's {seeds} seeds to {list(checkpoints)}; move it away"
                )
            out, earlier = list(curve), float(data["seconds"])
            if len(reached) < len(checkpoints):  # the saved states are needed to go on
                states = _saved_states(ckpt, data, states)
        done = reached[-1]
    t0 = time.perf_counter()
    for c, n in enumerate(checkpoints):
        if c < len(out):
            continue
        step_keys = jax.vmap(jax.random.fold_in, (0, None))(keys, c)
        states = run(game, states, jaxcfr.root_view(), step_keys, jnp.asarray(n - done))
        done = n
        out.append(np.asarray(evaluate(states)))
        if ckpt is not None:
            leaves = {f"leaf{i}": np.asarray(x) for i, x in enumerate(jax.tree.leaves(states))}
            seconds = np.asarray(earlier + time.perf_counter() - t0)
            reached = np.asarray(checkpoints[: c + 1])
            _save_npz(ckpt, curve=np.stack(out), checkpoints=reached, seconds=seconds, **leaves)
        print(f"  {name}: {n:,} iterations done", file=sys.stderr, flush=True)
    return np.stack(out), earlier + time.perf_counter() - t0


def _saved_states(ckpt, data, fresh):
    """The batched search states saved in ``data`` (``leaf0``, ``leaf1``, ...), checked
    against the leaves of ``fresh`` (count, shape, dtype): a file written with another
    state layout (e.g. before session 26's one statistics table) raises ``ValueError``
    naming it instead of resuming from misread arrays."""
    like = jax.tree.leaves(fresh)
    names = sorted((k for k in data.files if k.startswith("leaf")), key=lambda k: int(k[4:]))
    saved = [data[k] for k in names]
    if len(saved) != len(like) or any(
        a.shape != b.shape or a.dtype != b.dtype for a, b in zip(saved, like, strict=False)
    ):
        raise ValueError(
            f"{ckpt} holds search states of another layout ({len(saved)} arrays, shapes "
            f"{[a.shape for a in saved]}) than this version's bot state ({len(like)} arrays, "
            f"shapes {[b.shape for b in like]}); move it away to start the curve afresh"
        )
    return jax.tree.unflatten(jax.tree.structure(fresh), [jnp.asarray(a) for a in saved])


def _fig3_root(ctx: Context) -> str:
    if ctx.quick:
        games, seeds, checkpoints = ["LD(1,1)"], 4, [1000, 3000, 10000, 30000]
    else:
        games, seeds = list(GAMES), 16
        checkpoints = [1000, 3000, 10000, 30000, 100000, 300000, 1000000]
    lines = [
        f"Settings: each algorithm searches from the root only; {seeds} seeds per curve "
        "(vmapped); NashConv (the paper's epsilon_sigma) of the searcher's strategy "
        "(OOS epsilon 0.6: mean strategy; UCT: visit frequencies, C = 2 x max; RM gamma "
        "0.2: mean strategy); infosets outside the tree play one fixed random action "
        "(seed 0), the same for all algorithms. x axis: iterations (the paper: seconds).",
        "",
        "| game | algorithm | " + " | ".join(f"{n:,}" for n in checkpoints) + " |",
        "|---|---|" + "---|" * len(checkpoints),
    ]
    times = []
    for g_i, label in enumerate(games):
        game, _ = _load(label)
        fig, ax = plt.subplots(figsize=(5, 3.5))
        for a_i, (name, bot) in enumerate(
            [
                ("OOS", jaxcfr.oos(None, epsilon=0.6)),
                ("UCT", jaxcfr.ismcts("uct")),
                ("RM", jaxcfr.ismcts("rm")),
            ]
        ):
            key = jax.random.fold_in(jax.random.key(ctx.key), 10 * g_i + a_i)
            mode = "quick" if ctx.quick else "full"
            ckpt = ctx.out / f"root-{mode}-key{ctx.key}-{_slug(label)}-{name}-{seeds}seeds.npz"
            nc, seconds = _root_curve(
                game, bot, seeds, checkpoints, key, ckpt=ckpt, name=f"{label} {name}"
            )
            times.append(f"{label} {name} {seconds:,.0f} s")
            stats = [mean_ci95(row) for row in nc]
            m = np.array([s[0] for s in stats])
            h = np.array([s[1] for s in stats])
            ax.plot(checkpoints, m, label=name)
            ax.fill_between(checkpoints, m - h, m + h, alpha=0.2)
            cells = " | ".join(f"{a:.3f} [{b:.3f}]" for a, b in stats)
            lines.append(f"| {label} | {name} | {cells} |")
        ax.set(xscale="log", yscale="log", xlabel="iterations", ylabel="NashConv", title=label)
        ax.legend()
        fig.tight_layout()
        fig.savefig(ctx.out / f"root_{_slug(label)}.png")
        plt.close(fig)
    lines += [
        "",
        "Wall-clock seconds per curve (search and exact evaluation, compile included, "
        "summed over resumed segments; the state is saved under `--out` after every "
        "checkpoint, so a rerun resumes): " + "; ".join(times) + ".",
        "",
        "Paper (Fig. 3 a, d, h; no numbers in the text): OOS converges fastest and reaches "
        "the exact equilibrium; UCT's frequencies first improve, then become more "
        "exploitable; RM does not diverge but starts slower.",
    ]
    return "\n".join(lines)


# ---------------------------------------------------------------- Fig. 3 aggregate
def _aggregate(game, bot, matches, iters, key):
    """NashConv of the aggregate-method strategy: the searcher plays ``matches`` / 2
    matches in each seat against the random bot."""
    rnd = jaxcfr.random_bot()
    half = max(matches // 2, 1)
    _, w0 = jaxcfr.play(game, bot, rnd, half, iters, jax.random.fold_in(key, 0), collect=0)
    _, w1 = jaxcfr.play(game, rnd, bot, half, iters, jax.random.fold_in(key, 1), collect=1)
    p0 = (game.infoset_player == 0)[:, None]
    weights = jnp.where(p0, w0, w1)
    mem = jnp.sum(jnp.where(game.legal_mask, weights, 0.0), axis=1) > 0
    pol = table_policy(game, weights, mem, fixed_random_policy(game, seed=0))
    return float(jaxcfr.nash_conv(game, pol))


def _fig3_aggregate(ctx: Context) -> str:
    if ctx.quick:
        games, matches, budgets = ["LD(1,1)"], 40, [500, 2000]
        algos = [("OOS IST d0.5 e0.4", "ist", 0.5, 0.4), ("UCT", None, 0, 0), ("RM", None, 0, 0)]
        sweeps = [("IST", "ist", 1.0, 0.4), ("PST", "pst", 1.0, 0.4)]
    else:
        games, matches, budgets = list(GAMES), 500, [2000, 5000, 20000]
        algos = [("OOS IST d0.5 e0.4", "ist", 0.5, 0.4), ("UCT", None, 0, 0), ("RM", None, 0, 0)]
        sweeps = [
            (t.upper(), t, d, e)
            for t in ("ist", "pst")
            for d in (0.5, 0.9, 1.0)
            for e in (0.4, 0.6, 0.8)
        ]
    lines = [
        f"Settings: aggregate method, {matches} matches of the searcher against the random "
        "bot (half in each seat); after each of the searcher's searches at infoset I, the "
        "change that search made to its strategy weights (OOS: s_J, UCT: visit counts, "
        "RM: mean-strategy sums) in I and in every infoset J of its own below I is added "
        "to a global table, as the paper's method (`jaxcfr.play(..., collect=seat)`; raw "
        "weights, so each J enters in proportion to its sampled mass: UCT/RM its visits); "
        "infosets never added play a fixed random action. NashConv of the global "
        "strategy versus iterations per move. GTLibrary's code also skips infosets with "
        "< 20 samples, which the paper does not state; not applied here (OOS keeps no "
        "per-infoset sample count).",
        "",
        "| game | searcher | " + " | ".join(f"{b:,} it/move" for b in budgets) + " |",
        "|---|---|" + "---|" * len(budgets),
    ]
    for g_i, label in enumerate(games):
        game, _ = _load(label)
        rows = [(n, t, d, e) for n, t, d, e in algos]
        rows += [
            (f"OOS {n} d{d} e{e}", t, d, e)
            for n, t, d, e in sweeps
            if not (t == "pst" and label.startswith("II-GS"))
        ]
        for r_i, (name, targeting, delta, epsilon) in enumerate(rows):
            if name.startswith("OOS"):
                bot = jaxcfr.oos(targeting, delta=delta, epsilon=epsilon)
            else:
                bot = _bot(name, None)
            vals = []
            for b_i, b in enumerate(budgets):
                key = jax.random.fold_in(jax.random.key(ctx.key), 1000 * g_i + 10 * r_i + b_i)
                vals.append(_aggregate(game, bot, matches, b, key))
                print(f"  aggregate {label} {name} {b}: {vals[-1]:.4f}", flush=True)
            lines.append(f"| {label} | {name} | " + " | ".join(f"{v:.4f}" for v in vals) + " |")
    lines += [
        "",
        "Paper (Fig. 3 b, e, i and sweeps; no numbers in the text): II-GS: ISMCTS gets "
        "more exploitable with more time, OOS substantially less exploitable; LD: OOS "
        "steadily approaches the equilibrium; GP: ISMCTS less exploitable than OOS. "
        "Sweeps: more time -> less exploitable, except IST with delta = 1 in LD, which "
        "does not converge. One aggregate run per cell here (no CI across runs).",
    ]
    return "\n".join(lines)


TARGETS = [
    Target("oos-fig4", PAPER, "Fig. 4 (a)-(c): head-to-head matches", _fig4),
    Target(
        "oos-fig4-large",
        PAPER,
        "Fig. 4 (d)-(f): head-to-head matches on II-GS(13), LD(2,2), GP(4,6,4,4) (step form)",
        _fig4_large,
    ),
    Target(
        "oos-fig4-large-text",
        PAPER,
        "Fig. 4 text: II-GS(13) at 5 s (OOS vs UCT), LD(2,2) at 1 s (OOS vs UCT, RM, both seats)",
        _fig4_large_text,
    ),
    Target("oos-fig3-root", PAPER, "Fig. 3 (a, d, h): root convergence", _fig3_root),
    Target(
        "oos-fig3-aggregate",
        PAPER,
        "Fig. 3 (b, e, i) aggregate method and (c, f, g, j, k) OOS parameter sweeps",
        _fig3_aggregate,
    ),
]
