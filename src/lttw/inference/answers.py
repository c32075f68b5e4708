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

import numpy as np

from lttw.errors import UserError


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


def chosen_ids(calibration, probs: np.ndarray, min_prob: float | None = None) -> list[list[int]]:
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
