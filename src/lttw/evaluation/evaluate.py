"""A model's scores on a labelled sample, with bootstrap intervals: what ``lttw evaluate`` and
the ``evaluate`` stage's held-out report write as ``metrics.json``.

``evaluation_report(y, probs, predicted, classes)`` takes the true labels (``(n,)`` class
ids, or a multi-label ``(n, C)`` 0/1 indicator matrix), the model's probabilities ``(n, C)``
and its decisions (class ids, or the indicator matrix at the folder's thresholds), and
returns the headline metrics (``metrics.classification_metrics``), a percentile bootstrap
interval for each (``n_boot`` resamples of the rows with replacement, seeded: the same
input gives the same interval), the per-class precision / recall / F1 / support and, for a
single-label model, the confusion matrix and the expected calibration error
(``calibration_error``). A class that is neither a true nor a predicted label of the sample
(a file holding some of the classes) has no precision or recall to average: the macro
averages are over the other classes, as scikit-learn's are, and the report names the left
out ones (``absent_classes``). Bootstrap work grows with rows x resamples: both are capped
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


def present_classes(y_true: np.ndarray, y_pred: np.ndarray, n_labels: int) -> np.ndarray:
    """The class ids that are a true or a predicted label of some row."""
    if np.ndim(y_true) == 2:
        return np.flatnonzero(np.asarray(y_true).any(axis=0) | np.asarray(y_pred).any(axis=0))
    seen = np.zeros(n_labels, bool)
    seen[np.asarray(y_true, np.int64)] = True
    seen[np.asarray(y_pred, np.int64)] = True
    return np.flatnonzero(seen)


def _on_classes(y: np.ndarray, kept: np.ndarray, n_labels: int) -> np.ndarray:
    """``y`` restricted to the classes ``kept`` (ids renumbered 0..len(kept)-1)."""
    if np.ndim(y) == 2:
        return np.asarray(y)[:, kept]
    renumber = np.full(n_labels, -1, np.int64)
    renumber[kept] = np.arange(len(kept))
    return renumber[np.asarray(y, np.int64)]


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
    kept = present_classes(y_true, y_pred, n_labels) if len(y_true) else np.arange(n_labels)
    scored_true, scored_pred = (_on_classes(y, kept, n_labels) for y in (y_true, y_pred))
    report: dict = {
        "n": int(len(y_true)),
        "classes": list(classes),
        "multi_label": multi_label,
        "metrics": classification_metrics(scored_true, scored_pred, len(kept)),
        "intervals": {
            "confidence": CONFIDENCE,
            "resamples": int(n_boot),
            "seed": int(seed),
            **bootstrap_intervals(scored_true, scored_pred, len(kept), n_boot, seed),
        },
        "per_class": per_class_report(y_true, y_pred, classes),
    }
    if len(kept) < n_labels:
        scored = set(kept.tolist())
        report["absent_classes"] = [c for i, c in enumerate(classes) if i not in scored]
    if not multi_label and len(y_true):
        report["metrics"]["ece"] = expected_calibration_error(probs, y_true)
        report["confusion"] = confusion_counts(y_true, y_pred, n_labels)
    return report
