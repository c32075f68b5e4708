"""Stage `evaluate`: macro precision / recall / F1 and accuracy of one fold's model on the
fold's test part and on the held-out test and predict samples (each part's size is its
``n``); per-class report, confusion matrix (a dvc plot) and predictions (``predictions.parquet``:
per row its part, its row in its sample, label, prediction, top and per-class probabilities;
the fold test part's are the out-of-fold probabilities ``lttw data issues`` reads). An absent predict
sample (``data.predict_size: 0``) is left out of all three. The model runs at the precision
its folder states (lttw.json ``precision``: fp32, whatever train.bf16 says), as
``lttw predict`` runs it, so the metrics' labels are the ones ``lttw predict`` gives.
Its probabilities go through the folder's calibration.json where it has one. A multi-label
model (lttw.json ``multi_label``): each label at its tuned threshold; micro and macro P / R /
F1, subset accuracy and per-label P / R / F1 (``per_label``) in the metrics; no confusion
matrix (its plot's CSV is written with the header alone).

The held-out test sample as ``lttw evaluate`` reports a file (``evaluation.evaluate`` and
``evaluation.plots``): ``held_out.json`` (the metrics with 95% bootstrap intervals) and
``report.html`` beside the predictions, and the confusion matrix, reliability diagram and
precision-recall curves as DVC plots (``metrics/held_out/fold_N/*.png``; `dvc plots show`).
The pictures read the calibrated probabilities, as ``lttw predict`` gives them. The fold's
training curves (dvclive's loss, learning rate and validation macro F1) as a picture too,
``metrics/training/fold_N.png``: every DVC plot is an image, which `dvc plots show` draws
offline (its data plots load their scripts from a CDN). The confusion counts stay a CSV
(``data/eval/fold_N/confusion.csv``)."""

import logging
import shutil

import numpy as np
import pandas as pd

from lttw import layout
from lttw.data.fold_inputs import EVAL_PARTS, load_fold_inputs
from lttw.data.label_sets import label_lists
from lttw.evaluation.calibration_error import calibration_metrics
from lttw.evaluation.evaluate import evaluation_report
from lttw.evaluation.metrics import (
    classification_metrics,
    confusion_counts,
    confusion_long,
    per_class_report,
    predicted_labels,
    top_probability,
)
from lttw.evaluation.plots import write_report_files
from lttw.evaluation.temperature import logits_of, scaled_probabilities
from lttw.evaluation.training_curves import training_png
from lttw.inference.predict import checked_meta, predict_cached_parts
from lttw.io import (
    atomic_dir,
    atomic_path,
    read_json,
    write_csv,
    write_json,
    write_metrics,
    write_parquet,
)
from lttw.models.trained import folder_calibration
from lttw.stages import run_stage

log = logging.getLogger("lttw.evaluate")


def main(settings, fold: int):
    inputs = load_fold_inputs(fold)
    model_dir = layout.model_dir(fold)
    calibration = folder_calibration(model_dir, checked_meta(model_dir))
    multi = calibration is not None and calibration.multi_label
    decide = calibration.decide if calibration is not None and multi else predicted_labels
    # single-label: the labels and predictions.parquet from the probabilities at T = 1;
    # the folder's temperature enters the calibration metrics (ece, nll) only
    probs = predict_cached_parts(
        model_dir, inputs, fold, settings.train, calibration if multi else None
    )
    temperature = 1.0 if calibration is None or multi else calibration.temperature
    training = read_json(layout.train_metrics(fold))
    m = settings.model
    # numbers only: the dataset and the variant are parameters, the device the model
    # folder's lttw.json ``trained_on``
    metrics = {"fold": fold, "seed": settings.seed}
    report: dict[str, dict] = {}
    frames, preds = [], {}
    for part in EVAL_PARTS:
        if part == "predict" and not len(inputs.part_labels(part)):
            log.info("no predict sample (data.predict_size: 0)")
            continue
        y = inputs.part_labels(part)
        pred = preds[part] = decide(probs[part])
        metrics[part] = classification_metrics(y, pred, inputs.n_labels)
        report[part] = {"per_class": per_class_report(y, pred, inputs.classes)}
        if multi:  # per label in the metrics file too, for `dvc metrics diff`
            metrics[part]["per_label"] = report[part]["per_class"]
        else:
            # ECE / NLL before (T = 1) and after temperature scaling; labels are the same
            metrics[part].update(calibration_metrics(probs[part], y, temperature))
            report[part]["confusion"] = confusion_counts(y, pred, inputs.n_labels)
        label, predicted = (label_lists(y), label_lists(pred)) if multi else (y, pred)
        frames.append(
            pd.DataFrame(
                {
                    "part": part,
                    # the row of its sample (fold_test: of the train sample)
                    "row": inputs.parts["fold_test"] if part == "fold_test" else np.arange(len(y)),
                    "label": label,
                    "pred": predicted,
                    "prob": top_probability(probs[part]),
                    "probs": list(np.asarray(probs[part], dtype=np.float32)),  # per class
                }
            )
        )
        log.info(
            "fold %d %s: macro-F1 %.4f (n=%d)",
            fold,
            part,
            metrics[part].get("f1_macro", float("nan")),
            len(y),
        )
    # the time per epoch with and without the start-up of the first step (steady_...)
    for key in (
        *("time_per_epoch_s", "steady_time_per_epoch_s", "startup_s", "samples_per_s"),
        "epochs_run",
    ):
        if key in training:
            metrics[key] = training[key]
    test_y = inputs.part_labels("test")
    calibrated = probs["test"]
    if not multi and temperature != 1.0:
        calibrated = scaled_probabilities(logits_of(calibrated), temperature)
    held_out = evaluation_report(
        test_y, calibrated, preds["test"], inputs.classes, seed=settings.seed
    )
    with atomic_dir(layout.eval_dir(fold)) as tmp:
        write_parquet(tmp / "predictions.parquet", pd.concat(frames, ignore_index=True))
        write_json(tmp / "report.json", report)
        title = f"Fold {fold}'s {m.variant} model on the held-out test sample"
        pictures = write_report_files(
            tmp, held_out, test_y, calibrated, preds["test"], title, every_file=True,
            texts=inputs.part_texts("test"),
        )  # fmt: skip
        write_json(tmp / "held_out.json", held_out)
        with atomic_dir(layout.held_out_plots(fold)) as plots:
            for name in pictures:
                if name.endswith(".png"):
                    shutil.copyfile(tmp / name, plots / name)
    confusion = (
        pd.DataFrame(columns=["actual", "predicted"])  # multi-label: no confusion matrix
        if multi
        else confusion_long(test_y, preds["test"], inputs.classes)
    )
    write_csv(layout.confusion_csv(fold), confusion)
    with atomic_path(layout.training_curves_png(fold)) as picture:
        training_png(picture, layout.live_dir(fold), f"Fold {fold}'s {m.variant} model: training")
    write_metrics(layout.fold_metrics(fold), metrics)


def run(argv: list[str] | None = None) -> None:
    """``python -m lttw.stages.evaluate --fold N [--params F]``: ``main`` as a pipeline stage."""
    run_stage(main, __doc__, per_fold=True, argv=argv)


if __name__ == "__main__":
    run()
