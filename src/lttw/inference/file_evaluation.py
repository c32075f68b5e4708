"""``lttw evaluate``: a model folder scored on a labelled file, written as one folder.

``evaluate_file`` reads the file (``data.labelled_file``: the text and label columns, labels
as the model's classes), predicts every text as ``lttw predict`` does (the folder's
calibration; a multi-label folder's per-class thresholds), scores the predictions with
bootstrap intervals (``evaluation.evaluate``) and writes, all or nothing (``io.atomic_dir``):

* ``metrics.json``: the report (metrics, intervals, per class, confusion matrix), the model
  folder and the file;
* ``predictions.parquet``: per text, the row of the file, the text, the true and predicted
  labels and the probability of the predicted one (multi-label: lists of labels); where
  pyarrow is not installed (the slim install), ``predictions.csv`` (lists joined by "|");
* ``confusion.png``, ``reliability.png``, ``precision_recall.png`` and ``report.html``
  (``evaluation.plots``; the page lists the most confident mistakes with their texts).
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pandas as pd

from lttw.data.label_sets import label_lists
from lttw.data.labelled_file import read_labelled_file
from lttw.evaluation.evaluate import N_BOOT, evaluation_report
from lttw.evaluation.metrics import predicted_labels, top_probability
from lttw.evaluation.plots import write_report_files
from lttw.inference.text_lines import LineCap
from lttw.io import atomic_dir, write_csv, write_json, write_parquet

METRICS_JSON = "metrics.json"
PREDICTIONS = "predictions.parquet"
PREDICTIONS_CSV = "predictions.csv"


@dataclass
class Columns:
    """Where the file keeps its texts and labels (a multi-label CSV cell: names joined by
    ``label_delimiter``)."""

    text: str = "text"
    label: str = "label"
    label_delimiter: str | None = None


def decisions(predictor, probs: np.ndarray) -> np.ndarray:
    """Class ids (single-label: the most probable), or multi-label the indicator matrix of
    the labels at the folder's thresholds."""
    if getattr(predictor, "multi_label", False):
        return np.asarray(predictor.calibration.decide(probs))
    return predicted_labels(probs)


def _names(rows, classes: list[str], multi: bool) -> list:
    if multi:
        return [[classes[i] for i in ids] for ids in label_lists(rows)]
    return [classes[i] for i in rows]


def _write_predictions(folder: Path, predictions: pd.DataFrame) -> str:
    """``predictions.parquet``, or without pyarrow ``predictions.csv``; returns its name."""
    try:
        import pyarrow  # noqa: F401
    except ModuleNotFoundError:
        lists = {c: predictions[c].map("|".join) for c in ("label", "pred")}
        frame = (
            predictions.assign(**lists)
            if predictions["label"].map(type).eq(list).any()
            else predictions
        )
        write_csv(folder / PREDICTIONS_CSV, frame)
        return PREDICTIONS_CSV
    write_parquet(folder / PREDICTIONS, predictions)
    return PREDICTIONS


def evaluate_file(
    predictor,
    path: Path,
    out: Path,
    columns: Columns = Columns(),
    cap: LineCap | None = None,
    batch_size: int = 64,
    n_boot: int = N_BOOT,
    seed: int = 0,
) -> dict:
    """Score ``predictor`` on the labelled file ``path`` into the new folder ``out``; returns
    the report (``metrics.json``'s content)."""
    cap = cap or LineCap()
    classes = list(predictor.classes)
    multi = bool(getattr(predictor, "multi_label", False))
    frame, y_true = read_labelled_file(
        path, classes, multi, columns.text, columns.label, columns.label_delimiter
    )
    texts = [cap.apply(t, f"{path} row {i}") for i, t in enumerate(frame["text"], start=1)]
    probs = np.asarray(predictor.predict_proba(texts, batch_size), np.float32)
    y_pred = decisions(predictor, probs)
    report = evaluation_report(y_true, probs, y_pred, classes, n_boot, seed)
    report.update(file=str(path), model=str(getattr(predictor, "folder", "")))
    chosen = np.where(y_pred.astype(bool), probs, np.nan) if multi else top_probability(probs)
    predictions = pd.DataFrame(
        {
            "row": np.arange(1, len(texts) + 1),
            "text": texts,
            "label": _names(y_true, classes, multi),
            "pred": _names(y_pred, classes, multi),
        }
    )
    if not multi:
        predictions["prob"] = chosen
    with atomic_dir(out) as tmp:
        title = f"Evaluation of {report['model']} on {path}"
        files = write_report_files(tmp, report, y_true, probs, y_pred, title, texts=texts)
        written = _write_predictions(tmp, predictions)
        report["files"] = [METRICS_JSON, written, *files]
        write_json(tmp / METRICS_JSON, report)
    return report
