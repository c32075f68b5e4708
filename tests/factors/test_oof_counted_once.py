"""``out_of_fold_factors`` splits and counts the train part once for all its groups
(issue 43 item 4), and gives exactly the tensor of counting each group's other texts anew."""

from __future__ import annotations

import numpy as np
import pytest
from sklearn.model_selection import StratifiedKFold

from lttw.factors.counts import corpus_counts, normalise_rows, regex_splitter, word_label_counts
from lttw.factors.cross_fit import out_of_fold_factors
from lttw.factors.features import FactorLookup
from lttw.factors.nmf import factors_given_labels
from lttw.settings import CountSettings, NMFSettings

WORDS = "oil bank stock game team win movie film love war news deal price rare1 rare2".split()


def corpus(n: int = 60, seed: int = 0) -> tuple[list[str], np.ndarray]:
    rng = np.random.default_rng(seed)
    labels = np.arange(n) % 3
    texts = [
        " ".join(rng.choice(WORDS[4 * c : 4 * c + 6], size=rng.integers(3, 12)))
        + (" Rare1 rare2" if i % 7 == 0 else "")
        for i, c in enumerate(labels)
    ]
    return texts, labels


def per_group_reference(texts, labels, factor_label, k, s, ranking, cs, nmf, splits, seed):
    """The loop before: each group's other texts split and counted anew."""
    words = regex_splitter(cs)
    out = np.zeros((len(texts), k + s, factor_label.shape[0]), dtype=np.float32)
    folds = StratifiedKFold(n_splits=splits, shuffle=True, random_state=seed)
    for rest, held in folds.split(np.zeros(len(labels)), labels):
        counts, vocabulary = word_label_counts([texts[i] for i in rest], labels[rest], 3, cs, words)
        W = factors_given_labels(normalise_rows(counts), factor_label, nmf, seed)
        lookup = FactorLookup(vocabulary, corpus_counts(counts), W, words)
        out[held] = lookup.transform([texts[i] for i in held], k, s, ranking)
    return out


@pytest.mark.parametrize("ranking", ["count_then_corpus", "count_then_alpha"])
@pytest.mark.parametrize("min_count", [1, 2])
def test_counting_once_gives_the_per_group_tensor(ranking, min_count):
    texts, labels = corpus()
    cs, nmf = CountSettings(min_count=min_count), NMFSettings(rank=3)
    factor_label = np.random.default_rng(1).random((3, 3)) + 0.1
    args = (factor_label, 3, 2, ranking, cs, nmf, 4, 7)
    fast = out_of_fold_factors(texts, labels, 3, *args)
    reference = per_group_reference(texts, labels, *args)
    assert fast.shape == (len(texts), 5, 3) and np.abs(fast).sum() > 0
    # the same integer counts through the same NMF and lookup: exact (issue 59)
    np.testing.assert_array_equal(fast, reference)
