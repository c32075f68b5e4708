"""Temperature scaling and the expected calibration error (evaluation.temperature,
evaluation.calibration_error, training.calibrating)."""

import numpy as np
import pytest

from lttw.evaluation.calibration_error import calibration_metrics, expected_calibration_error
from lttw.evaluation.temperature import (
    T_BOUNDS,
    fit_temperature,
    logits_of,
    negative_log_likelihood,
    scaled_probabilities,
)
from lttw.models.calibration import Calibration
from lttw.training.calibrating import temperature_calibration


def overconfident(n: int = 2000, classes: int = 4, seed: int = 0, scale: float = 4.0):
    """Labels drawn from softmax(z) and the logits ``scale * z`` a model would report: a
    classifier ``scale`` times too sure of itself (its true temperature is ``scale``)."""
    rng = np.random.default_rng(seed)
    z = rng.normal(0.0, 1.5, size=(n, classes))
    p = scaled_probabilities(z, 1.0)
    y = np.array([rng.choice(classes, p=row) for row in p])
    return scale * z, y


def test_fit_on_overconfident_logits_lowers_nll_and_ece():
    logits, y = overconfident()
    t = fit_temperature(logits, y)
    assert 3.0 < t < 5.5  # near the true 4
    assert negative_log_likelihood(logits, y, t) < negative_log_likelihood(logits, y, 1.0) - 0.1
    before = expected_calibration_error(scaled_probabilities(logits, 1.0), y)
    after = expected_calibration_error(scaled_probabilities(logits, t), y)
    assert after < before / 2


def test_underconfident_logits_get_t_below_one():
    logits, y = overconfident(scale=0.5)
    assert fit_temperature(logits, y) < 1.0


def test_probabilities_as_logits_give_the_same_temperature():
    """The pipeline fits on log-probabilities: softmax ignores a per-row constant."""
    logits, y = overconfident(n=500)
    probs = scaled_probabilities(logits, 1.0)
    assert fit_temperature(logits_of(probs), y) == pytest.approx(fit_temperature(logits, y), 1e-4)


def test_argmax_and_labels_unchanged():
    logits, y = overconfident(n=500)
    probs = scaled_probabilities(logits, 1.0).astype(np.float32)
    cal = temperature_calibration(probs, y)
    assert cal is not None and cal.temperature != 1.0
    scaled = cal.probabilities(logits_of(probs))
    assert np.array_equal(cal.decide(scaled), probs.argmax(1))
    for t in (T_BOUNDS[0], 0.3, 2.0, T_BOUNDS[1]):
        assert np.array_equal(scaled_probabilities(logits, t).argmax(1), logits.argmax(1))


def test_ece_by_hand():
    # 4 rows: confidences 0.9 (right), 0.9 (wrong), 0.6 (right), 0.35 (right), 3 classes
    probs = np.array([[0.9, 0.05, 0.05], [0.9, 0.05, 0.05], [0.2, 0.6, 0.2], [0.35, 0.33, 0.32]])
    y = np.array([0, 1, 1, 0])
    # 15 bins of width 1/15: 0.9 -> bin 13 (0.8667, 0.9333], 0.6 -> bin 8 (0.5333, 0.6],
    # 0.35 -> bin 5 (0.3333, 0.4]
    # bin 13: 2 rows, acc 0.5, conf 0.9 -> 2/4 * 0.4 = 0.2
    # bin 8: 1 row, acc 1, conf 0.6 -> 1/4 * 0.4 = 0.1
    # bin 5: 1 row, acc 1, conf 0.35 -> 1/4 * 0.65 = 0.1625
    assert expected_calibration_error(probs, y) == pytest.approx(0.4625)
    assert expected_calibration_error(probs, y, n_bins=1) == pytest.approx(
        abs(0.75 - (0.9 + 0.9 + 0.6 + 0.35) / 4)
    )
    assert expected_calibration_error(np.eye(3), np.arange(3)) == 0.0


def test_calibration_metrics_keys_and_empty_part():
    logits, y = overconfident(n=300)
    probs = scaled_probabilities(logits, 1.0)
    got = calibration_metrics(probs, y, fit_temperature(logits, y))
    assert set(got) == {"ece", "ece_uncalibrated", "nll", "nll_uncalibrated"}
    assert got["ece"] < got["ece_uncalibrated"] and got["nll"] < got["nll_uncalibrated"]
    assert calibration_metrics(probs, y, 1.0)["ece"] == pytest.approx(got["ece_uncalibrated"])
    assert calibration_metrics(np.zeros((0, 3)), np.zeros(0, np.int64), 2.0) == {}


def test_no_rows_or_multi_label_write_no_calibration():
    assert fit_temperature(np.zeros((0, 3)), np.zeros(0, np.int64)) == 1.0
    assert temperature_calibration(np.zeros((0, 3)), np.zeros(0, np.int64)) is None
    indicator = np.array([[1, 0, 1], [0, 1, 0]], np.uint8)
    assert temperature_calibration(np.full((2, 3), 1 / 3), indicator) is None


def test_perfect_scores_keep_t_in_bounds():
    logits = np.array([[10.0, -10.0], [-10.0, 10.0]])
    t = fit_temperature(logits, np.array([0, 1]))
    assert T_BOUNDS[0] <= t <= T_BOUNDS[1]
    assert Calibration(temperature=t).temperature == t
