"""Stage `counts`: word-label count matrix n(w, c) from the fold's TRAIN part only."""

import pandas as pd

from lttw import layout
from lttw.factors.counts import save_counts, word_label_counts
from lttw.data.folds import read_fold_parts
from lttw.io import atomic_dir, read_json
from lttw.stage import run_stage


def main(settings, fold):
    sample = pd.read_parquet(layout.sample_parquet("train"), columns=["text", "label"])
    rows = read_fold_parts(layout.FOLDS_PARQUET, fold)["train"]
    n_labels = len(read_json(layout.LABELS_JSON)["classes"])
    part = sample.iloc[rows]
    counts, vocabulary = word_label_counts(part["text"].tolist(), part["label"].to_numpy(),
                                           n_labels, settings.counts)
    with atomic_dir(layout.counts_dir(fold)) as tmp:
        save_counts(tmp, counts, vocabulary)


if __name__ == "__main__":
    run_stage(main, __doc__, per_fold=True)
