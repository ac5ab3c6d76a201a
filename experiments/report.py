"""The markdown report of a convergence study, from its results, timing and environment."""

from __future__ import annotations

from typing import Any

from experiments.sizes import format_table

PLOT_ITERATIONS = "exploitability_vs_iterations.png"
PLOT_SECONDS = "exploitability_vs_seconds.png"

RESULT_COLUMNS = [
    "algorithm",
    "status",
    "iterations",
    "final exploitability (median)",
    "IQR (25%-75%)",
    "rate (log-log slope)",
    "CI",
    "fit window (iterations)",
    "seconds",
    "compile s",
]


def fmt(value: float | None) -> str:
    """Exploitability-like numbers: 4 significant digits."""
    return "n/a" if value is None else f"{value:.4g}"


def fmt_slope(value: float | None) -> str:
    return "n/a" if value is None else f"{value:.3f}"


def _params(params: dict) -> str:
    return ", ".join(f"{k}={v}" for k, v in params.items()) or "-"


def _seed_variation(algo: dict) -> str:
    if algo["seeds_vary"] == "sampling":
        return "sampling (seed key)"
    if algo["seeds_vary"] == "initial regrets":
        return f"initial regrets U[0, {algo['init_scale']:g})"
    return "none (identical runs)"


def result_rows(results: dict[str, Any], timing: dict[str, Any]) -> list[list[str]]:
    rows = []
    for a in results["algorithms"]:
        final, rate = a["final"], a["rate"]
        status = (
            "complete"
            if a["complete"]
            else f"INCOMPLETE ({a['iterations_done']}/{a['target_iterations']})"
        )
        t = timing.get("algorithms", {}).get(a["label"], {})
        wall, comp = t.get("total_seconds"), t.get("compile_seconds")
        rows.append(
            [
                a["label"],
                status,
                str(a["iterations_done"]),
                fmt(final and final["median"]),
                "n/a" if final is None else f"{fmt(final['q25'])} - {fmt(final['q75'])}",
                fmt_slope(rate and rate["slope"]),
                "n/a"
                if rate is None
                else f"[{fmt_slope(rate['ci_low'])}, {fmt_slope(rate['ci_high'])}]",
                "n/a"
                if rate is None
                else f"{rate['fit_from']} - {rate['fit_to']} ({rate['points']} evals)",
                "n/a" if wall is None else f"{wall:.3g}",
                "n/a" if wall is None else f"{comp:.1f}",
            ]
        )
    return rows


def results_table(results: dict[str, Any], timing: dict[str, Any]) -> str:
    """The results table (markdown): one row per algorithm, the CI column named by the
    study's confidence level."""
    conf = round(100 * results["config"]["confidence"])
    header = [c if c != "CI" else f"{conf}% CI" for c in RESULT_COLUMNS]
    return format_table(header, result_rows(results, timing))


def render(
    results: dict[str, Any], timing: dict[str, Any], environment: dict[str, Any], out_dir: str
) -> str:
    cfg = results["config"]
    algos = results["algorithms"]
    n_done = sum(a["complete"] for a in algos)
    lines = [f"# Convergence study: {cfg['game']}", ""]
    if results["complete"]:
        lines.append(
            f"**Status: complete.** All {len(algos)} algorithms ran their full iteration budgets."
        )
    else:
        unfinished = ", ".join(
            f"{a['label']} ({a['iterations_done']}/{a['target_iterations']} iterations)"
            for a in algos
            if not a["complete"]
        )
        lines.append(
            f"**Status: INCOMPLETE.** {n_done} of {len(algos)} algorithms finished; "
            f"not finished: {unfinished}. Their numbers below are partial. Rerun the same "
            "command (same `--out`) to resume from the last checkpoint."
        )
    lines += ["", "## Study", ""]
    lines.append(f"- Game: `{cfg['game']}` ({_params(cfg['game_params'])})")
    lines.append(
        f"- Seeds: {cfg['seeds']} per algorithm, run together as one `jax.vmap` batch; "
        f"PRNG key {cfg['key']}, seed i uses `fold_in(key, i)`."
    )
    lines.append(
        "- Measure: exact exploitability (NashConv / 2) of the evaluated policy, every "
        "`eval every` iterations, in "
        + (
            "float64 (`x64 = true`)."
            if cfg.get("x64")
            else "float32 (values below about 1e-6 are at the rounding floor; `x64 = true` "
            "lowers it)."
        )
    )
    if any(a["seeds_vary"] == "none" for a in algos):
        same = ", ".join(a["label"] for a in algos if a["seeds_vary"] == "none")
        lines.append(
            f"- **init_scale = 0: the deterministic algorithms ({same}) are identical across "
            "seeds**; their IQR is zero and their confidence intervals are degenerate."
        )
    lines.append("")
    lines.append(
        format_table(
            [
                "algorithm",
                "solver",
                "parameters",
                "iterations",
                "eval every",
                "policy",
                "seeds differ by",
            ],
            [
                [
                    a["label"],
                    a["name"],
                    _params(a["params"]),
                    a["target_iterations"],
                    a["eval_every"],
                    a["evaluate"],
                    _seed_variation(a),
                ]
                for a in algos
            ],
        )
    )
    lines += ["", "## Results", ""]
    lines.append(results_table(results, timing))
    lines += [
        "",
        f"Final exploitability: at the last evaluation, across the {cfg['seeds']} seeds. "
        "Rate: least-squares slope of the mean over seeds of log10 exploitability against "
        f"log10 iterations, over the last {cfg['rate_decades']:g} decade(s) of iterations "
        "(at least the last 3 evaluations); -1 is O(1/T), -0.5 is O(1/sqrt(T)). CI: "
        f"percentile bootstrap over seeds ({cfg['bootstrap']} resamples). Seconds: wall-clock "
        "for the whole batch of seeds, summed over sessions if resumed, compilation excluded "
        "(compile s: the first chunk of each session, which also compiles, less the median "
        "cost of the other chunks; an estimate).",
        "",
        "## Plots",
        "",
        f"![exploitability vs iterations]({PLOT_ITERATIONS})",
        "",
        f"![exploitability vs wall-clock seconds]({PLOT_SECONDS})",
        "",
        "Median across seeds (line) and interquartile range (band), from the first "
        "evaluation. An iteration costs differently for different algorithms (a sampling "
        "iteration follows one trajectory, a full-width one walks the whole tree): compare "
        "their cost on the seconds plot.",
        "",
        "## Files",
        "",
        "- `config.json`: the resolved study (every default filled in)",
        "- `results.json`: curves per seed, final exploitability, rates (deterministic: "
        "identical for an interrupted-and-resumed study)",
        "- `timing.json`: wall-clock seconds at each evaluation (and raw per-chunk seconds)",
        "- `environment.json`: package versions, devices, git commit, sessions",
        "- `runs/<algorithm>.csv`: curves (iteration, seconds, one column per seed); "
        "`runs/<algorithm>.npz`: the last checkpoint (batched solver state and curves)",
        "",
        "## Reproduce",
        "",
    ]
    sessions = environment.get("sessions", [])
    commit = next(
        (s["git"]["commit"] for s in reversed(sessions) if s.get("git", {}).get("commit")), None
    )
    lines.append("```")
    if commit:
        lines.append(f"git checkout {commit}")
    lines.append(
        f"python -m experiments convergence --config {out_dir}/config.json --out <new folder>"
    )
    lines.append("```")
    lines += [
        "",
        f"Running again with `--out {out_dir}` resumes an interrupted study, or rewrites "
        "this report if it is complete; a different configuration is refused.",
        "",
    ]
    if sessions:
        last = sessions[-1]
        lines += ["## Environment", ""]
        versions = ", ".join(f"{k} {v}" for k, v in last.get("versions", {}).items())
        lines.append(f"- Packages: {versions}")
        lines.append(f"- Python {last.get('python', '?')} on {last.get('platform', '?')}")
        lines.append(f"- Devices: {', '.join(last.get('devices', [])) or '?'}")
        git = last.get("git", {})
        if git.get("commit"):
            lines.append(
                f"- Git commit: `{git['commit']}`"
                + (" (uncommitted changes)" if git.get("dirty") else "")
            )
        else:
            lines.append("- Git commit: unknown (not a git checkout)")
        lines.append(
            "- Sessions: "
            + "; ".join(
                f"{s['started']} to {s.get('finished') or '?'} ({s.get('status', '?')})"
                for s in sessions
            )
        )
        lines.append("")
    return "\n".join(lines)
