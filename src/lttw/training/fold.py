"""Train one fold's classifier (the ``train`` stage's work): read the fold's inputs, fit the
``model.variant`` (a torch classifier with the training loop, or ``tfidf_linear`` in one
pass), write the self-contained model folder, ``metrics/train/fold_N.json`` and the dvclive
curves. Both kinds go through the same steps; only the fit differs (``trained.reads``).
"""

from __future__ import annotations

import hashlib
import json
import logging
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any, cast

from lttw import layout
from lttw.data.fold_inputs import factor_shape, load_fold_inputs, load_tensors
from lttw.evaluation.metrics import validation_f1
from lttw.io import atomic_dir, read_arrays_metadata, write_json
from lttw.models.bundle import write_model_folder
from lttw.models.calibration import save_calibration
from lttw.models.ensemble import ENSEMBLE_PARTS
from lttw.models.folder_files import record_checksums
from lttw.models.trained import TEXTS, predict_proba, save_classifier, variant_reads
from lttw.settings import check_batch_size
from lttw.text.words import read_rule
from lttw.training.calibrating import temperature_calibration
from lttw.training.checkpoint import Checkpointer, can_resume
from lttw.training.ensemble import train_ensemble
from lttw.training.live import log_epoch, open_live
from lttw.training.multi_label import (
    is_multi_label_run,
    multi_label_record,
    refuse_single_label_only,
)
from lttw.training.thresholds import validation_calibration
from lttw.training.word_vocab import fold_vocabulary, word_embedding

log = logging.getLogger(__name__)


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

    @classmethod
    def of_fold(cls, fold: int) -> RunPaths:
        return cls(
            layout.counts_dir(fold),
            layout.nmf_dir(fold),
            layout.features_file(fold),
            layout.checkpoint_dir(fold),
            layout.model_dir(fold),
            layout.train_metrics(fold),
            layout.live_dir(fold),
        )


def fingerprint(settings, fold: int | str) -> str:
    """What defines this training run; a checkpoint of another run is never resumed."""
    relevant = settings.model_dump(
        include={"seed", "data", "folds", "words", "counts", "nmf", "model", "train"}
    )
    relevant["train"].pop("log_every", None)
    if relevant["train"].get("class_weight") == "none":  # as before the parameter existed
        relevant["train"].pop("class_weight")
    if relevant["model"].get("vocab") == "encoder":  # as before these parameters existed
        relevant["model"].pop("vocab")
        relevant["model"].pop("word_vectors", None)
    blob = json.dumps({"fold": fold, **relevant}, sort_keys=True).encode()
    return hashlib.sha256(blob).hexdigest()[:16]


def factor_selection(features: Path) -> dict | None:
    """k, s and ranking of the factor tensors file ``features``, as the features stage
    recorded them (None: no latent factors). Read from there, not from the parameters, so
    that a variant without factors does not retrain when model.k changes."""
    meta = read_arrays_metadata(features)
    if "k" not in meta:
        return None
    return {"k": int(meta["k"]), "s": int(meta["s"]), "ranking": meta["ranking"]}


def train_fold(settings, fold: int) -> dict:
    """Train fold ``fold``; returns the training summary (also written to
    ``metrics/train/fold_N.json``)."""
    inputs = load_fold_inputs(fold)
    check_batch_size(len(inputs.parts["train"]), settings.train.batch_size, fold)
    return train_run(settings, fold, inputs, RunPaths.of_fold(fold))


def train_run(settings, run: int | str, inputs, paths: RunPaths, extra_meta=None) -> dict:
    """Train ``model.variant`` on ``inputs``' train part (early stopping on its val part; an
    empty val part: every epoch of the plan, the last one's weights) and write the model
    folder at ``paths.model``; ``run``: the fold (or "final"), as the model folder records
    it; ``extra_meta``: more keys for the folder's lttw.json. Returns the training summary.
    Multi-label ``inputs`` (2-D labels): binary cross-entropy, per-class thresholds tuned on
    the val part (``thresholds.tune_thresholds``) in the folder's calibration.json;
    single-label: a temperature fitted on the val part there (``calibrating``)."""
    if is_multi_label_run(inputs):
        refuse_single_label_only(settings.model.variant)
    if settings.model.variant in ENSEMBLE_PARTS:  # its parts, each trained by this function
        return train_ensemble(settings, run, inputs, paths, extra_meta, train_run)
    if variant_reads(settings.model.variant) == TEXTS:
        return _train_on_texts(settings, run, inputs, paths, extra_meta)
    return _train_on_tokens(settings, run, inputs, paths, extra_meta)


def _open_live(settings, fold, key: str, paths: RunPaths):
    if paths.live is None:
        return None
    return open_live(
        paths.live,
        {"seed": settings.seed, "fold": fold, "variant": settings.model.variant},
        resume=can_resume(paths.checkpoints, key),
    )


def _write_outputs(
    settings,
    fold,
    inputs,
    model,
    summary: dict,
    live,
    paths: RunPaths,
    val_probs,
    extra_meta: dict | None,
    **folder_extras,
) -> None:
    """The model folder: the classifier, calibration.json (multi-label: the thresholds tuned
    on ``val_probs``; single-label: the temperature fitted on them), lttw.json with
    ``extra_meta`` and the multi-label / class-weight keys, checksums last."""
    meta, tuned = multi_label_record(settings, inputs, val_probs)
    extra_meta = {**(extra_meta or {}), **meta} or None
    calibration = tuned.get("calibration")
    if calibration is None:  # single-label: a temperature fitted on the val part
        calibration = temperature_calibration(val_probs, inputs.part_labels("val"))
        if calibration is not None:
            summary["temperature"] = calibration.temperature
    with atomic_dir(paths.model) as tmp:
        save_classifier(model, tmp)
        if calibration is not None:  # before the checksums: a file the loader reads
            save_calibration(calibration, tmp)
        write_model_folder(
            tmp,
            classes=inputs.classes,
            settings=settings,
            fold=fold,
            words=read_rule(paths.counts),
            selection=factor_selection(paths.features),
            extra_meta=extra_meta,
            **folder_extras,
        )
        record_checksums(tmp)  # last: the sha256 of every file the loader reads
    # timings vary run to run: kept out of the model folder so that its hash (and with it
    # the evaluate stage) only changes when the weights do
    if paths.metrics is not None:
        write_json(paths.metrics, summary)
    if live is not None:
        for key in ("best_val_f1_macro", "time_per_epoch_s", "samples_per_s"):
            if key in summary:
                live.summary[key] = summary[key]
        live.end()


def _train_on_texts(settings, fold, inputs, paths: RunPaths, extra_meta) -> dict:
    """A one-pass fit (tfidf_linear): one "epoch", scored on the validation part."""
    from lttw.models.tfidf import fit_tfidf_linear

    key = fingerprint(settings, fold)
    live = _open_live(settings, fold, key, paths)
    t0 = time.perf_counter()
    model = fit_tfidf_linear(
        inputs.part_texts("train"),
        inputs.part_labels("train"),
        inputs.n_labels,
        settings.model.linear_model,
        settings.seed,
        words=read_rule(paths.counts),
        auto=settings.words.splitter == "auto",
        class_weight="balanced" if settings.train.class_weight == "balanced" else None,
    )
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
    log_epoch(live, [row])
    _write_outputs(settings, fold, inputs, model, summary, live, paths, val_probs, extra_meta)
    # a one-pass fit has nothing to resume: the checkpoint folder only records that this
    # run is complete
    Checkpointer(paths.checkpoints, key).mark_complete()
    return summary


def _train_on_tokens(settings, fold, inputs, paths: RunPaths, extra_meta) -> dict:
    """A torch classifier of the registry, trained by the loop (resumable, maybe DDP)."""
    import torch

    from lttw import models  # noqa: F401  (registers the variants)
    from lttw.device import make_runtime
    from lttw.encoder.pretrained import encoder_for_tokens, resolve_encoder
    from lttw.models.registry import MODEL_REGISTRY
    from lttw.training.loop import train_classifier
    from lttw.training.losses import class_weights, set_loss_weights

    torch.manual_seed(settings.seed)
    words = fold_vocabulary(paths.counts) if settings.model.uses_word_vocab else None
    vectors_record = None
    if words is not None:  # the vectors are read before anything is written
        weight, vectors_record = word_embedding(
            settings.model, words, inputs.part_texts("train"), settings.seed
        )
    frozen = settings.train.freeze_encoder
    batches = load_tensors(
        inputs,
        fold,
        words,
        settings.model.max_len,
        frozen_encoder=frozen,
        features=paths.features,
    )
    rt = make_runtime(settings.train)
    model_class = MODEL_REGISTRY[settings.model.variant]
    if words is not None:
        # a word-vocabulary variant: its class has from_words (models._layers.EmbeddingBuilt)
        model = cast(Any, model_class).from_words(
            settings.model, inputs.n_labels, words.size, weight
        )
    else:  # the tokens stage's extended encoder where it extended the vocabulary
        encoder_path = encoder_for_tokens(resolve_encoder(settings.model.encoder))
        model = model_class.from_settings(
            settings.model, inputs.n_labels, factor_shape(batches), encoder_path
        )
    if frozen:
        freeze_encoder(model, batches["train"])
    set_loss_weights(
        model,
        class_weights(inputs.part_labels("train"), inputs.n_labels, settings.train.class_weight),
    )
    key = fingerprint(settings, fold)
    live = _open_live(settings, fold, key, paths) if rt.is_main else None
    result = train_classifier(
        model,
        batches["train"],
        batches["val"],
        settings.train,
        settings.seed,
        rt,
        paths.checkpoints,
        live=live,
        fingerprint=key,
    )
    times = result.epoch_times_s
    summary = {
        "epochs_run": result.epochs_run,
        "epochs_planned": result.epochs_planned,
        "best_epoch": result.best_epoch,
        "best_val_f1_macro": result.best_val_f1,
        "val_f1_still_rising": result.val_f1_still_rising,
        "val_f1_macro_per_epoch": [row["val_f1_macro"] for row in result.history],
        "steps": result.steps,
        "time_per_epoch_s": sum(times) / max(1, len(times)),
        "epoch_times_s": times,
        "samples_per_s": result.samples_per_s,
        "device": str(rt.device),
        "bf16": rt.bf16,
        "world_size": rt.world_size,
        "seed": settings.seed,
        "frozen_encoder": frozen,
        **({"word_vectors": vectors_record} if vectors_record is not None else {}),
    }
    if rt.is_main:
        # the best model's validation probabilities, once: the multi-label thresholds are
        # tuned on their sigmoids, the single-label temperature fitted on their softmax
        val_probs = predict_proba(
            model,
            batches["val"],
            rt,
            settings.train.eval_batch_size,
            calibration=validation_calibration(batches["val"].labels),
        )
        _write_outputs(
            settings,
            fold,
            inputs,
            model,
            summary,
            live,
            paths,
            val_probs,
            extra_meta,
            tokenizer_dir=None if words is not None else layout.tokenizer_dir(),
            word_vocabulary=words,
            factor_dirs=(paths.counts, paths.nmf) if factor_shape(batches) is not None else (),
        )
    rt.barrier()
    rt.close()
    return summary


def freeze_encoder(model, train) -> None:
    """``train.freeze_encoder``: the encoder's weights stay the pretrained ones (not given to
    the optimiser), and training reads its cached states (``train.encoder_states``), which
    must be as wide as the encoder's output."""
    from lttw.errors import UserError

    width = int(model.encoder.config.hidden_size)
    if train.encoder_states is None or train.encoder_states.shape[-1] != width:
        got = None if train.encoder_states is None else tuple(train.encoder_states.shape)
        raise UserError(
            f"{layout.ENCODED_DIR}: cached encoder states of shape {got} do not fit "
            f"the encoder ({width} wide); rerun the encode stage"
        )
    model.encoder.requires_grad_(False)
