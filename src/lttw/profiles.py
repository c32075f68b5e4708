"""The parameter profiles of ``lttw init --profile``: what a new project's ``params.yaml``
changes from lttw's shipped defaults (dotted names, each validated as every parameter is).

* ``quick``: a first run in minutes on a laptop CPU, whatever the data's size: one epoch of
  at most ``QUICK_STEPS`` optimiser steps on texts cut to 64 tokens, fewer NMF iterations,
  and no retraining for ``models/final`` (the first fold's model is the one to deploy). Its
  figures are a smoke test of the data and the set-up, not the model's quality.
* ``default``: the shipped defaults (one fold, the train stage's own epoch plan, the final
  model retrained on every labelled row).
* ``paper``: the paper's protocol (ten folds, batch 128, learning rate 2e-5 for the encoder
  and the new layers, 3 epochs, NMF rank 5, k = s = 10, 128 tokens): hours on a GPU.
"""

from __future__ import annotations

#: optimiser steps of the quick profile's one epoch
QUICK_STEPS = 150

PROFILES: dict[str, dict[str, object]] = {
    "quick": {
        "model.max_len": 64,
        "nmf.max_iter": 100,
        "train.epochs": 1,
        "train.min_steps": 0,
        "train.max_epochs": 1,
        "train.max_steps": QUICK_STEPS,
        "train.patience": 0,
        "final.enabled": False,
    },
    "default": {},
    "paper": {
        "folds.run": list(range(10)),
        "model.max_len": 128,
        "train.batch_size": 128,
        "train.lr": 2.0e-5,
        "train.head_lr": 2.0e-5,
        "train.epochs": 3,
        "nmf.rank": 5,
        "model.k": 10,
        "model.s": 10,
    },
}

DESCRIPTIONS = {
    "quick": "a first run in minutes on a laptop CPU (one short epoch; a smoke test)",
    "default": "lttw's defaults (one fold; the final model retrained on every row)",
    "paper": "the paper's protocol: ten folds, batch 128, lr 2e-5 (hours on a GPU)",
}

#: below this many rows in its rarest class a single-label dataset is *small*: ``lttw init``
#: fits the folds, the training and the variant to it (``fit_to_data``), measured at 8 and 64
#: texts a class (docs/evidence/results.md, "Few labelled texts")
SMALL_PER_CLASS = 100
#: the most folds (the shipped ``folds.n_folds``); a small dataset gets fewer where a class
#: has fewer rows
MAX_FOLDS = 10
#: the fewest folds the folds stage takes (``folds.n_folds >= 3``)
MIN_FOLDS = 3
#: the largest train batch (the shipped ``train.batch_size``)
MAX_BATCH = 32
#: the optimiser steps of a small dataset's training: a step of its linear head on the frozen
#: encoder's states costs milliseconds, and the shipped ``train.min_steps`` (60) at the head's
#: learning rate leave it short of convergence on a few texts a class
SMALL_STEPS = 300


def fit_to_data(per_class: list[int], test_split: bool) -> list[tuple[str, object, str]]:
    """The parameters ``lttw init`` sets for a small single-label dataset (its rarest class
    under ``SMALL_PER_CLASS`` rows; ``per_class``: the rows of each class the train sample
    takes, ``test_split``: whether the data has its own test split), each with the reason;
    empty for larger data, or one whose rarest class is under ``MIN_FOLDS`` rows (the folds
    stage cannot split it: ``lttw init`` refuses it)."""
    rarest, rows = min(per_class), sum(per_class)
    if rarest >= SMALL_PER_CLASS or rarest < MIN_FOLDS:
        return []
    n_folds = min(MAX_FOLDS, rarest)
    train_rows = rows * (n_folds - 2) // n_folds - len(per_class)  # a fold's train part, at least
    batch = max(1, min(MAX_BATCH, train_rows // 2))
    plan: list[tuple[str, object, str]] = []
    if not test_split:
        plan.append(("data.test_size", 0, "no test sample carved: every row is in the folds"))
    plan += [
        (
            "folds.n_folds",
            n_folds,
            f"every class in every fold's test part ({rarest} rows in the rarest)",
        ),
        (
            "folds.run",
            list(range(n_folds)),
            "every fold: each row is held out once, so the estimate is out-of-fold over every row, with its interval",
        ),
        (
            "train.batch_size",
            batch,
            f"at least two steps an epoch on a fold's ~{train_rows} train rows",
        ),
        ("train.min_steps", SMALL_STEPS, "a linear head trained to convergence on few rows"),
        ("train.max_epochs", SMALL_STEPS, "enough epochs for train.min_steps on few rows"),
        (
            "train.keep",
            "last",
            "the last epoch's weights: a validation part of a row or two per class cannot "
            "choose an epoch",
        ),
        (
            "model.variant",
            "encoder",
            "word-label factors of so few texts are noise: the encoder and a linear head",
        ),
        (
            "train.freeze_encoder",
            True,
            "fine-tuning on so few texts overfits them: the pretrained encoder's states, "
            "computed once, and only the head trained",
        ),
        (
            "model.pooling",
            "mean",
            "a frozen encoder's text vector: the mean of its token states (as "
            "sentence-transformers encoders were trained), not its first token's",
        ),
    ]
    return plan
