"""jaxcfr: tabular regret minimization, search and exact evaluation in JAX.

Evaluation (pure, jittable; vmap over a batch of [I, A] policies)::

    jaxcfr.exploitability(game, policy)      # nash_conv / 2
    jaxcfr.nash_conv(game, policy)
    jaxcfr.best_response(game, policy, player)
    jaxcfr.expected_value(game, policy)
    jaxcfr.counterfactual_values(game, policy, player)
    jaxcfr.solve_lp(game)                     # exact equilibrium (host, scipy HiGHS)

Solvers (factories returning a Solver that unpacks as (init, update))::

    jaxcfr.cfr(), cfr_plus(), linear_cfr(), dcfr(), pcfr_plus()      # full width
    jaxcfr.outcome_sampling(epsilon=0.6), external_sampling()        # sampling (key)
    jaxcfr.run(solver, game, num_iterations, eval_every, num_seeds=...)
"""

from jaxcfr._cfr import CFRState, cfr, cfr_plus, dcfr, linear_cfr, make_cfr_solver, pcfr_plus
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
from jaxcfr._external_sampling import external_sampling
from jaxcfr._guards import BatchTooLargeError, NonFiniteStateError, estimate_run_memory
from jaxcfr._lp import LPSolution, solve_lp
from jaxcfr._outcome_sampling import outcome_sampling
from jaxcfr._runner import RunResult, run
from jaxcfr._solver import Solver, average_policy, current_policy, regret_matching

__all__ = [
    "BatchTooLargeError",
    "NonFiniteStateError",
    "estimate_run_memory",
    "CFRState",
    "CounterfactualValues",
    "LPSolution",
    "RunResult",
    "Solver",
    "average_policy",
    "best_response",
    "best_response_values",
    "cfr",
    "cfr_plus",
    "counterfactual_values",
    "current_policy",
    "dcfr",
    "expected_value",
    "exploitability",
    "external_sampling",
    "linear_cfr",
    "make_cfr_solver",
    "nash_conv",
    "outcome_sampling",
    "pcfr_plus",
    "regret_matching",
    "run",
    "solve_lp",
    "validate_policy",
]
