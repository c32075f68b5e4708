"""Train a torch classifier of the registry on one run's token (or word-id) batches
(``lttw.training.fold.train_run``): build the model, train it by the loop (resumable, maybe
DDP), write its model folder."""

from __future__ import annotations

from typing import Any, cast

from lttw import layout
from lttw.data.fold_inputs import factor_shape, load_tensors
from lttw.models.trained import predict_proba
from lttw.training.run_outputs import RunPaths, open_run_live, write_run_outputs
from lttw.training.run_settings import RunSettings
from lttw.training.thresholds import validation_calibration
from lttw.training.word_vocab import fold_vocabulary, word_embedding


def train_on_tokens(settings: RunSettings, fold, inputs, paths: RunPaths, extra_meta) -> dict:
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
    key = settings.fingerprint(fold)
    variant = settings.model.variant
    live = open_run_live(settings.seed, variant, fold, key, paths) if rt.is_main else None
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
    # each epoch's time without the start-up of a process's first step in it
    steady = [row["epoch_time_s"] - row.get("startup_s", 0.0) for row in result.history]
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
        # the same without the first step's start-up (compilation, CUDA context, allocator)
        "steady_time_per_epoch_s": sum(steady) / max(1, len(steady)),
        "startup_s": sum(row.get("startup_s", 0.0) for row in result.history),
        "device_name": (
            torch.cuda.get_device_name(rt.device) if rt.device.type == "cuda" else rt.device.type
        ),
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
        write_run_outputs(
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
