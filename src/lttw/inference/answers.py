"""What a user is told about each text, from its calibrated probabilities: the labels chosen
(``lttw predict``, ``serve``, ``explain`` share this rule) and the most probable classes.

Chosen labels of a row of ``(C,)`` probabilities under a model folder's ``Calibration``
(``models.calibration``) and an optional ``min_prob`` P:

* single-label: the most probable class; with P, none where its probability is below P
  (the text gets "no label");
* multi-label: every class whose probability reaches ``max(its threshold, P)``; where none
  does and the calibration says ``at_least_one``, the most probable class if it reaches P
  (so P never lets a label below it through).

Chosen labels are listed most probable first; ``top_classes`` gives the ``k`` most probable
classes whatever was chosen (ties: the lower class id first).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from lttw.errors import UserError
from lttw.models.calibration import Calibration


def check_min_prob(min_prob: float | None, what: str = "--min-prob") -> None:
    """A UserError unless ``min_prob`` is None or a number in [0, 1]."""
    if min_prob is None:
        return
    if isinstance(min_prob, bool) or not isinstance(min_prob, int | float):
        raise UserError(f"{what} must be a number from 0 to 1")
    if not (math.isfinite(min_prob) and 0.0 <= min_prob <= 1.0):
        raise UserError(f"{what} must be a number from 0 to 1 (got {min_prob})")


def ranked(row: np.ndarray) -> np.ndarray:
    """Class ids of one row of probabilities, most probable first (ties: lower id first)."""
    return np.argsort(-np.asarray(row, dtype=np.float64), kind="stable")


def chosen_ids(
    calibration: Calibration, probs: np.ndarray, min_prob: float | None = None
) -> list[list[int]]:
    """The class ids chosen for each row of ``(n, C)`` probabilities (see the module
    docstring), most probable first; an empty list is "no label"."""
    probs = np.asarray(probs, dtype=np.float32)
    if calibration.multi_label:
        keep = calibration.decide(probs).astype(bool)
    else:
        keep = np.zeros(probs.shape, bool)
        if len(probs):
            keep[np.arange(len(probs)), probs.argmax(axis=1)] = True
    if min_prob is not None:
        keep &= probs >= np.float32(min_prob)
    return [[int(i) for i in ranked(row) if mask[i]] for row, mask in zip(probs, keep)]


def top_classes(probs: np.ndarray, k: int) -> list[list[int]]:
    """The ``k`` most probable class ids of each row (fewer where there are fewer classes)."""
    return [ranked(row)[:k].tolist() for row in np.asarray(probs)]


def named(ids: list[int], row: np.ndarray, classes: list[str]) -> list[dict]:
    """``[{"label": name, "prob": p}, ...]`` of class ids in one row of probabilities."""
    return [{"label": classes[i], "prob": float(row[i])} for i in ids]


def explained_prediction(calibration: Calibration, classes: list[str], probs: np.ndarray) -> dict:
    """The label and probability of the most probable class and every class's probability;
    for a multi-label model the labels chosen (``inference.answers.chosen_ids``: each
    class's sigmoid probability against its threshold) and every class's threshold."""
    classes = list(classes)
    everything = dict(zip(classes, map(float, probs)))
    if not calibration.multi_label:
        best = int(np.argmax(probs))
        return {"label": classes[best], "prob": float(probs[best]), "probabilities": everything}
    thresholds = calibration.class_thresholds(len(classes)).tolist()
    return {
        "labels": named(chosen_ids(calibration, probs[None])[0], probs, classes),
        "probabilities": everything,
        "thresholds": dict(zip(classes, map(float, thresholds))),
    }


@dataclass(frozen=True)
class AnswerRule:
    """What to tell about each text: ``calibration``'s labels (held to ``min_prob``), and
    with ``top_k`` the k most probable classes too."""

    calibration: Calibration = Calibration()
    min_prob: float | None = None
    top_k: int | None = None

    def __post_init__(self) -> None:
        check_min_prob(self.min_prob)
        if self.top_k is not None and self.top_k < 1:
            raise UserError(f"--top-k must be 1 or more (got {self.top_k})")

    @property
    def multi_label(self) -> bool:
        return self.calibration.multi_label

    def chosen(self, probs: np.ndarray) -> list[list[int]]:
        return chosen_ids(self.calibration, probs, self.min_prob)

    def top(self, probs: np.ndarray) -> list[list[int]] | None:
        return None if self.top_k is None else top_classes(probs, self.top_k)

    def records(self, probs: np.ndarray, classes: list[str]) -> list[dict]:
        """One JSON-able answer per row: single-label ``label`` (null: no label) and
        ``prob`` (the most probable class's), multi-label ``labels`` ([{label, prob}], most
        probable first); with ``top_k``, ``top`` ([{label, prob}], k most probable)."""
        probs = np.asarray(probs, dtype=np.float32)
        top = self.top(probs)
        out = []
        for i, (row, ids) in enumerate(zip(probs, self.chosen(probs))):
            if self.multi_label:
                item: dict = {"labels": named(ids, row, classes)}
            else:
                item = {
                    "label": classes[ids[0]] if ids else None,
                    "prob": float(row.max()) if len(row) else 0.0,
                }
            if top is not None:
                item["top"] = named(top[i], row, classes)
            out.append(item)
        return out
