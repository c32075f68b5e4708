"""The training loss of a classifier's logits, single-label or multi-label, with optional
class weights (``train.class_weight``).

* single-label targets, ``(n,)`` int64 class ids: cross-entropy over the softmax,
  ``weight=`` one weight per class (PyTorch's weighted mean: the sum of each row's weighted
  loss over the sum of its rows' weights, as scikit-learn's ``sample_weight`` does);
* multi-label targets, ``(n, C)`` 0/1 indicators: binary cross-entropy of one sigmoid per
  class, ``pos_weight=`` one weight per class on its positive term (Hugging Face's
  ``problem_type="multi_label_classification"`` loss, with PyTorch's ``pos_weight``).

``train.class_weight: balanced`` (``class_weights``): single-label, scikit-learn's
``n / (C * count_c)`` (``compute_class_weight("balanced")``); multi-label, the negatives over
the positives of each class in the train part, ``(n - count_c) / count_c`` (PyTorch's
documented choice for ``pos_weight``): a class's positives then weigh as much as its
negatives. A class without train rows (or, multi-label, without positives or without
negatives) gets weight 1.

The weights travel with the model as a non-persistent buffer (``set_loss_weights``): they
move to its device with it, and are in no checkpoint and no saved model folder.
"""

from __future__ import annotations

from typing import Literal

import numpy as np
import torch
import torch.nn.functional as F
from torch import nn

ClassWeight = Literal["none", "balanced"]
#: the model attribute (a non-persistent buffer) that holds the loss's class weights
LOSS_WEIGHT = "loss_weight"


def class_weights(targets: np.ndarray, n_labels: int, mode: ClassWeight) -> np.ndarray | None:
    """``(C,)`` float32 loss weights of the train part's ``targets`` (``(n,)`` class ids or an
    ``(n, C)`` indicator matrix) for ``train.class_weight`` ``mode``; None for ``none``."""
    if mode == "none":
        return None
    if mode != "balanced":
        raise ValueError(f"train.class_weight must be none or balanced, got {mode!r}")
    targets = np.asarray(targets)
    n = len(targets)
    weights = np.ones(n_labels, np.float64)
    if targets.ndim == 2:  # pos_weight: negatives / positives per class
        positives = targets.sum(axis=0, dtype=np.int64)
        ok = (positives > 0) & (positives < n)
        weights[ok] = (n - positives[ok]) / positives[ok]
    else:
        counts = np.bincount(targets.astype(np.int64), minlength=n_labels)[:n_labels]
        ok = counts > 0
        weights[ok] = n / (n_labels * counts[ok])
    return weights.astype(np.float32)


def classification_loss(
    logits: torch.Tensor, targets: torch.Tensor, weight: torch.Tensor | None = None
) -> torch.Tensor:
    """Mean loss of ``(n, C)`` logits: cross-entropy against ``(n,)`` class ids, or binary
    cross-entropy with logits against ``(n, C)`` float indicators; ``weight``: the class
    weights (``weight=`` / ``pos_weight=``, see the module docstring), None: unweighted."""
    if targets.ndim == 2:
        return F.binary_cross_entropy_with_logits(
            logits, targets.to(logits.dtype), pos_weight=weight
        )
    return F.cross_entropy(logits, targets, weight=weight)


def set_loss_weights(model: nn.Module, weights: np.ndarray | None) -> None:
    """Give ``model`` the class weights its training loss uses (None: none)."""
    tensor = None if weights is None else torch.as_tensor(weights, dtype=torch.float32)
    model.register_buffer(LOSS_WEIGHT, tensor, persistent=False)


def loss_weights(model: nn.Module) -> torch.Tensor | None:
    """The class weights ``set_loss_weights`` gave ``model`` (None: none)."""
    return getattr(model, LOSS_WEIGHT, None)
