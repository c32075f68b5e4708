import numpy as np
import pytest

from lttw.models.calibration import Calibration, load_calibration, save_calibration


def test_default_is_the_plain_softmax_and_argmax():
    logits = np.array([[2.0, 0.0, -1.0], [0.0, 3.0, 1.0]])
    probs = Calibration().probabilities(logits)
    expected = np.exp(logits) / np.exp(logits).sum(axis=1, keepdims=True)
    np.testing.assert_allclose(probs, expected, rtol=1e-6)
    assert Calibration().decide(probs).tolist() == [0, 1]


def test_temperature_softens_without_changing_the_label():
    logits = np.array([[2.0, 0.0, -1.0]])
    hot, cool = Calibration(temperature=2.0), Calibration()
    assert hot.probabilities(logits).max() < cool.probabilities(logits).max()
    assert hot.decide(hot.probabilities(logits)).tolist() == [0]


def test_multi_label_thresholds_per_class_and_at_least_one():
    cal = Calibration(multi_label=True, thresholds=(0.5, 0.2, 0.9))
    probs = np.array([[0.6, 0.3, 0.8], [0.1, 0.1, 0.4]], np.float32)
    assert cal.decide(probs).tolist() == [[1, 1, 0], [0, 0, 1]]
    none = Calibration(multi_label=True, threshold=0.95, at_least_one=False)
    assert none.decide(probs).sum() == 0


def test_sigmoid_for_multi_label():
    probs = Calibration(multi_label=True).probabilities(np.array([[0.0, 100.0]]))
    np.testing.assert_allclose(probs, [[0.5, 1.0]])


def test_bad_values_are_refused():
    with pytest.raises(ValueError, match="temperature"):
        Calibration(temperature=0.0)
    with pytest.raises(ValueError, match="thresholds"):
        Calibration(multi_label=True, threshold=1.5)


def test_save_and_load_are_symmetric(tmp_path):
    cal = Calibration(multi_label=True, thresholds=(0.3, 0.4), threshold=0.35)
    save_calibration(cal, tmp_path)
    assert load_calibration(tmp_path) == cal
    assert load_calibration(tmp_path / "absent", multi_label=True) == Calibration(multi_label=True)
