"""The parameter groups one training run reads (``fold.train_run``; the train and final
stages build them from ``params.yaml`` with ``RunSettings.of``), and the run's fingerprint."""

from __future__ import annotations

import dataclasses
import hashlib
import json
from dataclasses import dataclass

from lttw.settings import CountSettings, ModelSettings, Settings, TrainSettings, WordSettings

#: the groups that made a run's input files (the sample, the folds, the factors): a run
#: does not read them, but a change of any of them makes another run
INPUT_GROUPS = ("data", "folds", "nmf")
#: ``train`` parameters that say where and how a run trains, not what it trains
WHERE_IT_TRAINS = ("log_every", "launcher", "checkpoint_storage")


def _digest(doc: dict) -> str:
    return hashlib.sha256(json.dumps(doc, sort_keys=True).encode()).hexdigest()[:16]


@dataclass(frozen=True)
class RunSettings:
    """What one training run reads of the parameters: ``seed``, ``model`` (the classifier),
    ``train`` (the loop), ``words`` and ``counts`` (how the fold's words were split and
    counted: the TF-IDF fit and the model folder's lttw.json read them); ``inputs``, a digest
    of the groups that made the run's input files (``INPUT_GROUPS``), which only its
    ``fingerprint`` reads."""

    seed: int
    model: ModelSettings
    train: TrainSettings
    words: WordSettings
    counts: CountSettings
    inputs: str

    @classmethod
    def of(cls, settings: Settings) -> RunSettings:
        """The groups of ``settings`` that a training run reads."""
        made_inputs = {name: getattr(settings, name).model_dump() for name in INPUT_GROUPS}
        return cls(
            seed=settings.seed,
            model=settings.model,
            train=settings.train,
            words=settings.words,
            counts=settings.counts,
            inputs=_digest(made_inputs),
        )

    def with_variant(self, variant: str) -> RunSettings:
        """The same run with ``model.variant`` ``variant`` (an ensemble's part)."""
        return dataclasses.replace(self, model=self.model.model_copy(update={"variant": variant}))

    def with_train(self, **values) -> RunSettings:
        """The same run with these ``train`` parameters changed (the final model's epochs)."""
        return dataclasses.replace(self, train=self.train.model_copy(update=values))

    def fingerprint(self, run: int | str) -> str:
        """What defines this training run (``run``: the fold, or "final"): a checkpoint of
        another run is never resumed."""
        train = self.train.model_dump(exclude=set(WHERE_IT_TRAINS))
        return _digest(
            {
                "run": run,
                "seed": self.seed,
                "inputs": self.inputs,
                "model": self.model.model_dump(),
                "train": train,
                "words": self.words.model_dump(),
                "counts": self.counts.model_dump(),
            }
        )
