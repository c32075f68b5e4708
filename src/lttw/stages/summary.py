"""Stage `summary`: `metrics/summary.json`, numbers only. Its first block, `final`, is the
deployed model, `models/final`: its rows, classes, epochs, its estimate (macro F1 with an
interval; `from_folds`: the folds' pooled out-of-fold figure, else its own on the held-out
test sample) and calibration (`ece`), and its own held-out figures (`test`). The study
follows: mean and standard deviation over the folds in `folds.run` of every metric (macro
P / R / F1, accuracy, time per epoch, samples per second), for `dvc metrics diff`, and the
held-out samples' sizes (`held_out`). Its last log line is the deployed model's."""

import logging

from lttw import layout
from lttw.errors import UserError
from lttw.evaluation.metrics import held_out_samples, summarize_folds
from lttw.io import read_json, write_metrics
from lttw.stages import run_stage

log = logging.getLogger("lttw.summary")

#: the final stage's numbers that lead the summary (``metrics/final.json``)
FINAL_KEYS = ("enabled", "trained_on", "classes", "epochs", "estimate", "test")


def main(settings):
    per_fold = {}
    for fold in settings.folds.run:
        path = layout.fold_metrics(fold)
        if not path.is_file():
            raise UserError(f"{path}: missing; run the evaluate stage for fold {fold}")
        per_fold[fold] = read_json(path)
    summary = {}
    final = read_json(layout.FINAL_METRICS) if layout.FINAL_METRICS.is_file() else {}
    if final:
        summary["final"] = {key: final[key] for key in FINAL_KEYS if key in final}
    summary.update(
        {
            "seed": settings.seed,
            **summarize_folds(per_fold),
            "held_out": held_out_samples(read_json(layout.LABELS_JSON)),
        }
    )
    write_metrics(layout.SUMMARY_METRICS, summary)
    f1 = summary.get("test/f1_macro", {})
    log.info(
        "study: held-out test macro-F1 of the fold models over %d fold(s): %.4f +- %.4f",
        len(per_fold),
        f1.get("mean", float("nan")),
        f1.get("std", float("nan")),
    )
    estimate = final.get("estimate")
    if estimate:
        log.info(
            "deployed model %s: %d rows, %d classes; macro F1 %.4f (%d%% interval %.4f to "
            "%.4f, from %s)%s",
            layout.FINAL_MODEL_DIR.as_posix(),
            final.get("trained_on", 0),
            final.get("classes", 0),
            estimate["f1_macro"],
            round(100 * estimate["level"]),
            estimate["f1_macro_low"],
            estimate["f1_macro_high"],
            "the folds' out-of-fold predictions"
            if estimate["from_folds"]
            else "its own predictions on the held-out test sample",
            f"; calibration error {estimate['ece']:.4f}" if "ece" in estimate else "",
        )


def run(argv: list[str] | None = None) -> None:
    """``python -m lttw.stages.summary [--params F]``: ``main`` as a pipeline stage."""
    run_stage(main, __doc__, argv=argv)


if __name__ == "__main__":
    run()
