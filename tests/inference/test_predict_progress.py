"""`lttw predict --file`'s bar moves after every forward batch (issue 67.7), not once per
8,192-text chunk: a 10-text chunk at --batch-size 3 is four updates, each after its batch."""

from __future__ import annotations

import contextlib
from pathlib import Path

import numpy as np

from lttw.inference import batch_predict
from lttw.inference.batch_predict import TextSource, predict_chunks


class _Predictor:
    classes = ["a", "b"]

    def __init__(self, events: list):
        self.events = events

    def predict_proba(self, texts, batch_size=64):
        self.events.append(("forward", len(texts)))
        return np.tile([0.25, 0.75], (len(texts), 1))


def test_the_bar_moves_after_every_forward_batch(monkeypatch):
    events: list = []

    class Bar:
        def update(self, n):
            events.append(("bar", n))

    @contextlib.contextmanager
    def bar(**settings):
        assert settings["total"] == 10
        yield Bar()

    monkeypatch.setattr("lttw.progress.progress", bar)
    texts = [f"text {i}" for i in range(10)]
    source = TextSource(Path("t.txt"), 10, lambda: iter([(texts, None)]))
    frames = list(predict_chunks(_Predictor(events), source, batch_size=3))
    assert events == [("forward", 3), ("bar", 3)] * 3 + [("forward", 1), ("bar", 1)]
    assert len(frames) == 1 and len(frames[0]) == 10 and batch_predict.CHUNK_ROWS > 10
