"""How a model folder turns a classifier's scores into probabilities and labels.

``calibration.json`` in a model folder (absent: the defaults: softmax, temperature 1, the
most probable class):

* single-label: probabilities ``softmax(logits / T)``; ``T`` is fitted on the fold's
  validation part (temperature scaling: Guo et al. 2017), so the argmax, and with it every
  label and F1, is unchanged; the label is the most probable class;
* multi-label: probabilities ``sigmoid(logits)`` per class; a text gets every class whose
  probability reaches that class's threshold (tuned on the validation part), and with
  ``at_least_one`` its most probable class where none does.

``min_prob`` (``lttw predict --min-prob``, ``serve``'s ``min_prob``) is applied by callers on
top: below it a single-label text gets no label.
"""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass, field
from pathlib import Path

import numpy as np

from lttw.io import read_json, write_json
from lttw.models.files import CALIBRATION


@dataclass(frozen=True)
class Calibration:
    """Args:
    multi_label: one sigmoid per class (True) or a softmax over the classes (False).
    temperature: single-label: logits are divided by it before the softmax (1.0: none).
    thresholds: multi-label: one probability threshold per class (empty: ``threshold``
        for every class).
    threshold: multi-label: the threshold of every class without one of its own.
    at_least_one: multi-label: a text none of whose classes reaches its threshold gets its
        most probable class.
    """

    multi_label: bool = False
    temperature: float = 1.0
    thresholds: tuple[float, ...] = field(default_factory=tuple)
    threshold: float = 0.5
    at_least_one: bool = True

    def __post_init__(self) -> None:
        if not (math.isfinite(self.temperature) and self.temperature > 0):
            raise ValueError(f"temperature must be a positive number, got {self.temperature}")
        for t in (self.threshold, *self.thresholds):
            if not 0.0 <= t <= 1.0:
                raise ValueError(f"thresholds must lie in [0, 1], got {t}")

    def probabilities(self, logits: np.ndarray) -> np.ndarray:
        """``(n, C)`` float32 probabilities of ``(n, C)`` scores (see the module docstring)."""
        z = np.asarray(logits, dtype=np.float64)
        if self.multi_label:
            return (1.0 / (1.0 + np.exp(-z))).astype(np.float32)
        z = z / self.temperature
        z = z - z.max(axis=1, keepdims=True)
        e = np.exp(z)
        return (e / e.sum(axis=1, keepdims=True)).astype(np.float32)

    def class_thresholds(self, n_labels: int) -> np.ndarray:
        """``(C,)`` the threshold of each class (multi-label)."""
        if self.thresholds:
            if len(self.thresholds) != n_labels:
                raise ValueError(f"{len(self.thresholds)} thresholds for {n_labels} classes")
            return np.asarray(self.thresholds, np.float32)
        return np.full(n_labels, self.threshold, np.float32)

    def decide(self, probs: np.ndarray) -> np.ndarray:
        """Labels of ``(n, C)`` probabilities: ``(n,)`` int64 class ids (single-label) or an
        ``(n, C)`` uint8 indicator matrix (multi-label)."""
        probs = np.asarray(probs)
        if not self.multi_label:
            return probs.argmax(axis=1).astype(np.int64)
        chosen = (probs >= self.class_thresholds(probs.shape[1])).astype(np.uint8)
        if self.at_least_one and len(probs):
            empty = chosen.sum(axis=1) == 0
            chosen[np.flatnonzero(empty), probs[empty].argmax(axis=1)] = 1
        return chosen

    def to_dict(self) -> dict:
        out = asdict(self)
        out["thresholds"] = list(self.thresholds)
        return out

    @classmethod
    def from_dict(cls, raw: dict) -> Calibration:
        raw = dict(raw)
        raw["thresholds"] = tuple(float(t) for t in raw.get("thresholds", ()))
        return cls(**raw)


def save_calibration(calibration: Calibration, folder: str | Path) -> None:
    """Write ``calibration.json`` into a model folder."""
    write_json(Path(folder) / CALIBRATION, calibration.to_dict())


def load_calibration(folder: str | Path, multi_label: bool = False) -> Calibration:
    """A model folder's calibration; where it has no ``calibration.json``, the defaults (for a
    ``multi_label`` folder: sigmoid and threshold 0.5)."""
    path = Path(folder) / CALIBRATION
    if not path.is_file():
        return Calibration(multi_label=multi_label)
    return Calibration.from_dict(read_json(path))


def checked_calibration(raw: object, where: Path, meta: dict, n_classes: int) -> Calibration:
    """The ``Calibration`` of calibration.json's document ``raw`` (read from ``where``; None:
    the folder has none, the defaults), checked against its lttw.json and classes: a
    UserError naming calibration.json where they disagree (``ModelFolder`` reads it so,
    once)."""
    from lttw.data.label_sets import is_multi_label
    from lttw.errors import UserError

    multi = is_multi_label(meta)
    if raw is None:
        return Calibration(multi_label=multi)
    if not isinstance(raw, dict):
        raise UserError(f"{where}: not a JSON object; the file is damaged")
    try:
        calibration = Calibration.from_dict(raw)
    except (TypeError, ValueError) as err:
        raise UserError(f"{where}: not a calibration ({err}); the file is damaged") from None
    if calibration.multi_label != multi:
        raise UserError(
            f"{where}: multi_label is {calibration.multi_label}, but lttw.json says "
            f"{multi}; the folder is damaged"
        )
    if calibration.thresholds and len(calibration.thresholds) != n_classes:
        raise UserError(
            f"{where}: {len(calibration.thresholds)} thresholds for {n_classes} classes"
        )
    return calibration
