"""Total RBP's space floor from an equilibrium (Theorem 2 / Corollary 1), two counts.

``python -m experiments.benchmarks pruning_floor --game leduc5 --equilibrium lp
[--checkpoints CKPT.npz:BASE ...]``

Brown & Sandholm (2016), Theorem 2: an action a at I of player i with CBV^{s*_{-i}}(I, a) <
CBV^{s*_{-i}}(I) (counterfactual best-response values, weighted by the opponent's and
chance's reach) for every equilibrium s* is pruned forever after finitely many
iterations; Corollary 1: the space is then O(|I_S| |A|), S the histories reached by
actions that are CBRs to some equilibrium. This diagnostic takes one equilibrium s*
(``--equilibrium lp``: ``jaxcfr.solve_lp``; ``cfr_plus:N``: the average of N unpruned CFR+
iterations; or a saved ``.npz`` with ``policy`` and ``exploitability``), computes for each
player the CBV of every legal (I, a) against s*_{-i} (``jaxcfr.counterfactual_values``),
and flags (I, a) "never a CBR" when the opponent reaches I (cf reach / chance mass of I >
``--reach-cut``) and CBV(I) - CBV(I, a) > tau * cf reach(I) (tau in chips). With these
flags as both the pruned and the discarded set it reports, as fractions of the legal
(infoset, action) entries:

* ``floor``: the space our count gives when every flagged branch is freed
  (``jaxcfr.pruning.space_fraction``'s rule: regrets of own infosets strictly below a
  flagged own sequence, average sums in or below one), i.e. the asymptotic floor of
  Total RBP as implemented; ``regrets`` / ``averages`` its two halves;
* ``I_S``: legal entries at infosets holding a history whose every player action is
  unflagged (Corollary 1's count, both players' actions);
* ``below_opp``: entries at infosets all of whose histories pass a flagged action of the
  *opponent* (gone under ``I_S``, never freed by our count: the player's cf reach is 0
  there at s*, so its CBVs tie and Theorem 2 says nothing).

``--checkpoints`` (``pruning_live`` states, ``PATH:BASE``) counts a run's space both ways,
``jaxcfr.pruning.space_fraction(game, state, count="own" | "both")`` (``both``: an
infoset's regrets also go when every history of it lies below a pruned sequence of either
player, its average sums when every history lies below a discarded one). Host and one
``counterfactual_values`` call per player; float64.
"""

from __future__ import annotations

import json
import time

from experiments.benchmarks._cli import Parser


def _equilibrium(game, spec: str):
    import jax
    import jax.numpy as jnp
    import numpy as np

    import jaxcfr

    t0 = time.perf_counter()
    if spec == "lp":
        policy = np.asarray(jaxcfr.solve_lp(game).policy)
    elif spec.startswith("cfr_plus:"):
        try:
            n = int(spec.split(":", 1)[1])
        except ValueError:
            raise ValueError(
                f"--equilibrium must be 'lp', 'cfr_plus:N' (N an integer) or a .npz file, "
                f"got {spec!r}"
            ) from None
        res = jaxcfr.run(jaxcfr.cfr_plus(), game, n, n)
        state = jax.tree.map(lambda x: x[0], res.state)
        policy = np.asarray(jaxcfr.average_policy(game, state))
    elif spec.endswith(".npz"):
        with np.load(spec) as z:
            policy = np.asarray(z["policy"], np.float64)
    else:
        raise ValueError(f"--equilibrium must be 'lp', 'cfr_plus:N' or a .npz file, got {spec!r}")
    expl = float(jaxcfr.exploitability(game, jnp.asarray(policy, game.sf_payoff.dtype)))
    return policy, expl, time.perf_counter() - t0


def _gaps(game, policy):
    """Per player p: CBV(I) - CBV(I, a) ``[A, n_p]`` against s*_{-p}, cf reach ``[n_p]``.

    The CBVs come from ``jaxcfr.counterfactual_values`` (the evaluation kernel's
    ``combine_max`` pass); only the opponent-and-chance reach of each infoset is added."""
    import jax.numpy as jnp
    import numpy as np

    import jaxcfr
    from jaxcfr import _sequence_form as sf
    from jaxcfr.pruning import tables
    from jaxcfr.pruning._solver import _at_histories

    tab = tables(game)
    pol = jnp.asarray(policy, jnp.float64)
    out = []
    for p in (0, 1):
        q = 1 - p
        rows = game.player_slice(p)
        cv = jaxcfr.counterfactual_values(game, pol, p)
        cbv_a = np.asarray(cv.best_response_values)[rows].T  # [A, n_p]
        cbv = np.asarray(cv.best_response_infoset_values)[rows]  # [n_p]
        legal = np.asarray(sf.legal_block(game, p))
        gap = np.where(legal, cbv[None] - cbv_a, 0)
        opp = sf.plan_block(game, jnp.asarray(policy[game.player_slice(q)].T, jnp.float64), q)
        at_h = tab.chance * np.asarray(_at_histories(opp, tab.hist_own[q]))
        reach = np.zeros(legal.shape[1])
        np.add.at(reach, tab.node_local[p], at_h[tab.node_ids[p]])
        out.append((gap, reach, legal))
    return out


def _alive_histories(game, flags):
    """``[H]`` bool: no flagged sequence of either player on the path (``flags[p]`` [A, n_p])."""
    import numpy as np

    from jaxcfr.pruning import _solver

    return np.asarray(_solver._alive_histories(game, flags))


def _holding(game, p, hist_mask):
    """``[n_p]`` bool: infosets of p with at least one history in ``hist_mask``."""
    import numpy as np

    from jaxcfr.pruning import _solver

    return np.asarray(_solver._holding(game, p, hist_mask))


def floor_counts(game, gaps, reach_cut: float, tau: float) -> dict:
    """The floor / I_S / below_opp fractions (module doc) for one (reach_cut, tau)."""
    import jax.numpy as jnp
    import numpy as np

    from jaxcfr.pruning import tables
    from jaxcfr.pruning._solver import _below

    tab = tables(game)
    flags = []
    for p, (gap, reach, legal) in enumerate(gaps):
        reached = reach > reach_cut * np.asarray(tab.chance_mass[p])
        flags.append(legal & reached[None] & (gap > tau * reach[None]) & (gap > 0))
    alive = _alive_histories(game, flags)
    reg = avg = s_entries = opp_only = 0
    for p, (_, _, legal) in enumerate(gaps):
        below = np.asarray(_below(game, p, jnp.asarray(flags[p])))
        reg += int((legal & ~below[None]).sum())
        avg += int((legal & ~(flags[p] | below[None])).sum())
        s_entries += int((legal & _holding(game, p, alive)[None]).sum())
        opp_flags = [flags[0], flags[1]]
        opp_flags[p] = np.zeros_like(flags[p])
        opp_alive = _alive_histories(game, opp_flags)
        opp_only += int((legal & ~_holding(game, p, opp_alive)[None]).sum())
    n = tab.num_legal
    return {
        "reach_cut": reach_cut,
        "tau": tau,
        "never_cbr": [int(f.sum()) for f in flags],
        "floor": round((reg + avg) / (2 * n), 4),
        "regrets": round(reg / n, 4),
        "averages": round(avg / n, 4),
        "I_S": round(s_entries / n, 4),
        "below_opp": round(opp_only / n, 4),
    }


def checkpoint_counts(game, state) -> dict:
    """A run's space counted ``own`` and ``both`` (``jaxcfr.pruning.space_fraction``)."""
    from jaxcfr.pruning import space_fraction

    out = {"iteration": int(state.iteration)}
    for count in ("own", "both"):
        out[count] = round(float(space_fraction(game, state, count=count)), 4)
    return out


def main(argv=None):
    import jax

    jax.config.update("jax_enable_x64", True)  # before the game is compiled
    import games_tensor as gt
    import jaxcfr
    from experiments.benchmarks.pruning import _parse_game
    from experiments.benchmarks.pruning_live import load

    ap = Parser(description=__doc__.splitlines()[0])
    ap.add_argument("--game", default="leduc5", help="NAME[:key=value,...]")
    ap.add_argument("--equilibrium", default="lp", help="lp | cfr_plus:N | FILE.npz")
    ap.add_argument("--reach-cut", default="0,1e-5", help="comma list: cf reach / chance mass")
    ap.add_argument("--tau", default="0,1e-4,1e-2", help="comma list: gap per unit cf reach")
    ap.add_argument("--checkpoints", nargs="*", default=(), help="pruning_live states PATH:BASE")
    args = ap.parse_args(argv)

    name, params = _parse_game(args.game)
    game = gt.load(name, **params)
    policy, expl, secs = _equilibrium(game, args.equilibrium)
    gaps = _gaps(game, policy)
    reached = [int((r > 0).sum()) for _, r, _ in gaps]
    print(
        json.dumps(
            {
                "game": args.game,
                "equilibrium": args.equilibrium,
                "exploitability": expl,
                "seconds": round(secs, 1),
                "infosets_per_player": [int(g[1].size) for g in gaps],
                "infosets_with_positive_cf_reach": reached,
            }
        ),
        flush=True,
    )
    for cut in (float(x) for x in args.reach_cut.split(",")):
        for tau in (float(x) for x in args.tau.split(",")):
            print(json.dumps(floor_counts(game, gaps, cut, tau)), flush=True)
    for spec in args.checkpoints:
        path, _, base = spec.rpartition(":")
        if base not in ("cfr", "cfr_plus") or not path:
            raise ValueError(
                f"--checkpoints takes PATH:BASE with BASE cfr or cfr_plus, got {spec!r}"
            )
        solver = jaxcfr.pruning.regret_pruning(getattr(jaxcfr, base)(), "total")
        state, _ = load(path, solver.init(game))
        print(json.dumps({"checkpoint": path, **checkpoint_counts(game, state)}), flush=True)


if __name__ == "__main__":
    main()
