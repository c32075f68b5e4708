"""A loaded classifier's scores and how a model folder turns them into probabilities:
``model_logits`` (torch, ONNX or a text model, before any softmax) and the folder's
``Calibration`` checked against its lttw.json (``checked_calibration``)."""

from __future__ import annotations

from pathlib import Path

import numpy as np

from lttw.data.label_sets import is_multi_label
from lttw.models.calibration import Calibration, load_calibration
from lttw.models.files import META
from lttw.models.trained import TEXTS, reads


def model_logits(model, inputs, runtime, batch_size: int) -> np.ndarray:
    """(n, C) float32 scores of a loaded classifier (torch, ONNX or a text model), whose
    softmax (single-label) or sigmoid (multi-label) are its probabilities: the training
    part's ``models.trained.predict_logits`` where it exists; else a text model's
    ``logits`` (or the log of its probabilities: a single-label model's logits up to a
    constant per row, which is all a softmax sees) or the torch forward pass."""
    from lttw.models import trained

    shared = getattr(trained, "predict_logits", None)
    if shared is not None:
        return np.asarray(shared(model, inputs, runtime, batch_size), np.float32)
    if len(inputs) == 0:
        return np.zeros((0, trained.n_labels(model)), np.float32)
    if reads(model) == TEXTS:
        if hasattr(model, "logits"):
            return np.asarray(model.logits(list(inputs)), np.float32)
        with np.errstate(divide="ignore"):
            return np.log(np.asarray(model.predict_proba(list(inputs)), np.float64)).astype(
                np.float32
            )
    return _torch_logits(model, inputs, runtime, batch_size)


def _torch_logits(model, data, runtime, batch_size: int) -> np.ndarray:
    """The forward pass of ``models.trained.predict_proba`` (shortest rows first, batches
    trimmed to their rows), without its softmax."""
    import torch

    model.eval()
    order = torch.argsort(data.lengths, stable=True)
    out = []
    with torch.no_grad():
        for start in range(0, len(data), batch_size):
            batch, _ = data.batch(order[start : start + batch_size], runtime)
            with runtime.autocast():
                out.append(model(**batch).float().cpu())
    logits = torch.empty(len(data), out[0].shape[1])
    logits[order] = torch.cat(out)
    return logits.numpy()


def checked_calibration(folder: str | Path, meta: dict, n_classes: int) -> Calibration:
    """The folder's ``Calibration``, checked against its lttw.json and classes: a UserError
    naming calibration.json where they disagree."""
    from lttw.errors import UserError
    from lttw.models.files import CALIBRATION

    calibration = load_calibration(folder, is_multi_label(meta))
    where = Path(folder) / CALIBRATION
    if calibration.multi_label != is_multi_label(meta):
        raise UserError(
            f"{where}: multi_label is {calibration.multi_label}, but {META} says "
            f"{is_multi_label(meta)}; the folder is damaged"
        )
    if calibration.thresholds and len(calibration.thresholds) != n_classes:
        raise UserError(
            f"{where}: {len(calibration.thresholds)} thresholds for {n_classes} classes"
        )
    return calibration
