"""Class probabilities from a trained model folder: on the pipeline's cached tensors
(evaluate stage) or on raw texts (``lttw predict``, ``explain``, ``serve``). Both check the
folder first (``models.folder_files``: files present, recorded checksums) and both run at
the precision the folder states (``models.bundle.PRECISION``: fp32, whatever train.bf16
says), so the pipeline's metrics and ``lttw predict`` give each text the same label."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any, cast

import numpy as np

from lttw.inference.scores import model_logits
from lttw.inference.text_lines import as_texts
from lttw.models.calibration import Calibration
from lttw.models.files import FACTORS, META
from lttw.models.trained import ARRAYS, TEXTS, TokenArrays, folder_classifier, predict_proba, reads
from lttw.settings import TrainSettings

if TYPE_CHECKING:  # imported where used: `lttw predict` needs neither pandas nor sklearn
    from lttw.data.fold_inputs import FoldInputs
    from lttw.models.model_folder import ModelFolder


#: how a torch model folder becomes one that answers without torch
ONNX_EXPORT = "`lttw export --model DIR --out OUT --onnx`"


def inference_runtime(device: str = "cpu", threads: int = 0):
    """The ``Runtime`` every prediction from a model folder runs in: ``device`` at the
    folder's precision (``ModelFolder.open`` checked it is ``bundle.PRECISION``, fp32: no
    bf16 autocast, and TF32 matrix products off on CUDA)."""
    from lttw.device import make_runtime

    settings = TrainSettings.model_validate(
        {"device": device, "bf16": False, "num_threads": threads}
    )
    runtime = make_runtime(settings)
    if runtime.device.type == "cuda":
        import torch

        torch.backends.cuda.matmul.allow_tf32 = False
        torch.backends.cudnn.allow_tf32 = False
    return runtime


def checked_meta(folder: str | Path) -> dict:
    """lttw.json of ``folder``, after checking it whole (``ModelFolder.open``): the evaluate
    stage's (``stages/evaluate.py``)."""
    from lttw.models.model_folder import ModelFolder

    return ModelFolder.open(folder).meta


def predict_cached_parts(
    model_dir: str | Path,
    inputs: FoldInputs,
    fold: int,
    train_settings: TrainSettings,
    calibration: Calibration | None = None,
) -> dict[str, np.ndarray]:
    """Probabilities (n, p) for the fold's test part and the held-out test / predict samples
    ((0, p) for an empty one), from the texts or the cached tensors, as the model reads
    (with ``train.freeze_encoder``: the encode stage's states, not the encoder), at the
    folder's precision (``inference_runtime``), after checking its files. ``calibration``:
    what turns the model's scores into probabilities (the evaluate stage passes the folder's,
    ``trained.folder_calibration``); None: the model's own (softmax)."""
    from lttw.models.model_folder import ModelFolder

    return _cached_parts(ModelFolder.open(model_dir), inputs, fold, train_settings, calibration)


def _cached_parts(
    opened: ModelFolder,
    inputs: FoldInputs,
    fold: int,
    train_settings: TrainSettings,
    calibration: Calibration | None = None,
) -> dict[str, np.ndarray]:
    from lttw.data.fold_inputs import EVAL_PARTS, load_tensors

    if opened.is_ensemble:  # each part predicts, calibrated, then combined
        from lttw.inference.ensemble_predict import ensemble_cached_parts

        return ensemble_cached_parts(opened, inputs, fold, train_settings, _cached_parts)
    meta = opened.meta
    rt = inference_runtime(train_settings.device, train_settings.num_threads)
    model = folder_classifier(opened, rt.device)
    if reads(model) == TEXTS:
        parts: dict[str, Any] = {part: inputs.part_texts(part) for part in EVAL_PARTS}
    else:  # the encoder's cached tokens, or word ids over the folder's own vocabulary
        words = opened.vocabulary
        max_len = None if words is None else meta["max_len"]
        parts = load_tensors(
            inputs, fold, words, max_len, frozen_encoder=train_settings.freeze_encoder
        )
    return {
        part: predict_proba(
            model,
            parts[part],
            rt,
            train_settings.eval_batch_size,
            progress=True,
            calibration=calibration,
        )
        for part in EVAL_PARTS
    }


def model_words(folder: Path, meta: dict):
    """The word-splitting rule a model folder was trained with: lttw.json's ``words`` (a
    one-line error naming lttw.json where it is missing or malformed)."""
    from lttw.text.words import WordSplitter

    return WordSplitter.from_record(meta.get("words"), str(Path(folder) / META))


def factor_lookup(folder: ModelFolder):
    """The ``FactorLookup`` of a folder that fuses latent factors, from the ``factors/``
    files it read and lttw.json's word rule (imported here: scikit-learn only where it is
    needed)."""
    from lttw.factors.counts import COUNTS_FILE, VOCABULARY_FILE
    from lttw.factors.features import FactorLookup
    from lttw.factors.nmf import FACTORS_FILE

    files = folder.files
    return FactorLookup.from_content(
        files.files[f"{FACTORS}/{COUNTS_FILE}"],
        files.json(f"{FACTORS}/{VOCABULARY_FILE}"),
        files.files[f"{FACTORS}/{FACTORS_FILE}"],
        files.where(FACTORS),
        model_words(folder.path, folder.meta),
    )


class Predictor:
    """A single model folder's ``Classifier`` (``inference.loading``) of raw texts: torch,
    TF-IDF or ONNX, as its ``model``, built from the checked ``ModelFolder`` (the bytes it
    read, never the path). Its probabilities go through the folder's calibration
    (``models.calibration``: a temperature, or a multi-label folder's sigmoid and per-class
    thresholds); a folder without calibration.json predicts with the model's own softmax.

    >>> p = Predictor.load("models/fold_0")
    >>> p.predict_proba(["Stocks rally as oil prices fall"])  # (1, n_labels)
    >>> p.predict(["Stocks rally as oil prices fall"])  # ["Business"], or [["a", "b"]]
    """

    def __init__(self, opened: ModelFolder, device: str = "cpu", load_model=None):
        """The classifier of a checked single-model ``ModelFolder`` on ``device``.
        ``load_model(folder)``: what runs the classifier from the ``ModelFolder`` instead of
        its torch weights (e.g. ``models.onnx_classifier``'s session over the folder's ONNX
        graph, which needs no torch); the rest (tokenizer, factor lookup, calibration) is the
        folder's own either way. A folder that needs a package this install leaves out
        (torch, under ``pip install lttw``) raises a UserError saying what to install or
        export. Only the package's own errors say what is wrong with a folder: any other is
        a bug, raised."""
        from lttw.errors import UserError, missing_extra

        self.folder, self.meta, self.classes = opened.path, opened.meta, opened.classes
        self.tokenizer = opened.tokenizer
        self.words = opened.vocabulary  # a WordVocabulary where the model reads word ids
        #: how scores become probabilities and labels (a folder without calibration.json:
        #: the defaults, softmax at temperature 1 or, multi-label, sigmoid at 0.5)
        self.calibration: Calibration = opened.calibration
        self.lookup: Any = None
        self.runtime: Any = None
        try:
            self.model = self._built(opened, device, load_model or folder_classifier)
        except ModuleNotFoundError as err:
            missing = missing_extra(err)
            if missing is None:
                raise
            if (err.name or "").split(".")[0] == "torch":
                raise UserError(
                    f"{opened.path}: its torch weights need torch, which this install leaves "
                    f"out: pip install 'lttw[train]', or export the folder to ONNX where torch "
                    f"is installed ({ONNX_EXPORT}) and load the export"
                ) from None
            raise UserError(f"{opened.path}: {missing}") from None

    def _built(self, folder: ModelFolder, device: str, load_model):
        model = load_model(folder)
        if reads(model) == TEXTS:
            return model
        if folder.meta.get("with_factors"):
            self.lookup = factor_lookup(folder)
        if reads(model) == ARRAYS:  # runs itself on the CPU: no torch runtime
            return model.to(device)
        self.runtime = inference_runtime(device)
        return model.to(self.runtime.device)

    @property
    def multi_label(self) -> bool:
        """Whether each text gets a list of labels (lttw.json ``multi_label``)."""
        return self.calibration.multi_label

    @classmethod
    def load(cls, folder: str | Path, device: str = "cpu", load_model=None) -> Predictor:
        """The model folder, opened and checked once (``models.model_folder.ModelFolder``),
        then built: ``from_folder``."""
        from lttw.models.model_folder import ModelFolder

        return cls.from_folder(ModelFolder.open(folder), device, load_model)

    @classmethod
    def from_folder(cls, folder: ModelFolder, device: str = "cpu", load_model=None) -> Predictor:
        """The classifier of a checked ``ModelFolder``: a ``Predictor``, or for an ensemble
        an ``EnsemblePredictor`` of its parts' (duck-typed as a ``Predictor``)."""
        if not folder.is_ensemble:
            return cls(folder, device, load_model)
        from lttw.inference.ensemble_predict import EnsemblePredictor

        parts = [cls(part, device, load_model) for part in folder.parts]
        return cast(Predictor, EnsemblePredictor(folder, parts))

    def factors(self, texts: list[str]) -> np.ndarray | None:
        if self.lookup is None:
            return None
        return self.lookup.transform(texts, self.meta["k"], self.meta["s"], self.meta["ranking"])

    def predict_logits(self, texts: list[str], batch_size: int = 64) -> np.ndarray:
        """(len(texts), n_labels) float32 scores before calibration (``model_logits``)."""
        texts = as_texts(texts)
        return model_logits(self.model, self.model_inputs(texts), self.runtime, batch_size)

    def predict_proba(self, texts: list[str], batch_size: int = 64) -> np.ndarray:
        """(len(texts), n_labels) float32 calibrated class probabilities (one string: one
        text, one row): single-label a
        softmax (at the folder's temperature), multi-label a sigmoid per class; a folder
        without calibration.json gives exactly the model's own softmax, as before."""
        texts = as_texts(texts)
        if self.calibration == Calibration():
            return predict_proba(
                self.model, self.model_inputs(texts), self.runtime, batch_size
            ).astype(np.float32)
        return self.calibration.probabilities(self.predict_logits(texts, batch_size))

    def predict(
        self, texts: list[str], batch_size: int = 64, min_prob: float | None = None
    ) -> list[str | None] | list[list[str]]:
        """The label of each text (single-label: the most probable class; None where its
        probability is below ``min_prob``), or for a multi-label folder the list of labels
        of each text (those reaching their thresholds and ``min_prob``, most probable
        first): ``inference.answers.chosen_ids``."""
        from lttw.inference.answers import check_min_prob, chosen_ids

        check_min_prob(min_prob, "min_prob")
        ids = chosen_ids(self.calibration, self.predict_proba(texts, batch_size), min_prob)
        if self.multi_label:
            return [[self.classes[i] for i in row] for row in ids]
        return [self.classes[row[0]] if row else None for row in ids]

    def model_inputs(self, texts: list[str]):
        """What the model reads: the texts themselves, or their tokens and factor rows."""
        if reads(self.model) == TEXTS:
            return texts
        from lttw.encoder.tokens import encode_texts

        if self.words is not None:
            ids, mask = self.words.ids(list(texts), self.meta["max_len"])
        else:
            ids, mask = encode_texts(self.tokenizer, list(texts), self.meta["max_len"])
        if reads(self.model) == ARRAYS:
            return TokenArrays(ids, mask, self.factors(list(texts)))
        from lttw.data.batching import Batchable

        return Batchable.unlabelled(ids, mask, self.factors(list(texts)))
