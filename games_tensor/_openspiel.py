"""Adapter: compile any small OpenSpiel game, and convert policies to and from
OpenSpiel's ``TabularPolicy``.

open-spiel is optional (``pip install 'jaxcfr[test]'`` or ``pip install open-spiel``).
Simultaneous-move games are made turn-based with ``pyspiel.convert_to_turn_based``
(P1 chooses, then P2 without seeing it), as OpenSpiel's own CFR does.
Infoset keys are OpenSpiel's information-state strings, so policies convert
exactly for games compiled through this adapter.

Imperfect recall: when OpenSpiel's information-state strings do not give perfect
recall (one string reached by two different own action sequences of its player:
``liars_dice_ir``, ``dark_hex_ir``, and ``leduc_poker(action_mapping=True)``, where
"Fold" with nothing to call is a check, so the actions 0 and 1 there lead to one
string), the game is compiled as its perfect-recall refinement: infosets keyed by
(the string, the player's own decision trail: the string seen and the action taken at
each earlier own decision; :class:`RefinedOpenSpielRules`), with the strings as the
abstraction
(``game.abstract_infoset`` / ``game.abstract_keys``, as ``die_roll_poker(abstraction=
"ir")``). Solvers then key their tables by OpenSpiel's information states (``keying=
"auto"``, Lanctot et al. 2012) and policies convert per information state.
"""

from __future__ import annotations

from typing import Any

import jax.numpy as jnp
import numpy as np

from games_tensor._compile import DEFAULT_MAX_HISTORIES, ImperfectRecallError, compile
from games_tensor._game import Game, require_game
from games_tensor._rules import Rules

_INSTALL_HINT = (
    "OpenSpiel is not installed; it is an optional dependency. Install it with "
    "`pip install open-spiel` (or `pip install -e '.[test]'` in this repository)."
)


def _pyspiel():
    try:
        import pyspiel
    except ImportError as exc:  # pragma: no cover - depends on the environment
        raise ImportError(_INSTALL_HINT) from exc
    return pyspiel


class OpenSpielRules(Rules):
    """:class:`Rules` view of a ``pyspiel.Game`` (states are pyspiel states, never mutated).

    See :class:`RefinedOpenSpielRules` for games whose strings do not give perfect recall.
    """

    refine = False

    def __init__(self, os_game):
        pyspiel = _pyspiel()
        if os_game.num_players() != 2:
            raise ValueError(f"{os_game} has {os_game.num_players()} players; only 2 are supported")
        gtype = os_game.get_type()
        if gtype.utility not in (pyspiel.GameType.Utility.ZERO_SUM,):
            raise ValueError(f"{os_game} is not zero-sum ({gtype.utility})")
        if gtype.dynamics == pyspiel.GameType.Dynamics.SIMULTANEOUS:
            os_game = pyspiel.convert_to_turn_based(os_game)
        self.os_game = os_game
        self.name = f"openspiel:{os_game}"
        self.num_actions = os_game.num_distinct_actions()

    def params(self) -> dict[str, Any]:
        return {"game": str(self.os_game)}

    def initial_state(self):
        return self.os_game.new_initial_state()

    def current_player(self, state) -> int:
        return state.current_player()

    def legal_actions(self, state):
        return state.legal_actions()

    def chance_outcomes(self, state):
        return state.chance_outcomes()

    def apply(self, state, action):
        return state.child(action)

    def returns(self, state):
        r = state.returns()
        return float(r[0]), float(r[1])

    def information_state(self, state, player):
        return state.information_state_string(player)

    def action_name(self, action):
        return self.os_game.action_to_string(0, action) if action >= 0 else str(action)

    def __repr__(self):
        return f"{type(self).__name__}({self.os_game})"


class RefinedOpenSpielRules(OpenSpielRules):
    """The perfect-recall refinement of an OpenSpiel game whose information-state strings
    forget what the player did or saw, with the strings as the abstraction.

    A state is ``(pyspiel state, (trail_0, trail_1))``, ``trail_p`` the player's own
    decisions so far as ``(information-state string, action)`` pairs. The infoset key is
    the string plus the trail (perfect recall by construction: the trail determines
    the previous own infoset and action); the abstract key is the string alone.
    Keying by the string plus own *actions* only is not enough: in
    ``dark_hex(num_rows=3, num_cols=2)`` the strings also forget which own moves were
    rejected, so two different earlier own infosets with the same actions meet.
    """

    refine = True

    def initial_state(self):
        return (self.os_game.new_initial_state(), ((), ()))

    def current_player(self, state):
        return state[0].current_player()

    def legal_actions(self, state):
        return state[0].legal_actions()

    def chance_outcomes(self, state):
        return state[0].chance_outcomes()

    def apply(self, state, action):
        os_state, trails = state
        p = os_state.current_player()
        if p in (0, 1):
            trail = trails[p] + ((os_state.information_state_string(p), action),)
            trails = (trail, trails[1]) if p == 0 else (trails[0], trail)
        return (os_state.child(action), trails)

    def returns(self, state):
        return super().returns(state[0])

    def information_state(self, state, player):
        os_state, trails = state
        past = " | ".join(f"{key!r} -> {a}" for key, a in trails[player])
        return f"{os_state.information_state_string(player)}\n[own decisions: {past}]"

    def abstract_information_state(self, state, player):
        return state[0].information_state_string(player)


def from_openspiel(game, *, max_histories: int = DEFAULT_MAX_HISTORIES, **params) -> Game:
    """Compile an OpenSpiel game: a ``pyspiel.Game`` or a name (with ``params``).

    Example: ``from_openspiel("liars_dice", numdice=1)``. A game whose
    information-state strings do not give perfect recall compiles as its perfect-recall
    refinement with the strings as the abstraction (module docstring);
    ``game.meta.host["openspiel_refined"]`` says which happened. (The perfect-recall
    attempt stops at the first violation; the refinement is then compiled from scratch.)
    """
    pyspiel = _pyspiel()
    if not isinstance(game, (str, pyspiel.Game)):
        raise ValueError(
            f"from_openspiel expects an OpenSpiel game name (str) or a pyspiel.Game, got "
            f"{game!r} ({type(game).__name__})"
        )
    if isinstance(game, str):
        game = pyspiel.load_game(game, params) if params else pyspiel.load_game(game)
    elif params:
        raise ValueError("params are only accepted together with a game name")
    rules = OpenSpielRules(game)
    try:
        compiled = compile(rules, max_histories=max_histories)
    except ImperfectRecallError:
        rules = RefinedOpenSpielRules(game)
        compiled = compile(rules, max_histories=max_histories)
    compiled.meta.host["openspiel_game"] = rules.os_game
    compiled.meta.host["openspiel_refined"] = rules.refine
    return compiled


def _openspiel_keys(game: Game):
    """(OpenSpiel information-state strings, row of each full infoset into them)."""
    if game.meta.host.get("openspiel_refined"):
        return game.meta.abstract_keys, np.asarray(game.meta.host["abstract_infoset"])
    return game.infoset_keys, np.arange(game.num_infosets)


def _require_openspiel_game(game: Game):
    require_game(game)
    os_game = game.meta.host.get("openspiel_game")
    if os_game is None:
        raise ValueError(
            f"{game.name!r} was not compiled from OpenSpiel: its infoset keys are not "
            "OpenSpiel information-state strings. Compile it with games_tensor.from_openspiel."
        )
    return os_game


def to_tabular_policy(game: Game, policy):
    """``[I, A]`` policy -> ``open_spiel.python.policy.TabularPolicy`` (same game).

    Works for games compiled with :func:`from_openspiel`.
    """
    os_game = _require_openspiel_game(game)
    from open_spiel.python import policy as os_policy

    policy = np.asarray(policy, dtype=np.float64)
    if policy.shape != (game.num_infosets, game.num_actions):
        raise ValueError(
            f"policy has shape {policy.shape}, expected {(game.num_infosets, game.num_actions)}"
        )
    keys, rows = _openspiel_keys(game)
    abstract = np.zeros((len(keys), game.num_actions))
    abstract[rows] = policy
    if game.meta.host.get("openspiel_refined"):
        worst = np.abs(abstract[rows] - policy).max(axis=1)
        if worst.max(initial=0.0) > 1e-12:
            i = int(worst.argmax())
            raise ValueError(
                f"the policy differs between infosets of {game.name} that are one OpenSpiel "
                f"information state ({keys[rows[i]]!r}, e.g. at {game.infoset_keys[i]!r}, by "
                f"{worst[i]:.3g}): OpenSpiel's TabularPolicy of this imperfect-recall game "
                "has one row per information state; pass a policy of the abstraction "
                "(e.g. jaxcfr.average_policy of a solver keyed by it)"
            )
    tab = os_policy.TabularPolicy(os_game)
    for j, key in enumerate(keys):
        tab.action_probability_array[tab.state_lookup[key]] = abstract[j]
    return tab


def from_tabular_policy(game: Game, tabular_policy):
    """OpenSpiel ``TabularPolicy`` (same game) -> ``[I, A]`` array."""
    _require_openspiel_game(game)
    out = np.zeros((game.num_infosets, game.num_actions))
    lookup = getattr(tabular_policy, "state_lookup", None)
    if lookup is None:
        raise ValueError("expected an OpenSpiel TabularPolicy (with state_lookup)")
    keys, rows = _openspiel_keys(game)
    missing = [key for key in keys if key not in lookup]
    table = np.asarray(tabular_policy.action_probability_array)
    if missing or table.ndim != 2 or table.shape[1] != game.num_actions:
        other = getattr(tabular_policy, "game", None)
        raise ValueError(
            f"the TabularPolicy (of {other}) is not a policy of {game.name}: "
            + (
                f"{len(missing)} of its {len(keys)} information states are missing, "
                f"e.g. {missing[0]!r}"
                if missing
                else f"it has {table.shape[-1]} actions, expected {game.num_actions}"
            )
        )
    for i, j in enumerate(rows):
        out[i] = table[lookup[keys[j]]]
    return jnp.asarray(out, dtype=game.sf_payoff.dtype)
