"""Stage `counts`: word-label count matrix n(w, c) from the fold's TRAIN part only, and the
resolved word-splitting rule (`words.json`) every later consumer of words reads."""

import pandas as pd

from lttw import layout
from lttw.data.folds import read_fold_parts
from lttw.data.label_sets import is_multi_label, label_targets
from lttw.factors.counts import write_part_counts
from lttw.io import atomic_dir, read_json
from lttw.stages import run_stage


def main(settings, fold):
    sample = pd.read_parquet(layout.sample_parquet("train"), columns=["text", "label"])
    rows = read_fold_parts(layout.FOLDS_PARQUET, fold)["train"]
    labels_info = read_json(layout.LABELS_JSON)
    part = sample.iloc[rows]
    n_labels = len(labels_info["classes"])
    with atomic_dir(layout.counts_dir(fold)) as tmp:
        write_part_counts(
            tmp,
            part["text"].tolist(),
            label_targets(part["label"], n_labels, is_multi_label(labels_info)),
            n_labels,
            settings.words.splitter,
            settings.counts,
            labels_info.get("language"),
        )


def run(argv: list[str] | None = None) -> None:
    """``python -m lttw.stages.counts --fold N [--params F]``: ``main`` as a pipeline stage."""
    run_stage(main, __doc__, per_fold=True, argv=argv)


if __name__ == "__main__":
    run()
