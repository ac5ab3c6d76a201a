"""The game instances of GAMES.md, as (label, name, params) rows shared by tables and benchmarks."""

GAMES_MD = [
    ("Kuhn", "kuhn_poker", {}),
    ("Leduc (suits, OpenSpiel)", "leduc_poker", {}),
    ("Leduc (rank-only)", "leduc_poker", {"suits": False}),
    ("Leduc-5", "leduc5", {}),
    (
        "GP(3,2,1,1)",
        "generic_poker",
        {"num_types": 3, "cards_per_type": 2, "max_raises": 1, "num_bet_sizes": 1},
    ),
    (
        "GP(3,3,2,2)",
        "generic_poker",
        {"num_types": 3, "cards_per_type": 3, "max_raises": 2, "num_bet_sizes": 2},
    ),
    ("LD(1,1)", "liars_dice", {}),
    ("II-GS(4)", "ii_goofspiel", {"num_cards": 4}),
    ("II-GS(6)", "ii_goofspiel", {"num_cards": 6}),
    ("DRP", "die_roll_poker", {}),
    ("DRP-IR", "die_roll_poker", {"abstraction": "ir"}),
    ("Biased RPS", "biased_rps", {}),
    ("Non-locality", "nonlocality", {}),
]


def params_str(params: dict) -> str:
    return ", ".join(f"{k}={v}" for k, v in params.items()) or "-"
