"""The deployed model's quality estimate: macro F1 with a percentile bootstrap interval
(``LEVEL``, ``RESAMPLES`` resamples of the rows, seeded; single-label: drawn from the
confusion matrix, so that its cost does not grow with the rows), and where it comes from.

Two sources, the first that applies:

* ``test``: the final model's own predictions on a held-out test sample none of whose rows
  it trained on (an official test split, or a carved sample kept out by
  ``final.rows: train_sample``);
* ``folds``: the pooled out-of-fold predictions of the folds in ``folds.run`` (each fold
  model on its own fold's test part, ``data/eval/fold_N/predictions.parquet``): the
  estimate of a model trained on all the rows by the same recipe, which is how the final
  model is made when it trains on every labelled row.

Calibration: the expected calibration error (``ece``) on the same rows (the folds'
figures weighted by their rows; single-label only).
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd

from lttw import layout
from lttw.errors import UserError
from lttw.evaluation.metrics import classification_metrics, confusion_counts
from lttw.io import read_json

LEVEL = 0.95
RESAMPLES = 1000
#: the most rows a multi-label bootstrap resamples (beyond: a seeded subsample of the rows,
#: so that the interval's cost stays bounded whatever the data's size)
MAX_ROWS = 200_000
#: what each ``source`` means, for the model card and ``lttw report``
SOURCES = {
    "test": "the model's own predictions on the held-out test sample (none of its rows in "
    "training)",
    "folds": "the pooled out-of-fold predictions of the folds' models, each on its own fold's "
    "test part (the deployed model trained on those rows too)",
}


def bootstrap_interval(
    y_true: np.ndarray,
    y_pred: np.ndarray,
    n_labels: int,
    seed: int = 0,
    metric: str = "f1_macro",
    resamples: int = RESAMPLES,
) -> tuple[float, float]:
    """The ``LEVEL`` percentile bootstrap interval of ``metric`` over the rows; (nan, nan)
    for no rows."""
    y_true, y_pred = np.asarray(y_true), np.asarray(y_pred)
    n = len(y_true)
    if n == 0:
        return float("nan"), float("nan")
    rng = np.random.default_rng(seed)
    if metric == "f1_macro" and y_true.ndim == 1:
        values = _resampled_f1(confusion_counts(y_true, y_pred, n_labels), resamples, rng)
        return _percentiles(values)
    if n > MAX_ROWS:
        keep = rng.choice(n, MAX_ROWS, replace=False)
        y_true, y_pred, n = y_true[keep], y_pred[keep], MAX_ROWS
    values = np.empty(resamples)
    for i in range(resamples):
        rows = rng.integers(0, n, n)
        values[i] = classification_metrics(y_true[rows], y_pred[rows], n_labels)[metric]
    return _percentiles(values)


def _percentiles(values: np.ndarray) -> tuple[float, float]:
    tail = (1 - LEVEL) / 2 * 100
    low, high = np.percentile(values, [tail, 100 - tail])
    return float(low), float(high)


def _resampled_f1(confusion, resamples: int, rng: np.random.Generator) -> np.ndarray:
    """Single-label macro F1 of ``resamples`` bootstrap resamples of the rows, drawn as
    multinomial counts of the confusion matrix's cells (the same distribution as drawing the
    rows, at a cost independent of their number); F1 = 2 TP / (actual + predicted), 0 for a
    class absent from both, as ``metrics.classification_metrics`` scores it."""
    counts = np.asarray(confusion, dtype=np.int64)
    c, n = counts.shape[0], int(counts.sum())
    if n == 0:
        return np.full(resamples, np.nan)
    drawn = rng.multinomial(n, counts.ravel() / n, size=resamples).reshape(-1, c, c)
    tp = np.diagonal(drawn, axis1=1, axis2=2).astype(np.float64)
    both = drawn.sum(axis=2) + drawn.sum(axis=1)
    f1 = np.divide(2 * tp, both, out=np.zeros_like(tp), where=both != 0)
    return f1.mean(axis=1)


def estimate_of(
    y_true: np.ndarray, y_pred: np.ndarray, n_labels: int, source: str, seed: int = 0
) -> dict:
    """``{f1_macro, f1_macro_low, f1_macro_high, accuracy, n, level, from_folds}`` of the
    rows (numbers only: a metrics file's block)."""
    metrics = classification_metrics(y_true, y_pred, n_labels)
    low, high = bootstrap_interval(y_true, y_pred, n_labels, seed)
    out = {
        "f1_macro": metrics.get("f1_macro", float("nan")),
        "f1_macro_low": low,
        "f1_macro_high": high,
        "n": int(len(y_true)),
        "level": LEVEL,
        "from_folds": source == "folds",
    }
    if "accuracy" in metrics:
        out["accuracy"] = metrics["accuracy"]
    return out


def _indicator(lists, n_labels: int) -> np.ndarray:
    out = np.zeros((len(lists), n_labels), dtype=np.uint8)
    for i, ids in enumerate(lists):
        out[i, np.asarray(ids, dtype=np.int64)] = 1
    return out


def _predictions(root: Path, fold: int, part: str) -> tuple[list, list, dict]:
    """The evaluate stage's labels and predictions of ``fold`` on ``part``, and that part's
    metrics (``metrics/folds/fold_N.json``; {} where absent)."""
    path = root / layout.eval_dir(fold) / "predictions.parquet"
    if not path.is_file():
        raise UserError(f"{path}: missing; run the evaluate stage for fold {fold}")
    rows = pd.read_parquet(path, columns=["part", "label", "pred"])
    rows = rows[rows["part"] == part]
    metrics_path = root / layout.fold_metrics(fold)
    metrics = read_json(metrics_path).get(part, {}) if metrics_path.is_file() else {}
    return rows["label"].to_list(), rows["pred"].to_list(), metrics


def _arrays(labels: list, n_labels: int) -> np.ndarray:
    if labels and not np.isscalar(labels[0]):  # multi-label: lists of class ids
        return _indicator(labels, n_labels)
    return np.asarray(labels, dtype=np.int64)


def fold_estimate(folds: list[int], n_labels: int, root: Path = Path("."), seed: int = 0):
    """The ``folds`` source: the estimate over the pooled fold-test predictions of ``folds``
    (the evaluate stage's files under ``root``), with their row-weighted ``ece``."""
    labels, preds, ece, weight = [], [], 0.0, 0
    for fold in folds:
        truth, predicted, part = _predictions(root, fold, "fold_test")
        labels += truth
        preds += predicted
        if isinstance(part.get("ece"), float) and part.get("n"):
            ece, weight = ece + part["ece"] * part["n"], weight + part["n"]
    out = estimate_of(_arrays(labels, n_labels), _arrays(preds, n_labels), n_labels, "folds", seed)
    if weight:
        out["ece"] = ece / weight
    return out


def own_test_estimate(fold: int, n_labels: int, root: Path = Path("."), seed: int = 0) -> dict:
    """``{"test": metrics, "estimate": ...}`` of the fold's own model on the held-out test
    sample (``models/final`` as a copy of it); {} where that sample is empty."""
    labels, preds, metrics = _predictions(root, fold, "test")
    if not labels:
        return {}
    estimate = estimate_of(
        _arrays(labels, n_labels), _arrays(preds, n_labels), n_labels, "test", seed
    )
    if isinstance(metrics.get("ece"), float):
        estimate["ece"] = metrics["ece"]
    return {"test": metrics, "estimate": estimate}
