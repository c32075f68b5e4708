"""A stand-in model for the tests of reading and writing files (``lttw predict --file``):
every text gets the same probabilities, so only the file handling is under test."""

from __future__ import annotations

import numpy as np
import pytest


class FixedPredictor:
    classes = ["neg", "pos"]

    def predict_proba(self, texts, batch_size=64):
        return np.tile(np.array([[0.3, 0.7]], np.float32), (len(texts), 1))


@pytest.fixture
def fixed_model(monkeypatch):
    """``lttw predict``'s model loader answers with a ``FixedPredictor``."""
    from lttw import cli

    monkeypatch.setattr(cli.predict, "open_model", lambda *a, **k: FixedPredictor())
