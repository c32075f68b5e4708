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

``final.rows: all`` (the default) also trains it on a test (and predict) sample carved
from the user's own rows, so that every labelled row they gave is in the deployed model; an
official test split stays held out. ``train_sample`` keeps a carved test sample out.

With ``final.enabled: false`` ``models/final`` is the first fold's model folder, its
``lttw.json`` saying so. Either way the record's ``estimate`` is the deployed model's macro F1
with its interval (``evaluation.estimate``): its own on a held-out test sample where it has
one (``test`` in the record, as ``lttw predict`` would answer), else the folds' pooled
out-of-fold figure. ``metrics/final.json`` holds the record's numbers; the prose (how the rows,
epochs and calibration were chosen) goes to the folder's ``lttw.json`` and its model card
(``training.final_card``).
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
import pandas as pd

from lttw import layout
from lttw.data import label_sets
from lttw.data.folds import read_fold_parts
from lttw.data.label_sets import is_multi_label, label_targets
from lttw.errors import UserError
from lttw.io import atomic_dir, read_json, write_arrays, write_json, write_metrics
from lttw.models.files import META
from lttw.settings import check_batch_size

if TYPE_CHECKING:
    from lttw.settings import FinalSettings, NMFSettings
    from lttw.training.run_outputs import RunPaths
    from lttw.training.run_settings import RunSettings

log = logging.getLogger(__name__)

FINAL_MODEL_DIR = layout.FINAL_MODEL_DIR
FINAL_METRICS = layout.FINAL_METRICS
FINAL_CHECKPOINTS = layout.CHECKPOINTS_DIR / "final"
#: the rows of a trained final model (``final.rows``)
ROWS = {
    "all": "every labelled row the user gave: the train sample (every fold's train + val + "
    "test parts) and the {joined} sample carved from the same rows",
    "train_sample": "every labelled row of the train sample (every fold's train + val + "
    "test parts)",
}
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
    settings: RunSettings,
    final: FinalSettings,
    folds: list[int],
    nmf: NMFSettings,
    measure: Callable[[Any], dict] | None = None,
    card: Callable[[Path, dict, dict], None] | None = None,
) -> dict:
    """The final stage's work: ``models/final`` and ``metrics/final.json``; returns the
    record (numbers, the metrics file; with its prose, the model folder's ``lttw.json``
    ``final``). ``measure``: called with the rows' ``FoldInputs`` once a final model is
    trained, its dict (``test`` and ``estimate`` where it has a held-out test sample) joins
    the record (the stage passes ``inference.held_out.held_out_test``: training does not
    import inference). ``card``: called with the model folder, the record and its prose, to
    write the model card and record its checksums (``training.final_card``). ``final``: whether
    to train it (``final.enabled``) or copy the first fold's, and on which rows; ``folds``:
    ``folds.run``; ``nmf``: the ``nmf`` group (the rows' latent factors)."""
    if final.enabled:
        record, about = _train_final(settings, final.rows, folds, nmf, measure)
    else:
        record, about = _copy_first_fold(folds[0])
    if "estimate" not in record:
        record["estimate"] = _estimate(folds, record["classes"], settings.seed)
    about["estimate_source"] = "folds" if record["estimate"]["from_folds"] else "test"
    with atomic_dir(FINAL_MODEL_DIR) as tmp:
        shutil.copytree(FINAL_MODEL_DIR, tmp, dirs_exist_ok=True)
        write_json(tmp / META, {**read_json(tmp / META), "final": {**record, **about}})
        if card is not None:
            card(tmp, record, about)
    write_metrics(FINAL_METRICS, record)
    return record


def _estimate(folds: list[int], n_labels: int, seed: int) -> dict:
    """Where the final model has no held-out test figure of its own: the first fold's model
    on the held-out test sample where ``models/final`` is that model, else the folds'."""
    from lttw.evaluation.estimate import fold_estimate

    return fold_estimate(folds, n_labels, seed=seed)


def _copy_first_fold(fold: int) -> tuple[dict, dict]:
    """``final.enabled: false``: the first fold's model folder, marked as such; its record's
    estimate is its own on the held-out test sample (the evaluate stage's predictions)."""
    from lttw.evaluation.estimate import own_test_estimate

    source = layout.model_dir(fold)
    if not (source / META).is_file():
        raise UserError(f"{source}: no model folder; run the train stage for fold {fold}")
    n_rows, n_labels, counts = fold_train_counts(fold)
    record = {
        "enabled": False,
        "trained_on": n_rows,
        "classes": n_labels,
        **own_test_estimate(fold, n_labels),
    }
    about = {
        "model": FINAL_MODEL_DIR.as_posix(),
        "label_counts": counts,
        "copy_of": f"{source.as_posix()} (final.enabled is false)",
        "rows": f"fold {fold}'s train part",
        "calibration": f"fold {fold}'s own, fitted on its validation part",
    }
    with atomic_dir(FINAL_MODEL_DIR) as tmp:
        shutil.copytree(source, tmp, dirs_exist_ok=True)
    return record, about


def fold_train_counts(fold: int, root: Path = Path(".")) -> tuple[int, int, list[int]]:
    """Rows, classes and texts per class (``label_counts``) of fold ``fold``'s train part,
    in the project at ``root``."""
    info = read_json(root / layout.LABELS_JSON)
    n_labels = len(info["classes"])
    rows = read_fold_parts(root / layout.FOLDS_PARQUET, fold)["train"]
    column = pd.read_parquet(root / layout.sample_parquet("train"), columns=["label"])["label"]
    labels = label_targets(column, n_labels, is_multi_label(info))[rows]
    return int(rows.size), n_labels, label_counts(labels, n_labels)


def label_counts(labels: np.ndarray, n_labels: int) -> list[int]:
    """Texts per class of the rows a model trained on (multi-label: texts with the class),
    as a card lists them."""
    return label_sets.label_counts(labels, n_labels).tolist()


def _carved(rows: str) -> tuple[str, ...]:
    """The labelled samples a trained final model adds to the train sample (``final.rows``):
    with ``all``, the test and predict samples not drawn from an official test split."""
    if rows != "all":
        return ()
    info = read_json(layout.LABELS_JSON)
    pools, sizes = info.get("pools") or {}, info.get("sizes") or {}
    return tuple(
        split for split in ("test", "predict") if pools.get(split) != "test" and sizes.get(split)
    )


def _train_final(
    settings: RunSettings,
    rows: str,
    folds: list[int],
    nmf: NMFSettings,
    measure: Callable[[Any], dict] | None,
) -> tuple[dict, dict]:
    # imported here: torch, scikit-learn and the factor code cost seconds of start-up that
    # the copy of ``final.enabled: false`` (the tiny profiles, quick experiments) never uses
    from lttw.data.fold_inputs import join_samples, load_fold_inputs
    from lttw.training.fold import train_run

    epochs, per_fold = chosen_epochs(folds)
    joined = _carved(rows)
    inputs = join_samples(load_fold_inputs(folds[0]), joined)
    everything = np.arange(len(inputs.labels["train"]), dtype=np.int64)
    none = np.zeros(0, dtype=np.int64)
    inputs = replace(inputs, parts={"train": everything, "val": none, "fold_test": none})
    check_batch_size(everything.size, settings.train.batch_size)
    settings = settings.with_train(epochs=epochs, max_epochs=epochs, min_steps=0, patience=0)
    record = {
        "enabled": True,
        "trained_on": int(everything.size),
        "classes": inputs.n_labels,
        "epochs": epochs,
        "fold_best_epochs": per_fold,
    }
    about = {
        "model": FINAL_MODEL_DIR.as_posix(),
        "label_counts": label_counts(inputs.labels["train"], inputs.n_labels),
        "rows": ROWS["all" if joined else "train_sample"].format(joined=" and ".join(joined)),
        "epochs_rule": EPOCHS_RULE,
        "calibration": (
            CV_CALIBRATION_RULE.format(k=settings.train.threshold_cv)
            if settings.train.threshold_cv
            else CALIBRATION_RULE
        ),
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
        paths = _factor_inputs(settings, nmf, inputs, Path(work), first_fold=folds[0])
        t0 = time.perf_counter()
        summary = train_run(settings, "final", inputs, paths, extra_meta={"final": record})
    train_time = time.perf_counter() - t0
    about["device"] = summary["device"]
    record = {
        **record,
        "train_time_s": train_time,
        "time_per_epoch_s": summary["time_per_epoch_s"],
        **(measure(inputs) if measure is not None else {}),
    }
    return record, about


def _factor_inputs(
    settings: RunSettings, nmf_settings: NMFSettings, inputs, work: Path, first_fold: int
) -> RunPaths:
    """Counts (and the word-splitting rule), NMF factors and factor tensors of every labelled
    row, in ``work``: what the counts, nmf and features stages write for a fold; the
    calibration is ``first_fold``'s (``CALIBRATION_RULE``)."""
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
        factor_counts_folder(counts, nmf, nmf_settings, settings.seed)
        arrays, metadata = factor_tensors(
            inputs.texts,
            rows,
            labels,
            inputs.n_labels,
            counts,
            nmf,
            model=settings.model,
            counts=settings.counts,
            nmf=nmf_settings,
            seed=settings.seed,
        )
    else:
        arrays = {split: empty_features(len(t)) for split, t in inputs.texts.items()}
    write_arrays(features, metadata=metadata, **arrays)
    calibration_from = layout.model_dir(first_fold)
    return RunPaths(
        counts, nmf, features, FINAL_CHECKPOINTS, FINAL_MODEL_DIR, None, None, calibration_from
    )
