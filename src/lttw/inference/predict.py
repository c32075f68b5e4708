"""Class probabilities from a trained model folder: on the pipeline's cached tensors
(evaluate stage) or on raw texts (``lttw predict``)."""

from __future__ import annotations

from pathlib import Path

import numpy as np

from lttw.models.bundle import META
from lttw.data.fold_inputs import EVAL_PARTS, FoldInputs, load_tensors
from lttw.io import read_json
from lttw.settings import NON_NEURAL_VARIANTS, CountSettings, TrainSettings


def model_variant(model_dir: str | Path) -> str:
    return read_json(Path(model_dir) / META)["variant"]


def predict_cached_parts(model_dir: str | Path, inputs: FoldInputs, fold: int,
                         train_settings: TrainSettings) -> dict[str, np.ndarray]:
    """Probabilities (n, p) for the fold's test part and the held-out test / predict samples."""
    if model_variant(model_dir) in NON_NEURAL_VARIANTS:
        from lttw.models.tfidf import TfidfLinear

        model = TfidfLinear.load(model_dir)
        return {part: model.predict_proba(inputs.part_texts(part)) for part in EVAL_PARTS}
    from lttw.device import make_runtime
    from lttw.models.registry import load_model
    from lttw.training.loop import predict_proba

    rt = make_runtime(train_settings)
    model = load_model(model_dir).to(rt.device)
    batches = load_tensors(inputs, fold)
    return {part: predict_proba(model, batches[part], rt, train_settings.eval_batch_size,
                                progress=True) for part in EVAL_PARTS}


class Predictor:
    """A model folder (see ``lttw.bundle``) that classifies raw texts by itself.

    >>> p = Predictor.load("models/fold_0")
    >>> p.predict_proba(["Stocks rally as oil prices fall"])  # (1, n_labels)
    """

    def __init__(self, folder: Path, meta: dict, classes: list[str], model, tokenizer=None,
                 lookup=None, runtime=None):
        self.folder, self.meta, self.classes = folder, meta, classes
        self.model, self.tokenizer, self.lookup, self.runtime = model, tokenizer, lookup, runtime

    @classmethod
    def load(cls, folder: str | Path, device: str = "cpu") -> "Predictor":
        from lttw.models.bundle import FACTORS, LABELS, TOKENIZER
        from lttw.errors import UserError

        folder = Path(folder)
        if not (folder / META).is_file():
            raise UserError(f"{folder}: not a trained model folder (no {META}); run `dvc repro` "
                            "or pass --model DIR")
        meta = read_json(folder / META)
        classes = read_json(folder / LABELS)["classes"]
        if meta["variant"] in NON_NEURAL_VARIANTS:
            from lttw.models.tfidf import TfidfLinear

            return cls(folder, meta, classes, TfidfLinear.load(folder))
        from lttw.device import make_runtime
        from lttw.text.encoder import load_tokenizer
        from lttw.factors.features import FactorLookup
        from lttw.models.registry import load_model

        runtime = make_runtime(TrainSettings(device=device, bf16=False))
        lookup = None
        if meta.get("with_factors"):
            lookup = FactorLookup.load(folder / FACTORS, folder / FACTORS,
                                       CountSettings(**meta["counts"]))
        return cls(folder, meta, classes, load_model(folder).to(runtime.device),
                   load_tokenizer(folder / TOKENIZER), lookup, runtime)

    def factors(self, texts: list[str]) -> np.ndarray | None:
        if self.lookup is None:
            return None
        return self.lookup.transform(texts, self.meta["k"], self.meta["s"], self.meta["ranking"])

    def predict_proba(self, texts: list[str], batch_size: int = 64) -> np.ndarray:
        """(len(texts), n_labels) float32 class probabilities."""
        if self.tokenizer is None:
            return self.model.predict_proba(list(texts)).astype(np.float32)
        import torch

        from lttw.text.tokens import encode_texts
        from lttw.data.batching import Batchable
        from lttw.training.loop import predict_proba

        ids, mask = encode_texts(self.tokenizer, list(texts), self.meta["max_len"])
        f = self.factors(list(texts))
        data = Batchable(torch.from_numpy(ids), torch.from_numpy(mask),
                         None if f is None else torch.from_numpy(f),
                         torch.zeros(len(texts), dtype=torch.long))
        return predict_proba(self.model, data, self.runtime, batch_size)
