"""tfidf_linear on multi-label data (one vs rest) and with class weights; its logits, whose
softmax / sigmoid are its probabilities (what a folder's calibration.json applies)."""

from __future__ import annotations

import numpy as np
import pytest
from support.multi_label_data import NEWS_LISTS, NEWS_TEXTS

from lttw.data.label_sets import indicator_matrix
from lttw.models.calibration import Calibration
from lttw.models.tfidf import CONSTANT_SCORE, TfidfLinear, fit_tfidf_linear

TEXTS, LISTS = NEWS_TEXTS, NEWS_LISTS  # class 2 never present


@pytest.mark.parametrize("linear_model", ["logistic", "svm"])
def test_one_vs_rest_gives_sigmoid_probabilities_and_round_trips(tmp_path, linear_model):
    y = indicator_matrix(LISTS, 3)
    model = fit_tfidf_linear(TEXTS, y, 3, linear_model)
    assert model.multi_label and model.coef.shape[0] == 3
    probs = model.predict_proba(TEXTS)
    assert probs.shape == (8, 3)
    # the absent class scores a constant -CONSTANT_SCORE: probability ~0
    np.testing.assert_allclose(model.logits(TEXTS)[:, 2], -CONSTANT_SCORE)
    np.testing.assert_allclose(
        Calibration(multi_label=True).probabilities(model.logits(TEXTS)), probs, rtol=1e-5
    )
    for c in (0, 1):  # learns its train texts: every positive above every negative
        assert probs[y[:, c] == 1, c].min() > probs[y[:, c] == 0, c].max()
    model.save(tmp_path)
    again = TfidfLinear.load(tmp_path)
    assert again.multi_label
    np.testing.assert_array_equal(again.predict_proba(TEXTS), probs)  # same computation: exact


def test_logistic_probabilities_are_scikit_learns_one_vs_rest():
    from sklearn.linear_model import LogisticRegression
    from sklearn.multiclass import OneVsRestClassifier

    y = indicator_matrix(LISTS, 2)
    model = fit_tfidf_linear(TEXTS, y, 2, "logistic")
    x = model._vec.transform(TEXTS)
    ovr = OneVsRestClassifier(LogisticRegression(max_iter=1000, random_state=0)).fit(x, y)
    np.testing.assert_allclose(model.predict_proba(TEXTS), ovr.predict_proba(x), rtol=1e-6)


def test_single_label_logits_give_its_probabilities_and_a_config_as_before(tmp_path):
    y = np.array([0, 1, 0, 0, 1, 1, 0, 1])
    model = fit_tfidf_linear(TEXTS, y, 3, "svm")  # class 2 absent from the train part
    np.testing.assert_allclose(
        Calibration().probabilities(model.logits(TEXTS)), model.predict_proba(TEXTS), atol=1e-6
    )
    model.save(tmp_path)
    from lttw.io import read_json

    assert "multi_label" not in read_json(tmp_path / "config.json")["config"]


def test_balanced_class_weight_reaches_scikit_learn():
    y = np.array([0, 0, 0, 0, 0, 0, 1, 1])
    plain = fit_tfidf_linear(TEXTS, y, 2, "logistic")
    balanced = fit_tfidf_linear(TEXTS, y, 2, "logistic", class_weight="balanced")
    # the rare class 1 gains: its score rises on every text
    assert (balanced.decision_function(TEXTS)[:, 1] > plain.decision_function(TEXTS)[:, 1]).all()


def test_bad_multi_label_targets_are_refused():
    from lttw.errors import UserError

    with pytest.raises(UserError, match="0/1 matrix"):
        fit_tfidf_linear(TEXTS, np.full((8, 3), 2), 3)
