"""A finished cell's folder, ``evidence/runs/<cell>/``, the one format every backend writes
(``lttw exp collect`` from DVC's experiments, the direct runner from its work folders) and
``lttw report`` reads: ``summary.json``, ``folds/fold_<i>.json``, ``params.yaml``, the
held-out test predictions (``test_predictions.parquet``: fold, row, label, pred) for
McNemar's test, and ``cell.json`` (the experiment's name, revision, time, training seconds
summed over folds). A folder is written whole or not at all.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd

from lttw.io import atomic_dir, write_json, write_parquet
from lttw.reporting.report import PART

RUNS_DIR = Path("evidence/runs")


def test_predictions(fold: int, frame: pd.DataFrame) -> pd.DataFrame:
    """The evaluate stage's predictions of one fold (``data/eval/fold_<i>``) reduced to the
    held-out test sample's rows: fold, row, label, pred."""
    test = frame[frame["part"] == PART]
    return pd.DataFrame(
        {
            "fold": fold,
            "row": np.arange(len(test)),
            "label": test["label"].to_numpy(),
            "pred": test["pred"].to_numpy(),
        }
    )


def train_seconds(folds: dict[int, dict]) -> float:
    """Training time summed over folds (time per epoch x epochs run)."""
    return round(
        sum(m.get("time_per_epoch_s", 0) * m.get("epochs_run", 0) for m in folds.values()), 1
    )


def write_cell_folder(
    folder: Path,
    summary: dict,
    folds: dict[int, dict],
    params: dict,
    predictions: pd.DataFrame,
    meta: dict,
) -> None:
    """Write one cell's folder atomically (``meta``: cell.json's experiment, rev, finished;
    train_s is added)."""
    import yaml

    with atomic_dir(folder) as tmp:
        write_json(tmp / "summary.json", summary)
        for fold, fold_metrics in sorted(folds.items()):
            write_json(tmp / "folds" / f"fold_{fold}.json", fold_metrics)
        (tmp / "params.yaml").write_text(yaml.safe_dump(params, sort_keys=False), encoding="utf-8")
        write_parquet(tmp / "test_predictions.parquet", predictions)
        write_json(tmp / "cell.json", {**meta, "train_s": train_seconds(folds)})
