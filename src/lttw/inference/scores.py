"""A loaded classifier's scores and how a model folder turns them into probabilities:
``model_logits`` (torch, ONNX or a text model, before any softmax); the folder's
``Calibration`` itself is read and checked by ``models.model_folder.ModelFolder``."""

from __future__ import annotations

import numpy as np

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
