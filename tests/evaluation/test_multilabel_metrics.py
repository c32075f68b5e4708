"""Multi-label metrics (issue 42): micro / macro P / R / F1, subset accuracy and per label,
on a hand-checked example and against scikit-learn."""

from __future__ import annotations

import numpy as np
import pytest

from lttw.evaluation.metrics import (
    classification_metrics,
    multilabel_metrics,
    per_class_report,
    validation_f1,
)

Y_TRUE = np.array([[1, 0, 1], [0, 1, 0], [1, 1, 0], [0, 0, 1]], np.uint8)
Y_PRED = np.array([[1, 0, 0], [0, 1, 0], [1, 0, 0], [1, 0, 1]], np.uint8)


def test_hand_checked_example():
    # class 0: tp 2, fp 1, fn 0 -> P 2/3, R 1, F1 0.8
    # class 1: tp 1, fp 0, fn 1 -> P 1, R 1/2, F1 2/3
    # class 2: tp 1, fp 0, fn 1 -> P 1, R 1/2, F1 2/3
    # micro: tp 4, predicted 5, true 6 -> P 0.8, R 2/3, F1 8/11; subset: rows 1 only -> 1/4
    m = multilabel_metrics(Y_TRUE, Y_PRED)
    assert m["f1_macro"] == pytest.approx((0.8 + 2 / 3 + 2 / 3) / 3)
    assert m["precision_macro"] == pytest.approx((2 / 3 + 1 + 1) / 3)
    assert m["recall_macro"] == pytest.approx((1 + 0.5 + 0.5) / 3)
    assert m["precision_micro"] == pytest.approx(0.8)
    assert m["recall_micro"] == pytest.approx(2 / 3)
    assert m["f1_micro"] == pytest.approx(8 / 11)
    assert m["subset_accuracy"] == 0.25 and m["n"] == 4
    assert classification_metrics(Y_TRUE, Y_PRED, 3) == m  # 2-D targets dispatch here
    report = per_class_report(Y_TRUE, Y_PRED, ["a", "b", "c"])
    assert report["a"] == pytest.approx(
        {"precision": 2 / 3, "recall": 1.0, "f1": 0.8, "support": 2}
    )


def test_equal_to_scikit_learn_on_random_matrices():
    from sklearn.metrics import accuracy_score, precision_recall_fscore_support

    rng = np.random.default_rng(0)
    y = (rng.random((60, 7)) < 0.3).astype(np.uint8)
    p = (rng.random((60, 7)) < 0.3).astype(np.uint8)
    y[:, 6] = 0  # a label never present
    m = multilabel_metrics(y, p)
    for average in ("macro", "micro"):
        pr, rc, f1, _ = precision_recall_fscore_support(y, p, average=average, zero_division=0)
        assert (m[f"precision_{average}"], m[f"recall_{average}"], m[f"f1_{average}"]) == (
            pytest.approx(pr),
            pytest.approx(rc),
            pytest.approx(f1),
        )
    assert m["subset_accuracy"] == pytest.approx(accuracy_score(y, p))


def test_validation_f1_thresholds_sigmoids_at_one_half():
    probs = np.array([[0.9, 0.2, 0.5], [0.1, 0.7, 0.4], [0.6, 0.4, 0.1], [0.3, 0.1, 0.8]])
    want = multilabel_metrics(Y_TRUE, (probs >= 0.5).astype(np.uint8))["f1_macro"]
    assert validation_f1(Y_TRUE, probs) == want
    single = classification_metrics(np.array([0, 1, 0, 2]), probs.argmax(1), 3)["f1_macro"]
    assert validation_f1(np.array([0, 1, 0, 2]), probs) == single


def test_an_empty_multi_label_part_scores_nothing():
    assert multilabel_metrics(np.zeros((0, 3)), np.zeros((0, 3))) == {"n": 0}
    assert per_class_report(np.zeros((0, 2)), np.zeros((0, 2)), ["a", "b"])["a"] == {"support": 0}
