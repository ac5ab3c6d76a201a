"""How far from exact CFR are float64 CFR implementations on II-Goofspiel(4, random)?

``python -m experiments.openspiel_precision [--iterations 100]``

Issue 16 asks jaxcfr's CFR / CFR+ policies to match OpenSpiel's C++ solvers to 1e-9 on
``goofspiel(imp_info=True, num_cards=4, points_order="random")``. The current policies
after 100 iterations differ by a few 1e-9. This script measures whether that is
OpenSpiel's own rounding: it runs the same CFR (OpenSpiel's semantics: alternating
updates, CFR+ with linear averaging) in 80-bit extended precision (``np.longdouble``,
eps = 1.1e-19, about 2^11 times finer than float64) on the tree enumerated straight
from pyspiel (no jaxcfr code), twice, with the nodes summed in opposite orders (the
difference of the two bounds the reference's own error), and prints the largest
distance to it of OpenSpiel C++ and of jaxcfr (float64) at iterations 1, 10, 50, 100.

The reference is a small independent CFR: per-depth arrays, reach top-down, values
bottom-up, r(I, a) = sum_{h in I} pi_{-p}(h) pi_c(h) (v(ha) - v(h)); regret matching
treats positive regrets at or below 16 eps U as 0 (eps of the float type), as jaxcfr.
"""

from __future__ import annotations

import argparse

import numpy as np

GAME = {"imp_info": True, "num_cards": 4, "points_order": "random"}
CHECKPOINTS = (1, 10, 50, 100)


def _os_game():
    import pyspiel

    return pyspiel.convert_to_turn_based(pyspiel.load_game("goofspiel", GAME))


class Tree:
    """The game tree as arrays, enumerated breadth first from pyspiel."""

    def __init__(self, os_game):
        A = os_game.num_distinct_actions()
        keys = [{}, {}]
        parent, edge_action, edge_prob, kind, infoset, util, depth = [], [], [], [], [], [], []
        frontier = [(os_game.new_initial_state(), -1, -1, 1.0, 0)]
        while frontier:
            nxt = []
            for state, par, act, prob, d in frontier:
                node = len(parent)
                parent.append(par)
                edge_action.append(act)
                edge_prob.append(prob)
                depth.append(d)
                if state.is_terminal():
                    kind.append(-4)
                    infoset.append(-1)
                    util.append(state.returns()[0])
                    continue
                util.append(0.0)
                if state.is_chance_node():
                    kind.append(-1)
                    infoset.append(-1)
                    for a, p in state.chance_outcomes():
                        nxt.append((state.child(a), node, -1, p, d + 1))
                    continue
                p = state.current_player()
                kind.append(p)
                infoset.append(keys[p].setdefault(state.information_state_string(p), len(keys[p])))
                for a in state.legal_actions():
                    nxt.append((state.child(a), node, a, 1.0, d + 1))
            frontier = nxt
        self.num_actions = A
        self.keys = keys
        self.parent = np.array(parent)
        self.action = np.array(edge_action)
        self.kind = np.array(kind)
        self.infoset = np.array(infoset)
        self.util = np.array(util)
        self.depth = np.array(depth)
        self.edge_prob = np.array(edge_prob)
        self.legal = [np.zeros((len(keys[p]), A), bool) for p in (0, 1)]
        child = np.arange(1, len(parent))
        par = self.parent[child]
        for p in (0, 1):
            own = self.kind[par] == p
            self.legal[p][self.infoset[par[own]], self.action[child[own]]] = True


def regret_matching(regrets, legal, tol):
    pos = np.where((regrets > tol) & legal, regrets, 0)
    total = pos.sum(axis=1, keepdims=True)
    uniform = legal / legal.sum(axis=1, keepdims=True)
    return np.where(total > 0, pos / np.where(total > 0, total, 1), uniform)


class ReferenceCFR:
    """CFR (``plus=False``) or CFR+ in ``dtype``, OpenSpiel's alternating schedule."""

    def __init__(self, tree: Tree, plus: bool, dtype=np.longdouble, reverse=False):
        self.t, self.plus, self.dtype = tree, plus, dtype
        self.step_dir = -1 if reverse else 1  # the order nodes are summed in
        self.regrets = [np.zeros(leg.shape, dtype) for leg in tree.legal]
        self.ssum = [np.zeros(leg.shape, dtype) for leg in tree.legal]
        scale = np.max(np.abs(tree.util))
        self.tol = dtype(16) * np.finfo(dtype).eps * dtype(scale)
        self.iteration = 0
        self.policy = [
            regret_matching(r, leg, self.tol)
            for r, leg in zip(self.regrets, tree.legal, strict=True)
        ]

    def _edges(self):
        """Per node: probability of the edge into it under the current policy."""
        t = self.t
        prob = t.edge_prob.astype(self.dtype)
        child = np.arange(1, len(t.parent))
        par = t.parent[child]
        for p in (0, 1):
            own = t.kind[par] == p
            prob[child[own]] = self.policy[p][t.infoset[par[own]], t.action[child[own]]]
        return prob

    def _update(self, player):
        t, dt = self.t, self.dtype
        prob = self._edges()
        n = len(t.parent)
        reach = np.ones((3, n), dt)  # pi_0, pi_1, pi_c
        for d in range(1, t.depth.max() + 1):
            nodes = np.nonzero(t.depth == d)[0]
            par = t.parent[nodes]
            reach[:, nodes] = reach[:, par]
            for who, row in ((0, 0), (1, 1), (-1, 2)):
                sel = t.kind[par] == who
                reach[row, nodes[sel]] *= prob[nodes[sel]]
        sign = 1 if player == 0 else -1
        value = np.where(t.kind == -4, sign * t.util, 0).astype(dt)
        for d in range(t.depth.max(), 0, -1):
            nodes = np.nonzero(t.depth == d)[0][:: self.step_dir]
            np.add.at(value, t.parent[nodes], prob[nodes] * value[nodes])
        other = reach[1 - player] * reach[2]
        nodes = np.nonzero(t.kind == player)[0][:: self.step_dir]
        shape = self.regrets[player].shape
        cfv = np.zeros(shape, dt)
        ev = np.zeros(shape[0], dt)
        np.add.at(ev, t.infoset[nodes], other[nodes] * value[nodes])
        child = np.nonzero(np.isin(t.parent, nodes))[0][:: self.step_dir]
        par = t.parent[child]
        np.add.at(cfv, (t.infoset[par], t.action[child]), other[par] * value[child])
        legal = t.legal[player]
        inst = np.where(legal, cfv - ev[:, None], 0)
        r = self.regrets[player] + inst
        self.regrets[player] = np.maximum(r, 0) if self.plus else r
        own_reach = np.zeros(shape[0], dt)
        own_reach[t.infoset[nodes]] = reach[player, nodes]
        w = dt(self.iteration + 1) if self.plus else dt(1)
        self.ssum[player] += w * own_reach[:, None] * self.policy[player]
        self.policy[player] = regret_matching(self.regrets[player], legal, self.tol)

    def step(self):
        for player in (0, 1):
            self._update(player)
        self.iteration += 1

    def current(self, player, key):
        return self.policy[player][self.t.keys[player][key]]

    def average(self, player, key):
        s = self.ssum[player][self.t.keys[player][key]]
        legal = self.t.legal[player][self.t.keys[player][key]]
        tot = s.sum()
        return s / tot if tot > 0 else legal / legal.sum()


def _distance(ref, getter, keys):
    """max over infosets and actions of |ref - other| (other: key -> [A] float64)."""
    worst = 0.0
    for p in (0, 1):
        for key in keys[p]:
            worst = max(worst, float(np.max(np.abs(ref(p, key) - getter(p, key)))))
    return worst


def python_vs_cpp(iterations):
    """Largest |Python - C++| of OpenSpiel's CFR current and average policies."""
    import pyspiel
    from open_spiel.python.algorithms import cfr as pycfr

    os_game = _os_game()
    cpp, py = pyspiel.CFRSolver(os_game), pycfr.CFRSolver(os_game)
    for it in range(1, iterations + 1):
        cpp.evaluate_and_update_policy()
        py.evaluate_and_update_policy()
        if it not in CHECKPOINTS and it != iterations:
            continue
        line = f"cfr it {it:4d} | OpenSpiel Python vs C++:"
        for what in ("current", "average"):
            a, b = getattr(py, f"{what}_policy")(), getattr(cpp, f"{what}_policy")()
            worst = 0.0
            for key, idx in a.state_lookup.items():
                row = np.zeros(a.action_probability_array.shape[1])
                for act, p in b.get_state_policy(key):
                    row[act] = p
                worst = max(worst, float(np.abs(a.action_probability_array[idx] - row).max()))
            line += f" {what} {worst:.1e}"
        print(line, flush=True)


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--iterations", type=int, default=100)
    parser.add_argument("--no-jaxcfr", action="store_true", help="OpenSpiel vs reference only")
    parser.add_argument(
        "--python-vs-cpp",
        action="store_true",
        help="instead: OpenSpiel's Python CFR against its C++ CFR (minutes)",
    )
    args = parser.parse_args(argv)
    import pyspiel

    if args.python_vs_cpp:
        return python_vs_cpp(args.iterations)

    os_game = _os_game()
    tree = Tree(os_game)
    print(f"tree: {len(tree.parent)} nodes, infosets {[len(k) for k in tree.keys]}")
    game = None
    if not args.no_jaxcfr:
        import jax

        jax.config.update("jax_enable_x64", True)
        import games_tensor as gt
        import jaxcfr

        game = gt.from_openspiel(os_game)
        row = {k: i for i, k in enumerate(game.infoset_keys)}
    for name, plus in (("cfr", False), ("cfr_plus", True)):
        refs = [ReferenceCFR(tree, plus), ReferenceCFR(tree, plus, reverse=True)]
        os_solver = (pyspiel.CFRPlusSolver if plus else pyspiel.CFRSolver)(os_game)
        if game is not None:
            init, update = getattr(jaxcfr, name)()
            state, step = init(game), jax.jit(update)
        for it in range(1, args.iterations + 1):
            for r in refs:
                r.step()
            os_solver.evaluate_and_update_policy()
            if game is not None:
                state = step(game, state)
            if it not in CHECKPOINTS and it != args.iterations:
                continue
            line = f"{name:8s} it {it:4d}"
            for what in ("current", "average"):
                ref = getattr(refs[0], what)
                other = getattr(refs[1], what)
                os_pol = getattr(os_solver, f"{what}_policy")()

                def os_get(p, key, os_pol=os_pol):
                    out = np.zeros(tree.num_actions)
                    for a, pr in os_pol.get_state_policy(key):
                        out[a] = pr
                    return out

                line += f" | {what}: ref-vs-ref {_distance(ref, other, tree.keys):.1e}"
                line += f" OpenSpiel {_distance(ref, os_get, tree.keys):.1e}"
                if game is not None:
                    fn = jaxcfr.current_policy if what == "current" else jaxcfr.average_policy
                    pol = np.asarray(fn(game, state))

                    def ours(p, key, pol=pol):
                        return pol[row[key]]

                    line += f" jaxcfr {_distance(ref, ours, tree.keys):.1e}"
                    line += f" jaxcfr-vs-OpenSpiel {_distance(ours, os_get, tree.keys):.1e}"
            print(line, flush=True)


if __name__ == "__main__":
    main()
