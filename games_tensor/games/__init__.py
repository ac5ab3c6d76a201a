from games_tensor.games import (
    biased_rps,  # noqa: F401
    die_roll_poker,  # noqa: F401
    generic_poker,  # noqa: F401
    ii_goofspiel,  # noqa: F401
    kuhn_poker,  # noqa: F401
    leduc5,  # noqa: F401
    leduc_poker,  # noqa: F401
    liars_dice,  # noqa: F401
    nonlocality,  # noqa: F401
    recall_counterexample,  # noqa: F401
)
