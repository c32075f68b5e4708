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
