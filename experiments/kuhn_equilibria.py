"""Kuhn poker's one-parameter Nash equilibrium family and the distance to it (GAMES.md 1.1).

P1, alpha in [0, 1/3]: bet J with prob. alpha, check Q, bet K with prob. 3 alpha; after
check-bet fold J, call Q with prob. alpha + 1/3, call K. P2 (unique): facing a bet fold J,
call Q with prob. 1/3, call K; after a check bet J with prob. 1/3, check Q, bet K.

Heinrich's Fig. 3.2 metric: the mean squared error of the average policies to the closest
equilibrium of the family. With two actions per infoset the squared errors of both
actions are equal, so the MSE over the 24 (infoset, action) entries equals the MSE over
the 12 infosets' bet (call) probabilities. It is quadratic in alpha; the minimum over
[0, 1/3] is in closed form (the unconstrained minimizer, clipped).
"""

from __future__ import annotations

import numpy as np

# bet (or call) probability = const + coef * alpha, per infoset key (OpenSpiel's strings)
_FAMILY = {
    "P0 card:J | ": (0.0, 1.0),
    "P0 card:Q | ": (0.0, 0.0),
    "P0 card:K | ": (0.0, 3.0),
    "P0 card:J | pb": (0.0, 0.0),
    "P0 card:Q | pb": (1.0 / 3.0, 1.0),
    "P0 card:K | pb": (1.0, 0.0),
    "P1 card:J | p": (1.0 / 3.0, 0.0),
    "P1 card:J | b": (0.0, 0.0),
    "P1 card:Q | p": (0.0, 0.0),
    "P1 card:Q | b": (1.0 / 3.0, 0.0),
    "P1 card:K | p": (1.0, 0.0),
    "P1 card:K | b": (1.0, 0.0),
}
BET = 1  # action 1 = bet / call (OpenSpiel's convention)


def _coefficients(game) -> tuple[np.ndarray, np.ndarray]:
    keys = game.infoset_keys
    if game.name != "kuhn_poker" or set(keys) != set(_FAMILY):
        raise ValueError(f"game must be kuhn_poker (OpenSpiel's infosets), got {game!r}")
    const = np.array([_FAMILY[k][0] for k in keys])
    coef = np.array([_FAMILY[k][1] for k in keys])
    return const, coef


def equilibrium(game, alpha: float) -> np.ndarray:
    """The equilibrium policy [I, A] with P1's parameter ``alpha`` in [0, 1/3]."""
    if not 0.0 <= alpha <= 1.0 / 3.0:
        raise ValueError(f"alpha must be in [0, 1/3], got {alpha!r}")
    const, coef = _coefficients(game)
    bet = const + coef * alpha
    return np.stack([1.0 - bet, bet], axis=-1)


def closest_equilibrium_mse(game, policies) -> tuple[np.ndarray, np.ndarray]:
    """MSE of ``policies [..., I, A]`` to the closest equilibrium of the family.

    Returns ``(mse [...], alpha [...])``: the minimum over alpha in [0, 1/3] of the mean
    over infosets of ``(p_bet - bet(alpha))^2``, and the minimizing alpha.
    """
    const, coef = _coefficients(game)
    p = np.asarray(policies, np.float64)[..., BET]
    alpha = np.clip(np.sum(coef * (p - const), -1) / np.sum(coef**2), 0.0, 1.0 / 3.0)
    err = p - const - coef * alpha[..., None]
    return np.mean(err**2, axis=-1), alpha
