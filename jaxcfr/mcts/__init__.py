"""Extensive-form MCTS self-play solvers: UCT and Smooth UCT (Heinrich, thesis ch. 3).

These learn an approximate Nash equilibrium from sampled self-play episodes (multi-tree
MCTS, one tree per player over its infosets); they are solvers like ``outcome_sampling``,
not online search bots. ``jaxcfr.uct`` and ``jaxcfr.smooth_uct`` are re-exported.
"""

from jaxcfr.mcts._smooth_uct import MCTSState, smooth_uct, uct

__all__ = ["MCTSState", "smooth_uct", "uct"]
