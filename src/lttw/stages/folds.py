"""Stage `folds`: stratified (multi-label: iteratively stratified) fold id of every training row and each fold's train/val/test parts."""

import logging

import pandas as pd

from lttw import layout
from lttw.data.folds import assign_folds, folds_frame
from lttw.data.label_sets import is_multi_label, label_targets
from lttw.io import atomic_dir, read_json
from lttw.stages import run_stage

log = logging.getLogger("lttw.folds")


def main(settings):
    labels = pd.read_parquet(layout.sample_parquet("train"), columns=["label"])["label"]
    info = read_json(layout.LABELS_JSON)
    targets = label_targets(labels, len(info["classes"]), is_multi_label(info))
    n_folds = settings.folds.n_folds
    fold_ids = assign_folds(targets, n_folds, settings.seed)
    log.info("%d training rows in %d stratified folds", len(fold_ids), n_folds)
    with atomic_dir(layout.FOLDS_PARQUET.parent) as tmp:
        folds_frame(fold_ids, n_folds).to_parquet(tmp / layout.FOLDS_PARQUET.name, index=False)


def run(argv: list[str] | None = None) -> None:
    """``python -m lttw.stages.folds [--params F]``: ``main`` as a pipeline stage."""
    run_stage(main, __doc__, argv=argv)


if __name__ == "__main__":
    run()
