"""Expected calibration error (ECE): how far a single-label classifier's confidence (its
top-class probability) is from its accuracy, over ``N_BINS`` equal-width confidence bins
(Naeini et al. 2015; Guo et al. 2017):

    ECE = sum_b |B_b| / n * | acc(B_b) - conf(B_b) |

where ``B_b`` holds the rows whose confidence lies in ``((b-1)/N, b/N]`` (the first bin
includes 0), ``acc`` is the share of them predicted right and ``conf`` their mean
confidence. 0 is perfectly calibrated. ``calibration_metrics`` gives it (and the NLL) before
(``T = 1``) and after temperature scaling (``evaluation.temperature``) for the evaluate
stage's metrics JSON.
"""

from __future__ import annotations

import numpy as np

from lttw.evaluation.temperature import logits_of, negative_log_likelihood, scaled_probabilities

N_BINS = 15


def expected_calibration_error(
    probs: np.ndarray, labels: np.ndarray, n_bins: int = N_BINS
) -> float:
    """ECE of ``(n, C)`` probabilities against ``(n,)`` class ids (nan for no rows)."""
    probs, labels = np.asarray(probs, np.float64), np.asarray(labels, np.int64)
    if len(labels) == 0:
        return float("nan")
    confidence = probs.max(axis=1)
    correct = (probs.argmax(axis=1) == labels).astype(np.float64)
    # bin b holds confidences in ((b-1)/n_bins, b/n_bins]; 0 goes to the first bin
    bins = np.clip(np.ceil(confidence * n_bins).astype(np.int64) - 1, 0, n_bins - 1)
    count = np.bincount(bins, minlength=n_bins).astype(np.float64)
    gap = np.bincount(bins, weights=correct - confidence, minlength=n_bins)
    # sum_b |B_b|/n * |acc_b - conf_b| = sum_b |sum_{i in B_b} (correct_i - conf_i)| / n
    return float(np.abs(gap[count > 0]).sum() / len(labels))


def calibration_metrics(probs: np.ndarray, labels: np.ndarray, temperature: float) -> dict:
    """``ece`` / ``nll`` after scaling uncalibrated (``T = 1``) ``probs`` by ``temperature``,
    and ``ece_uncalibrated`` / ``nll_uncalibrated`` before; ``{}`` for no rows."""
    labels = np.asarray(labels, np.int64)
    if len(labels) == 0:
        return {}
    logits = logits_of(probs)
    return {
        "ece": expected_calibration_error(scaled_probabilities(logits, temperature), labels),
        "ece_uncalibrated": expected_calibration_error(probs, labels),
        "nll": negative_log_likelihood(logits, labels, temperature),
        "nll_uncalibrated": negative_log_likelihood(logits, labels, 1.0),
    }
