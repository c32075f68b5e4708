"""Metrics (``lttw.evaluation.metrics``) at their edges."""

from __future__ import annotations


import numpy as np




def test_evaluation_of_an_empty_part():
    """data.test_size / predict_size 0 are valid: evaluate must score the other parts and
    record n = 0 for the empty one, not crash on argmax of nothing."""
    from lttw.evaluation.metrics import (classification_metrics, confusion_counts, confusion_long,
                                 per_class_report, predicted_labels, summarize_folds,
                                 top_probability)

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
