"""The training rows most likely mislabelled: confident learning (Northcutt et al. 2021,
``cleanlab.filter.find_label_issues``) on the folds' out-of-fold probabilities.

Each fold's evaluate stage keeps its model's per-class probabilities of the fold's test part
(``data/eval/fold_N/predictions.parquet``, part ``fold_test``): rows that model never
trained on. Pooled over the folds in ``folds.run`` they cover every training row once where
every fold runs (``lttw init`` runs them all on a small dataset), else the run folds' test
parts. A row is an issue where confident learning counts it among the rows whose given label
disagrees with what the other rows' probabilities make likely; the issues are ranked by
their label quality (``cleanlab.rank.get_label_quality_scores``, self-confidence: the
probability of the given label; lowest first) and each gets the most probable class as the
suggested label. Single-label data only.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pandas as pd

from lttw import layout
from lttw.errors import UserError
from lttw.io import read_json

#: the columns of the issues table (and of its CSV)
COLUMNS = ["row", "text", "label", "suggested", "score", "suggested_prob"]


@dataclass(frozen=True)
class LabelIssues:
    """``table``: the issues, most likely first (``COLUMNS``; ``row``: the train sample's row,
    ``score``: the given label's quality, 0..1, lower is likelier wrong); ``checked``: the
    rows with out-of-fold probabilities; ``train_rows``: the train sample's rows."""

    table: pd.DataFrame
    checked: int
    train_rows: int


def out_of_fold(folds: list[int], root: Path = Path(".")) -> tuple[np.ndarray, np.ndarray]:
    """The train sample's rows of the folds' test parts and their per-class probabilities
    ``(n, C)``, from the evaluate stage's files under ``root``."""
    rows, probs = [], []
    for fold in folds:
        path = root / layout.eval_dir(fold) / "predictions.parquet"
        if not path.is_file():
            raise UserError(f"{path}: missing; run the pipeline first (dvc repro)")
        frame = pd.read_parquet(path)
        if "probs" not in frame.columns or "row" not in frame.columns:
            raise UserError(
                f"{path}: no per-class probabilities (columns row and probs); "
                "rerun the evaluate stage (dvc repro)"
            )
        frame = frame[frame["part"] == "fold_test"]
        rows.append(frame["row"].to_numpy(np.int64))
        probs += frame["probs"].tolist()
    if not probs:
        raise UserError(f"folds {folds}: no fold-test rows with probabilities")
    return np.concatenate(rows), np.asarray(np.stack(probs), dtype=np.float64)


def find_issues(folds: list[int], root: Path = Path(".")) -> LabelIssues:
    """The label issues of the project under ``root`` (see the module docstring)."""
    from cleanlab.filter import find_label_issues
    from cleanlab.rank import get_label_quality_scores

    info = read_json(root / layout.LABELS_JSON)
    if info.get("multi_label"):
        raise UserError("label issues: single-label data only (this project is multi-label)")
    classes = info["classes"]
    train = pd.read_parquet(root / layout.sample_parquet("train"), columns=["text", "label"])
    rows, probs = out_of_fold(folds, root)
    if probs.shape[1] != len(classes) or rows.max(initial=-1) >= len(train):
        raise UserError(
            f"{root / layout.eval_dir(folds[0])}: its predictions do not match the train "
            "sample (another run's); rerun the pipeline (dvc repro)"
        )
    labels = train["label"].to_numpy(np.int64)[rows]
    probs = probs / probs.sum(axis=1, keepdims=True)  # float32 rounding: rows sum to 1
    flagged = find_label_issues(labels, probs, return_indices_ranked_by="self_confidence", n_jobs=1)
    scores = get_label_quality_scores(labels, probs)
    suggested = probs.argmax(axis=1)
    names = np.asarray(classes, dtype=object)
    table = pd.DataFrame(
        {
            "row": rows[flagged],
            "text": train["text"].to_numpy(dtype=object)[rows[flagged]],
            "label": names[labels[flagged]],
            "suggested": names[suggested[flagged]],
            "score": scores[flagged].round(4),
            "suggested_prob": probs[flagged, suggested[flagged]].round(4),
        },
        columns=COLUMNS,
    )
    return LabelIssues(table, len(rows), len(train))
