"""Tiny multi-label datasets (issue 42): the same rows as a parquet list column, JSON Lines
arrays or a delimited CSV column, with skewed, overlapping labels."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pandas as pd

CLASSES = ["anger", "joy", "love", "fear", "surprise"]
#: each label's chance per row: skewed, so stratification has something to keep
RATES = [0.5, 0.35, 0.2, 0.1, 0.06]


def label_rows(n: int, seed: int = 0) -> list[list[str]]:
    """``n`` non-empty label lists over ``CLASSES`` (about a third with several labels)."""
    rng = np.random.default_rng(seed)
    out = []
    for _ in range(n):
        labels = [c for c, rate in zip(CLASSES, RATES) if rng.random() < rate]
        out.append(labels or [CLASSES[int(rng.integers(0, len(CLASSES)))]])
    return out


def texts_for(labels: list[list[str]], prefix: str) -> list[str]:
    """One text per row: a row id and its labels' words, so counts are easy to predict."""
    return [f"{prefix}{i} it is " + " ".join(f"w{c}" for c in row) for i, row in enumerate(labels)]


def write_multi_label_folder(
    root: Path, name: str, n_train: int = 300, n_test: int = 120, fmt: str = "parquet"
) -> Path:
    """``root/name`` with train/test files: ``parquet`` (a list column ``labels`` and a
    manifest saying ``multi_label`` and the classes), ``jsonl`` (JSON arrays, no manifest) or
    ``csv`` (``|``-joined labels, no manifest)."""
    folder = root / name
    folder.mkdir(parents=True)
    for split, n, seed in (("train", n_train, 0), ("test", n_test, 1)):
        labels = label_rows(n, seed)
        texts = texts_for(labels, split)
        if fmt == "parquet":
            frame = pd.DataFrame({"text": texts, "labels": labels})
            frame.to_parquet(folder / f"{split}.parquet")
        elif fmt == "jsonl":
            lines = [json.dumps({"text": t, "label": row}) for t, row in zip(texts, labels)]
            (folder / f"{split}.jsonl").write_text("\n".join(lines) + "\n", encoding="utf-8")
        else:
            frame = pd.DataFrame({"text": texts, "label": ["|".join(row) for row in labels]})
            frame.to_csv(folder / f"{split}.csv", index=False)
    if fmt == "parquet":
        manifest = {
            "text_column": "text",
            "label_column": "labels",
            "multi_label": True,
            "classes": CLASSES,
            "splits": {"train": "train.parquet", "test": "test.parquet"},
        }
        (folder / "manifest.json").write_text(json.dumps(manifest), encoding="utf-8")
    return folder


#: eight short business / sport texts and their label lists over (business, sport, weather):
#: some texts both, "weather" never; for unit tests of multi-label training and metrics
NEWS_TEXTS = [
    "stocks fall as oil rises",
    "the team won the match",
    "oil prices and the match",
    "markets rally on oil",
    "a late goal won it",
    "bank shares and football",
    "oil stocks drop again",
    "cup final goal drama",
]
NEWS_LISTS = [[0], [1], [0, 1], [0], [1], [0, 1], [0], [1]]
