"""The full-width CFR family as pure functions over the sequence form.

One iteration t (1-based) for update player p, with current profile sigma^t:

  r^t(I, a) = v_p(I, a) - v_p(I)                   counterfactual regret (CFR, Zinkevich
                                                   et al. 2007; ALGORITHMS.md 2.1-2.2)
  R^t = regret_update(R^{t-1}, r^t, t)             the regret transform:
        vanilla / linear averaging:  R + r
        RM+ (CFR+, Tammelin 2014):   max(R + r, 0)
        discounted (DCFR, Brown & Sandholm 2019): (R + r) * (t^a / (t^a + 1) if R + r > 0
                                                   else t^b / (t^b + 1))
  S^t = (S^{t-1} + w(t) pi_p(I) sigma^t(I, a)) * d(t)   the averaging weight:
        uniform w = 1; linear w = t (CFR+); quadratic w = t^2 (PCFR+); DCFR d = (t/(t+1))^g
  sigma^{t+1} = RM_tau(R^t [+ m^{t+1}])            regret matching; predictive CFR+ (Farina,
                                                   Kroer, Sandholm 2021) adds the prediction
                                                   m^{t+1} = r^t (the last instantaneous regret)
  RM_tau(R)(I, a) = [R(I, a) > tau] R(I, a) / sum_a' [R(I, a') > tau] R(I, a'), uniform if 0:
                   positive regrets at or below tau = 16 eps U (U = max |u|, eps of the
                   float type; ``jaxcfr._solver.regret_tolerance``) are rounding noise

Alternating updates (the default, as in OpenSpiel) update P1 then P2 within an
iteration, P2 seeing P1's new policy; ``alternating=False`` updates both from the
same profile. Regret matching is masked to legal actions with a uniform fallback.
Shapes: regrets, strategy sums and predictions are ``[I, A]``, except on games that
run the kernel's compact layout (``jaxcfr._sequence_form.uses_compact``, full keying):
there the state keeps them flat ``[P_0 + P_1]`` (each player's levels, each only as
wide as its widest infoset), so no update converts them;
``jaxcfr.infoset_table(game, table)`` gives the ``[I, A]`` view
(:func:`jaxcfr.average_policy` and :func:`jaxcfr.current_policy` do it themselves).
"""

from __future__ import annotations

from typing import Callable, NamedTuple

import jax
import jax.numpy as jnp

from games_tensor import Game
from jaxcfr import _abstraction as abst
from jaxcfr import _chance_sampling
from jaxcfr import _sequence_form as sf
from jaxcfr._solver import (
    Solver,
    builtin_cache_key,
    check_bool,
    check_game,
    check_key,
    check_number,
    check_state,
    over_actions,
    regret_matching,
    regret_tolerance,
    rounded,
)


class CFRState(NamedTuple):
    """regrets [I, A] cumulative (transformed) regrets; strategy_sum [I, A] weighted sum
    of own-reach * policy; prediction [I, A] last instantaneous regrets (used only by
    predictive variants, zeros otherwise); iteration int32 scalar (completed iterations).
    The three tables are flat ``[P_0 + P_1]`` on games in the compact layout (module
    docstring; ``jaxcfr.infoset_table`` gives ``[I, A]``)."""

    regrets: jax.Array
    strategy_sum: jax.Array
    prediction: jax.Array
    iteration: jax.Array


RegretUpdate = Callable[[jax.Array, jax.Array, jax.Array], jax.Array]
AveragingWeight = Callable[[jax.Array], tuple[jax.Array, jax.Array]]


# ---------------------------------------------------------------- regret transforms
def regret_sum(regrets, inst, t):
    """Vanilla: R + r."""
    del t
    return regrets + inst


def regret_plus(regrets, inst, t):
    """Regret-matching+ floor: max(R + r, 0)."""
    del t
    return jnp.maximum(regrets + inst, 0.0)


def regret_discounted(alpha, beta) -> RegretUpdate:
    """DCFR: (R + r) scaled by t^alpha/(t^alpha+1) where positive, t^beta/(t^beta+1) otherwise."""

    def update(regrets, inst, t):
        r = regrets + inst
        log_t = jnp.log(t.astype(r.dtype))
        # t^a / (t^a + 1) = sigmoid(a log t): the same number, but finite for any a (t^a
        # itself overflows float32 from t = 3 at a = 100, giving inf / inf = NaN).
        pos = jax.nn.sigmoid(alpha * log_t)
        neg = jax.nn.sigmoid(beta * log_t)
        return r * jnp.where(r > 0, pos, neg)

    return update


# ---------------------------------------------------------------- averaging weights
def _decay(tf, power):
    """(t / (t + 1))^power = exp(-power log1p(1/t)) in (0, 1], floored at eps^2: past
    that the older sum is below rounding next to the newest term anyway, and the floor
    keeps a huge power from flushing the whole sum (newest term included) to zero."""
    floor = jnp.finfo(tf.dtype).eps ** 2
    return jnp.maximum(jnp.exp(-power * jnp.log1p(1.0 / tf)), floor)


def weight_power(power) -> AveragingWeight:
    """Contribution weight w(t) = t^power (0: uniform, 1: linear, 2: quadratic).

    Computed normalised: the stored sum is sum_s (s / (t + 1))^power x_s, i.e. the
    weighted sum divided by (t + 1)^power (one positive scalar for every row, so the
    average policy is the same), as ``(S + x) * (t / (t + 1))^power``; it never
    overflows, whatever the power (t^10 overflows float32 from t = 7,000).
    """

    def weight(t):
        tf = t.astype(jnp.result_type(float))
        return jnp.ones_like(tf), _decay(tf, power)

    return weight


def weight_discounted(gamma) -> AveragingWeight:
    """DCFR: contributions weighted 1, the sum then scaled by (t / (t + 1))^gamma
    (computed as ``exp(-gamma log1p(1/t))``, floored at eps^2, see :func:`_decay`)."""

    def weight(t):
        tf = t.astype(jnp.result_type(float))
        return jnp.ones_like(tf), _decay(tf, gamma)

    return weight


# ---------------------------------------------------------------- the iteration
# The iteration runs on each player's blocks in the kernel's layout (see
# ``jaxcfr._sequence_form``): action-major [A, n_p], whose transposes of the [I, A]
# state XLA turns into bitcasts, or, where ``sf.uses_compact(game)``, the flat compact
# [P_p] blocks (each level only as wide as its widest infoset), which the state holds
# as they are (``[P_0 + P_1]``): no conversion runs per update.
# Tables keyed by an abstraction (``jaxcfr._abstraction``) hold ``[A, m_p]`` blocks of
# abstract infosets; ``view`` expands them to the full infosets and sums back.
def _policy(game, player, regrets, prediction, predictive: bool, view, compact=False):
    """Regret matching of a player's ``[A, n_p]`` (compact: ``[P_p]``) regrets (plus
    the prediction)."""
    regrets = regrets + prediction if predictive else regrets
    tol = regret_tolerance(game, regrets.dtype)
    if compact:
        legal, uniform = sf.legal_block(game, player, True), sf.uniform_block(game, player, True)
    else:
        legal, uniform = view.legal(game, player), view.uniform(game, player)

    def match(r, m, u):
        return regret_matching(r, m, u.astype(r.dtype), axis=0, tolerance=tol)

    return sf.by_level(game, player, compact, match, regrets, legal, uniform)


# True: the payoff step sums by fan-in group where the game carries the groups
# (``sf.uses_groups``: II-Goofspiel in the compact layout), as the exact evaluation does,
# with the same bits, from plans written level by level into one buffer (:func:`_plan`).
# Sessions 26 and 29 measured the groups from the concatenated plan (which XLA fused
# into the payoff gathers): no gain resolved across processes. With the written plan
# (session 31; and ``sf.join_levels`` writing unsplit levels) II-GS(6) ran CFR 197 -> 411
# and CFR+ 85 -> 427 it/CPU-s interleaved in one process (load 5.4), the same float32 and
# float64 iterates. False: the segment sum over the payoff entries from the concatenated
# plan.
GROUPED = True


def _plan(game: Game, policy: jax.Array, player: int, compact: bool) -> jax.Array:
    """``player``'s realization plan for the update: written level by level into one
    buffer where the payoff step sums by fan-in group (``GROUPED`` and
    ``sf.uses_groups``; each level computed once, ``sf.plan_block(..., written=True)``),
    else concatenated (games without fan-in groups, e.g. those with payoff blocks: LD(1,1),
    Leduc; LD(1,1)'s split levels ran 0.77x written, session 31)."""
    written = GROUPED and sf.uses_groups(game, compact)
    return sf.plan_block(game, policy, player, compact, written=written)


def _player_update(
    game,
    policy,
    full_policy,
    opp_plan,
    own_plan,
    player,
    blocks,
    t,
    regret_update,
    weight,
    predictive,
    view,
    compact,
):
    """New ``[A, n_p]`` (regrets, strategy_sum, prediction) of ``player`` from its policy
    block, the same block expanded to the full infosets (``full_policy``, ``policy``
    itself without abstraction), the opponent's ``[A, n_{-p}]`` plan block and its own.

    With an abstract ``view``, blocks are ``[A, m_p]``: the full game's instantaneous
    regrets and the player's own reach ``pi_p(I)`` are summed into the abstract
    infosets, and a 4th block (the full ``[A, n_p]`` average) is updated too when
    present. The regrets ``[A, n_p]`` and the reach ``[n_p]`` are summed as one stacked
    ``[A + 1, n_p]`` segment sum (one kernel instead of two; the CPU time measured in
    docs/imperfect_recall.md "Memory and speed"). (Reading the full average's increment
    from the plan table raised XLA's bytes-accessed estimate and was reverted.)"""
    regrets, ssum, pred = blocks[:3]
    g, g_root = sf.own_terminal_values(game, opp_plan, player, compact, grouped=GROUPED)
    bu = sf.bottom_up(game, g, player, full_policy, sf.combine_policy, g_root, compact)
    mask = sf.legal_block(game, player, compact)
    value = sf.over_infosets(game, bu.infoset_values, player, compact)
    inst = jnp.where(mask, bu.action_values - value, 0.0)
    w, decay = weight(t)
    reach = sf.own_reach_block(game, own_plan, player, compact)
    full = []
    if isinstance(view, abst.AbstractView):
        plan = over_actions(w * reach, mask.shape) * full_policy  # w pi_p(I) sigma(I, a)
        full = [(b + plan) * decay for b in blocks[3:]]
        both = view.reduce(game, player, jnp.concatenate([inst, reach[None]], axis=0))
        inst, reach = both[:-1], both[-1]  # one segment sum for both (one kernel)
        mask = view.legal(game, player)
    if compact:
        increment = rounded(sf.over_infosets(game, w * reach, player, True) * policy)
    else:
        increment = rounded(over_actions(w * reach, mask.shape) * policy)
    new_regrets = jnp.where(mask, regret_update(regrets, inst, t), 0.0)
    new_ssum = (ssum + increment) * decay
    new_pred = inst if predictive else pred
    out = (new_regrets, new_ssum, new_pred, *full)
    return tuple(x.astype(regrets.dtype) for x in out)


def _compact(game: Game, view) -> bool:
    """Whether the state of ``game`` is kept in the compact layout: full-keyed tables on
    a game where ``sf.uses_compact`` (static)."""
    return not isinstance(view, abst.AbstractView) and sf.uses_compact(game)


def make_cfr_solver(
    name: str,
    regret_update: RegretUpdate,
    weight: AveragingWeight,
    *,
    alternating: bool = True,
    predictive: bool = False,
    hyperparams: tuple = (),
    builtin: bool = False,
    keying: str = "auto",
    chance_sampling: bool = False,
    full_average: bool = False,
) -> Solver:
    """Assemble a full-width CFR variant from its pieces (see the module docstring).
    ``hyperparams`` name the variant's own settings; ``alternating`` is added.
    ``builtin`` (the library's factories only) lets ``run`` share compiled code by
    name and hyper-parameters; custom pieces are cached per Solver object.

    Imperfect recall (Lanctot et al. 2012; ``jaxcfr._abstraction``): ``keying="auto"``
    keys the tables by the game's abstraction when it has one (state
    :class:`~jaxcfr._abstraction.AbstractCFRState`, ``[J, A]`` tables), ``"abstract"``
    requires one, ``"full"`` ignores it. ``full_average`` (abstract keying) also
    accumulates the full game's average ``[I, A]`` for :func:`jaxcfr.full_game_regret`.
    ``chance_sampling`` samples one outcome per chance node each iteration
    (``jaxcfr._chance_sampling``); ``update`` then takes a key."""
    check_bool("alternating", alternating)
    abst.check_keying(keying)
    check_bool("chance_sampling", chance_sampling)
    check_bool("full_average", full_average)
    hyperparams = tuple(hyperparams) + (("alternating", alternating),)
    for opt, value, default in (
        ("keying", keying, "auto"),
        ("chance_sampling", chance_sampling, False),
        ("full_average", full_average, False),
    ):
        if value != default:  # the defaults keep the names of the existing solvers
            hyperparams += ((opt, value),)

    def init(game: Game, key=None, *, scale: float = 0.0) -> CFRState:
        """Zero regrets (uniform first policy), or uniform random regrets in [0, scale)
        drawn from ``key`` when ``scale > 0`` (for seed studies of deterministic solvers).
        ``ValueError`` for a negative scale, or ``scale > 0`` without a key."""
        check_game(game)
        check_number("scale", scale, 0.0)
        if scale > 0 and key is None:
            raise ValueError(f"scale={scale!r} draws random initial regrets: it needs a key")
        view = abst.view(game, keying)
        shape = (view.num_rows(game), game.num_actions)
        dtype = game.sf_payoff.dtype
        regrets = jnp.zeros(shape, dtype)
        if key is not None and scale > 0:
            check_key(key)
            legal = jnp.concatenate([view.legal(game, p).T for p in (0, 1)])
            regrets = jnp.where(legal, jax.random.uniform(key, shape, dtype) * scale, 0.0)
        zeros = jnp.zeros(shape, dtype)
        if _compact(game, view):  # the kernel's layout, kept by every update
            regrets, zeros = sf.kernel_table(game, regrets), sf.kernel_table(game, zeros)
        if isinstance(view, abst.AbstractView):
            rows = game.num_infosets if full_average else 0
            full = jnp.zeros((rows, game.num_actions), dtype)
            return abst.AbstractCFRState(regrets, zeros, zeros, jnp.zeros((), jnp.int32), full)
        return CFRState(regrets, zeros, zeros, jnp.zeros((), jnp.int32))

    def update(game: Game, state: CFRState, key=None) -> CFRState:
        check_game(game)
        view = abst.view(game, keying)
        compact = _compact(game, view)  # the state is in the compact layout
        size = sf.compact_size(game, 0) + sf.compact_size(game, 1) if compact else None
        check_state(game, state, view.num_rows(game), size)
        if not hasattr(state, "prediction"):
            raise ValueError(
                f"state is a {type(state).__name__}, not a full-width CFR state (CFRState, "
                "AbstractCFRState): pass the state this solver's init made"
            )
        if chance_sampling:
            check_key(key)
            game = _chance_sampling.sampled_game(game, key)
        t = state.iteration + 1
        fields = (state.regrets, state.strategy_sum, state.prediction)
        if compact:  # the state's flat [P_0 + P_1] tables: each player's slice
            split = sf.compact_size(game, 0)
            blocks = [tuple(x[:split] for x in fields), tuple(x[split:] for x in fields)]
        else:
            blocks = [tuple(x[view.rows(game, p)].T for x in fields) for p in (0, 1)]
        full = getattr(state, "full_strategy_sum", None)
        if full is not None and full.shape[0]:
            blocks = [b + (full[game.player_slice(p)].T,) for p, b in enumerate(blocks)]
        pieces = (t, regret_update, weight, predictive, view, compact)
        policy = [
            _policy(game, p, blocks[p][0], blocks[p][2], predictive, view, compact) for p in (0, 1)
        ]
        full_policy = [view.expand(game, p, policy[p]) for p in (0, 1)]  # one gather each
        plan0 = _plan(game, full_policy[0], 0, compact)
        plan1 = _plan(game, full_policy[1], 1, compact)
        blocks[0] = _player_update(
            game, policy[0], full_policy[0], plan1, plan0, 0, blocks[0], *pieces
        )
        if alternating:  # P2 sees P1's new policy; P2's plan block is unchanged
            policy0 = _policy(game, 0, blocks[0][0], blocks[0][2], predictive, view, compact)
            plan0 = _plan(game, view.expand(game, 0, policy0), 0, compact)
        blocks[1] = _player_update(
            game, policy[1], full_policy[1], plan0, plan1, 1, blocks[1], *pieces
        )
        if compact:
            new = [jnp.concatenate(b) for b in zip(*blocks, strict=True)]
        else:
            new = [jnp.concatenate([b0, b1], axis=1).T for b0, b1 in zip(*blocks, strict=True)]
        if not predictive:  # the prediction stays zero: pass it through untouched
            new[2] = state.prediction
        if isinstance(state, abst.AbstractCFRState):
            extra = new[3] if len(new) > 3 else state.full_strategy_sum
            return abst.AbstractCFRState(*new[:3], t, extra)
        return CFRState(*new, t)

    return Solver(
        init=init,
        update=update,
        name=name,
        needs_key=chance_sampling,
        hyperparams=hyperparams,
        cache_key=builtin_cache_key(name, hyperparams) if builtin else None,
    )


def cfr(
    alternating: bool = True,
    pruning: str | None = None,
    threshold: float = 0.05,
    check_every: int = 10,
    keying: str = "auto",
    check_rule: str = "worst_case",
    chance_sampling: bool = False,
    full_average: bool = False,
) -> Solver:
    """Vanilla CFR (Zinkevich et al. 2007): regret matching, uniform averaging.

    Args:
      alternating: update P1 then P2 each iteration (OpenSpiel's default); False
        updates both players from the same profile (simultaneous updates).
      pruning: None, or regret-based pruning ``"partial"``, ``"interval"``, ``"total"``
        (or ``"none"``: counting only), with Total RBP's average threshold C
        ``threshold``, ``check_every`` and ``check_rule``; see
        :func:`jaxcfr.pruning.regret_pruning`.
      keying: ``"auto"`` (tables keyed by the game's imperfect-recall abstraction when it
        has one), ``"abstract"`` or ``"full"`` (Lanctot et al. 2012; every factory of
        the family takes it).
      chance_sampling: sample one outcome per chance node each iteration (the update
        then takes a key).
      full_average: with abstract keying, also accumulate the full game's ``[I, A]``
        average for :func:`jaxcfr.full_game_regret`.
    Returns:
      A :class:`Solver`; ``init(game) -> CFRState``, ``update(game, state) -> CFRState``.

    Example::

        init, update = jaxcfr.cfr()
        state = init(game)
        for _ in range(100):
            state = jax.jit(update)(game, state)
        jaxcfr.exploitability(game, jaxcfr.average_policy(game, state))
    """
    solver = make_cfr_solver(
        "cfr",
        regret_sum,
        weight_power(0),
        alternating=alternating,
        builtin=True,
        keying=keying,
        chance_sampling=chance_sampling,
        full_average=full_average,
    )
    return _with_pruning(solver, pruning, threshold, check_every, check_rule)


def cfr_plus(
    alternating: bool = True,
    pruning: str | None = None,
    threshold: float = 0.05,
    check_every: int = 10,
    keying: str = "auto",
    check_rule: str = "worst_case",
    chance_sampling: bool = False,
    full_average: bool = False,
) -> Solver:
    """CFR+ (Tammelin 2014): regret-matching+ (regrets floored at 0), alternating
    updates, linear averaging (iteration t weighted by t), as OpenSpiel's CFRPlusSolver.
    ``pruning``, ``threshold``, ``check_every``, ``check_rule``: regret-based pruning; ``keying``,
    ``chance_sampling``, ``full_average``: imperfect-recall options; as in :func:`cfr`."""
    solver = make_cfr_solver(
        "cfr_plus",
        regret_plus,
        weight_power(1),
        alternating=alternating,
        builtin=True,
        keying=keying,
        chance_sampling=chance_sampling,
        full_average=full_average,
    )
    return _with_pruning(solver, pruning, threshold, check_every, check_rule)


def _with_pruning(solver: Solver, pruning, threshold, check_every, check_rule) -> Solver:
    """``solver`` unchanged without ``pruning``; else its regret-pruning variant."""
    from jaxcfr.pruning import regret_pruning  # the subpackage imports this module

    check_number("threshold", threshold, 0.0)
    if pruning is None:
        if check_rule != "worst_case":
            raise ValueError(
                f"check_rule={check_rule!r} applies to Total RBP only (pruning='total'), "
                "got pruning=None"
            )
        return solver
    return regret_pruning(
        solver, pruning, threshold=threshold, check_every=check_every, check_rule=check_rule
    )


def linear_cfr(
    alternating: bool = True,
    keying: str = "auto",
    chance_sampling: bool = False,
    full_average: bool = False,
) -> Solver:
    """Linear CFR (Brown & Sandholm 2019): iteration t's regrets and average-strategy
    contributions weighted by t; identical to ``dcfr(alpha=1, beta=1, gamma=1)``."""
    return make_cfr_solver(
        "linear_cfr",
        regret_discounted(1.0, 1.0),
        weight_discounted(1.0),
        alternating=alternating,
        builtin=True,
        keying=keying,
        chance_sampling=chance_sampling,
        full_average=full_average,
    )


def dcfr(
    alpha=1.5,
    beta=0.0,
    gamma=2.0,
    alternating: bool = True,
    keying: str = "auto",
    chance_sampling: bool = False,
    full_average: bool = False,
) -> Solver:
    """Discounted CFR (Brown & Sandholm 2019). Each iteration t, positive cumulative
    regrets are scaled by t^alpha/(t^alpha+1), negative ones by t^beta/(t^beta+1), and
    the average-strategy sum by (t/(t+1))^gamma. Defaults are the paper's (1.5, 0, 2).

    ``alpha``, ``beta``, ``gamma`` may be traced values, so a grid of them can be
    ``jax.vmap``-ed (see ``jaxcfr.run(..., hparams=...)``).
    """
    check_number("alpha", alpha, 0.0)
    check_number("beta", beta)
    check_number("gamma", gamma, 0.0)
    return make_cfr_solver(
        "dcfr",
        regret_discounted(alpha, beta),
        weight_discounted(gamma),
        alternating=alternating,
        hyperparams=(("alpha", alpha), ("beta", beta), ("gamma", gamma)),
        builtin=True,
        keying=keying,
        chance_sampling=chance_sampling,
        full_average=full_average,
    )


def pcfr_plus(
    alternating: bool = True,
    averaging_power=2,
    keying: str = "auto",
    chance_sampling: bool = False,
    full_average: bool = False,
) -> Solver:
    """Predictive CFR+ (Farina, Kroer & Sandholm 2021): RM+ regrets, current policy
    RM+(R + m) with the prediction m = last instantaneous regret; average weighted by
    t^averaging_power (2 = quadratic averaging, the paper's choice)."""
    check_number("averaging_power", averaging_power, 0.0)
    return make_cfr_solver(
        "pcfr_plus",
        regret_plus,
        weight_power(averaging_power),
        alternating=alternating,
        predictive=True,
        hyperparams=(("averaging_power", averaging_power),),
        builtin=True,
        keying=keying,
        chance_sampling=chance_sampling,
        full_average=full_average,
    )
