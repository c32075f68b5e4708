"""Train one fold's classifier (the ``train`` stage's work): read the fold's inputs, fit the
``model.variant`` (a torch classifier with the training loop, or ``tfidf_linear`` in one
pass), write the self-contained model folder, ``metrics/train/fold_N.json`` and the dvclive
curves. Both kinds go through the same steps; only the fit differs (``trained.reads``).
"""

from __future__ import annotations

import logging
import os
import time
from functools import partial

from lttw.data.fold_inputs import load_fold_inputs
from lttw.evaluation.metrics import validation_f1
from lttw.models.ensemble import ENSEMBLE_PARTS
from lttw.models.trained import TEXTS, predict_proba, variant_reads
from lttw.settings import check_batch_size
from lttw.text.words import read_rule
from lttw.training.checkpoint import Checkpointer
from lttw.training.ensemble import train_ensemble
from lttw.training.live import log_epoch
from lttw.training.multi_label import (
    check_threshold_cv,
    is_multi_label_run,
    refuse_single_label_only,
)
from lttw.training.run_outputs import RunPaths, open_run_live, write_run_outputs
from lttw.training.run_settings import RunSettings
from lttw.training.thresholds import cross_validated_thresholds
from lttw.training.torch_training import train_on_tokens

log = logging.getLogger(__name__)


def train_fold(settings: RunSettings, fold: int) -> dict:
    """Train fold ``fold``; returns the training summary (also written to
    ``metrics/train/fold_N.json``)."""
    launcher = settings.train.launcher
    if launcher.split()[0] == "torchrun" and not os.environ.get("WORLD_SIZE"):
        log.warning(
            "train.launcher is %r, but this process was not started by torchrun (no "
            "WORLD_SIZE): it trains alone",
            launcher,
        )
    inputs = load_fold_inputs(fold)
    check_batch_size(len(inputs.parts["train"]), settings.train.batch_size, fold)
    paths = RunPaths.of_fold(fold, settings.train.checkpoint_storage)
    return train_run(settings, fold, inputs, paths)


def train_run(
    settings: RunSettings, run: int | str, inputs, paths: RunPaths, extra_meta=None
) -> dict:
    """Train ``model.variant`` on ``inputs``' train part (early stopping on its val part; an
    empty val part: every epoch of the plan, the last one's weights) and write the model
    folder at ``paths.model``; ``run``: the fold (or "final"), as the model folder records
    it; ``extra_meta``: more keys for the folder's lttw.json. Returns the training summary.
    Multi-label ``inputs`` (2-D labels): binary cross-entropy, per-class thresholds tuned on
    the val part (``thresholds.tune_thresholds``) in the folder's calibration.json;
    single-label: a temperature fitted on the val part there (``calibrating``)."""
    multi_label = is_multi_label_run(inputs)
    if multi_label:
        refuse_single_label_only(settings.model.variant)
    check_threshold_cv(settings.train.threshold_cv, settings.model.variant, multi_label)
    if settings.model.variant in ENSEMBLE_PARTS:  # its parts, each trained by this function
        return train_ensemble(settings, run, inputs, paths, extra_meta, train_run)
    if variant_reads(settings.model.variant) == TEXTS:
        return _train_on_texts(settings, run, inputs, paths, extra_meta)
    return train_on_tokens(settings, run, inputs, paths, extra_meta)


def _train_on_texts(settings: RunSettings, fold, inputs, paths: RunPaths, extra_meta) -> dict:
    """A one-pass fit (tfidf_linear): one "epoch", scored on the validation part; with
    ``train.threshold_cv``, per-label thresholds tuned by cross-validation of the train part."""
    from lttw.models.tfidf import fit_tfidf_linear

    key = settings.fingerprint(fold)
    live = open_run_live(settings.seed, settings.model.variant, fold, key, paths)
    fit = partial(
        fit_tfidf_linear,
        n_labels=inputs.n_labels,
        linear_model=settings.model.linear_model,
        random_state=settings.seed,
        words=read_rule(paths.counts),
        auto=settings.words.splitter == "auto",
        class_weight="balanced" if settings.train.class_weight == "balanced" else None,
    )
    texts, labels = inputs.part_texts("train"), inputs.part_labels("train")
    t0 = time.perf_counter()
    model = fit(texts, labels)
    fit_s = time.perf_counter() - t0
    n_train = len(inputs.parts["train"])
    val_probs = predict_proba(model, inputs.part_texts("val"))
    val_f1 = validation_f1(inputs.part_labels("val"), val_probs)
    row = {
        "epoch": 0,
        "val_f1_macro": val_f1,
        "epoch_time_s": fit_s,
        "samples_per_s": n_train / fit_s,
        "samples": n_train,
        "step": 1,
    }
    summary = {
        "epochs_run": 1,
        "epochs_planned": 1,
        "best_epoch": 0,
        "best_val_f1_macro": val_f1,
        "val_f1_still_rising": False,
        "time_per_epoch_s": fit_s,
        "device": "cpu",
        "samples_per_s": n_train / fit_s,
        "seed": settings.seed,
    }
    if live is not None:
        live.log_metric("epoch_time_s", fit_s)  # one point, so the plots folder exists
    calibration = None
    if settings.train.threshold_cv:
        t0 = time.perf_counter()
        calibration = cross_validated_thresholds(
            fit,
            list(texts),
            labels,
            settings.train.threshold_cv,
            settings.seed,
            n_jobs=settings.train.num_threads or -1,
        )
        summary["threshold_cv_time_s"] = time.perf_counter() - t0
    log_epoch(live, [row])
    write_run_outputs(
        settings, fold, inputs, model, summary, live, paths, val_probs, extra_meta, calibration
    )
    # a one-pass fit has nothing to resume: the checkpoint folder only records that this
    # run is complete
    Checkpointer(paths.checkpoints, key).mark_complete()
    return summary
