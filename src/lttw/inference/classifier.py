"""What every backend of a model folder offers (``Classifier``): torch, TF-IDF and ONNX
models (``inference.predict.Predictor``, whose ``model`` is the backend's own) and an
ensemble of them (``inference.ensemble_predict.EnsemblePredictor``), each built from a
checked ``models.model_folder.ModelFolder`` by ``inference.loading.load_predictor``.
Predict, explain, evaluate, serve, export, the Ray actors and ``lttw.load_model`` use a
model through it."""

from __future__ import annotations

from pathlib import Path
from typing import Protocol, runtime_checkable

import numpy as np

from lttw.models.calibration import Calibration


@runtime_checkable
class Classifier(Protocol):
    """A model folder's classifier of texts: the folder it came from (``folder``), its
    lttw.json (``meta``), ``classes``, ``calibration``, and for a list of texts the
    calibrated class probabilities ((len(texts), len(classes)) float32) and labels."""

    folder: Path
    meta: dict
    classes: list[str]
    calibration: Calibration

    @property
    def multi_label(self) -> bool: ...

    def predict_proba(self, texts: list[str], batch_size: int = 64) -> np.ndarray: ...

    def predict(
        self, texts: list[str], batch_size: int = 64, min_prob: float | None = None
    ) -> list[str | None] | list[list[str]]: ...
