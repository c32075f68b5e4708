"""One way from a model folder to a classifier of texts: ``load_predictor`` opens the folder
once (``models.model_folder.ModelFolder``: read, size-checked, verified, its settings checked
against its weights) and builds the backend that runs it: onnxruntime where the folder holds
``model.onnx`` (``models.onnx_classifier``; no torch needed), torch otherwise, a TF-IDF
model's own arrays, or an ensemble of its parts. Every backend is a ``Classifier``.

``lttw predict`` / ``explain`` / ``serve`` / ``export``, the Ray actors and
``lttw.load_model`` load through it.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

from lttw.errors import UserError
from lttw.inference.classifier import Classifier
from lttw.inference.ensemble_predict import EnsemblePredictor
from lttw.inference.predict import Predictor
from lttw.models.files import ONNX_FILE, WEIGHTS_NAME
from lttw.models.model_folder import ModelFolder
from lttw.models.onnx_classifier import OnnxClassifier, onnx_loader

BACKENDS = ("auto", "onnx", "torch")


def load_predictor(
    folder: str | Path,
    device: str = "cpu",
    threads: int | None = None,
    backend: str = "auto",
    revision: str | None = None,
) -> Classifier:
    """The folder's ``Classifier`` (a ``Predictor``, or an ensemble's): onnxruntime when it
    holds ``model.onnx`` (``backend`` auto or onnx), torch otherwise (or with ``backend``
    torch). ``folder``: a path or a hub id (at ``revision``)."""
    if backend not in BACKENDS:
        raise UserError(f"backend must be auto, onnx or torch (got {backend!r})")
    opened = ModelFolder.open(folder, revision)
    if backend == "onnx" and not opened.has_onnx:
        raise UserError(f"{folder}: no {ONNX_FILE} here; make one with `lttw export --onnx`")
    loader = onnx_loader(threads) if backend != "torch" and opened.has_onnx else None
    exports = [f for f in (opened, *opened.parts) if f.onnx and not f.files.has(WEIGHTS_NAME)]
    if backend == "torch" and exports:
        raise UserError(
            f"{exports[0].path}: an ONNX export, without torch weights ({WEIGHTS_NAME}): run it "
            "with onnxruntime (backend auto or onnx), or name the torch folder it came from"
        )
    if backend == "torch" and threads:
        try:
            import torch
        except ModuleNotFoundError:
            pass  # Predictor says what to install
        else:
            torch.set_num_threads(threads)
    return CLASSIFIERS[opened.is_ensemble](opened, device, loader)


def _ensemble(opened: ModelFolder, device: str, loader) -> Classifier:
    """An ensemble folder's ``Classifier``: a ``Predictor`` per part, combined."""
    return EnsemblePredictor(opened, [Predictor(part, device, loader) for part in opened.parts])


#: how a checked folder becomes its ``Classifier``, built from the bytes ``ModelFolder``
#: read (never from the path): a single model folder, or (True) an ensemble of them
CLASSIFIERS: dict[bool, Callable[..., Classifier]] = {False: Predictor, True: _ensemble}


def load_model(
    folder: str | Path = "models/final",
    device: str = "auto",
    backend: str = "auto",
    revision: str | None = None,
) -> Classifier:
    """``lttw.load_model``: see its docstring."""
    return load_predictor(folder, device=device, backend=backend, revision=revision)


def backend_name(predictor) -> str:
    """``onnx-fp32`` / ``onnx-int8`` / ``torch`` / ``texts`` (tfidf_linear), for logs and /info."""
    parts = getattr(predictor, "parts", None)  # an ensemble: its parts' backends
    if parts is not None:
        return "+".join(backend_name(part) for part in parts)
    model = predictor.model
    if isinstance(model, OnnxClassifier):
        return f"onnx-{model.precision}"
    return "texts" if getattr(model, "reads", "tokens") == "texts" else "torch"
