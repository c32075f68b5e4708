"""Metrics as the paper reports them (macro precision, recall, F1 over classes), per fold and
across folds (mean and standard deviation).

Why by hand: every one of them is a sum over the confusion matrix, and importing
scikit-learn's metrics takes 1.3-1.6 s of the train and evaluate stages' start-up (each
process; more than their own work on a small sample). The formulas are scikit-learn's
(``precision_recall_fscore_support`` with ``zero_division=0``, F as ``2 tp / (true + pred)``,
``accuracy_score``); ``tests/evaluation/test_metrics.py`` checks them equal, to the bit.

Multi-label parts (``(n, C)`` 0/1 indicator matrices of true and predicted labels, see
``data.label_sets``) get scikit-learn's multi-label scores instead (``multilabel_metrics``):
macro and micro P / R / F1 over the labels, subset accuracy (``accuracy_score``: every
label of a text right), and per label P / R / F1 (``per_class_report``); no confusion
matrix (a multi-label text is in several cells or none)."""

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


def _confusion(y_true: np.ndarray, y_pred: np.ndarray, n_labels: int) -> np.ndarray:
    """(n_labels, n_labels) int64 counts, rows actual, columns predicted (labels outside
    0..n_labels-1 are left out, as scikit-learn's ``labels=`` leaves them)."""
    y_true, y_pred = np.asarray(y_true, np.int64), np.asarray(y_pred, np.int64)
    known = (y_true >= 0) & (y_true < n_labels) & (y_pred >= 0) & (y_pred < n_labels)
    flat = y_true[known] * n_labels + y_pred[known]
    return np.bincount(flat, minlength=n_labels * n_labels).reshape(n_labels, n_labels)


def _divide(numerator: np.ndarray, denominator: np.ndarray) -> np.ndarray:
    """numerator / denominator as float64, 0 where the denominator is 0 (zero_division=0)."""
    numerator, denominator = np.asarray(numerator, np.float64), np.asarray(denominator, np.float64)
    out = np.zeros_like(numerator)
    np.divide(numerator, denominator, out=out, where=denominator != 0)
    return out


def _per_class(y_true: np.ndarray, y_pred: np.ndarray, n_labels: int):
    """Per class precision, recall, F1 (float64) and support (int64)."""
    counts = _confusion(y_true, y_pred, n_labels)
    tp, pred_sum, true_sum = np.diag(counts), counts.sum(axis=0), counts.sum(axis=1)
    f1 = _divide(2.0 * tp, true_sum.astype(np.float64) + pred_sum)
    return _divide(tp, pred_sum), _divide(tp, true_sum), f1, true_sum


def classification_metrics(y_true: np.ndarray, y_pred: np.ndarray, n_labels: int) -> dict:
    """Macro P / R / F1 and accuracy (classes absent from both y_true and y_pred score 0).
    An empty part (e.g. ``data.predict_size: 0``) has nothing to score: only ``n`` = 0.
    Multi-label (2-D ``y_true``): ``multilabel_metrics``."""
    if len(y_true) == 0:
        return {"n": 0}
    if np.ndim(y_true) == 2:
        return multilabel_metrics(y_true, y_pred)
    p, r, f, _ = _per_class(y_true, y_pred, n_labels)
    accuracy = np.mean(np.asarray(y_true) == np.asarray(y_pred))
    return {
        "precision_macro": float(np.mean(p)),
        "recall_macro": float(np.mean(r)),
        "f1_macro": float(np.mean(f)),
        "accuracy": float(accuracy),
        "n": int(len(y_true)),
    }


def _per_label(y_true: np.ndarray, y_pred: np.ndarray):
    """Multi-label: per label precision, recall, F1 (float64), support (int64), and the
    summed true positives, predicted and true counts (micro averages)."""
    y_true, y_pred = np.asarray(y_true, np.int64), np.asarray(y_pred, np.int64)
    tp = (y_true * y_pred).sum(axis=0)
    pred_sum, true_sum = y_pred.sum(axis=0), y_true.sum(axis=0)
    f1 = _divide(2.0 * tp, true_sum.astype(np.float64) + pred_sum)
    totals = (tp.sum(), pred_sum.sum(), true_sum.sum())
    return _divide(tp, pred_sum), _divide(tp, true_sum), f1, true_sum, totals


def multilabel_metrics(y_true: np.ndarray, y_pred: np.ndarray) -> dict:
    """Multi-label scores of ``(n, C)`` 0/1 matrices, as scikit-learn's
    ``precision_recall_fscore_support(average="macro" / "micro", zero_division=0)`` and
    ``accuracy_score`` (subset accuracy) compute them."""
    if len(y_true) == 0:
        return {"n": 0}
    p, r, f, _, (tp, pred_sum, true_sum) = _per_label(y_true, y_pred)
    exact = (np.asarray(y_true) == np.asarray(y_pred)).all(axis=1)
    return {
        "precision_macro": float(np.mean(p)),
        "recall_macro": float(np.mean(r)),
        "f1_macro": float(np.mean(f)),
        "precision_micro": float(_divide(tp, pred_sum)),
        "recall_micro": float(_divide(tp, true_sum)),
        "f1_micro": float(_divide(2.0 * tp, true_sum + pred_sum)),
        "subset_accuracy": float(np.mean(exact)),
        "n": int(len(y_true)),
    }


def validation_f1(y_true: np.ndarray, probs: np.ndarray) -> float:
    """Macro F1 of probabilities on a validation part (early stopping's score): the most
    probable class, or multi-label (2-D ``y_true``, ``probs`` the per-class sigmoids) every
    class at probability 0.5 or more."""
    n_labels = probs.shape[1]
    pred = (probs >= 0.5).astype(np.int64) if np.ndim(y_true) == 2 else probs.argmax(1)
    return classification_metrics(y_true, pred, n_labels).get("f1_macro", float("nan"))


def per_class_report(y_true: np.ndarray, y_pred: np.ndarray, classes: list[str]) -> dict:
    """Per class (multi-label: per label) precision, recall, F1 and support."""
    if len(y_true) == 0:
        return {name: {"support": 0} for name in classes}
    if np.ndim(y_true) == 2:
        p, r, f, support, _ = _per_label(y_true, y_pred)
    else:
        p, r, f, support = _per_class(y_true, y_pred, len(classes))
    return {
        name: {
            "precision": float(p[i]),
            "recall": float(r[i]),
            "f1": float(f[i]),
            "support": int(support[i]),
        }
        for i, name in enumerate(classes)
    }


def confusion_long(y_true: np.ndarray, y_pred: np.ndarray, classes: list[str]) -> pd.DataFrame:
    """One row per (actual, predicted) sample: the table `dvc plots` draws as a confusion matrix."""
    names = np.asarray(classes, dtype=object)
    return pd.DataFrame({"actual": names[y_true], "predicted": names[y_pred]})


def confusion_counts(y_true: np.ndarray, y_pred: np.ndarray, n_labels: int) -> list[list[int]]:
    return _confusion(y_true, y_pred, n_labels).tolist()


def summarize_folds(per_fold: dict[int, dict]) -> dict:
    """Mean and (sample) standard deviation over folds of every numeric metric.

    ``per_fold`` maps fold -> {part: {metric: value}} (parts such as fold_test, test, predict)
    plus scalar entries such as ``time_per_epoch_s``.
    """
    folds = sorted(per_fold)
    flat = [pd.json_normalize(per_fold[f], sep="/").iloc[0] for f in folds]
    table = (
        pd.DataFrame(flat, index=folds)
        .select_dtypes("number")
        .drop(columns=["fold", "seed"], errors="ignore")
    )
    out: dict = {"folds": folds, "n_folds": len(folds)}
    for col in table.columns:
        values = table[col].astype(float)
        out[col] = {
            "mean": float(values.mean()),
            "std": float(values.std(ddof=1)) if len(values) > 1 else 0.0,
        }
    return out


def held_out_samples(labels_info: dict) -> dict:
    """The held-out samples' sizes and where they come from (``metrics/summary.json``,
    numbers and true/false only; ``held_out_source`` says it in words), from the sample
    stage's ``labels.json``: with ``data.sampling: all`` and ``data.predict_size: 0`` the test
    sample is the dataset's whole test split, comparable with published figures; an empty
    predict sample is absent."""
    sizes, pools = labels_info.get("sizes", {}), labels_info.get("pools", {})
    from_split = pools.get("test") is not None
    whole = from_split and labels_info.get("sampling") == "all" and not sizes.get("predict")
    out = {
        "test_rows": int(sizes.get("test", 0)),
        "from_test_split": from_split,
        "whole_test_split": whole,
    }
    if sizes.get("predict"):
        out["predict_rows"] = int(sizes["predict"])
    return out


def held_out_source(held_out: dict) -> str:
    """Where the held-out test sample comes from, in words (``held_out_samples``)."""
    if held_out.get("whole_test_split"):
        return "the whole test split"
    if held_out.get("from_test_split"):
        return "a sample of the test split"
    return "a sample of all rows (pooled)"
