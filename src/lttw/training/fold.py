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
from typing import Any, cast

from lttw import layout
from lttw.data.fold_inputs import factor_shape, load_fold_inputs, load_tensors
from lttw.evaluation.metrics import classification_metrics
from lttw.io import atomic_dir, read_arrays_metadata, write_json
from lttw.models.bundle import write_model_folder
from lttw.models.folder_files import record_checksums
from lttw.models.trained import TEXTS, predict_proba, save_classifier, variant_reads
from lttw.settings import check_batch_size
from lttw.text.words import read_rule
from lttw.training.checkpoint import Checkpointer, can_resume
from lttw.training.live import log_epoch, open_live
from lttw.training.word_vocab import fold_vocabulary, word_embedding

log = logging.getLogger(__name__)


def fingerprint(settings, fold: int) -> str:
    """What defines this training run; a checkpoint of another run is never resumed."""
    relevant = settings.model_dump(
        include={"seed", "data", "folds", "words", "counts", "nmf", "model", "train"}
    )
    relevant["train"].pop("log_every", None)
    if relevant["model"].get("vocab") == "encoder":  # as before these parameters existed
        relevant["model"].pop("vocab")
        relevant["model"].pop("word_vectors", None)
    blob = json.dumps({"fold": fold, **relevant}, sort_keys=True).encode()
    return hashlib.sha256(blob).hexdigest()[:16]


def factor_selection(fold: int) -> dict | None:
    """k, s and ranking of the fold's factor tensors, as the features stage recorded them
    (None: no latent factors). Read from there, not from the parameters, so that a variant
    without factors does not retrain when model.k changes."""
    meta = read_arrays_metadata(layout.features_file(fold))
    if "k" not in meta:
        return None
    return {"k": int(meta["k"]), "s": int(meta["s"]), "ranking": meta["ranking"]}


def train_fold(settings, fold: int) -> dict:
    """Train fold ``fold``; returns the training summary (also written to
    ``metrics/train/fold_N.json``)."""
    inputs = load_fold_inputs(fold)
    check_batch_size(len(inputs.parts["train"]), settings.train.batch_size, fold)
    if variant_reads(settings.model.variant) == TEXTS:
        return _train_on_texts(settings, fold, inputs)
    return _train_on_tokens(settings, fold, inputs)


def _open_live(settings, fold: int, key: str):
    return open_live(
        layout.live_dir(fold),
        {"seed": settings.seed, "fold": fold, "variant": settings.model.variant},
        resume=can_resume(layout.checkpoint_dir(fold), key),
    )


def _write_outputs(
    settings, fold: int, inputs, model, summary: dict, live, **folder_extras
) -> None:
    with atomic_dir(layout.model_dir(fold)) as tmp:
        save_classifier(model, tmp)
        write_model_folder(
            tmp,
            classes=inputs.classes,
            settings=settings,
            fold=fold,
            words=read_rule(layout.counts_dir(fold)),
            selection=factor_selection(fold),
            **folder_extras,
        )
        record_checksums(tmp)  # last: the sha256 of every file the loader reads
    # timings vary run to run: kept out of the model folder so that its hash (and with it
    # the evaluate stage) only changes when the weights do
    write_json(layout.train_metrics(fold), summary)
    if live is not None:
        for key in ("best_val_f1_macro", "time_per_epoch_s", "samples_per_s"):
            if key in summary:
                live.summary[key] = summary[key]
        live.end()


def _train_on_texts(settings, fold: int, inputs) -> dict:
    """A one-pass fit (tfidf_linear): one "epoch", scored on the validation part."""
    from lttw.models.tfidf import fit_tfidf_linear

    key = fingerprint(settings, fold)
    live = _open_live(settings, fold, key)
    t0 = time.perf_counter()
    model = fit_tfidf_linear(
        inputs.part_texts("train"),
        inputs.part_labels("train"),
        inputs.n_labels,
        settings.model.linear_model,
        settings.seed,
        words=read_rule(layout.counts_dir(fold)),
        auto=settings.words.splitter == "auto",
    )
    fit_s = time.perf_counter() - t0
    n_train = len(inputs.parts["train"])
    val_probs = predict_proba(model, inputs.part_texts("val"))
    val_f1 = classification_metrics(
        inputs.part_labels("val"), val_probs.argmax(1), inputs.n_labels
    ).get("f1_macro", float("nan"))
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
    _write_outputs(settings, fold, inputs, model, summary, live)
    # a one-pass fit has nothing to resume: the checkpoint folder only records that this
    # run is complete
    Checkpointer(layout.checkpoint_dir(fold), key).mark_complete()
    return summary


def _train_on_tokens(settings, fold: int, inputs) -> dict:
    """A torch classifier of the registry, trained by the loop (resumable, maybe DDP)."""
    import torch

    from lttw import models  # noqa: F401  (registers the variants)
    from lttw.device import make_runtime
    from lttw.encoder.pretrained import encoder_for_tokens, resolve_encoder
    from lttw.models.registry import MODEL_REGISTRY
    from lttw.training.loop import train_classifier

    torch.manual_seed(settings.seed)
    words = fold_vocabulary(fold) if settings.model.uses_word_vocab else None
    vectors_record = None
    if words is not None:  # the vectors are read before anything is written
        weight, vectors_record = word_embedding(
            settings.model, words, inputs.part_texts("train"), settings.seed
        )
    frozen = settings.train.freeze_encoder
    batches = load_tensors(inputs, fold, words, settings.model.max_len, frozen_encoder=frozen)
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
    key = fingerprint(settings, fold)
    live = _open_live(settings, fold, key) if rt.is_main else None
    result = train_classifier(
        model,
        batches["train"],
        batches["val"],
        settings.train,
        settings.seed,
        rt,
        layout.checkpoint_dir(fold),
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
        _write_outputs(
            settings,
            fold,
            inputs,
            model,
            summary,
            live,
            tokenizer_dir=None if words is not None else layout.tokenizer_dir(),
            word_vocabulary=words,
            factor_dirs=(layout.counts_dir(fold), layout.nmf_dir(fold))
            if factor_shape(batches) is not None
            else (),
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
