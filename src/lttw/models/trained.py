"""One interface for every trained classifier: class probabilities, save and load.

Two kinds of classifier share it, told apart by what they read (``reads``):

    "tokens"  the torch classifiers of the registry (``registry.Classifier``): token tensors
              and latent-factor rows, batched (``data.batching.Batchable``)
    "texts"   ``tfidf_linear`` (``tfidf.TfidfLinear``): a list of raw texts
    "arrays"  an exported classifier run without torch (``models.onnx_classifier``'s
              ``OnnxClassifier``): the same token ids, masks and factor rows as numpy
              arrays (``TokenArrays``), batched here as ``Batchable`` batches them

``predict_proba(model, inputs, rt, batch_size)`` gives (n, p) probabilities for either, an
empty (0, p) array for no rows; ``predict_logits`` the scores they come from, and
``predict_proba(..., calibration=)`` the probabilities of a model folder's ``Calibration``
(``folder_calibration``: sigmoid for a multi-label folder, a temperature where one was
fitted). ``save_classifier`` / ``load_classifier`` write and read a model folder of either.
Below both training and inference: neither needs the other for it.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from lttw.encoder.tokens import trimmed_length

if TYPE_CHECKING:
    from lttw.models.calibration import Calibration

TOKENS, TEXTS, ARRAYS = "tokens", "texts", "arrays"


def reads(model: Any) -> str:
    """What ``model`` predicts from: TOKENS (a torch classifier), TEXTS (tfidf_linear) or
    ARRAYS (an ONNX classifier)."""
    return getattr(model, "reads", TOKENS)


def row_lengths(attention_mask: np.ndarray) -> np.ndarray:
    """(n,) int64: 1 + the position of each row's last real token (any padding side)."""
    positions = np.arange(1, attention_mask.shape[1] + 1)
    return ((np.asarray(attention_mask) != 0) * positions).max(1, initial=0).astype(np.int64)


@dataclass(frozen=True)
class TokenArrays:
    """What an ARRAYS classifier reads, rows aligned: ``input_ids`` (n, seq) and
    ``attention_mask`` (n, seq) integers, ``factors`` (n, k+s, rank) float32 or None."""

    input_ids: np.ndarray
    attention_mask: np.ndarray
    factors: np.ndarray | None = None

    def __len__(self) -> int:
        return len(self.input_ids)

    def batch(self, rows: np.ndarray) -> dict[str, np.ndarray | None]:
        """The rows' inputs (int64 ids and mask, float32 factors), padding trimmed."""
        seq = self.input_ids.shape[1]
        if len(rows):
            seq = trimmed_length(int(row_lengths(self.attention_mask[rows]).max()), seq)
        return {
            "input_ids": self.input_ids[rows, :seq].astype(np.int64),
            "attention_mask": self.attention_mask[rows, :seq].astype(np.int64),
            "factors": None if self.factors is None else self.factors[rows].astype(np.float32),
        }


def variant_reads(variant: str) -> str:
    """What a ``model.variant`` predicts from, before any model is built."""
    from lttw.models.tfidf import VARIANT

    return TEXTS if variant == VARIANT else TOKENS


def n_labels(model: Any) -> int:
    return model.n_labels if reads(model) == TEXTS else model.config.n_labels


def predict_proba(
    model: Any,
    inputs: Any,
    rt: Any = None,
    batch_size: int = 128,
    progress: bool = False,
    calibration: Calibration | None = None,
) -> np.ndarray:
    """Class probabilities (n, p) for every row of ``inputs`` (a ``Batchable`` for a torch
    classifier, a list of texts for a text model), in its row order; (0, p) for no rows.
    ``calibration`` None: the model's own probabilities (a torch classifier's softmax, as
    every folder without ``calibration.json`` gives); else ``calibration.probabilities`` of
    ``predict_logits`` (float32)."""
    if len(inputs) == 0:
        return np.zeros((0, n_labels(model)), np.float32)
    if calibration is not None:
        return calibration.probabilities(predict_logits(model, inputs, rt, batch_size, progress))
    if reads(model) == TEXTS:
        return model.predict_proba(list(inputs))
    if reads(model) == ARRAYS:
        logits = _array_logits(model, inputs, batch_size, progress)
        shifted = np.exp(logits - logits.max(axis=1, keepdims=True))
        return (shifted / shifted.sum(axis=1, keepdims=True)).astype(np.float32)
    return _torch_scores(model, inputs, rt, batch_size, progress, softmax=True)


def predict_logits(
    model: Any, inputs: Any, rt: Any = None, batch_size: int = 128, progress: bool = False
) -> np.ndarray:
    """The (n, p) float32 scores whose softmax (single-label) or sigmoid (multi-label) are
    the class probabilities: a torch classifier's logits, a text model's ``logits``."""
    if len(inputs) == 0:
        return np.zeros((0, n_labels(model)), np.float32)
    if reads(model) == TEXTS:
        return np.asarray(model.logits(list(inputs)), np.float32)
    if reads(model) == ARRAYS:
        return _array_logits(model, inputs, batch_size, progress)
    return _torch_scores(model, inputs, rt, batch_size, progress, softmax=False)


def folder_calibration(folder: str | Path, meta: dict) -> Calibration | None:
    """The ``Calibration`` a model folder's probabilities go through: its
    ``calibration.json``, or for a multi-label folder (lttw.json ``multi_label``) without
    one the sigmoid at 0.5; None for a single-label folder without one (the model's own
    softmax)."""
    from lttw.models.calibration import load_calibration
    from lttw.models.files import CALIBRATION

    multi = bool(meta.get("multi_label", False))  # data.label_sets.MULTI_LABEL_KEY
    if not multi and not (Path(folder) / CALIBRATION).is_file():
        return None
    return load_calibration(folder, multi_label=multi)


def _torch_scores(model, data, rt, batch_size: int, progress: bool, softmax: bool) -> np.ndarray:
    """Rows are batched shortest first, so each batch is trimmed to nearly its rows' own
    length; a row's scores depend on the rows batched with it only in float rounding (the
    CPU kernels split their sums by the batch's shape: about 1e-7). ``softmax``: the
    probabilities (computed in torch from the fp32 logits), else the logits."""
    import torch

    model.eval()
    order = torch.argsort(data.lengths, stable=True)
    out = []
    with torch.no_grad():
        for start in _batch_starts(len(data), batch_size, progress):
            batch, _ = data.batch(order[start : start + batch_size], rt)
            with rt.autocast():
                logits = model(**batch)
            logits = logits.float()
            out.append((torch.softmax(logits, dim=-1) if softmax else logits).cpu())
    probs = torch.empty(len(data), out[0].shape[1])
    probs[order] = torch.cat(out)
    return probs.numpy()


def _batch_starts(n: int, batch_size: int, progress: bool):
    """The first row of each batch, with a progress bar of batches (``progress``)."""
    from lttw.progress import progress as progress_bar

    return progress_bar(
        range(0, n, batch_size), desc="predict", unit="batch", disable=not progress, leave=False
    )


def _array_logits(model, data: TokenArrays, batch_size: int, progress: bool) -> np.ndarray:
    """``_torch_scores``' batching (shortest rows first, padding trimmed) in numpy, for a
    classifier called as ``model(input_ids=, attention_mask=, factors=)`` -> logits."""

    order = np.argsort(row_lengths(data.attention_mask), kind="stable")
    logits = np.empty((len(data), n_labels(model)), np.float32)
    for start in _batch_starts(len(data), batch_size, progress):
        rows = order[start : start + batch_size]
        logits[rows] = model(**data.batch(rows))
    return logits


def save_classifier(model: Any, folder: str | Path) -> None:
    """Write the classifier's own files (``config.json`` and weights) into ``folder``."""
    if reads(model) == TEXTS:
        model.save(folder)
        return
    from lttw.models.registry import save_model

    save_model(model.cpu(), folder)


def load_classifier(
    folder: str | Path, device: Any = "cpu", config: tuple[str, dict] | None = None
) -> Any:
    """The classifier saved in ``folder`` (either kind), ready to predict on ``device``.
    ``config``: config.json's ``(variant, config)`` where the caller has read it already
    (``ModelFolder``), so that the file is read once."""
    from lttw.models.bundle import read_model_config
    from lttw.models.files import CONFIG_NAME
    from lttw.models.tfidf import VARIANT, TfidfLinear

    if config is None and (Path(folder) / CONFIG_NAME).is_file():
        config = read_model_config(folder)
    if config is not None and config[0] == VARIANT:
        return TfidfLinear.load(folder, config[1])  # without importing torch
    from lttw.models.registry import load_model

    return load_model(folder, config=config).to(device)


def folder_classifier(folder: Any, device: Any = "cpu") -> Any:
    """The classifier of a checked ``model_folder.ModelFolder`` (not imported: it imports
    this module) (torch weights, or a TF-IDF model's
    arrays) built from the bytes it read, on ``device``; its weights' bytes are let go."""
    from lttw.models.files import TFIDF_VOCABULARY, WEIGHTS_NAME
    from lttw.models.tfidf import VARIANT, TfidfLinear

    files = folder.files
    if folder.config_variant == VARIANT:  # without importing torch
        from safetensors.numpy import load

        arrays = load(files.take(WEIGHTS_NAME))
        return TfidfLinear.from_content(folder.config, arrays, files.json(TFIDF_VOCABULARY))
    from lttw.models.registry import model_from_bytes

    weights = files.take(WEIGHTS_NAME)
    return model_from_bytes(folder.config_variant, folder.config, weights, folder.path).to(device)
