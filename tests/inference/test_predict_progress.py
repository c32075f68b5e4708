"""`lttw predict --file`'s bar moves after every forward batch (issue 67.7), not once per
8,192-text chunk: a 10-text chunk at --batch-size 3 is four updates, each after its batch;
a CSV file's bar counts bytes against the file's size, with an ETA (the real command)."""

from __future__ import annotations

import contextlib
from pathlib import Path

import numpy as np
from support.cli_runner import invoke
from tqdm import tqdm

from lttw.inference import text_sources
from lttw.inference.batch_predict import predict_chunks
from lttw.inference.text_sources import TextSource


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
    assert len(frames) == 1 and len(frames[0]) == 10 and text_sources.CHUNK_ROWS > 10


def test_a_csv_file_shows_bytes_read_against_its_size(fixed_model, tmp_path, monkeypatch):
    """2,000 rows in chunks of 500, forward batches of 100: stderr (a log, not a terminal:
    a line per tenth of the file) shows the bytes read of the file's size and the time
    left, moving within a chunk, and ends at the whole file."""
    monkeypatch.setattr(text_sources, "CHUNK_ROWS", 500)
    path = tmp_path / "in.csv"
    path.write_text("id,text\n" + "".join(f"{i},text number {i}\n" for i in range(2000)))
    size = tqdm.format_sizeof(path.stat().st_size, "B", 1024)
    result = invoke("predict", "--file", path, "--out", tmp_path / "out.csv", "--batch-size", "100")
    assert result.exit_code == 0, result.output
    bars = [line for line in result.stderr.splitlines() if line.startswith("predict:")]
    assert all(f"/{size} [" in line for line in bars), bars
    assert len(bars) >= 10, bars  # a line per tenth: the bar moves between chunks' ends
    assert "<" in bars[1] and "B/s" in bars[-1], bars  # elapsed<left, the rate in bytes
    assert bars[-1].startswith("predict: 100%"), bars
