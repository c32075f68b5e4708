"""Out-of-fold factors for training rows: no label leak, same factor space as the full fit."""

from __future__ import annotations

import numpy as np

from lttw.factors.counts import corpus_counts, normalise_rows, word_label_counts
from lttw.factors.cross_fit import out_of_fold_factors
from lttw.factors.features import FactorLookup
from lttw.factors.nmf import factors_given_labels, latent_factors
from lttw.settings import CountSettings, NMFSettings
from lttw.text.words import WordSplitter

CS, NS = CountSettings(), NMFSettings(rank=3, max_iter=500)
TOPICS = [("goal match team", 0), ("stock market bank", 1), ("chip software data", 2)]


def corpus(n_per_class: int = 20):
    """Each text: its class's topic words plus one unique word seen nowhere else."""
    texts, labels = [], []
    for i in range(n_per_class):
        for words, label in TOPICS:
            texts.append(f"{words} {words} unique{label}x{i}")
            labels.append(label)
    return texts, np.array(labels)


def full_fit(texts, labels):
    counts, vocab = word_label_counts(texts, labels, 3, CS)
    factors = latent_factors(normalise_rows(counts), 3, NS, random_state=0)
    return FactorLookup(vocab, corpus_counts(counts), factors.word_factors, WordSplitter()), factors


def test_in_sample_leaks_the_label_out_of_fold_does_not():
    # texts of every class share the same common words; only a unique word tells them apart
    texts, labels = corpus()
    texts = [f"the news today {t.split()[-1]}" for t in texts]
    lookup, factors = full_fit(texts, labels)
    in_sample = lookup.transform(texts, 0, 1)[:, 0]
    assert not np.allclose(in_sample[labels == 0][0], in_sample[labels == 1][0], atol=1e-3)
    oof = out_of_fold_factors(
        texts,
        labels,
        3,
        factors.factor_label,
        0,
        1,
        "count_then_corpus",
        CS,
        NS,
        n_splits=4,
        random_state=0,
    )
    assert oof.shape == (len(texts), 1, 3)
    # the unique word is unseen in the other groups: the slot holds a common word, whose row
    # (solved against the same H) is the same whatever the text's label
    assert np.abs(oof).sum() > 0
    assert np.allclose(oof[:, 0], oof[0, 0], atol=1e-3)


def test_factors_given_labels_share_the_full_fit_space():
    texts, labels = corpus()
    counts, vocab = word_label_counts(texts, labels, 3, CS)
    V = normalise_rows(counts)
    factors = latent_factors(V, 3, NS, random_state=0)
    W = factors_given_labels(V, factors.factor_label, NS, random_state=0)
    # solving W for the fit's own H reproduces the fit's reconstruction
    assert np.allclose(
        W @ factors.factor_label, factors.word_factors @ factors.factor_label, atol=1e-2
    )
