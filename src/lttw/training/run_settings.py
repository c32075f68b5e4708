"""The parameter groups one training run reads (``fold.train_run``; the train and final
stages build them from ``params.yaml`` with ``RunSettings.of``), and the run's fingerprint."""

from __future__ import annotations

import dataclasses
import hashlib
import json
from dataclasses import dataclass

from lttw.settings import (
    CountSettings,
    DataSettings,
    FoldSettings,
    ModelSettings,
    NMFSettings,
    Settings,
    TrainSettings,
    WordSettings,
)


@dataclass(frozen=True)
class RunSettings:
    """What one training run reads of the parameters: ``seed``, ``model`` (the classifier),
    ``train`` (the loop), ``words`` and ``counts`` (how the fold's words were split and
    counted: the TF-IDF fit and the model folder's lttw.json read them). ``data``, ``folds``
    and ``nmf`` made the run's input files: only its ``fingerprint`` reads them."""

    seed: int
    model: ModelSettings
    train: TrainSettings
    words: WordSettings
    counts: CountSettings
    data: DataSettings
    folds: FoldSettings
    nmf: NMFSettings

    @classmethod
    def of(cls, settings: Settings) -> RunSettings:
        """The groups of ``settings`` (every parameter but ``final``)."""
        return cls(
            seed=settings.seed,
            model=settings.model,
            train=settings.train,
            words=settings.words,
            counts=settings.counts,
            data=settings.data,
            folds=settings.folds,
            nmf=settings.nmf,
        )

    def with_variant(self, variant: str) -> RunSettings:
        """The same run with ``model.variant`` ``variant`` (an ensemble's part)."""
        return dataclasses.replace(self, model=self.model.model_copy(update={"variant": variant}))

    def with_train(self, **values) -> RunSettings:
        """The same run with these ``train`` parameters changed (the final model's epochs)."""
        return dataclasses.replace(self, train=self.train.model_copy(update=values))

    def fingerprint(self, run: int | str) -> str:
        """What defines this training run (``run``: the fold, or "final"); a checkpoint of
        another run is never resumed. The same value as of the whole parameters' groups
        before this class existed: a checkpoint written then is resumed."""
        relevant = {
            "seed": self.seed,
            **{
                name: getattr(self, name).model_dump()
                for name in ("data", "folds", "words", "counts", "nmf", "model", "train")
            },
        }
        for how in ("log_every", "launcher", "checkpoint_storage"):  # where, not what, it trains
            relevant["train"].pop(how, None)
        if relevant["train"].get("class_weight") == "none":  # as before the parameter existed
            relevant["train"].pop("class_weight")
        if relevant["model"].get("vocab") == "encoder":  # as before these parameters existed
            relevant["model"].pop("vocab")
            relevant["model"].pop("word_vectors", None)
        blob = json.dumps({"fold": run, **relevant}, sort_keys=True).encode()
        return hashlib.sha256(blob).hexdigest()[:16]
