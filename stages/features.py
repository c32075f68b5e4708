"""Stage `features`: latent-factor tensor H_tw (n, k+s, rank) of every sample text, from the
fold's train-part vocabulary and factors; the train part's own rows out-of-fold by default
(`model.train_factors`); (n, 0, 0) placeholders when factors are not used. `model.k` /
`model.s` `auto` resolve here, from the fold's train-part texts; the tensor's metadata records
the numbers, which training and the model folder read."""

import logging

import numpy as np
import pandas as pd

from lttw import layout
from lttw.data.folds import read_fold_parts
from lttw.factors.cross_fit import out_of_fold_factors
from lttw.factors.features import FactorLookup, empty_features, resolve_slots, slot_fill
from lttw.factors.nmf import FACTORS_FILE
from lttw.io import atomic_dir, read_arrays, read_json, write_arrays
from lttw.stage import run_stage
from lttw.text.words import degenerate_warning, read_rule, zero_row_share

log = logging.getLogger("lttw.features")


def train_part_out_of_fold(
    settings, fold: int, rows: np.ndarray, texts: list[str], words, k: int, s: int
) -> np.ndarray:
    """The cross-fitted tensor of the fold's train-part ``rows`` of the train sample (the
    validation and test parts keep the full fit's factors, as unseen texts)."""
    m = settings.model
    labels = pd.read_parquet(layout.sample_parquet("train"), columns=["label"])["label"]
    factor_label = read_arrays(layout.nmf_dir(fold) / FACTORS_FILE)["factor_label"]
    return out_of_fold_factors(
        [texts[i] for i in rows],
        labels.to_numpy(np.int64)[rows],
        len(read_json(layout.LABELS_JSON)["classes"]),
        factor_label,
        k,
        s,
        m.ranking,
        settings.counts,
        settings.nmf,
        m.factor_splits,
        settings.seed,
        words,
    )


def log_slot_fill(arrays: dict[str, np.ndarray], k: int, s: int) -> None:
    """How many of the k top / s bottom slots the texts fill; a warning when under half."""
    for split, array in arrays.items():
        fill = slot_fill(array, k, s)
        log.info("%s: %s", split, fill)
        if fill.sparse and len(array):
            log.warning(
                "%s: the texts are short for model.k=%d / model.s=%d (%s); empty slots "
                "are zero vectors (see README, model.k and model.s)",
                split,
                k,
                s,
                fill,
            )


def warn_zero_rows(arrays: dict[str, np.ndarray], rule: str) -> None:
    """A warning naming words.splitter when over 30% of a split's texts get all-zero factor
    rows (degenerate word splitting: the texts' words are not the vocabulary's)."""
    for split, array in arrays.items():
        share = zero_row_share(array)
        log.info("%s: %.1f%% of texts have all-zero factor rows", split, 100 * share)
        warning = degenerate_warning(rule, zero_rows=share)
        if warning and len(array):
            log.warning("%s: %s", split, warning)


def main(settings, fold):
    m = settings.model
    texts = {
        split: pd.read_parquet(layout.sample_parquet(split), columns=["text"])["text"].tolist()
        for split in layout.SPLITS
    }
    metadata = None
    if m.uses_factors:
        lookup = FactorLookup.load(
            layout.counts_dir(fold), layout.nmf_dir(fold), read_rule(layout.counts_dir(fold))
        )
        rows = read_fold_parts(layout.FOLDS_PARQUET, fold)["train"]
        k, s = resolve_slots(m.k, m.s, lookup.distinct_words([texts["train"][i] for i in rows]))
        looked_up = dict(texts)
        if m.train_factors == "out_of_fold":  # the train part is cross-fitted, not looked up
            cross_fitted = train_part_out_of_fold(
                settings, fold, rows, texts["train"], lookup.splitter, k, s
            )
            unseen = np.setdiff1d(np.arange(len(texts["train"])), rows)  # val and test parts
            looked_up["train"] = [texts["train"][i] for i in unseen]
        arrays = {split: lookup.transform(t, k, s, m.ranking) for split, t in looked_up.items()}
        if m.train_factors == "out_of_fold":
            train = np.empty((len(texts["train"]),) + cross_fitted.shape[1:], np.float32)
            train[rows], train[unseen] = cross_fitted, arrays["train"]
            arrays["train"] = train
        metadata = {
            "k": str(k),
            "s": str(s),
            "rank": str(lookup.rank),
            "ranking": m.ranking,
            "train_factors": m.train_factors,
        }
    else:
        log.info(
            "model.variant=%s, model.fusion=%s: no latent factors, writing (n, 0, 0) placeholders",
            m.variant,
            m.fusion,
        )
        arrays = {split: empty_features(len(t)) for split, t in texts.items()}
    for split, array in arrays.items():
        log.info("%s: factor tensor %s", split, tuple(array.shape))
    if m.uses_factors:
        log_slot_fill(arrays, k, s)
        warn_zero_rows(arrays, lookup.splitter.rule)
    with atomic_dir(layout.features_file(fold).parent) as tmp:
        write_arrays(tmp / layout.features_file(fold).name, metadata=metadata, **arrays)


if __name__ == "__main__":
    run_stage(main, __doc__, per_fold=True)
