"""Shared test setup: strict rank promotion, and helpers."""

import jax
import pytest

jax.config.update("jax_numpy_rank_promotion", "raise")


def pytest_collection_modifyitems(config, items):
    # Slow tests run in CI too, but can be deselected locally with -m "not slow".
    pass


@pytest.fixture
def x64():
    """Enable float64 for the duration of a test (load games inside the test)."""
    jax.config.update("jax_enable_x64", True)
    try:
        yield
    finally:
        jax.config.update("jax_enable_x64", False)
