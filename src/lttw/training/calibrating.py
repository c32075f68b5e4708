"""The train stage's calibration step (single-label): temperature scaling
(``evaluation.temperature``) fitted on the validation part's probabilities of the trained
(best-validation) model, saved as the model folder's ``calibration.json``
(``models.calibration``: ``softmax(logits / T)``; the argmax, so every label, is unchanged).
"""

from __future__ import annotations

import numpy as np

from lttw.evaluation.temperature import fit_temperature, logits_of
from lttw.models.calibration import Calibration


def temperature_calibration(val_probs: np.ndarray, val_labels: np.ndarray) -> Calibration | None:
    """``Calibration(temperature=T)`` with ``T`` fitted on the validation part's ``(n, C)``
    probabilities (at ``T = 1``) and ``(n,)`` class ids; None (no calibration.json: as
    before) where there is nothing to fit: no validation rows, or multi-label labels (an
    indicator matrix: their thresholds are tuned elsewhere)."""
    labels = np.asarray(val_labels)
    if labels.ndim != 1 or len(labels) == 0:
        return None
    return Calibration(temperature=fit_temperature(logits_of(val_probs), labels))
