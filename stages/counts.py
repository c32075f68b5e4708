"""Stage `counts`: word-label count matrix n(w, c) from the fold's TRAIN part only, and the
resolved word-splitting rule (`words.json`) every later consumer of words reads."""

import pandas as pd

from lttw import layout
from lttw.data.folds import read_fold_parts
from lttw.factors.counts import choose_splitter, save_counts, word_label_counts
from lttw.io import atomic_dir, read_json
from lttw.stage import run_stage
from lttw.text.words import write_rule


def main(settings, fold):
    sample = pd.read_parquet(layout.sample_parquet("train"), columns=["text", "label"])
    rows = read_fold_parts(layout.FOLDS_PARQUET, fold)["train"]
    labels_info = read_json(layout.LABELS_JSON)
    n_labels = len(labels_info["classes"])
    part = sample.iloc[rows]
    texts = part["text"].tolist()
    splitter, reason = choose_splitter(
        settings.words.splitter, settings.counts, texts, labels_info.get("language")
    )
    counts, vocabulary = word_label_counts(
        texts, part["label"].to_numpy(), n_labels, settings.counts, splitter
    )
    with atomic_dir(layout.counts_dir(fold)) as tmp:
        save_counts(tmp, counts, vocabulary)
        write_rule(tmp, splitter, reason)


if __name__ == "__main__":
    run_stage(main, __doc__, per_fold=True)
