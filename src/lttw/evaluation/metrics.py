"""Metrics as the paper reports them (macro precision, recall, F1 over classes), per fold and
across folds (mean and standard deviation). scikit-learn is imported where a metric is computed,
so the stages that only summarise (``summary``) start without it (about 1.6 s here)."""

from __future__ import annotations

import numpy as np
import pandas as pd

HEADLINE = ("precision_macro", "recall_macro", "f1_macro", "accuracy")


def predicted_labels(probs: np.ndarray) -> np.ndarray:
    """Class ids (n,) int64 of the most probable class; (0,) for an empty part."""
    probs = np.asarray(probs)
    return probs.argmax(axis=1).astype(np.int64) if len(probs) else np.zeros(0, np.int64)


def top_probability(probs: np.ndarray) -> np.ndarray:
    """The winning class's probability (n,) float32; (0,) for an empty part."""
    probs = np.asarray(probs)
    return probs.max(axis=1).astype(np.float32) if len(probs) else np.zeros(0, np.float32)


def classification_metrics(y_true: np.ndarray, y_pred: np.ndarray, n_labels: int) -> dict:
    """Macro P / R / F1 and accuracy (classes absent from both y_true and y_pred score 0).
    An empty part (e.g. ``data.predict_size: 0``) has nothing to score: only ``n`` = 0."""
    if len(y_true) == 0:
        return {"n": 0}
    from sklearn.metrics import accuracy_score, precision_recall_fscore_support

    labels = np.arange(n_labels)
    p, r, f, _ = precision_recall_fscore_support(y_true, y_pred, labels=labels,
                                                 average="macro", zero_division=0)
    return {"precision_macro": float(p), "recall_macro": float(r), "f1_macro": float(f),
            "accuracy": float(accuracy_score(y_true, y_pred)) if len(y_true) else 0.0,
            "n": int(len(y_true))}


def per_class_report(y_true: np.ndarray, y_pred: np.ndarray, classes: list[str]) -> dict:
    if len(y_true) == 0:
        return {name: {"support": 0} for name in classes}
    from sklearn.metrics import precision_recall_fscore_support

    p, r, f, support = precision_recall_fscore_support(
        y_true, y_pred, labels=np.arange(len(classes)), average=None, zero_division=0)
    return {name: {"precision": float(p[i]), "recall": float(r[i]), "f1": float(f[i]),
                   "support": int(support[i])} for i, name in enumerate(classes)}


def confusion_long(y_true: np.ndarray, y_pred: np.ndarray, classes: list[str]) -> pd.DataFrame:
    """One row per (actual, predicted) sample: the table `dvc plots` draws as a confusion matrix."""
    names = np.asarray(classes, dtype=object)
    return pd.DataFrame({"actual": names[y_true], "predicted": names[y_pred]})


def confusion_counts(y_true: np.ndarray, y_pred: np.ndarray, n_labels: int) -> list[list[int]]:
    if len(y_true) == 0:
        return [[0] * n_labels for _ in range(n_labels)]
    from sklearn.metrics import confusion_matrix

    return confusion_matrix(y_true, y_pred, labels=np.arange(n_labels)).tolist()


def summarize_folds(per_fold: dict[int, dict]) -> dict:
    """Mean and (sample) standard deviation over folds of every numeric metric.

    ``per_fold`` maps fold -> {part: {metric: value}} (parts such as fold_test, test, predict)
    plus scalar entries such as ``time_per_epoch_s``.
    """
    folds = sorted(per_fold)
    flat = [pd.json_normalize(per_fold[f], sep="/").iloc[0] for f in folds]
    table = pd.DataFrame(flat, index=folds).select_dtypes("number").drop(
        columns=["fold", "seed"], errors="ignore")
    out: dict = {"folds": folds, "n_folds": len(folds)}
    for col in table.columns:
        values = table[col].astype(float)
        out[col] = {"mean": float(values.mean()),
                    "std": float(values.std(ddof=1)) if len(values) > 1 else 0.0}
    return out
