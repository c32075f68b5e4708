"""Stage `features`: latent-factor tensor H_tw (n, k+s, rank) of every sample text, from the
fold's train-part vocabulary and factors; (n, 0, 0) placeholders when factors are not used."""

import logging

import pandas as pd

from lttw import layout
from lttw.features import FactorLookup, empty_features
from lttw.io import atomic_dir, write_arrays
from lttw.stage import run_stage

log = logging.getLogger("lttw.features")


def main(settings, fold):
    m = settings.model
    texts = {split: pd.read_parquet(layout.sample_parquet(split), columns=["text"])["text"].tolist()
             for split in layout.SPLITS}
    metadata = None
    if m.uses_factors:
        lookup = FactorLookup.for_fold(fold, settings.counts)
        arrays = {split: lookup.transform(t, m.k, m.s, m.ranking) for split, t in texts.items()}
        metadata = {"k": str(m.k), "s": str(m.s), "rank": str(lookup.rank), "ranking": m.ranking}
    else:
        log.info("model.variant=%s, model.fusion=%s: no latent factors, writing (n, 0, 0) "
                 "placeholders", m.variant, m.fusion)
        arrays = {split: empty_features(len(t)) for split, t in texts.items()}
    for split, array in arrays.items():
        log.info("%s: factor tensor %s", split, tuple(array.shape))
    with atomic_dir(layout.features_file(fold).parent) as tmp:
        write_arrays(tmp / layout.features_file(fold).name, metadata=metadata, **arrays)


if __name__ == "__main__":
    run_stage(main, __doc__, per_fold=True)
