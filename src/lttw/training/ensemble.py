"""Train an ensemble variant (``models.ensemble``, e.g. ``lttw_tfidf``): each part with its
own training code on the same fold (``fold.train_run`` with the part's ``model.variant``,
into a sub-folder of the ensemble's model folder, with its own temperature), then the parts'
weights chosen on the validation part's calibrated probabilities, and a temperature fitted
to their mixture on the same part (a weighted mean of calibrated parts is underconfident:
it is saved as the ensemble folder's own calibration.json). A run without validation rows,
the final model, takes the weights and every calibration of ``RunPaths.calibration_from``,
the fold's ensemble. Multi-label data is refused in one line
(``multi_label.refuse_single_label_only``: the weights are chosen on single-label macro F1)."""

from __future__ import annotations

import dataclasses
import time
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np

from lttw.evaluation.temperature import logits_of
from lttw.io import atomic_dir, write_metrics
from lttw.models.bundle import write_model_folder
from lttw.models.calibration import load_calibration, save_calibration
from lttw.models.ensemble import ENSEMBLE_PARTS, EnsembleWeights, choose_weights
from lttw.models.files import ENSEMBLE_FILE
from lttw.models.folder_files import record_checksums
from lttw.models.trained import TEXTS, load_classifier, predict_proba, reads
from lttw.training.calibrating import temperature_calibration
from lttw.training.run_outputs import borrowed_calibration, borrowed_file, trained_on

if TYPE_CHECKING:
    from lttw.settings import TrainSettings
    from lttw.training.run_settings import RunSettings


def calibrated(probs: np.ndarray, folder: str | Path) -> np.ndarray:
    """A part's ``(n, C)`` probabilities at ``T = 1`` scaled by its folder's temperature."""
    return load_calibration(folder).probabilities(logits_of(probs))


def part_val_probs(
    folder: Path, train: TrainSettings, max_len: int, run, inputs, features: Path
) -> np.ndarray:
    """A trained part's calibrated probabilities on the validation part (a token model's
    batches of ``max_len`` tokens, on the device and with the batch size of ``train``)."""
    from lttw.data.fold_inputs import load_tensors
    from lttw.device import make_runtime

    model = load_classifier(folder)
    if reads(model) == TEXTS:
        return calibrated(predict_proba(model, inputs.part_texts("val")), folder)
    rt = make_runtime(train)
    frozen = train.freeze_encoder  # then the encode stage's cached states
    batches = load_tensors(inputs, run, None, max_len, frozen_encoder=frozen, features=features)
    probs = predict_proba(model.to(rt.device), batches["val"], rt, train.eval_batch_size)
    return calibrated(probs, folder)


def borrowed_weights(paths, inputs) -> EnsembleWeights | None:
    """``paths.calibration_from``'s ensemble weights where this run has no validation rows to
    choose its own on (the final model: the fold's weights, not 0.5 each)."""
    path = borrowed_file(paths, inputs, ENSEMBLE_FILE)
    return None if path is None else EnsembleWeights.load(path.parent)


def train_ensemble(settings: RunSettings, run, inputs, paths, extra_meta, train_part) -> dict:
    """Train every part of ``settings.model.variant`` with ``train_part`` (``fold.train_run``)
    and write the ensemble's model folder at ``paths.model``; returns the training summary
    (each part's, and the chosen weights)."""
    parts = ENSEMBLE_PARTS[settings.model.variant]
    t0 = time.perf_counter()
    summaries, val_probs = {}, []
    with atomic_dir(paths.model) as tmp:
        for part in parts:
            part_settings = settings.with_variant(part)
            part_paths = dataclasses.replace(
                paths,
                model=tmp / part,
                checkpoints=paths.checkpoints / part,
                metrics=None,
                live=paths.live if part == parts[0] else None,  # the stage's curves: LTTW's
                calibration_from=paths.calibration_from and paths.calibration_from / part,
            )
            summaries[part] = train_part(part_settings, run, inputs, part_paths, extra_meta)
            val_probs.append(
                part_val_probs(
                    tmp / part, settings.train, settings.model.max_len, run, inputs, paths.features
                )
            )
        weights = borrowed_weights(paths, inputs) or choose_weights(
            (parts[0], parts[1]), val_probs, inputs.part_labels("val"), inputs.n_labels
        )
        # the mixture's temperature, fitted on the same val part (or the fold's, borrowed)
        mixture = borrowed_calibration(paths, inputs) or temperature_calibration(
            weights.combine(val_probs), inputs.part_labels("val")
        )
        write_model_folder(
            tmp,
            inputs.classes,
            settings.model,
            run,
            counts=settings.counts,
            seed=settings.seed,
            frozen_encoder=settings.train.freeze_encoder,
            extra_meta={**(extra_meta or {}), "trained_on": trained_on(summaries[parts[0]])},
        )
        weights.save(tmp)
        if mixture is not None:
            save_calibration(mixture, tmp)
        record_checksums(tmp)
    elapsed = time.perf_counter() - t0
    summary = {
        "epochs_run": max(s["epochs_run"] for s in summaries.values()),
        "epochs_planned": max(s.get("epochs_planned", 1) for s in summaries.values()),
        "best_epoch": max(s.get("best_epoch", 0) for s in summaries.values()),  # final.py
        "time_per_epoch_s": elapsed,
        "best_val_f1_macro": weights.val_f1_macro,
        "weights": dict(zip(parts, weights.weights)),
        **({"temperature": mixture.temperature} if mixture is not None else {}),
        "parts": summaries,
        "device": summaries[parts[0]].get("device", "cpu"),
        "seed": settings.seed,
    }
    if paths.metrics is not None:
        write_metrics(paths.metrics, summary)
    return summary
