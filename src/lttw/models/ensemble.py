"""``model.variant: lttw_tfidf``: LTTW and the TF-IDF baseline trained on the same fold, their
temperature-calibrated probabilities averaged with weights chosen on the validation part.

    p(y | x) = w * p_lttw(y | x) + (1 - w) * p_tfidf(y | x)

``w`` is the grid point of ``WEIGHT_GRID`` (0, 0.05, ..., 1) with the highest validation
macro F1; ties go to the lower validation log-loss, then to the weight nearest 0.5. Only the
validation part is read: the test parts never influence ``w``.

An ensemble's model folder::

    lttw.json            variant lttw_tfidf, fold, ... (models.bundle)
    labels.json          the classes
    ensemble.json        parts, weights, how they were chosen (``EnsembleWeights``)
    lttw/                a whole LTTW model folder (its own lttw.json, calibration.json, ...)
    tfidf_linear/        a whole tfidf_linear model folder

Each part folder keeps its own checksums; the top level records those of labels.json and
ensemble.json (``folder_files``).
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import numpy as np

from lttw.errors import UserError
from lttw.io import read_json, write_json
from lttw.models.files import ENSEMBLE_FILE

#: ensemble variants -> the variants of their parts, in weight order
ENSEMBLE_PARTS: dict[str, tuple[str, ...]] = {"lttw_tfidf": ("lttw", "tfidf_linear")}
#: the candidate weights of the first part (the second gets 1 - w)
WEIGHT_GRID = tuple(round(0.05 * i, 2) for i in range(21))
CRITERION = "val_f1_macro, then val log-loss"


@dataclass(frozen=True)
class EnsembleWeights:
    """The parts (variant names, also their sub-folders) and their weights (summing to 1),
    with the validation scores that chose them."""

    parts: tuple[str, ...]
    weights: tuple[float, ...]
    val_f1_macro: float = float("nan")
    val_log_loss: float = float("nan")
    criterion: str = CRITERION

    def combine(self, part_probs: list[np.ndarray]) -> np.ndarray:
        """The weighted mean of the parts' ``(n, C)`` probabilities (float32)."""
        if len(part_probs) != len(self.weights):
            raise ValueError(f"{len(part_probs)} probability arrays for {len(self.weights)} parts")
        out = sum(w * np.asarray(p, np.float64) for w, p in zip(self.weights, part_probs))
        return np.asarray(out, np.float32)

    def save(self, folder: str | Path) -> None:
        write_json(
            Path(folder) / ENSEMBLE_FILE,
            {
                "parts": list(self.parts),
                "weights": list(self.weights),
                "val_f1_macro": self.val_f1_macro,
                "val_log_loss": self.val_log_loss,
                "criterion": self.criterion,
                "selected_on": "val",
            },
        )

    @classmethod
    def load(cls, folder: str | Path) -> EnsembleWeights:
        path = Path(folder) / ENSEMBLE_FILE
        return cls.from_dict(read_json(path), path)

    @classmethod
    def from_dict(cls, raw, path: Path) -> EnsembleWeights:
        """The weights of ensemble.json's document ``raw`` (read from ``path``)."""
        try:
            parts = tuple(str(p) for p in raw["parts"])
            weights = tuple(float(w) for w in raw["weights"])
        except (KeyError, TypeError, ValueError):
            raise UserError(f"{path}: not an ensemble file (needs 'parts' and 'weights')") from None
        if len(parts) != len(weights) or not parts or any(not 0 <= w <= 1 for w in weights):
            raise UserError(f"{path}: needs one weight in [0, 1] per part")
        if any("/" in p or p.startswith(".") for p in parts):
            raise UserError(f"{path}: a part name is not a plain folder name")
        return cls(
            parts,
            weights,
            float(raw.get("val_f1_macro", "nan")),
            float(raw.get("val_log_loss", "nan")),
            str(raw.get("criterion", CRITERION)),
        )


def _log_loss(probs: np.ndarray, labels: np.ndarray) -> float:
    picked = np.clip(probs[np.arange(len(labels)), labels], 1e-12, None)
    return float(-np.mean(np.log(picked)))


def choose_weights(
    parts: tuple[str, str], val_probs: list[np.ndarray], val_labels: np.ndarray, n_labels: int
) -> EnsembleWeights:
    """The weight of two parts' calibrated validation probabilities (see the module
    docstring); reads nothing but the validation part. No validation rows: 0.5 each."""
    labels = np.asarray(val_labels, np.int64)
    if len(labels) == 0:
        return EnsembleWeights(parts, (0.5, 0.5))
    best: tuple | None = None
    for w in WEIGHT_GRID:
        candidate = EnsembleWeights(parts, (w, round(1.0 - w, 2)))
        probs = candidate.combine(val_probs)
        from lttw.evaluation.metrics import classification_metrics  # pandas: not at start-up

        f1 = classification_metrics(labels, probs.argmax(1), n_labels)["f1_macro"]
        loss = _log_loss(probs, labels)
        key = (-f1, loss, abs(w - 0.5))
        if best is None or key < best[0]:
            best = (key, candidate, f1, loss)
    assert best is not None
    _, chosen, f1, loss = best
    return EnsembleWeights(parts, chosen.weights, f1, loss)
