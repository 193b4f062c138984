"""Fixtures for the trainer tests."""

from __future__ import annotations

import pytest

from trainer.log import setup_logging


@pytest.fixture(autouse=True)
def trainer_logging():
    """The console logging ``trainer.train`` sets up at start-up, for tests that call the trainer's
    functions directly (``prepare_data`` and the loaders report through it)."""
    setup_logging()
