"""Probabilities of an ensemble model folder (``models.ensemble``, ``model.variant:
lttw_tfidf``): each part folder predicts as a model folder of its own (checked, at its
precision), its probabilities are scaled by its own temperature, the ensemble's weights
combine them, and the ensemble folder's own calibration.json (a temperature fitted to the
mixture on the validation part; absent: none) scales the
mixture. The part folders are read by ``inference.predict``'s own functions, passed in
(``predict_part``), so that this module does not import it back."""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np

from lttw.evaluation.temperature import logits_of
from lttw.inference.text_lines import as_texts
from lttw.models.calibration import Calibration
from lttw.models.ensemble import EnsembleWeights

if TYPE_CHECKING:
    from lttw.models.model_folder import ModelFolder


def _calibrated(probs: np.ndarray, part: ModelFolder) -> np.ndarray:
    """A part's probabilities at ``T = 1`` scaled by its folder's temperature. (Where a part's
    ``Predictor`` applies its calibration.json itself, this must not apply it again.)"""
    return part.calibration.probabilities(logits_of(probs))


def ensemble_cached_parts(
    folder: ModelFolder, inputs, fold: int, train_settings, predict_part
) -> dict[str, np.ndarray]:
    """``predict_cached_parts`` of a checked ensemble folder: its parts' calibrated
    probabilities on the fold's evaluation parts (``predict_part``: ``predict_cached_parts``
    of a checked ``ModelFolder``), combined; the mixture at ``T = 1`` (the evaluate stage applies
    the folder's own temperature where it measures calibration, as for any folder)."""
    weights = folder.weights
    assert weights is not None  # an ensemble's ModelFolder has its weights
    per_part = [predict_part(part, inputs, fold, train_settings) for part in folder.parts]
    return {
        name: weights.combine(
            [_calibrated(probs[name], part) for probs, part in zip(per_part, folder.parts)]
        )
        for name in per_part[0]
    }


class EnsemblePredictor:
    """An ensemble folder that classifies raw texts: ``folder``, ``meta``, ``classes``,
    ``predict_proba`` and ``predict`` as a ``Predictor``'s (``explain`` is not supported for
    ensembles: explain one of its parts; ``lttw export --onnx`` exports each neural part)."""

    #: no classifier, tokenizer or factor lookup of its own: its parts have them
    model = tokenizer = lookup = runtime = words = None

    def __init__(self, folder: ModelFolder, parts):
        """The ensemble of a checked ``ModelFolder`` whose ``parts`` are built (a
        ``Predictor`` each, in weight order)."""
        assert folder.weights is not None  # an ensemble's ModelFolder has its weights
        self.folder, self.meta, self.classes = folder.path, folder.meta, folder.classes
        self.parts = parts  # a Predictor per part, in weight order
        self.weights: EnsembleWeights = folder.weights
        #: the mixture's temperature (the folder's own calibration.json; default: none)
        self.calibration: Calibration = folder.calibration

    def predict_proba(self, texts: list[str], batch_size: int = 64) -> np.ndarray:
        texts = as_texts(texts)  # each part's Predictor applies its own calibration.json
        mixture = self.weights.combine(
            [part.predict_proba(texts, batch_size) for part in self.parts]
        )
        if self.calibration == Calibration():
            return mixture
        return self.calibration.probabilities(logits_of(mixture))

    @property
    def multi_label(self) -> bool:
        """Its calibration's (an ensemble of single-label parts: False)."""
        return self.calibration.multi_label

    def predict(
        self, texts: list[str], batch_size: int = 64, min_prob: float | None = None
    ) -> list[str | None] | list[list[str]]:
        """The most probable label of each text (None where its probability is below
        ``min_prob``), as a ``Predictor``'s (``inference.answers.chosen_ids``)."""
        from lttw.inference.answers import check_min_prob, chosen_ids

        check_min_prob(min_prob, "min_prob")
        ids = chosen_ids(self.calibration, self.predict_proba(texts, batch_size), min_prob)
        return [self.classes[row[0]] if row else None for row in ids]

    def model_inputs(self, texts: list[str]):
        from lttw.errors import UserError

        raise UserError(
            f"{self.folder}: an ensemble model folder ({self.meta.get('variant')}); "
            f"explain one of its parts instead ({self.folder / self.weights.parts[0]})"
        )
