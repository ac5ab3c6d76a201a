"""jaxcfr: tabular regret minimization, search and exact evaluation in JAX.

Evaluation::

    jaxcfr.exploitability(game, policy)      # nash_conv / 2
    jaxcfr.nash_conv(game, policy)
    jaxcfr.best_response(game, policy, player)
    jaxcfr.expected_value(game, policy)
    jaxcfr.counterfactual_values(game, policy, player)
    jaxcfr.solve_lp(game)                     # exact equilibrium (host, scipy HiGHS)
"""

from jaxcfr._evaluation import (
    CounterfactualValues,
    best_response,
    best_response_values,
    counterfactual_values,
    expected_value,
    exploitability,
    nash_conv,
    validate_policy,
)
from jaxcfr._lp import LPSolution, solve_lp

__all__ = [
    "CounterfactualValues",
    "LPSolution",
    "best_response",
    "best_response_values",
    "counterfactual_values",
    "expected_value",
    "exploitability",
    "nash_conv",
    "solve_lp",
    "validate_policy",
]
