"""Online search in compiled games: OOS, ISMCTS (UCT, RM), the random bot, matches.

Bots (``jaxcfr.oos()``, ``jaxcfr.ismcts()``, ``jaxcfr.random_bot()``) are
``(init, search, policy, strategy)`` pure functions over fixed-shape tables; a bot
sees only a :class:`View` (its infoset and public state), never the true history.
``jaxcfr.play`` runs many matches at once.
"""

from jaxcfr.search._bots import (
    Bot,
    RandomState,
    View,
    compiler_options,
    fixed_random_policy,
    random_bot,
    root_view,
    table_policy,
    view_of,
)
from jaxcfr.search._ismcts import ISMCTSState, ismcts
from jaxcfr.search._match import bytes_per_match, play
from jaxcfr.search._oos import OOSState, oos

__all__ = [
    "Bot",
    "ISMCTSState",
    "OOSState",
    "RandomState",
    "View",
    "bytes_per_match",
    "compiler_options",
    "fixed_random_policy",
    "ismcts",
    "oos",
    "play",
    "random_bot",
    "root_view",
    "table_policy",
    "view_of",
]
