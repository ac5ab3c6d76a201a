"""Regret-based pruning in the full-width CFR family (Brown & Sandholm 2015, 2016).

    solver = jaxcfr.cfr(pruning="total", threshold=0.1)       # or cfr_plus(...)
    solver = jaxcfr.pruning.regret_pruning(jaxcfr.cfr_plus(), "interval")
    res = jaxcfr.run(solver, game, 10_000, 1_000)
    jaxcfr.pruning.space_fraction(game, res.state)          # stored entries / unpruned
    jaxcfr.pruning.space_fraction(game, res.state, count="both")  # working set
    jaxcfr.pruning.nodes_touched(res.state)                 # cumulative history nodes
    state = jaxcfr.pruning.run_live(solver, game, 10_000)   # Total RBP, live sub-game
    jaxcfr.pruning.compact_bytes(game, state)               # what a compact copy would hold

See ``jaxcfr/pruning/_solver.py`` for the rules and docs/pruning.md for measurements.
"""

from jaxcfr.pruning._accounting import compact_bytes
from jaxcfr.pruning._compact import compact_game
from jaxcfr.pruning._solver import (
    MODES,
    PrunedState,
    nodes_touched,
    regret_pruning,
    space_fraction,
    stored_entries,
)
from jaxcfr.pruning._subgame import (
    Layout,
    dead_infosets,
    layout,
    live_payoff_entries,
    opponent_frozen,
    run_live,
)
from jaxcfr.pruning._tables import PruningTables, tables

__all__ = [
    "Layout",
    "MODES",
    "PrunedState",
    "PruningTables",
    "compact_bytes",
    "compact_game",
    "dead_infosets",
    "layout",
    "live_payoff_entries",
    "nodes_touched",
    "opponent_frozen",
    "regret_pruning",
    "run_live",
    "space_fraction",
    "stored_entries",
    "tables",
]
