"""Out-of-fold latent factors for the training rows (cross-fitting).

The paper builds V = n(w, c) / n(w) from the training texts and looks the same texts up in it.
For a word that occurs in one training text only, its row of V is the one-hot vector of that
text's label, so the factor rows of a training text's rare words (exactly the bottom-s words)
encode its label: the classifier learns to read the answer off H_tw and fails on texts whose
words were not counted with their own label. Validation, test and prediction texts are never
counted, so they do not carry that leak, and the model overfits (measured: see README).

``out_of_fold_factors`` gives each training row the factors it would get as an unseen text:
the fold's train part is split into ``n_splits`` groups, and each group's texts are looked up
in counts built from the other groups. The word factors of those counts are solved against the
fold's own factor-label matrix H (held fixed: W = argmin ||V_g - W H||, W >= 0), so every row
lives in the same factor space as the full-fit factors used for the other texts.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence

import numpy as np
from sklearn.model_selection import StratifiedKFold

from lttw.factors.counts import corpus_counts, normalise_rows, regex_splitter, word_label_counts
from lttw.factors.features import FactorLookup
from lttw.factors.nmf import factors_given_labels
from lttw.settings import CountSettings, NMFSettings, Ranking
from lttw.text.words import WordSplitter

log = logging.getLogger(__name__)


def out_of_fold_factors(
    texts: Sequence[str],
    labels: np.ndarray,
    n_labels: int,
    factor_label: np.ndarray,
    k: int,
    s: int,
    ranking: Ranking,
    count_settings: CountSettings,
    nmf_settings: NMFSettings,
    n_splits: int,
    random_state: int | None,
    words: WordSplitter | None = None,
) -> np.ndarray:
    """(len(texts), k+s, rank) float32: each text's H_tw from counts that exclude its group,
    texts split by ``words`` (default: the ``regex`` rule of ``count_settings``)."""
    words = words or regex_splitter(count_settings)
    labels = np.asarray(labels, dtype=np.int64)
    out = np.zeros((len(texts), k + s, factor_label.shape[0]), dtype=np.float32)
    n_splits = min(n_splits, int(np.bincount(labels, minlength=n_labels).max()))
    if n_splits < 2:
        raise ValueError("out-of-fold factors need at least 2 training texts per group")
    splitter = StratifiedKFold(n_splits=n_splits, shuffle=True, random_state=random_state)
    # StratifiedKFold needs every class in every split; a class with fewer rows only warns
    for rest, held in splitter.split(np.zeros(len(labels)), labels):
        counts, vocabulary = word_label_counts(
            [texts[i] for i in rest], labels[rest], n_labels, count_settings, words
        )
        W = factors_given_labels(normalise_rows(counts), factor_label, nmf_settings, random_state)
        lookup = FactorLookup(vocabulary, corpus_counts(counts), W, words)
        out[held] = lookup.transform([texts[i] for i in held], k, s, ranking)
    log.info("out-of-fold factors for %d training texts in %d groups", len(texts), n_splits)
    return out
