"""LTTW: word-label NMF latent factors fused with a pretrained encoder, then Linformer attention.

Training runs through DVC (``lttw init DIR --data FILE``, then ``dvc repro``); a trained model
folder classifies texts in Python::

    from lttw import load_model

    model = load_model("models/final")        # any model folder; device "auto" | "cpu" | "cuda"
    model = load_model("org/name", revision="v1")  # a folder shared with `lttw push`
    model.predict(["Stocks rally as oil prices fall"])        # ['Business']
    model.predict_proba(["Stocks rally as oil prices fall"])  # (1, n_labels), model.classes

``import lttw`` stays cheap: the model code loads on the first ``load_model``. A folder with
``model.onnx`` (``lttw export --onnx``) runs on onnxruntime, as ``lttw predict`` and ``lttw
serve`` run it, and needs no torch (the slim install, ``pip install lttw``).
"""

from __future__ import annotations

from pathlib import Path

__version__ = "0.1.0"
__all__ = ["Predictor", "__version__", "load_model"]


def load_model(
    folder: str | Path = "models/final",
    device: str = "auto",
    backend: str = "auto",
    revision: str | None = None,
):
    """The ``lttw.Predictor`` of the trained model in ``folder`` (made by the pipeline's
    ``train`` / ``final`` stage or ``lttw export``; or a Hugging Face hub id ``org/name``
    pushed by ``lttw push``, downloaded at ``revision`` into the hub cache and checked
    like a local folder), ready to classify raw texts:
    ``predict(texts)`` gives the labels, ``predict_proba(texts)`` a (len(texts), n_labels)
    array over ``classes``. ``backend`` auto: onnxruntime where the folder holds
    ``model.onnx`` (on the CPU, whatever ``device`` says unless it names another device),
    torch otherwise; ``onnx`` or ``torch`` to choose. ``revision``: of a hub id. A folder
    that does not load raises ``lttw.errors.UserError`` naming the file and what is wrong."""
    from importlib import import_module

    loading = import_module("lttw.inference.loading")
    return loading.load_model(folder, device=device, backend=backend, revision=revision)


def __getattr__(name: str):
    """``lttw.Predictor``, imported on first use (PEP 562): ``import lttw`` loads no torch.
    By name, through importlib: every module imports this package, so a static import here
    would tie the package to the model code (tests/project/test_layering.py)."""
    if name == "Predictor":
        from importlib import import_module

        return import_module("lttw.inference.predict").Predictor
    raise AttributeError(f"module 'lttw' has no attribute {name!r}")
