"""A model's scores on a labelled sample, with bootstrap intervals: what ``lttw evaluate`` and
the ``evaluate`` stage's held-out report write as ``metrics.json``.

``evaluation_report(y, probs, predicted, classes)`` takes the true labels (``(n,)`` class
ids, or a multi-label ``(n, C)`` 0/1 indicator matrix), the model's probabilities ``(n, C)``
and its decisions (class ids, or the indicator matrix at the folder's thresholds), and
returns the headline metrics (``metrics.classification_metrics``), a percentile bootstrap
interval for each (``n_boot`` resamples of the rows with replacement, seeded: the same
input gives the same interval), the per-class precision / recall / F1 / support and, for a
single-label model, the confusion matrix and the expected calibration error
(``calibration_error``). Bootstrap work grows with rows x resamples: both are capped
(``MAX_BOOTSTRAP``; the resamples run in blocks so memory stays bounded).
"""

from __future__ import annotations

import numpy as np

from lttw.evaluation.calibration_error import expected_calibration_error
from lttw.evaluation.metrics import (
    classification_metrics,
    confusion_counts,
    per_class_report,
)

#: bootstrap resamples by default, and at most
N_BOOT = 1000
MAX_BOOTSTRAP = 10_000
#: the interval's coverage
CONFIDENCE = 0.95
#: row indices drawn per block of resamples (memory: 8 bytes each)
_BLOCK_INDICES = 1 << 22


def bootstrap_intervals(
    y_true: np.ndarray,
    y_pred: np.ndarray,
    n_labels: int,
    n_boot: int = N_BOOT,
    seed: int = 0,
    confidence: float = CONFIDENCE,
) -> dict[str, list[float]]:
    """``{metric: [low, high]}``: the percentile interval of each numeric metric of
    ``classification_metrics`` over ``n_boot`` resamples of the rows (``{}`` for no rows or
    ``n_boot`` 0)."""
    n = len(y_true)
    if n == 0 or n_boot <= 0:
        return {}
    if n_boot > MAX_BOOTSTRAP:
        raise ValueError(f"n_boot: at most {MAX_BOOTSTRAP:,}, got {n_boot:,}")
    rng = np.random.default_rng(seed)
    y_true, y_pred = np.asarray(y_true), np.asarray(y_pred)
    samples: dict[str, list[float]] = {}
    per_block = max(1, _BLOCK_INDICES // n)
    done = 0
    while done < n_boot:
        block = min(per_block, n_boot - done)
        for rows in rng.integers(0, n, size=(block, n)):
            scores = classification_metrics(y_true[rows], y_pred[rows], n_labels)
            for key, value in scores.items():
                if key != "n":
                    samples.setdefault(key, []).append(value)
        done += block
    tail = (1.0 - confidence) / 2.0 * 100.0
    return {
        key: [float(np.percentile(v, tail)), float(np.percentile(v, 100.0 - tail))]
        for key, v in samples.items()
    }


def evaluation_report(
    y_true: np.ndarray,
    probs: np.ndarray,
    y_pred: np.ndarray,
    classes: list[str],
    n_boot: int = N_BOOT,
    seed: int = 0,
) -> dict:
    """The metrics document of a labelled sample (see the module docstring)."""
    y_true, probs, y_pred = np.asarray(y_true), np.asarray(probs), np.asarray(y_pred)
    multi_label = y_true.ndim == 2
    n_labels = len(classes)
    report: dict = {
        "n": int(len(y_true)),
        "classes": list(classes),
        "multi_label": multi_label,
        "metrics": classification_metrics(y_true, y_pred, n_labels),
        "intervals": {
            "confidence": CONFIDENCE,
            "resamples": int(n_boot),
            "seed": int(seed),
            **bootstrap_intervals(y_true, y_pred, n_labels, n_boot, seed),
        },
        "per_class": per_class_report(y_true, y_pred, classes),
    }
    if not multi_label and len(y_true):
        report["metrics"]["ece"] = expected_calibration_error(probs, y_true)
        report["confusion"] = confusion_counts(y_true, y_pred, n_labels)
    return report
