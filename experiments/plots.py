"""Convergence plots (matplotlib, Agg canvas; no pyplot global state).

Log-log exploitability against iterations or wall-clock seconds: the median across
seeds as a line and the interquartile range as a band, one color per algorithm.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import NamedTuple

import numpy as np
from matplotlib.backends.backend_agg import FigureCanvasAgg
from matplotlib.figure import Figure

from experiments.rates import FLOOR, quantile_curves

FIGSIZE = (8.0, 5.0)  # inches
DPI = 100  # -> 800 x 500 pixels


class Series(NamedTuple):
    label: str
    x: np.ndarray  # [E] iterations or seconds (> 0)
    curves: np.ndarray  # [S, E] exploitability per seed
    complete: bool


def plot_exploitability(series: list[Series], path: str | Path, *, xlabel: str, title: str) -> Path:
    """Write a PNG of ``FIGSIZE * DPI`` pixels (atomically) and return its path."""
    fig = Figure(figsize=FIGSIZE, dpi=DPI, layout="constrained")
    FigureCanvasAgg(fig)
    ax = fig.add_subplot()
    for i, s in enumerate(series):
        color = f"C{i % 10}"
        x = np.asarray(s.x, np.float64)
        keep = x > 0
        if not keep.any():
            continue
        q25, med, q75 = (np.maximum(q[keep], FLOOR) for q in quantile_curves(s.curves))
        label = s.label if s.complete else f"{s.label} (incomplete)"
        style = "-" if s.complete else "--"
        ax.plot(
            x[keep],
            med,
            style,
            color=color,
            lw=1.8,
            label=label,
            marker="o" if keep.sum() == 1 else None,
        )
        ax.fill_between(x[keep], q25, q75, color=color, alpha=0.2, lw=0)
    ax.set_xscale("log")
    ax.set_yscale("log")
    ax.set_xlabel(xlabel)
    ax.set_ylabel("exploitability (NashConv / 2)")
    ax.set_title(title)
    ax.grid(True, which="both", alpha=0.3)
    if series:
        ax.legend(loc="best")
    path = Path(path)
    tmp = path.with_name(path.name + ".tmp")
    try:
        fig.savefig(tmp, format="png", dpi=DPI)
        os.replace(tmp, path)
    except BaseException:  # disk full, interrupt: leave the old plot, not a half-written one
        tmp.unlink(missing_ok=True)
        raise
    return path
