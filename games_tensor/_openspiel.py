"""Adapter: compile any small OpenSpiel game, and convert policies to and from
OpenSpiel's ``TabularPolicy``.

open-spiel is optional (``pip install 'jaxcfr[test]'`` or ``pip install open-spiel``).
Simultaneous-move games are made turn-based with ``pyspiel.convert_to_turn_based``
(P1 chooses, then P2 without seeing it), as OpenSpiel's own CFR does.
Infoset keys are OpenSpiel's information-state strings, so policies convert
exactly for games compiled through this adapter.
"""

from __future__ import annotations

from typing import Any

import jax.numpy as jnp
import numpy as np

from games_tensor._compile import DEFAULT_MAX_HISTORIES, compile
from games_tensor._game import Game
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
    """:class:`Rules` view of a ``pyspiel.Game`` (states are pyspiel states, never mutated)."""

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
        return f"OpenSpielRules({self.os_game})"


def from_openspiel(game, *, max_histories: int = DEFAULT_MAX_HISTORIES, **params) -> Game:
    """Compile an OpenSpiel game: a ``pyspiel.Game`` or a name (with ``params``).

    Example: ``from_openspiel("liars_dice", numdice=1)``.
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
    compiled = compile(rules, max_histories=max_histories)
    compiled.meta.host["openspiel_game"] = rules.os_game
    return compiled


def _require_openspiel_game(game: Game):
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
    tab = os_policy.TabularPolicy(os_game)
    for i, key in enumerate(game.infoset_keys):
        tab.action_probability_array[tab.state_lookup[key]] = policy[i]
    return tab


def from_tabular_policy(game: Game, tabular_policy):
    """OpenSpiel ``TabularPolicy`` (same game) -> ``[I, A]`` array."""
    _require_openspiel_game(game)
    out = np.zeros((game.num_infosets, game.num_actions))
    lookup = getattr(tabular_policy, "state_lookup", None)
    if lookup is None:
        raise ValueError("expected an OpenSpiel TabularPolicy (with state_lookup)")
    missing = [key for key in game.infoset_keys if key not in lookup]
    table = np.asarray(tabular_policy.action_probability_array)
    if missing or table.ndim != 2 or table.shape[1] != game.num_actions:
        other = getattr(tabular_policy, "game", None)
        raise ValueError(
            f"the TabularPolicy (of {other}) is not a policy of {game.name}: "
            + (
                f"{len(missing)} of its {game.num_infosets} information states are missing, "
                f"e.g. {missing[0]!r}"
                if missing
                else f"it has {table.shape[-1]} actions, expected {game.num_actions}"
            )
        )
    for i, key in enumerate(game.infoset_keys):
        out[i] = table[lookup[key]]
    return jnp.asarray(out, dtype=game.sf_payoff.dtype)
