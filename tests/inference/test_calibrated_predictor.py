"""The ``Predictor`` through a model folder's calibration.json: a folder without one predicts
exactly as before, a temperature changes the probabilities but not the labels, a multi-label
folder gives sigmoid probabilities and label lists, and ``min_prob`` abstains."""

from __future__ import annotations

import numpy as np
import pytest
from support.calibrated_models import calibrated_copy
from support.serving_models import CLASSES, labelled_texts, shared_lttw_folder

from lttw.errors import UserError
from lttw.inference.answers import chosen_ids, top_classes
from lttw.inference.predict import Predictor
from lttw.models.calibration import Calibration

TEXTS = labelled_texts(2)[0][:6]


@pytest.fixture(scope="module")
def plain_dir(tmp_path_factory, tiny_encoder_dir):
    return shared_lttw_folder(tmp_path_factory, tiny_encoder_dir)


@pytest.fixture(scope="module")
def plain(plain_dir):
    return Predictor.load(plain_dir)


def test_folder_without_calibration_predicts_as_before(plain):
    from lttw.models.trained import predict_proba

    want = predict_proba(plain.model, plain.model_inputs(TEXTS), plain.runtime, 64)
    got = plain.predict_proba(TEXTS)
    assert not plain.multi_label and plain.calibration == Calibration()
    # the same texts in the same batches of 64 through the same forward: exact (issue 59)
    np.testing.assert_array_equal(got, want.astype(np.float32))
    assert plain.predict(TEXTS) == [CLASSES[i] for i in want.argmax(axis=1)]


def test_temperature_softens_keeps_labels(plain, plain_dir, tmp_path):
    warm = Predictor.load(calibrated_copy(plain_dir, tmp_path / "t", temperature=3.0))
    before, after = plain.predict_proba(TEXTS), warm.predict_proba(TEXTS)
    np.testing.assert_allclose(after.sum(axis=1), 1.0, rtol=1e-5)
    assert (after.argmax(axis=1) == before.argmax(axis=1)).all()
    assert (after.max(axis=1) < before.max(axis=1)).all()
    logits = plain.predict_logits(TEXTS)
    np.testing.assert_allclose(after, Calibration(temperature=3.0).probabilities(logits), atol=1e-6)
    assert warm.predict(TEXTS) == plain.predict(TEXTS)


def test_min_prob_abstains_single_label(plain):
    probs = plain.predict_proba(TEXTS)
    cut = float(np.median(probs.max(axis=1)))
    labels = plain.predict(TEXTS, min_prob=cut)
    for label, row in zip(labels, probs):  # the same batches as probs: exact at the cut
        assert (label is None) == (row.max() < np.float32(cut))
    assert plain.predict(TEXTS, min_prob=0.0) == plain.predict(TEXTS)
    with pytest.raises(UserError, match="min_prob"):
        plain.predict(TEXTS, min_prob=1.5)


@pytest.fixture(scope="module")
def multi(plain_dir, tmp_path_factory):
    dest = tmp_path_factory.mktemp("ml") / "model"
    return Predictor.load(
        calibrated_copy(plain_dir, dest, multi_label=True, thresholds=(0.5, 0.4, 0.6, 0.3))
    )


def test_multi_label_folder_gives_sigmoid_and_lists(multi, plain):
    assert multi.multi_label
    logits = plain.predict_logits(TEXTS)
    probs = multi.predict_proba(TEXTS)
    np.testing.assert_allclose(probs, 1 / (1 + np.exp(-logits)), rtol=1e-5)
    labels = multi.predict(TEXTS)
    thresholds = np.array([0.5, 0.4, 0.6, 0.3])
    for row, chosen in zip(probs, labels):
        want = [CLASSES[i] for i in np.flatnonzero(row >= thresholds)] or [CLASSES[row.argmax()]]
        assert sorted(chosen) == sorted(want)
        assert [row[CLASSES.index(c)] for c in chosen] == sorted(
            (row[CLASSES.index(c)] for c in chosen), reverse=True
        )


def test_min_prob_raises_multi_label_thresholds():
    cal = Calibration(multi_label=True, thresholds=(0.2, 0.5, 0.9))
    probs = np.array([[0.3, 0.6, 0.95], [0.1, 0.2, 0.3], [0.25, 0.1, 0.1]], np.float32)
    assert chosen_ids(cal, probs) == [[2, 1, 0], [2], [0]]
    assert chosen_ids(cal, probs, min_prob=0.55) == [[2, 1], [], []]
    assert top_classes(probs, 2) == [[2, 1], [2, 1], [0, 1]]


def test_calibration_that_disagrees_with_the_folder_is_refused(plain_dir, tmp_path):
    from lttw.io import read_json, write_json
    from lttw.models.folder_files import record_checksums

    folder = calibrated_copy(plain_dir, tmp_path / "m", multi_label=True, thresholds=(0.5,) * 3)
    with pytest.raises(UserError, match="3 thresholds for 4 classes"):
        Predictor.load(folder)
    folder = calibrated_copy(plain_dir, tmp_path / "s", temperature=2.0)
    meta = read_json(folder / "lttw.json")
    write_json(folder / "lttw.json", {**meta, "multi_label": True})
    with pytest.raises(UserError, match="lttw.json: its settings changed"):  # checksummed
        Predictor.load(folder)
    write_json(folder / "lttw.json", {**meta, "multi_label": True})
    record_checksums(folder)  # recorded again after the edit: the calibration's check fires
    with pytest.raises(UserError, match="multi_label"):
        Predictor.load(folder)


def test_one_string_is_one_text_and_a_non_string_is_named(plain):
    """``predict("one text")`` answers one text, not one per character; ``[None]`` or a
    number is a UserError naming its position and type, not an opaque TypeError."""
    from lttw.errors import UserError
    from lttw.inference.text_lines import as_texts

    assert as_texts("one text") == ["one text"]
    assert len(plain.predict("one text")) == 1 and plain.predict_proba("one text").shape[0] == 1
    with pytest.raises(UserError, match=r"texts\[0\]"):
        plain.predict([None])
    assert as_texts(("a", "b")) == ["a", "b"]
    with pytest.raises(UserError, match=r"texts\[1\]: a string, got NoneType"):
        as_texts(["fine", None])
    with pytest.raises(UserError, match="texts: a list of strings, got int"):
        as_texts(5)
