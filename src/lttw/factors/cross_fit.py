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
from typing import Any

import numpy as np
from sklearn.model_selection import StratifiedKFold

from lttw.choices import Ranking
from lttw.data.label_sets import label_counts
from lttw.errors import DataError
from lttw.factors.counts import (
    corpus_counts,
    label_matrix,
    normalise_rows,
    regex_splitter,
    word_label_counts,
)
from lttw.factors.features import FactorLookup, tensor_from_document_terms
from lttw.factors.nmf import factors_given_labels
from lttw.settings import CountSettings, NMFSettings
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
    texts split by ``words`` (default: the ``regex`` rule of ``count_settings``). ``labels``:
    ``(n,)`` class ids, or an ``(n, n_labels)`` indicator matrix (multi-label: the groups by
    iterative stratification, ``MultilabelStratifiedKFold``)."""
    words = words or regex_splitter(count_settings)
    labels = np.asarray(labels)
    multi_label = labels.ndim == 2
    labels = labels if multi_label else labels.astype(np.int64)
    out = np.zeros((len(texts), k + s, factor_label.shape[0]), dtype=np.float32)
    n_splits = min(n_splits, int(label_counts(labels, n_labels).max()))
    if n_splits < 2:
        raise ValueError("out-of-fold factors need at least 2 training texts per group")
    splitter = _group_splitter(multi_label, n_splits, random_state)
    # the texts are split into words and counted once, not once per group (issue 43 item 4);
    # first_occurrence needs word positions, which counts do not keep: it splits per group
    counted = None if ranking == "first_occurrence" else _document_terms(texts, words)
    # StratifiedKFold needs every class in every split; a class with fewer rows only warns
    for rest, held in splitter.split(np.zeros(len(labels)), labels):
        if counted is None:
            counts, vocabulary = word_label_counts(
                [texts[i] for i in rest], labels[rest], n_labels, count_settings, words
            )
            W = factors_given_labels(
                normalise_rows(counts), factor_label, nmf_settings, random_state
            )
            lookup = FactorLookup(vocabulary, corpus_counts(counts), W, words)
            out[held] = lookup.transform([texts[i] for i in held], k, s, ranking)
            continue
        doc_terms, all_words = counted
        counts, columns = _group_counts(doc_terms, rest, labels, n_labels, count_settings)
        W = factors_given_labels(normalise_rows(counts), factor_label, nmf_settings, random_state)
        out[held] = tensor_from_document_terms(
            doc_terms[held][:, columns],
            [all_words[i] for i in columns],
            corpus_counts(counts),
            W,
            k,
            s,
            ranking,
        )
    log.info("out-of-fold factors for %d training texts in %d groups", len(texts), n_splits)
    return out


def _group_splitter(multi_label: bool, n_splits: int, random_state: int | None):
    """Stratified groups: by class, or for multi-label data by iterative stratification."""
    if multi_label:
        from iterstrat.ml_stratifiers import MultilabelStratifiedKFold

        return MultilabelStratifiedKFold(n_splits=n_splits, shuffle=True, random_state=random_state)
    return StratifiedKFold(n_splits=n_splits, shuffle=True, random_state=random_state)


def _document_terms(texts: Sequence[str], words: WordSplitter) -> tuple[Any, list[str]]:
    """(n_texts, n_words) CSR int64 word counts of ``texts`` and the words (alphabetical):
    the same split as ``word_label_counts``, done once."""
    vectorizer = words.count_vectorizer()
    try:
        doc_terms = vectorizer.fit_transform(list(texts)).tocsr()
    except ValueError as err:  # "empty vocabulary"
        raise DataError(
            f"no words found in {len(texts)} training texts with words.splitter="
            f"{words.rule} and counts.token_pattern {words.token_pattern!r} ({err})"
        ) from None
    return doc_terms, vectorizer.get_feature_names_out().tolist()


def _group_counts(doc_terms, rest: np.ndarray, labels: np.ndarray, n_labels: int, settings):
    """``word_label_counts`` of the ``rest`` rows from their document-term rows: (counts
    (n_words' x n_labels) CSR, the columns of ``doc_terms`` they belong to), the words absent
    from those rows and those under ``counts.min_count`` left out, as it leaves them out."""
    counts = (doc_terms[rest].T.tocsr() @ label_matrix(labels[rest], n_labels)).tocsr()
    totals = corpus_counts(counts)
    columns = np.flatnonzero(totals >= max(1, settings.min_count))
    if columns.size == 0:
        raise DataError(
            f"counts.min_count={settings.min_count} drops every word of a cross-fitting "
            f"group (the most frequent word occurs {int(totals.max(initial=0))} times)"
        )
    counts = counts[columns].tocsr()
    counts.sort_indices()
    return counts, columns
