"""Metrics (``lttw.evaluation.metrics``) at their edges."""

from __future__ import annotations

import numpy as np


def test_evaluation_of_an_empty_part():
    """data.test_size / predict_size 0 are valid: evaluate must score the other parts and
    record n = 0 for the empty one, not crash on argmax of nothing."""
    from lttw.evaluation.metrics import (
        classification_metrics,
        confusion_counts,
        confusion_long,
        per_class_report,
        predicted_labels,
        summarize_folds,
        top_probability,
    )

    probs = np.zeros((0, 0), np.float32)  # what predict_proba gives for no rows
    pred, y = predicted_labels(probs), np.zeros(0, np.int64)
    assert pred.shape == (0,) and top_probability(probs).shape == (0,)
    assert classification_metrics(y, pred, 3) == {"n": 0}
    assert per_class_report(y, pred, ["a", "b", "c"])["b"] == {"support": 0}
    assert confusion_counts(y, pred, 2) == [[0, 0], [0, 0]]
    assert len(confusion_long(y, pred, ["a", "b"])) == 0
    scored = classification_metrics(np.array([0, 1]), predicted_labels(np.eye(2)), 2)
    summary = summarize_folds({0: {"test": {"n": 0}, "fold_test": scored}})
    assert summary["test/n"]["mean"] == 0 and summary["fold_test/f1_macro"]["mean"] == 1.0


def test_metrics_equal_scikit_learns_to_the_bit():
    """The confusion-matrix sums give what scikit-learn gives (zero_division=0), bit for bit:
    absent classes, classes never predicted, one class, labels outside the range."""
    from sklearn.metrics import accuracy_score, confusion_matrix, precision_recall_fscore_support

    from lttw.evaluation.metrics import classification_metrics, confusion_counts, per_class_report

    rng = np.random.default_rng(0)
    cases = [
        (rng.integers(0, n, size), rng.integers(0, n, size), n)
        for n in (2, 3, 4, 7, 10)
        for size in (1, 5, 37, 1000)
    ]
    cases += [
        (np.array([0, 0, 1]), np.array([0, 0, 0]), 4),  # class 1 never predicted
        (np.array([2, 2]), np.array([2, 2]), 3),  # one class only
        (np.array([0, 1, 1, 0]), np.array([1, 1, 0, 0]), 2),
    ]
    for y, pred, n in cases:
        labels = np.arange(n)
        p, r, f, support = precision_recall_fscore_support(
            y, pred, labels=labels, average=None, zero_division=0
        )
        mp, mr, mf, _ = precision_recall_fscore_support(
            y, pred, labels=labels, average="macro", zero_division=0
        )
        got = classification_metrics(y, pred, n)
        assert got == {
            "precision_macro": mp,
            "recall_macro": mr,
            "f1_macro": mf,
            "accuracy": accuracy_score(y, pred),
            "n": len(y),
        }
        report = per_class_report(y, pred, [f"c{i}" for i in labels])
        assert [report[f"c{i}"] for i in labels] == [
            {"precision": p[i], "recall": r[i], "f1": f[i], "support": support[i]} for i in labels
        ]
        assert confusion_counts(y, pred, n) == confusion_matrix(y, pred, labels=labels).tolist()
