"""The latent-factor tensors H_tw of every sample text for one set of training rows (the
features stage's work for a fold's train part, and the final model's for every labelled
row): from that part's counts and factors, the part's own rows cross-fitted by default
(``model.train_factors``), the other texts looked up as unseen ones; ``model.k`` / ``model.s``
``auto`` resolved from the part's texts."""

from __future__ import annotations

import logging
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np

from lttw.factors.cross_fit import out_of_fold_factors
from lttw.factors.features import FactorLookup
from lttw.factors.nmf import FACTORS_FILE
from lttw.factors.slots import resolve_slots, slot_fill
from lttw.io import read_arrays
from lttw.text.splitting_quality import degenerate_warning, zero_row_share
from lttw.text.words import read_rule

if TYPE_CHECKING:
    from lttw.settings import CountSettings, ModelSettings, NMFSettings

log = logging.getLogger(__name__)


def factor_tensors(
    texts: dict[str, list[str]],
    rows: np.ndarray,
    labels: np.ndarray,
    n_labels: int,
    counts_dir: Path,
    nmf_dir: Path,
    *,
    model: ModelSettings,
    counts: CountSettings,
    nmf: NMFSettings,
    seed: int,
) -> tuple[dict[str, np.ndarray], dict[str, str]]:
    """``{split: (n, k+s, rank) float32}`` for every split of ``texts`` and the tensor's
    metadata (k, s, rank, ranking, train_factors). ``rows``: the training rows of the train
    split (their ``labels`` are the train split's labels, all rows); ``model``: the slots
    (k, s, ranking, train_factors, factor_splits); ``counts``, ``nmf`` and ``seed``: the
    counting and the NMF of the cross-fitted factors."""
    m = model
    lookup = FactorLookup.load(counts_dir, nmf_dir, read_rule(counts_dir))
    k, s = resolve_slots(m.k, m.s, lookup.distinct_words([texts["train"][i] for i in rows]))
    looked_up = dict(texts)
    if m.train_factors == "out_of_fold":  # the train part is cross-fitted, not looked up
        cross_fitted = out_of_fold_factors(
            [texts["train"][i] for i in rows],
            np.asarray(labels)[rows],  # class ids, or a multi-label indicator matrix
            n_labels,
            read_arrays(Path(nmf_dir) / FACTORS_FILE)["factor_label"],
            k,
            s,
            m.ranking,
            counts,
            nmf,
            m.factor_splits,
            seed,
            lookup.splitter,
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
    log_slot_fill(arrays, k, s)
    warn_zero_rows(arrays, lookup.splitter.rule)
    return arrays, metadata


def log_slot_fill(arrays: dict[str, np.ndarray], k: int, s: int) -> None:
    """How many of the k top / s bottom slots the texts fill; a warning when under half."""
    for split, array in arrays.items():
        fill = slot_fill(array, k, s)
        log.info("%s: %s", split, fill)
        if fill.sparse and len(array):
            log.warning(
                "%s: the texts are short for model.k=%d / model.s=%d (%s); empty slots "
                'are zero vectors (docs/how-to/data.md, "Choosing parameters for your data": '
                "model.k and model.s)",
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
