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

from jaxcfr._cfr import CFRState, cfr, cfr_plus, dcfr, linear_cfr, make_cfr_solver, pcfr_plus
from jaxcfr._solver import Solver, average_policy, current_policy, regret_matching

__all__ += [
    "CFRState",
    "Solver",
    "average_policy",
    "cfr",
    "cfr_plus",
    "current_policy",
    "dcfr",
    "linear_cfr",
    "make_cfr_solver",
    "pcfr_plus",
    "regret_matching",
]

from jaxcfr._runner import RunResult, run

__all__ += ["RunResult", "run"]

from jaxcfr._external_sampling import external_sampling
from jaxcfr._outcome_sampling import outcome_sampling

__all__ += ["external_sampling", "outcome_sampling"]
