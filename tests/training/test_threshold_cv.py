"""``train.threshold_cv`` (issue 42): per-label thresholds tuned on out-of-fold probabilities
of the rows a multi-label ``tfidf_linear`` trains on, as ``TunedThresholdClassifierCV``
does; refused where it cannot apply."""

from __future__ import annotations

from functools import partial

import numpy as np
import pytest
from support.multi_label_data import (
    CLASSES,
    NEWS_TEXTS,
    label_rows,
    multi_label_tfidf_run,
    texts_for,
)

from lttw.data.label_sets import indicator_matrix
from lttw.errors import UserError
from lttw.training.thresholds import cross_validated_thresholds, tune_thresholds

ROWS = label_rows(60, seed=3)
TEXTS = texts_for(ROWS, "t")
Y = indicator_matrix([[CLASSES.index(c) for c in row] for row in ROWS], len(CLASSES))


def fixed_probs(texts: list[str]) -> np.ndarray:
    """(n, C) probabilities that depend on the text alone (a hash), not on any training."""
    rng = [np.random.default_rng(int(t[1:].split()[0])) for t in texts]
    return np.array([r.random(len(CLASSES)) for r in rng])


class TextOnly:
    """A "model" whose probabilities ignore its training rows, but which refuses to score a
    text it trained on: what a row's out-of-fold probability must never come from."""

    def __init__(self, texts, targets):
        assert len(texts) == len(targets)
        self.seen = set(texts)

    def predict_proba(self, texts):
        assert not self.seen & set(texts), "a row scored by a model that trained on it"
        return fixed_probs(texts)


def test_every_row_is_scored_out_of_fold_and_the_thresholds_are_tuned_on_all():
    cal = cross_validated_thresholds(TextOnly, TEXTS, Y, n_splits=4, random_state=0, n_jobs=1)
    # every row's probability is its own (the folds cover each row once): the same
    # thresholds as tuning on the probabilities of every row at once
    assert cal == tune_thresholds(fixed_probs(TEXTS), Y)


def test_cross_validated_thresholds_of_a_real_tfidf_model_differ_from_in_sample_ones():
    from lttw.models.tfidf import fit_tfidf_linear

    fit = partial(fit_tfidf_linear, n_labels=len(CLASSES), linear_model="logistic")
    cv = cross_validated_thresholds(fit, TEXTS, Y, n_splits=3, random_state=0, n_jobs=2)
    in_sample = tune_thresholds(fit(TEXTS, Y).predict_proba(TEXTS), Y)
    assert cv.multi_label and len(cv.thresholds) == len(CLASSES)
    assert cv.thresholds != in_sample.thresholds  # held-out scores are less sure


@pytest.mark.parametrize("final", [False, True])
def test_a_tfidf_run_saves_the_cross_validated_thresholds(tmp_path, monkeypatch, final):
    """The train stage's fold, and the final model (no val part, which would otherwise
    borrow the first fold's): calibration.json holds what cross-validation tuned, on the
    rows the run trains on."""
    import lttw.training.fold as fold
    from lttw.models.calibration import Calibration, load_calibration

    tuned = Calibration(multi_label=True, thresholds=(0.15, 0.25, 0.35), threshold=0.45)
    calls = []

    def spy(fit, texts, targets, n_splits, random_state, n_jobs):
        calls.append((texts, targets.tolist(), n_splits, n_jobs))
        return tuned

    monkeypatch.setattr(fold, "cross_validated_thresholds", spy)
    train = {"threshold_cv": 2, "num_threads": 1}
    summary, paths, y = multi_label_tfidf_run(tmp_path, train, final=final)
    assert load_calibration(paths.model, multi_label=True) == tuned
    assert calls == [(NEWS_TEXTS, y.tolist(), 2, 1)] and summary["threshold_cv_time_s"] >= 0
    assert "threshold_cv_time_s" not in multi_label_tfidf_run(tmp_path / "val", {})[0]


def test_threshold_cv_of_one_fold_is_refused():
    from lttw.settings import settings_from_dict

    assert settings_from_dict({"train": {"threshold_cv": 5}}).train.threshold_cv == 5
    with pytest.raises(ValueError, match="at least 2 folds"):
        settings_from_dict({"train": {"threshold_cv": 1}})


@pytest.mark.parametrize(
    "variant, multi_label, message",
    [
        ("tfidf_linear", False, r"single-label data has no per-label thresholds"),
        (
            "lttw",
            True,
            r"cross-validated thresholds are for tfidf_linear .*not model\.variant lttw",
        ),
        ("tfidf_linear", True, None),
    ],
)
def test_threshold_cv_where_it_cannot_apply_is_refused_in_one_line(variant, multi_label, message):
    from lttw.settings import settings_from_dict
    from lttw.training.multi_label import check_threshold_cv

    settings = settings_from_dict({"model": {"variant": variant}, "train": {"threshold_cv": 3}})
    if message is None:
        check_threshold_cv(settings.train.threshold_cv, variant, multi_label)
        return
    with pytest.raises(UserError, match=rf"^train\.threshold_cv=3: {message}") as err:
        check_threshold_cv(settings.train.threshold_cv, variant, multi_label)
    assert "\n" not in str(err.value) and "threshold_cv: 0" in str(err.value)
    check_threshold_cv(settings_from_dict({}).train.threshold_cv, variant, multi_label)
