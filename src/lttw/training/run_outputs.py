"""One training run's files (``lttw.training.fold``, ``lttw.training.final``): where it reads
its factors and writes its model (``RunPaths``), its dvclive curves and the model folder it
writes (the fingerprint that a checkpoint must match to be resumed:
``run_settings.RunSettings.fingerprint``)."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from lttw import layout
from lttw.io import atomic_dir, read_arrays_metadata, write_metrics
from lttw.models.bundle import write_model_folder
from lttw.models.calibration import Calibration, load_calibration, save_calibration
from lttw.models.files import CALIBRATION
from lttw.models.folder_files import record_checksums
from lttw.models.trained import save_classifier
from lttw.text.words import read_rule
from lttw.training.calibrating import temperature_calibration
from lttw.training.checkpoint import can_resume
from lttw.training.live import open_live
from lttw.training.multi_label import multi_label_record

if TYPE_CHECKING:
    from lttw.training.run_settings import RunSettings


@dataclass(frozen=True)
class RunPaths:
    """Where one training run reads its factors and writes its model: a fold's stage folders
    (``of_fold``), or the final model's (``lttw.training.final``). ``live`` / ``metrics``
    None: no dvclive curves / no training-metrics file."""

    counts: Path
    nmf: Path
    features: Path  # the factor tensors file
    checkpoints: Path
    model: Path
    metrics: Path | None
    live: Path | None
    #: a run without validation rows (the final model) takes calibration.json (an ensemble
    #: also its weights) from this model folder, trained on the same kind of data with them
    calibration_from: Path | None = None

    @classmethod
    def of_fold(cls, fold: int, checkpoint_root: str | None = None) -> RunPaths:
        """Fold ``fold``'s folders; its checkpoints under ``checkpoint_root`` where given
        (``train.checkpoint_storage``), else ``data/checkpoints``."""
        return cls(
            layout.counts_dir(fold),
            layout.nmf_dir(fold),
            layout.features_file(fold),
            layout.checkpoint_dir(fold)
            if checkpoint_root is None
            else layout.fold_dir(Path(checkpoint_root), fold),
            layout.model_dir(fold),
            layout.train_metrics(fold),
            layout.live_dir(fold),
        )


def factor_selection(features: Path) -> dict | None:
    """k, s and ranking of the factor tensors file ``features``, as the features stage
    recorded them (None: no latent factors). Read from there, not from the parameters, so
    that a variant without factors does not retrain when model.k changes."""
    meta = read_arrays_metadata(features)
    if "k" not in meta:
        return None
    return {"k": int(meta["k"]), "s": int(meta["s"]), "ranking": meta["ranking"]}


def open_run_live(seed: int, variant: str, fold, key: str, paths: RunPaths):
    """The run's dvclive curves (None where ``paths.live`` is None), resumed where its
    checkpoint (fingerprint ``key``) is; its params: ``seed``, ``fold`` and ``variant``."""
    if paths.live is None:
        return None
    return open_live(
        paths.live,
        {"seed": seed, "fold": fold, "variant": variant},
        resume=can_resume(paths.checkpoints, key),
    )


#: what a training summary says of the machine, in words: the model folder's lttw.json
#: ``trained_on`` (the training metrics file holds numbers only)
TRAINED_ON = ("device", "device_name", "bf16", "world_size")


def trained_on(summary: dict) -> dict:
    """The device (``cuda:0``, ``cpu``), the card's name, bf16 autocast and the number of
    processes a training run used, from its summary."""
    return {key: summary[key] for key in TRAINED_ON if key in summary}


def borrowed_file(paths: RunPaths, inputs, name: str) -> Path | None:
    """``paths.calibration_from / name`` where this run has no validation rows to fit its own
    calibration (or choose an ensemble's weights) on and that file exists; else None."""
    source = paths.calibration_from
    if source is None or len(inputs.part_labels("val")) or not (source / name).is_file():
        return None
    return source / name


def borrowed_calibration(paths: RunPaths, inputs) -> Calibration | None:
    """``paths.calibration_from``'s calibration.json where this run has no validation rows to
    fit its own on (None otherwise, or where that folder has none)."""
    path = borrowed_file(paths, inputs, CALIBRATION)
    return None if path is None else load_calibration(path.parent)


def write_run_outputs(
    run: RunSettings,
    fold,
    inputs,
    model,
    summary: dict,
    live,
    paths: RunPaths,
    val_probs,
    extra_meta: dict | None,
    calibration: Calibration | None = None,
    **folder_extras,
) -> None:
    """The model folder: the classifier, calibration.json (``calibration`` where the fit
    tuned one itself, e.g. cross-validated thresholds; else multi-label: the thresholds
    tuned on ``val_probs``; single-label: the temperature fitted on them), lttw.json with
    ``extra_meta`` and the multi-label / class-weight keys, checksums last."""
    meta, tuned = multi_label_record(run.train.class_weight, inputs, val_probs)
    extra_meta = {**(extra_meta or {}), **meta, "trained_on": trained_on(summary)}
    calibration = calibration or borrowed_calibration(paths, inputs) or tuned.get("calibration")
    if calibration is None:  # single-label: a temperature fitted on the val part
        calibration = temperature_calibration(val_probs, inputs.part_labels("val"))
    if calibration is not None and not calibration.multi_label:
        summary["temperature"] = calibration.temperature
    with atomic_dir(paths.model) as tmp:
        save_classifier(model, tmp)
        if calibration is not None:  # before the checksums: a file the loader reads
            save_calibration(calibration, tmp)
        write_model_folder(
            tmp,
            classes=inputs.classes,
            model=run.model,
            fold=fold,
            counts=run.counts,
            seed=run.seed,
            frozen_encoder=run.train.freeze_encoder,
            words=read_rule(paths.counts),
            selection=factor_selection(paths.features),
            extra_meta=extra_meta,
            **folder_extras,
        )
        record_checksums(tmp)  # last: the sha256 of every file the loader reads
    # timings vary run to run: kept out of the model folder so that its hash (and with it
    # the evaluate stage) only changes when the weights do; the metrics file holds numbers
    if paths.metrics is not None:
        write_metrics(paths.metrics, summary)
    if live is not None:
        for key in ("best_val_f1_macro", "time_per_epoch_s", "samples_per_s"):
            if key in summary:
                live.summary[key] = summary[key]
        live.end()
