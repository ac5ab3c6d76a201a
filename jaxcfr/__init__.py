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
    jaxcfr.uct(c=2.0), smooth_uct(c=1.75, gamma=0.1, eta0=0.9, d=0.001)  # MCTS self-play (key)
    jaxcfr.run(solver, game, num_iterations, eval_every, num_seeds=...)

Search bots and matches (jaxcfr.search)::

    jaxcfr.oos(targeting="ist"), ismcts(selection="uct"), random_bot()
    jaxcfr.play(game, bot_p1, bot_p2, num_matches, iterations_per_move, key)
    jaxcfr.sharded_vmap(bot.search, (None, 0, None, 0, None))  # a batch over devices

Regret-based pruning (jaxcfr.pruning)::

    jaxcfr.cfr(pruning="total", threshold=0.1)

Imperfect recall (Lanctot et al. 2012): solvers key their tables by a game's
abstraction (``keying="auto"|"abstract"|"full"``); ``jaxcfr.full_game_regret(game,
state)`` is the full game's regret measure (``full_average=True`` solvers)::

    jaxcfr.run(jaxcfr.cfr(full_average=True), game, 1000, 100, evaluate="full_regret")
"""

from jaxcfr import pruning  # regret-based pruning (subpackage)
from jaxcfr._abstraction import AbstractCFRState, AbstractMCCFRState, full_game_regret
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
from jaxcfr._sequence_form import infoset_table, kernel_table
from jaxcfr._shard import sharded_vmap
from jaxcfr._solver import Solver, average_policy, current_policy, regret_matching
from jaxcfr.mcts import MCTSState, smooth_uct, uct
from jaxcfr.search import Bot, View, ismcts, oos, play, random_bot, root_view, view_of

__all__ = [
    "AbstractCFRState",
    "AbstractMCCFRState",
    "BatchTooLargeError",
    "Bot",
    "NonFiniteStateError",
    "estimate_run_memory",
    "CFRState",
    "CounterfactualValues",
    "LPSolution",
    "MCTSState",
    "RunResult",
    "Solver",
    "View",
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
    "ismcts",
    "full_game_regret",
    "infoset_table",
    "kernel_table",
    "linear_cfr",
    "make_cfr_solver",
    "nash_conv",
    "oos",
    "outcome_sampling",
    "pcfr_plus",
    "play",
    "random_bot",
    "pruning",
    "regret_matching",
    "root_view",
    "sharded_vmap",
    "run",
    "smooth_uct",
    "solve_lp",
    "uct",
    "validate_policy",
    "view_of",
]
