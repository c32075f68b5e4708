"""Stage `features`: latent-factor tensor H_tw (n, k+s, rank) of every sample text, from the
fold's train-part vocabulary and factors; the train part's own rows out-of-fold by default
(`model.train_factors`); (n, 0, 0) placeholders when factors are not used. `model.k` /
`model.s` `auto` resolve here, from the fold's train-part texts; the tensor's metadata records
the numbers, which training and the model folder read."""

import logging

import pandas as pd

from lttw import layout
from lttw.data.folds import read_fold_parts
from lttw.data.label_sets import is_multi_label, label_targets
from lttw.factors.features import empty_features
from lttw.factors.tensors import factor_tensors
from lttw.io import atomic_dir, read_json, write_arrays
from lttw.stages import run_stage

log = logging.getLogger("lttw.features")


def main(settings, fold):
    m = settings.model
    texts = {
        split: pd.read_parquet(layout.sample_parquet(split), columns=["text"])["text"].tolist()
        for split in layout.SPLITS
    }
    metadata = None
    if m.uses_factors:
        labels = pd.read_parquet(layout.sample_parquet("train"), columns=["label"])["label"]
        info = read_json(layout.LABELS_JSON)
        n_labels = len(info["classes"])
        arrays, metadata = factor_tensors(
            texts,
            read_fold_parts(layout.FOLDS_PARQUET, fold)["train"],
            label_targets(labels, n_labels, is_multi_label(info)),
            n_labels,
            layout.counts_dir(fold),
            layout.nmf_dir(fold),
            model=m,
            counts=settings.counts,
            nmf=settings.nmf,
            seed=settings.seed,
        )
    else:
        log.info(
            "model.variant=%s, model.fusion=%s: no latent factors, writing (n, 0, 0) placeholders",
            m.variant,
            m.fusion,
        )
        arrays = {split: empty_features(len(t)) for split, t in texts.items()}
    for split, array in arrays.items():
        log.info("%s: factor tensor %s", split, tuple(array.shape))
    with atomic_dir(layout.features_file(fold).parent) as tmp:
        write_arrays(tmp / layout.features_file(fold).name, metadata=metadata, **arrays)


def run(argv: list[str] | None = None) -> None:
    """``python -m lttw.stages.features --fold N [--params F]``: ``main`` as a pipeline stage."""
    run_stage(main, __doc__, per_fold=True, argv=argv)


if __name__ == "__main__":
    run()
