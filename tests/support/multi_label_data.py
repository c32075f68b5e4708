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


def multi_label_tfidf_run(tmp_path: Path, train: dict, final: bool = False):
    """``train_run`` of a multi-label ``tfidf_linear`` (logistic) on ``NEWS_TEXTS``, its val
    part the train rows, with ``train`` settings: returns (summary, the run's ``RunPaths``,
    the (8, 3) targets). ``final``: the final model's run (an empty val part)."""
    from lttw.data.fold_inputs import FoldInputs
    from lttw.data.label_sets import indicator_matrix
    from lttw.io import write_arrays
    from lttw.settings import settings_from_dict
    from lttw.text.words import WordSplitter, write_rule
    from lttw.training.fold import RunPaths, train_run
    from lttw.training.run_settings import RunSettings

    y = indicator_matrix(NEWS_LISTS, 3)
    val = np.arange(0 if final else 8)
    inputs = FoldInputs(
        classes=["business", "sport", "weather"],
        parts={"train": np.arange(8), "val": val, "fold_test": np.arange(0)},
        labels={"train": y, "test": y[:0], "predict": y[:0]},
        texts={"train": NEWS_TEXTS, "test": [], "predict": []},
    )
    counts = tmp_path / "counts"
    counts.mkdir(parents=True)
    write_rule(counts, WordSplitter("regex", r"(?u)\b\w+\b", True))
    write_arrays(tmp_path / "features.safetensors", none=np.zeros(0, np.float32))
    paths = RunPaths(
        counts, tmp_path / "nmf", tmp_path / "features.safetensors", tmp_path / "ckpt",
        tmp_path / "model", None, None,
    )  # fmt: skip
    settings = settings_from_dict(
        {"model": {"variant": "tfidf_linear", "linear_model": "logistic"}, "train": train}
    )
    return train_run(RunSettings.of(settings), "final" if final else 0, inputs, paths), paths, y
