"""Stage `evaluate`: macro precision / recall / F1 and accuracy of one fold's model on the
fold's test part and on the held-out test and predict samples (each part's size is its
``n``); per-class report, confusion matrix (a dvc plot) and predictions. An absent predict
sample (``data.predict_size: 0``) is left out of all three. The model runs at the precision
its folder states (lttw.json ``precision``: fp32, whatever train.bf16 says), as
``lttw predict`` runs it, so the metrics' labels are the ones ``lttw predict`` gives."""

import logging

import pandas as pd

from lttw import layout
from lttw.data.fold_inputs import EVAL_PARTS, load_fold_inputs
from lttw.evaluation.calibration_error import calibration_metrics
from lttw.evaluation.metrics import (
    classification_metrics,
    confusion_counts,
    confusion_long,
    per_class_report,
    predicted_labels,
    top_probability,
)
from lttw.inference.predict import predict_cached_parts
from lttw.io import atomic_dir, read_json, write_csv, write_json, write_parquet
from lttw.models.calibration import load_calibration
from lttw.stage import run_stage

log = logging.getLogger("lttw.evaluate")


def main(settings, fold: int):
    inputs = load_fold_inputs(fold)
    probs = predict_cached_parts(layout.model_dir(fold), inputs, fold, settings.train)
    training = read_json(layout.train_metrics(fold))
    temperature = load_calibration(layout.model_dir(fold)).temperature
    m = settings.model
    metrics = {
        "fold": fold,
        "dataset": settings.data.dataset,
        "variant": m.variant,
        "fusion": m.fusion,
        "attention": m.attention,
        "seed": settings.seed,
    }
    report, frames = {}, []
    for part in EVAL_PARTS:
        if part == "predict" and not len(inputs.part_labels(part)):
            log.info("no predict sample (data.predict_size: 0)")
            continue
        y, pred = inputs.part_labels(part), predicted_labels(probs[part])
        metrics[part] = classification_metrics(y, pred, inputs.n_labels)
        # ECE / NLL before (T = 1) and after temperature scaling; labels are the same
        metrics[part].update(calibration_metrics(probs[part], y, temperature))
        report[part] = {
            "per_class": per_class_report(y, pred, inputs.classes),
            "confusion": confusion_counts(y, pred, inputs.n_labels),
        }
        frames.append(
            pd.DataFrame(
                {"part": part, "label": y, "pred": pred, "prob": top_probability(probs[part])}
            )
        )
        log.info(
            "fold %d %s: macro-F1 %.4f (n=%d)",
            fold,
            part,
            metrics[part].get("f1_macro", float("nan")),
            len(y),
        )
    for key in ("time_per_epoch_s", "samples_per_s", "epochs_run", "device"):
        if key in training:
            metrics[key] = training[key]
    test_y = inputs.part_labels("test")
    with atomic_dir(layout.eval_dir(fold)) as tmp:
        write_parquet(tmp / "predictions.parquet", pd.concat(frames, ignore_index=True))
        write_json(tmp / "report.json", report)
    write_csv(
        layout.confusion_csv(fold),
        confusion_long(test_y, predicted_labels(probs["test"]), inputs.classes),
    )
    write_json(layout.fold_metrics(fold), metrics)


if __name__ == "__main__":
    run_stage(main, __doc__, per_fold=True)
