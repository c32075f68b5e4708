"""Stage `train`: fine-tune the classifier of `model.variant` on one fold's train part, with
early stopping on its validation part. Writes a self-contained model folder.

Runs standalone as well (no dvc needed): `python stages/train.py --fold 0`.
"""

import hashlib
import json
import logging
import time

from lttw import layout
from lttw.models.bundle import write_model_folder
from lttw.training.checkpoint import Checkpointer
from lttw.data.fold_inputs import factor_shape, load_fold_inputs, load_tensors
from lttw.io import atomic_dir, write_json
from lttw.settings import NON_NEURAL_VARIANTS, check_batch_size
from lttw.stage import run_stage

log = logging.getLogger("lttw.train")


def fingerprint(settings, fold: int) -> str:
    """What defines this training run; a checkpoint of another run is never resumed."""
    relevant = settings.model_dump(include={"seed", "data", "folds", "counts", "nmf", "model",
                                            "train"})
    relevant["train"].pop("log_every", None)
    blob = json.dumps({"fold": fold, **relevant}, sort_keys=True).encode()
    return hashlib.sha256(blob).hexdigest()[:16]


def train_tfidf(settings, fold: int, inputs) -> dict:
    from lttw.models.tfidf import fit_tfidf_linear

    t0 = time.perf_counter()
    model = fit_tfidf_linear(inputs.part_texts("train"), inputs.part_labels("train"),
                             inputs.n_labels, settings.model.linear_model, settings.seed)
    fit_s = time.perf_counter() - t0
    with atomic_dir(layout.model_dir(fold)) as tmp:
        model.save(tmp)
        write_model_folder(tmp, classes=inputs.classes, settings=settings, fold=fold)
    summary = {"epochs_run": 1, "time_per_epoch_s": fit_s, "device": "cpu",
               "samples_per_s": len(inputs.parts["train"]) / fit_s, "seed": settings.seed}
    write_json(layout.train_metrics(fold), summary)
    # the checkpoint folder is a declared output of the stage; a one-pass fit has nothing to
    # resume, so it only records that this run is complete (a fresh checkout has no folder)
    Checkpointer(layout.checkpoint_dir(fold), fingerprint(settings, fold)).mark_complete()
    live = open_live(fold, settings)
    if live is not None:
        live.log_metric("epoch_time_s", fit_s)  # one point, so the plots folder exists
        for key in ("time_per_epoch_s", "samples_per_s"):
            live.summary[key] = summary[key]
        live.end()
    return summary


def train_neural(settings, fold: int, inputs) -> dict:
    from lttw.device import make_runtime
    from lttw.text.encoder import resolve_encoder
    from lttw.models.registry import MODEL_REGISTRY, save_model
    from lttw import models  # noqa: F401  (registers the variants)
    from lttw.training.loop import train_classifier

    import torch

    torch.manual_seed(settings.seed)
    batches = load_tensors(inputs, fold)
    rt = make_runtime(settings.train)
    model = MODEL_REGISTRY[settings.model.variant].from_settings(
        settings.model, inputs.n_labels, factor_shape(batches),
        resolve_encoder(settings.model.encoder))
    live = open_live(fold, settings) if rt.is_main else None
    result = train_classifier(model, batches["train"], batches["val"], settings.train,
                              settings.seed, rt, layout.checkpoint_dir(fold), live=live,
                              fingerprint=fingerprint(settings, fold))
    summary = {"epochs_run": result.epochs_run, "best_epoch": result.best_epoch,
               "best_val_f1_macro": result.best_val_f1, "steps": result.steps,
               "time_per_epoch_s": sum(result.epoch_times_s) / max(1, len(result.epoch_times_s)),
               "epoch_times_s": result.epoch_times_s, "samples_per_s": result.samples_per_s,
               "device": str(rt.device), "bf16": rt.bf16, "world_size": rt.world_size,
               "seed": settings.seed}
    if rt.is_main:
        with atomic_dir(layout.model_dir(fold)) as tmp:
            save_model(model.cpu(), tmp)
            write_model_folder(tmp, classes=inputs.classes, settings=settings, fold=fold,
                               tokenizer_dir=layout.tokenizer_dir(),
                               with_factors=factor_shape(batches) is not None)
        # timings vary run to run: kept out of the model folder so that its hash (and with it
        # the evaluate stage) only changes when the weights do
        write_json(layout.train_metrics(fold), summary)
        if live is not None:
            for key in ("best_val_f1_macro", "time_per_epoch_s", "samples_per_s"):
                live.summary[key] = summary[key]
            live.end()
    rt.barrier()
    rt.close()
    return summary


def open_live(fold: int, settings):
    """dvclive logger for the training curves, or None where dvclive is not installed."""
    try:
        from dvclive import Live
    except ImportError:
        log.info("dvclive not installed: training curves are not logged")
        return None
    live = Live(dir=str(layout.live_dir(fold)), dvcyaml=False, save_dvc_exp=False,
                resume=(layout.checkpoint_dir(fold) / "last.safetensors").is_file())
    live.log_params({"seed": settings.seed, "variant": settings.model.variant, "fold": fold})
    return live


def main(settings, fold: int):
    inputs = load_fold_inputs(fold)
    check_batch_size(len(inputs.parts["train"]), settings.train.batch_size, fold)
    if settings.model.variant in NON_NEURAL_VARIANTS:
        summary = train_tfidf(settings, fold, inputs)
    else:
        summary = train_neural(settings, fold, inputs)
    log.info("fold %d trained: %.1f s per epoch", fold, summary["time_per_epoch_s"])


if __name__ == "__main__":
    run_stage(main, __doc__, per_fold=True)
