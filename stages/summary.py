"""Stage `summary`: mean and standard deviation over the folds in `folds.run` of every metric
(macro P / R / F1, accuracy, time per epoch, samples per second), for `dvc metrics diff`; the
held-out samples' sizes (`held_out`) and the final model's record (`final`: its rows, epochs
and quality estimate, the folds' held-out metrics; a trained final model's own metrics on the
held-out test sample, `test`)."""

import logging

from lttw import layout
from lttw.errors import UserError
from lttw.evaluation.metrics import held_out_samples, summarize_folds
from lttw.io import read_json, write_json
from lttw.stage import run_stage

log = logging.getLogger("lttw.summary")


def main(settings):
    per_fold = {}
    for fold in settings.folds.run:
        path = layout.fold_metrics(fold)
        if not path.is_file():
            raise UserError(f"{path}: missing; run the evaluate stage for fold {fold}")
        per_fold[fold] = read_json(path)
    first = per_fold[settings.folds.run[0]]
    summary = {
        "dataset": settings.data.dataset,
        "variant": settings.model.variant,
        "device": first.get("device", "unknown"),
        "seed": settings.seed,
        **summarize_folds(per_fold),
        "held_out": held_out_samples(read_json(layout.LABELS_JSON)),
    }
    if layout.FINAL_METRICS.is_file():
        final = read_json(layout.FINAL_METRICS)
        summary["final"] = {
            key: final[key]
            for key in (
                "model",
                "copy_of",
                "trained_on",
                "rows",
                "epochs",
                "epochs_rule",
                "quality",
                "test",
            )
            if key in final
        }
    write_json(layout.SUMMARY_METRICS, summary)
    f1 = summary.get("test/f1_macro", {})
    log.info(
        "held-out test macro-F1 over %d fold(s): %.4f +- %.4f",
        len(per_fold),
        f1.get("mean", float("nan")),
        f1.get("std", float("nan")),
    )


if __name__ == "__main__":
    run_stage(main, __doc__)
