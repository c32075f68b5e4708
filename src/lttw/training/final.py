"""The final model (the ``final`` stage): ``model.variant`` retrained on every labelled row of
the train sample (every fold's train + val + test parts) for the number of epochs the folds'
early stopping chose, written to ``models/final`` in the folds' model-folder format.

The epoch count is the median over the folds in ``folds.run`` of the epochs up to each fold's
best validation epoch (``best_epoch + 1`` in ``metrics/train/fold_N.json``), rounded up. The
schedule (warm-up, linear decay) is planned for exactly that many epochs; nothing is held out,
so there is no early stopping and the last epoch's weights are kept. Nor is there a validation
part to calibrate on: calibration.json (the temperature; multi-label: the per-label thresholds;
an ensemble: also its weights) is the first fold's, fitted on its validation part
(``CALIBRATION_RULE``). The word counts, NMF factors and factor tensors are those of all the
rows (the fold stages' library functions on every row; the rows' own factors cross-fitted as
``model.train_factors`` says).

With ``final.enabled: false`` ``models/final`` is the first fold's model folder, its
``lttw.json`` saying so. Either way the final model's quality estimate is the folds'
held-out metrics; a trained one is also measured on the held-out test sample (no row of which
is in the train sample), as ``lttw predict`` would answer: ``test`` in its record.
"""

from __future__ import annotations

import logging
import math
import shutil
import statistics
import tempfile
import time
from collections.abc import Callable
from dataclasses import replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from lttw import layout
from lttw.data.folds import read_fold_parts
from lttw.errors import UserError
from lttw.io import atomic_dir, read_json, write_arrays, write_json
from lttw.settings import check_batch_size

if TYPE_CHECKING:
    from lttw.settings import FinalSettings
    from lttw.training.run_outputs import RunPaths
    from lttw.training.run_settings import RunSettings

log = logging.getLogger(__name__)

#: the model folder's metadata file, ``lttw.models.bundle.META`` (not imported from there: the
#: ``lttw.models`` package imports torch and every variant)
META = "lttw.json"
FINAL_MODEL_DIR = layout.FINAL_MODEL_DIR
FINAL_METRICS = layout.FINAL_METRICS
FINAL_CHECKPOINTS = layout.CHECKPOINTS_DIR / "final"
#: how the final model's quality is estimated (metrics/summary.json and `lttw report` say so)
QUALITY = (
    "the folds' held-out metrics; with final.enabled, also the final model's own on the "
    "held-out test sample (test), none of whose rows it trained on"
)
EPOCHS_RULE = (
    "median over folds.run of the epochs up to each fold's best validation macro-F1 "
    "(metrics/train/fold_N.json best_epoch + 1), rounded up"
)
#: where the final model's calibration.json comes from: it has no validation part to fit one
CALIBRATION_RULE = (
    "the first fold's (folds.run[0]): its temperature or per-label thresholds, fitted on its "
    "validation part (an ensemble: also its weights)"
)
#: ... unless train.threshold_cv tunes its per-label thresholds by cross-validation
CV_CALIBRATION_RULE = (
    "its own: per-label thresholds tuned on {k}-fold out-of-fold probabilities of the rows "
    "it trains on (train.threshold_cv)"
)


def chosen_epochs(folds: list[int]) -> tuple[int, dict[str, int]]:
    """The final model's epoch count (see ``EPOCHS_RULE``) and each fold's best epoch count."""
    per_fold = {}
    for fold in folds:
        path = layout.train_metrics(fold)
        if not path.is_file():
            raise UserError(f"{path}: missing; run the train stage for fold {fold}")
        best = read_json(path).get("best_epoch")
        if not isinstance(best, int) or best < 0:
            raise UserError(f"{path}: no best_epoch (rerun the train stage for fold {fold})")
        per_fold[str(fold)] = best + 1
    return math.ceil(statistics.median(per_fold.values())), per_fold


def write_final_model(
    settings: RunSettings, final: FinalSettings, measure: Callable[[Any], dict] | None = None
) -> dict:
    """The final stage's work: ``models/final`` and ``metrics/final.json``; returns the
    record written to both (in the model folder's ``lttw.json`` as ``final``). ``measure``:
    called with the rows' ``FoldInputs`` once a final model is trained, its dict joins the
    record (the stage passes ``inference.held_out.held_out_test``: training does not import
    inference). ``final``: whether to train it (``final.enabled``) or copy the first fold's."""
    if final.enabled:
        record = _train_final(settings, measure)
    else:
        record = _copy_first_fold(settings.folds.run[0])
    write_json(FINAL_METRICS, record)
    return record


def _copy_first_fold(fold: int) -> dict:
    """``final.enabled: false``: the first fold's model folder, marked as such."""
    source = layout.model_dir(fold)
    if not (source / META).is_file():
        raise UserError(f"{source}: no model folder; run the train stage for fold {fold}")
    record = {
        "enabled": False,
        "model": FINAL_MODEL_DIR.as_posix(),
        "copy_of": f"{source.as_posix()} (final.enabled is false)",
        "trained_on": int(read_fold_parts(layout.FOLDS_PARQUET, fold)["train"].size),
        "rows": f"fold {fold}'s train part",
        "quality": QUALITY,
    }
    with atomic_dir(FINAL_MODEL_DIR) as tmp:
        shutil.copytree(source, tmp, dirs_exist_ok=True)
        write_json(tmp / META, {**read_json(tmp / META), "final": record})
    return record


def _train_final(settings: RunSettings, measure: Callable[[Any], dict] | None) -> dict:
    # imported here: torch, scikit-learn and the factor code cost seconds of start-up that
    # the copy of ``final.enabled: false`` (the tiny profiles, quick experiments) never uses
    from lttw.data.fold_inputs import load_fold_inputs
    from lttw.training.fold import train_run

    epochs, per_fold = chosen_epochs(settings.folds.run)
    inputs = load_fold_inputs(settings.folds.run[0])
    everything = np.arange(len(inputs.labels["train"]), dtype=np.int64)
    none = np.zeros(0, dtype=np.int64)
    inputs = replace(inputs, parts={"train": everything, "val": none, "fold_test": none})
    check_batch_size(everything.size, settings.train.batch_size)
    settings = settings.with_train(epochs=epochs, max_epochs=epochs, min_steps=0, patience=0)
    record = {
        "enabled": True,
        "model": FINAL_MODEL_DIR.as_posix(),
        "trained_on": int(everything.size),
        "rows": "every labelled row of the train sample (every fold's train + val + test parts)",
        "epochs": epochs,
        "epochs_rule": EPOCHS_RULE,
        "fold_best_epochs": per_fold,
        "calibration": (
            CV_CALIBRATION_RULE.format(k=settings.train.threshold_cv)
            if settings.train.threshold_cv
            else CALIBRATION_RULE
        ),
        "quality": QUALITY,
    }
    log.info(
        "final model: %s on %d rows for %d epochs (%s)",
        settings.model.variant,
        everything.size,
        epochs,
        EPOCHS_RULE,
    )
    # the checkpoint's fingerprint covers the settings, not the rows: a checkpoint of an
    # earlier sample must not be resumed (a killed final run starts over)
    shutil.rmtree(FINAL_CHECKPOINTS, ignore_errors=True)
    with tempfile.TemporaryDirectory(prefix="lttw-final-") as work:
        paths = _factor_inputs(settings, inputs, Path(work))
        t0 = time.perf_counter()
        summary = train_run(settings, "final", inputs, paths, extra_meta={"final": record})
    train_time = time.perf_counter() - t0
    return {
        **record,
        "train_time_s": train_time,
        "time_per_epoch_s": summary["time_per_epoch_s"],
        "device": summary["device"],
        **(measure(inputs) if measure is not None else {}),
    }


def _factor_inputs(settings: RunSettings, inputs, work: Path) -> RunPaths:
    """Counts (and the word-splitting rule), NMF factors and factor tensors of every labelled
    row, in ``work``: what the counts, nmf and features stages write for a fold."""
    from lttw.factors.counts import write_part_counts
    from lttw.factors.features import empty_features
    from lttw.factors.nmf import factor_counts_folder
    from lttw.factors.tensors import factor_tensors
    from lttw.training.run_outputs import RunPaths

    rows = inputs.parts["train"]
    labels = inputs.labels["train"]
    labels_info = read_json(layout.LABELS_JSON)
    counts, nmf, features = work / "counts", work / "nmf", work / "factors.safetensors"
    counts.mkdir()
    nmf.mkdir()
    write_part_counts(
        counts,
        inputs.texts["train"],
        labels,
        inputs.n_labels,
        settings.words.splitter,
        settings.counts,
        labels_info.get("language"),
    )
    metadata = None
    if settings.model.uses_factors:
        factor_counts_folder(counts, nmf, settings.nmf, settings.seed)
        arrays, metadata = factor_tensors(
            inputs.texts,
            rows,
            labels,
            inputs.n_labels,
            counts,
            nmf,
            model=settings.model,
            counts=settings.counts,
            nmf=settings.nmf,
            seed=settings.seed,
        )
    else:
        arrays = {split: empty_features(len(t)) for split, t in inputs.texts.items()}
    write_arrays(features, metadata=metadata, **arrays)
    first_fold = layout.model_dir(settings.folds.run[0])  # its calibration: see CALIBRATION_RULE
    return RunPaths(
        counts, nmf, features, FINAL_CHECKPOINTS, FINAL_MODEL_DIR, None, None, first_fold
    )
