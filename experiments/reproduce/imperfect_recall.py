"""Lanctot, Gibson, Burch, Zinkevich, Bowling, "No-Regret Learning in Extensive-Form Games
with Imperfect Recall" (ICML 2012): Table 1, Fig. 1 (i) and (iii), the Section 7
counterexample (Fig. 2).

The measure everywhere is the paper's: the sum of both players' average regrets in the
full (perfect-recall) game, ``jaxcfr.full_game_regret`` (NashConv of the full game's
average realization plan, accumulated per full infoset: ``full_average=True``). The
solver of Fig. 1 is the paper's: chance-sampled CFR (one chance outcome per chance node
each iteration, ``jaxcfr.cfr(chance_sampling=True)``) keyed by the abstraction with
simultaneous updates ("both players updated every iteration"), over seeds with 95% CIs,
for thousands of iterations instead of the paper's millions; vanilla (full-width) CFR
from the uniform profile runs beside it as a deterministic reference (one run). The
Section 7 counterexample uses vanilla CFR: its claim (CFR stalls at a profile where every
instantaneous regret is 0) is about the exact iteration.

``--key`` sets the chance-sampled runs' seeds (seed i of a curve: ``fold_in(PRNGKey(key),
i)``; every curve of a figure uses the same seed keys). Runs are resumable: each curve
saves its state and curve after every evaluation under ``<out>/checkpoints/<mode>-key<key>/``
(Table 1: its finished rows) and a rerun continues from there.
"""

from __future__ import annotations

import json
import os
import time
from functools import lru_cache
from pathlib import Path

import jax
import jax.numpy as jnp
import numpy as np
from matplotlib.backends.backend_agg import FigureCanvasAgg
from matplotlib.figure import Figure

import games_tensor as gt
import jaxcfr
from experiments.reproduce import Context, Target
from experiments.reproduce._stats import mean_ci95

PAPER = "Lanctot, Gibson, Burch, Zinkevich, Bowling, ICML 2012"
MEMORY_LIMIT_GIB = 4.0
# The dense compiler's peak memory per history, measured by
# ``python -m experiments.benchmarks compile_bytes`` (2026-11-24; peak RSS of
# ``games_tensor.load`` in a fresh process above its RSS before the call): the marginal
# cost of a least-squares fit over LD(1,1) with 4 / 5 / 6 faces (44 MiB fixed), and DRP's
# own bytes per history, its fixed part included (an upper bound). The compiler's own
# estimate (``games_tensor._compile``) is 600.
BYTES_PER_HISTORY = {"LD(1,1) fit, marginal": 582, "DRP, fixed part included": 880}
IMPORT_MIB = 239  # a process that only imports games_tensor and jax (the same command)


# ------------------------------------------------------------------ helpers
def _ckpt(ctx: Context, tag: str) -> Path:
    """The checkpoint file of one curve of a run: ``<out>/checkpoints/<mode>-key<key>/``."""
    d = ctx.out / "checkpoints" / f"{'quick' if ctx.quick else 'full'}-key{ctx.key}"
    d.mkdir(parents=True, exist_ok=True)
    return d / f"{tag}.npz"


def _curves(
    game,
    *,
    iterations,
    eval_every,
    seeds,
    chance_sampling=False,
    keying="auto",
    alternating=False,
    key=0,
    ckpt=None,
):
    """(iterations [E], full-game regret [seeds, E], seconds) of CFR (simultaneous unless
    ``alternating``) with the full-game average, from the uniform profile.

    key: the base PRNG seed (``--key``); seed i of a chance-sampled run draws iteration t's
      outcomes from ``fold_in(fold_in(PRNGKey(key), i), t)`` (``jaxcfr.run``). Vanilla CFR
      is deterministic and ignores it.
    ckpt: a ``.npz`` path: the batched state, the curve and the seconds spent are saved
      after every evaluation; a rerun continues from the saved state (same numbers: the
      outcome drawn at iteration t depends only on the seed key and t) and a finished
      curve is read back without computing. seconds: summed over every session's run.
    """
    solver = jaxcfr.cfr(
        alternating=alternating,
        keying=keying,
        full_average=True,
        chance_sampling=chance_sampling,
    )
    state, its, ncs, before = None, [], [], 0.0
    if ckpt is not None and Path(ckpt).exists():
        data = np.load(ckpt)
        its, ncs, before = (
            list(data["iterations"]),
            list(data["nash_conv"].T),
            float(data["seconds"]),
        )
        if its and its[-1] < iterations:  # unfinished: rebuild the batched state
            shapes = jax.eval_shape(jax.vmap(lambda _: solver.init(game)), jnp.arange(seeds))
            leaves = [jnp.asarray(data[f"leaf{i}"]) for i in range(len(jax.tree.leaves(shapes)))]
            state = jax.tree.unflatten(jax.tree.structure(shapes), leaves)
    done = int(its[-1]) if its else 0
    t0 = time.perf_counter()

    def save(it, nc, st):
        its.append(it)
        ncs.append(np.asarray(nc, np.float64))
        if ckpt is None:
            return
        leaves = {f"leaf{i}": np.asarray(x) for i, x in enumerate(jax.tree.leaves(st))}
        tmp = Path(str(ckpt) + ".tmp.npz")
        np.savez(
            tmp,
            iterations=np.asarray(its),
            nash_conv=np.stack(ncs, 1),
            seconds=before + time.perf_counter() - t0,
            **leaves,
        )
        os.replace(tmp, ckpt)

    if done < iterations:
        jaxcfr.run(
            solver,
            game,
            iterations - done,
            eval_every,
            key=jax.random.PRNGKey(key),
            num_seeds=seeds,
            init_scale=0.0,
            evaluate="full_regret",
            state=state,
            on_chunk=save,
        )
    keep = np.asarray(its) <= iterations
    return (
        np.asarray(its)[keep],
        np.stack(ncs, 1)[:, keep],
        before + time.perf_counter() - t0,
    )


def _plot(path, series, *, title, ylabel="full-game regret (sum of both players)"):
    """series: (label, x [E], y [S, E] or [E], style dict)."""
    fig = Figure(figsize=(8.0, 5.0), dpi=100, layout="constrained")
    FigureCanvasAgg(fig)
    ax = fig.add_subplot()
    for label, x, y, style in series:
        y = np.asarray(y, np.float64)
        if y.ndim == 2:
            mean = y.mean(0)
            ax.plot(x, mean, label=label, **style)
            if y.shape[0] > 1:
                ax.fill_between(x, y.min(0), y.max(0), alpha=0.2, color=style.get("color"))
        else:
            ax.plot(x, y, label=label, **style)
    ax.set_xscale("log")
    ax.set_yscale("log")
    ax.set_xlabel("CFR iterations")
    ax.set_ylabel(ylabel)
    ax.set_title(title)
    ax.grid(True, which="both", alpha=0.3)
    ax.legend(fontsize=8)
    fig.savefig(path)
    return path


def _fmt_ci(values):
    mean, half = mean_ci95(values)
    return f"{mean:.4g}" + ("" if np.isnan(half) else f" ± {half:.2g}")


# ------------------------------------------------------------------ DRP-3 size (App. B)
def _betting(raises_max=2):
    """DRP's betting round (GAMES.md 1.8): (decision nodes, fold leaves, round closes)."""
    decisions = folds = closes = 0
    stack = [("", 0)]
    while stack:
        hist, raises = stack.pop()
        decisions += 1
        facing = hist.endswith("r")
        if facing:
            folds += 1
        for a in "cr" if raises < raises_max else "c":
            h = hist + a
            if a == "c" and len(h) >= 2:
                closes += 1
            else:
                stack.append((h, raises + (a == "r")))
    return decisions, folds, closes


@lru_cache
def drp_histories(rounds: int) -> int:
    """|H| of Die-Roll Poker with ``rounds`` rounds (a die per player per round)."""
    decisions, folds, closes = _betting()

    def from_round(r):
        after = 1 if r == rounds else from_round(r + 1)  # showdown terminal or next round
        betting = decisions + folds + closes * after
        return 1 + 6 * (1 + 6 * betting)  # P1's roll, P2's roll, the betting

    return from_round(1)


# ------------------------------------------------------------------ Table 1
def _size_row(label, game, verdict=""):
    s = game.sizes
    pairs, apairs = s["infoset_actions"], s.get("abstract_infoset_actions", s["infoset_actions"])
    saved = 1 - apairs / pairs
    return (
        f"| {label} | {s['histories']:,} | {s['infosets']:,} | {pairs:,} | "
        f"{s.get('abstract_infosets', s['infosets']):,} | {apairs:,} | {100 * saved:.1f}% | "
        f"{verdict} |"
    )


def _verdict(game):
    c = gt.check_abstraction(game)
    if c.verdict == "skew well-formed":
        return f"skew well-formed, delta = {c.delta:.4g}"
    if c.verdict == "not well-formed":
        return f"not well-formed: ({c.condition}) fails"
    return c.verdict


def run_table1(ctx: Context) -> str:
    rows = [
        "| game | \\|H\\| | \\|I\\| full | (I,a) full | \\|I\\| abstract | (I,a) abstract | "
        "memory saved | checker |",
        "|---|---|---|---|---|---|---|---|",
    ]
    done_file = _ckpt(ctx, "table1").with_suffix(".json")  # finished rows: a rerun continues
    done = json.loads(done_file.read_text()) if done_file.exists() else {}

    def row(label, load, check=True):
        if label not in done:
            game = load()
            done[label] = _size_row(label, game, _verdict(game) if check else "(not checked)")
            tmp = done_file.with_suffix(".tmp")
            tmp.write_text(json.dumps(done, indent=1))
            os.replace(tmp, done_file)
        rows.append(done[label])

    row("DRP / DRP-IR", lambda: gt.load("die_roll_poker", abstraction="ir"))
    row(
        "Skew-DRP(0.1) / Skew-DRP-IR(0.1)",
        lambda: gt.load("die_roll_poker", abstraction="ir", skew=0.1),
    )
    recalls = (1, 2, 3, 4, 8) if ctx.quick else tuple(range(1, 13))
    check_ld = {1, 4} if ctx.quick else set(recalls)
    for r in recalls:
        row(
            f"LD(1,1) = Bluff(1,1), last {r} bids",
            lambda r=r: gt.load("liars_dice", recall=r),
            check=r in check_ld,
        )
    row("Section 7 counterexample (forget side)", lambda: gt.load("recall_counterexample"))
    h3 = drp_histories(3)
    gib = {k: (h3 * v / 2**20 + IMPORT_MIB) / 1024 for k, v in BYTES_PER_HISTORY.items()}
    cost = " to ".join(f"{g:.1f}" for g in gib.values())
    rows += [
        f"| DRP-3 / DRP-IR-3 (App. B) | {h3:,} (counted) | - | - | - | - | - | does not fit: "
        f"{cost} GiB peak to compile (> {MEMORY_LIMIT_GIB:g} GiB) |",
        "| PTTT (full, FOSF, FOI, FOS, FOE) | about 1e10 (paper) | - | - | - | - | "
        "paper: FOSF 20%, FOS 87% | does not fit the dense compiler (about 5.6 TiB) |",
        "| Bluff(2,2), last r bids | about 1e10 (paper) | - | - | - | - | "
        "paper: r = 8 saves 85% | does not fit the dense compiler (about 5.6 TiB) |",
    ]
    drp_h = gt.load("die_roll_poker").sizes["histories"]
    assert drp_histories(2) == drp_h, "DRP history count check"
    return "\n".join(
        [
            "Sizes of the compiled games (`game.sizes`); memory saved = 1 - abstract (I,a) "
            "pairs / full (I,a) pairs (the regret and average tables). The last column is "
            "`games_tensor.check_abstraction`. The paper's Table 1 values are not recovered "
            "(REPRODUCTION.md 3.3); its headlines: DRP-IR saves 67% (derived), FOS 87%, "
            "Bluff r = 8 85%.",
            "",
            *rows,
            "",
            f"DRP-3 history count: the betting-round recursion of `drp_histories` (checked "
            f"against the compiled DRP: {drp_histories(2):,} histories). Its cost: the "
            "compiler's peak memory per history measured by `python -m "
            "experiments.benchmarks compile_bytes` ("
            + "; ".join(
                f"{k}: {v} B/history -> {gib[k]:.1f} GiB" for k, v in BYTES_PER_HISTORY.items()
            )
            + f", the {IMPORT_MIB} MiB of the imports included; the compiler's own estimate "
            "is 600 B/history). DRP-IR-3 is therefore not reproduced: the abstraction "
            "shrinks the solver's tables, not the compiled history tree. PTTT and Bluff(2,2) "
            "have about 1e10 histories (the paper), so their rows are not computed.",
        ]
    )


def _cs_and_vanilla(ctx: Context, tag: str, game, T: int, every: int, seeds: int):
    """Chance-sampled CFR over ``seeds`` seeds and vanilla CFR (one run) on ``game``, each
    checkpointed under ``tag``: the concatenation of both ``_curves`` results."""
    cs = _curves(
        game,
        iterations=T,
        eval_every=every,
        seeds=seeds,
        chance_sampling=True,
        key=ctx.key,
        ckpt=_ckpt(ctx, f"{tag}-cs"),
    )
    vanilla = _curves(
        game, iterations=T, eval_every=every, seeds=1, ckpt=_ckpt(ctx, f"{tag}-vanilla")
    )
    return cs + vanilla


# ------------------------------------------------------------------ Fig. 1 (i)
DELTAS = (0.0, 0.01, 0.02, 0.05, 0.1)


def run_fig1_drp(ctx: Context) -> str:
    T, every, seeds = (2048, 128, 2) if ctx.quick else (32768, 1024, 3)
    series, lines = [], []
    styles = [{"color": f"C{i}"} for i in range(len(DELTAS) + 1)]

    def pair(tag, game):
        return _cs_and_vanilla(ctx, tag, game, T, every, seeds)

    full_drp = gt.load("die_roll_poker")
    x, y, sec, xv, yv, secv = pair("drp-full", full_drp)
    series.append(("full DRP (CS-CFR, no abstraction)", x, y, {"color": "k", "ls": "--"}))
    lines.append(f"| full DRP | - | {_fmt_ci(y[:, -1])} | {yv[0, -1]:.4g} | - | {sec + secv:.0f} |")
    finals, bounds = {}, {}
    for i, delta in enumerate(DELTAS):
        game = gt.load("die_roll_poker", abstraction="ir", skew=delta)
        check = gt.check_abstraction(game)
        x, y, sec, xv, yv, secv = pair(f"drp-ir-skew{delta:g}", game)
        finals[delta] = y[:, -1]
        util = game.meta.host["node_utility"][game.meta.host["node_player"] == gt.TERMINAL]
        spread = float(util.max() - util.min())  # Delta_i (same for both players)
        actions = int(game.meta.host["legal_mask"].sum(1).max())
        bound = spread * check.K.sum() * np.sqrt(actions) / np.sqrt(x) + check.skew_term.sum()
        bounds[delta] = bound[-1]
        series.append((f"Skew-DRP-IR({delta:g}), CS-CFR", x, y, styles[i]))
        series.append((f"Theorem 2 bound ({delta:g})", x, bound, {**styles[i], "ls": ":"}))
        lines.append(
            f"| Skew-DRP-IR({delta:g}) | {check.verdict}, delta = {check.delta:.3g} | "
            f"{_fmt_ci(y[:, -1])} | {yv[0, -1]:.4g} | {bound[-1]:.3g} | {sec + secv:.0f} |"
        )
    png = _plot(
        ctx.out / "fig1_drp.png",
        series,
        title="Fig. 1 (i): Skew-DRP-IR(delta), simultaneous CS-CFR, regret in the full DRP",
    )
    mono = all(
        np.mean(finals[a]) <= np.mean(finals[b]) for a, b in zip(DELTAS, DELTAS[1:], strict=False)
    )
    return "\n".join(
        [
            f"Chance-sampled CFR (the paper's variant) keyed by the DRP-IR abstraction, "
            f"simultaneous updates from the uniform profile, {T} iterations, {seeds} seeds "
            f"(mean ± 95% CI); vanilla CFR (deterministic, one run) beside it; full-game "
            f"regret every {every}. Plot: `{png.name}` (CS-CFR curves, band = seed range).",
            "",
            "| game | checker | CS-CFR full-game regret at T | vanilla CFR at T | "
            "Theorem 2 bound at T | seconds |",
            "|---|---|---|---|---|---|",
            *lines,
            "",
            "Paper's headlines (no numbers recovered; chance-sampled CFR for millions of "
            "iterations): well-formed DRP-IR reaches the same regret as the full game; the "
            "floor grows with delta; the Theorem 2 bound is very loose. Ours (CS-CFR): the "
            f"regret at T {'grows' if mono else 'does NOT grow monotonically'} with delta; the "
            f"bound at T is {min(bounds.values()):.3g} or more, against measured regrets "
            "below 1.",
        ]
    )


# ------------------------------------------------------------------ Fig. 1 (iii)
def run_fig1_ld(ctx: Context) -> str:
    T, every, seeds = (2048, 128, 2) if ctx.quick else (16384, 1024, 3)
    recalls = (1, 2, 4, 8) if ctx.quick else (1, 2, 3, 4, 6, 8, 10)
    series, lines = [], []

    def pair(tag, game):
        return _cs_and_vanilla(ctx, tag, game, T, every, seeds)

    full = gt.load("liars_dice")
    x, y, sec, xv, yv, secv = pair("ld-full", full)
    full_final = y[:, -1]
    series.append(("LD(1,1), no abstraction", x, y, {"color": "k", "ls": "--"}))
    lines.append(
        f"| full LD(1,1) | 49,140 | {_fmt_ci(y[:, -1])} | {yv[0, -1]:.4g} | {sec + secv:.0f} |"
    )
    finals, vanilla = {}, {}
    for i, r in enumerate(recalls):
        game = gt.load("liars_dice", recall=r)
        x, y, sec, xv, yv, secv = pair(f"ld-r{r}", game)
        finals[r], vanilla[r] = y[:, -1], yv[:, -1]
        series.append((f"last {r} bids", x, y, {"color": f"C{i}"}))
        pairs = game.sizes["abstract_infoset_actions"]
        lines.append(
            f"| last {r} bids | {pairs:,} | {_fmt_ci(y[:, -1])} | {yv[0, -1]:.4g} | "
            f"{sec + secv:.0f} |"
        )
    png = _plot(
        ctx.out / "fig1_ld.png",
        series,
        title="Fig. 1 (iii) at LD(1,1): last-r-bids abstractions, CS-CFR, full-game regret",
    )
    return "\n".join(
        [
            f"LD(1,1) = Bluff(1,1) (Bluff(2,2) does not fit the dense compiler). "
            f"Chance-sampled CFR (the paper's variant) keyed by each last-r-bids abstraction, "
            f"simultaneous updates from the uniform profile, {T} iterations, {seeds} seeds "
            f"(mean ± 95% CI); vanilla CFR (deterministic, one run) beside it. "
            f"Plot: `{png.name}`.",
            "",
            "| abstraction | (I,a) pairs | CS-CFR full-game regret at T | vanilla CFR at T | "
            "seconds |",
            "|---|---|---|---|---|",
            *lines,
            "",
            "Paper's headline (Bluff(2,2), chance-sampled CFR): regret gets worse as r "
            "decreases; r = 8 is close to the full game. Ours at LD(1,1), CS-CFR: the regret "
            f"at T {_monotone_in_r(recalls, finals, full_final)}; vanilla CFR: "
            f"{_monotone_in_r(recalls, vanilla, None)}.",
        ]
    )


def _monotone_in_r(recalls, finals, full) -> str:
    """Whether the mean final regret falls as r grows; each rise is named, with whether the
    two 95% CIs overlap (then the rise is within the seeds' noise). ``full``: the
    unabstracted game's finals, compared with the largest r (None: not compared)."""
    rises = []
    for a, b in zip(recalls, recalls[1:], strict=False):
        (ma, ha), (mb, hb) = mean_ci95(finals[a]), mean_ci95(finals[b])
        if mb > ma:
            if not (np.isfinite(ha) and np.isfinite(hb)):
                note = " (one run each)"
            elif mb - hb <= ma + ha:
                note = " (95% CIs overlap: within noise)"
            else:
                note = " (95% CIs apart)"
            rises.append(f"r = {a} -> {b} rises {ma:.4g} -> {mb:.4g}{note}")
    text = "decreases as r grows" + ("" if not rises else " except " + "; ".join(rises))
    if full is None:
        return text
    (mf, hf), (ml, hl) = mean_ci95(full), mean_ci95(finals[recalls[-1]])
    close = abs(ml - mf) <= hf + hl if np.isfinite(hf) and np.isfinite(hl) else ml == mf
    verdict = "is" if close else "is NOT"
    return text + f"; r = {recalls[-1]} {verdict} within the CIs of the full game"


# ------------------------------------------------------------------ Section 7 / Fig. 2
def run_counterexample(ctx: Context) -> str:
    T, every = (2000, 20) if ctx.quick else (100_000, 1000)
    series, lines = [], []
    for i, (label, params) in enumerate(
        [
            ("forget side: breaks only (iii)", {"abstraction": "forget_side"}),
            ("forget signal: well-formed", {"abstraction": "forget_signal"}),
            ("no abstraction", {"abstraction": None}),
        ]
    ):
        game = gt.load("recall_counterexample", **params)
        check = _verdict(game) if game.meta.has_abstraction else "-"
        for alternating in (False, True):
            mode = "alternating" if alternating else "simultaneous"
            x, y, _ = _curves(
                game,
                iterations=T,
                eval_every=every,
                seeds=1,
                alternating=alternating,
                ckpt=_ckpt(ctx, f"{params['abstraction']}-{mode}"),
            )
            y = y[0]
            series.append((f"{label}, {mode}", x, y, {"color": f"C{i}", "ls": "-:"[alternating]}))
            lines.append(f"| {label} | {check} | {mode} | {y[9]:.4g} | {y[-1]:.4g} |")
    png = _plot(
        ctx.out / "counterexample.png",
        series,
        title="Section 7: an abstraction breaking only (iii) stalls CFR",
    )
    return "\n".join(
        [
            "Our smallest game breaking only condition (iii) (`recall_counterexample`, "
            "docstring): chance picks a side L/R and a signal; P1 sees both, P2 only the side; "
            "the L and R payoffs agree under a bijection that swaps P2's actions, so "
            "(i), (ii), (iv) hold (`check_abstraction(game, conditions=('i','ii','iv'))` says "
            "well-formed) and only (iii) fails. The paper's own Fig. 2 game and its constant "
            f"(1 - xi)/4 are not recovered. Vanilla CFR, {T} iterations (deterministic: one run). "
            f"Plot: `{png.name}`.",
            "",
            "| abstraction | checker | updates | regret at T/10 | regret at T |",
            "|---|---|---|---|---|",
            *lines,
            "",
            "Hand derivation: from iteration 2 CFR plays P1 = b, P2 = c on both sides and "
            "every instantaneous regret is 0, so it stays there; P1 forgoes 1 on side L "
            "(probability 1/2): the full-game regret tends to 1/2 (paper: a constant "
            "regret). The well-formed abstraction converges; its curves coincide with the full "
            "game's (k = l = 1: merged infosets get equal regrets, so the trajectories agree).",
        ]
    )


TARGETS = [
    Target(
        "imperfect-recall-table1",
        PAPER,
        "Table 1: |H|, |I|, (I,a) pairs full and abstract, memory saved",
        run_table1,
    ),
    Target(
        "imperfect-recall-fig1-drp",
        PAPER,
        "Fig. 1 (i): full-game regret of Skew-DRP-IR(delta) vs iterations, Theorem 2 bound",
        run_fig1_drp,
    ),
    Target(
        "imperfect-recall-fig1-ld",
        PAPER,
        "Fig. 1 (iii) at LD(1,1): last-r-bids abstractions, full-game regret",
        run_fig1_ld,
    ),
    Target(
        "imperfect-recall-counterexample",
        PAPER,
        "Section 7 / Fig. 2: breaking only (iii) stalls CFR at constant full-game regret",
        run_counterexample,
    ),
]
