"""Class probabilities from a trained model folder: on the pipeline's cached tensors
(evaluate stage) or on raw texts (``lttw predict``)."""

from __future__ import annotations

from pathlib import Path

import numpy as np

from .bundle import META
from .fold_data import EVAL_PARTS, FoldInputs, load_tensors
from .io import read_json
from .settings import NON_NEURAL_VARIANTS, TrainSettings


def model_variant(model_dir: str | Path) -> str:
    return read_json(Path(model_dir) / META)["variant"]


def predict_cached_parts(model_dir: str | Path, inputs: FoldInputs, fold: int,
                         train_settings: TrainSettings) -> dict[str, np.ndarray]:
    """Probabilities (n, p) for the fold's test part and the held-out test / predict samples."""
    if model_variant(model_dir) in NON_NEURAL_VARIANTS:
        from .tfidf import TfidfLinear

        model = TfidfLinear.load(model_dir)
        return {part: model.predict_proba(inputs.part_texts(part)) for part in EVAL_PARTS}
    from .device import make_runtime
    from .registry import load_model
    from .training import predict_proba

    rt = make_runtime(train_settings)
    model = load_model(model_dir).to(rt.device)
    batches = load_tensors(inputs, fold)
    return {part: predict_proba(model, batches[part], rt, train_settings.eval_batch_size,
                                progress=True) for part in EVAL_PARTS}
