"""Word-label counts (Algorithm 1) and row normalisation against a brute-force dict version."""

from __future__ import annotations

import importlib
import re
from collections import defaultdict

import numpy as np
import pandas as pd
import pytest
import scipy.sparse as sp
from hypothesis import given
from hypothesis import settings as hsettings
from hypothesis import strategies as st

from lttw import layout
from lttw.data.folds import assign_folds, fold_parts, folds_frame
from lttw.errors import DataError, UserError
from lttw.factors.counts import (
    build_vectorizer,
    corpus_counts,
    load_counts,
    normalise_rows,
    save_counts,
    tokenize,
    word_label_counts,
)
from lttw.io import write_json
from lttw.settings import CountSettings, settings_from_dict

CORPUS = [
    "The cat sat on the mat",
    "the dog ran",
    "Cat and DOG, cat!",
    "stocks fell; the market",
    "market market rally",
    "the the the",
]
LABELS = np.array([0, 1, 0, 2, 2, 1])


def brute_force(texts, labels, n_labels, pattern=r"(?u)\b\w+\b", lowercase=True, min_count=1):
    """Algorithm 1 with Python dicts: n[w][c] += 1 for every word occurrence."""
    n = defaultdict(lambda: [0] * n_labels)
    for text, label in zip(texts, labels):
        for word in re.findall(pattern, text.lower() if lowercase else text):
            n[word][label] += 1
    return {w: row for w, row in n.items() if sum(row) >= min_count}


def as_dict(counts, vocabulary):
    dense = counts.toarray()
    return {w: dense[i].tolist() for i, w in enumerate(vocabulary)}


def test_counts_equal_brute_force():
    counts, vocab = word_label_counts(CORPUS, LABELS, 3, CountSettings())
    assert sp.isspmatrix_csr(counts) and counts.shape == (len(vocab), 3)
    assert counts.dtype == np.int64
    assert vocab == sorted(vocab)
    assert as_dict(counts, vocab) == brute_force(CORPUS, LABELS, 3)
    assert as_dict(counts, vocab)["the"] == [2, 4, 1]


def test_case_sensitive_and_min_count():
    settings = CountSettings(lowercase=False, min_count=2)
    counts, vocab = word_label_counts(CORPUS, LABELS, 3, settings)
    assert as_dict(counts, vocab) == brute_force(CORPUS, LABELS, 3, lowercase=False, min_count=2)
    assert "DOG" not in vocab and "the" in vocab


def test_min_count_dropping_everything_is_an_error():
    with pytest.raises(DataError, match="min_count=99"):
        word_label_counts(CORPUS, LABELS, 3, CountSettings(min_count=99))


def test_tokenize_matches_vectorizer():
    s = CountSettings()
    analyzer = build_vectorizer(s).build_analyzer()
    for text in CORPUS + ["", "  ", "Émile's café — 2024"]:
        assert tokenize(text, s) == analyzer(text) == re.findall(s.token_pattern, text.lower())


def test_bad_token_pattern_names_parameter():
    with pytest.raises(UserError, match="counts.token_pattern"):
        build_vectorizer(CountSettings(token_pattern="(a)(b)"))
    with pytest.raises(UserError, match="counts.token_pattern"):
        build_vectorizer(CountSettings(token_pattern="(unclosed"))


def test_no_words_is_a_data_error():
    with pytest.raises(DataError, match="no words"):
        word_label_counts(["...", "!!"], np.array([0, 1]), 2, CountSettings())


def test_normalise_rows():
    counts = sp.csr_matrix(np.array([[1, 3, 0], [0, 0, 0], [2, 2, 4]]))
    V = normalise_rows(counts)
    assert sp.isspmatrix_csr(V) and V.dtype == np.float64
    np.testing.assert_allclose(V.toarray(), [[0.25, 0.75, 0], [0, 0, 0], [0.25, 0.25, 0.5]])
    np.testing.assert_array_equal(corpus_counts(counts), [4, 0, 8])


def test_save_load_roundtrip(tmp_path):
    counts, vocab = word_label_counts(
        CORPUS + ["naïve Zürich"], np.append(LABELS, 1), 3, CountSettings()
    )
    save_counts(tmp_path, counts, vocab)
    loaded, loaded_vocab = load_counts(tmp_path)
    assert loaded_vocab == vocab
    assert (loaded != counts).nnz == 0 and loaded.dtype == np.int64
    with pytest.raises(DataError, match="not found"):
        load_counts(tmp_path / "missing")


words = st.sampled_from(["a", "b", "Cc", "dd", "e1", "ff", "x_y"])
corpora = st.lists(
    st.tuples(st.lists(words, max_size=8).map(" ".join), st.integers(0, 2)), min_size=1, max_size=20
)


@hsettings(max_examples=60, deadline=None)
@given(corpora, st.booleans(), st.integers(1, 3))
def test_counts_property(corpus, lowercase, min_count):
    texts = [t for t, _ in corpus] + ["a b Cc"]
    labels = np.array([c for _, c in corpus] + [0])
    expected = brute_force(texts, labels, 3, lowercase=lowercase, min_count=min_count)
    settings = CountSettings(lowercase=lowercase, min_count=min_count)
    if not expected:
        with pytest.raises(DataError):
            word_label_counts(texts, labels, 3, settings)
        return
    counts, vocab = word_label_counts(texts, labels, 3, settings)
    assert as_dict(counts, vocab) == expected
    V = normalise_rows(counts).toarray()
    np.testing.assert_allclose(V.sum(axis=1), 1.0)
    for i, w in enumerate(vocab):
        np.testing.assert_allclose(V[i], np.array(expected[w]) / sum(expected[w]))


def _load_stage(name):
    return importlib.import_module(f"lttw.stages.{name}")


def test_no_leakage_from_val_and_test_parts(tmp_path, monkeypatch):
    """Words only in a fold's val/test parts do not change that fold's count matrix."""
    monkeypatch.chdir(tmp_path)
    rng = np.random.default_rng(0)
    labels = np.repeat([0, 1], 30)
    texts = [f"common w{rng.integers(0, 10)} label{lab}" for lab in labels]
    fold_ids = assign_folds(labels, 10, 0)
    parts = fold_parts(fold_ids, 3, 10)
    layout.SAMPLE_DIR.mkdir(parents=True)
    layout.FOLDS_PARQUET.parent.mkdir(parents=True)
    folds_frame(fold_ids, 10).to_parquet(layout.FOLDS_PARQUET, index=False)
    write_json(layout.LABELS_JSON, {"classes": ["x", "y"]})
    settings = settings_from_dict({"folds": {"n_folds": 10, "run": [3]}})
    counts_stage = _load_stage("counts")

    def run(sample_texts):
        pd.DataFrame(
            {"text": sample_texts, "label": labels, "source_row": np.arange(60)}
        ).to_parquet(layout.sample_parquet("train"), index=False)
        counts_stage.main(settings, 3)
        return load_counts(layout.counts_dir(3))

    base_counts, base_vocab = run(texts)
    leaky = list(texts)
    for i in np.concatenate([parts["val"], parts["test"]]):
        leaky[i] = texts[i] + " leakword common common"
    counts, vocab = run(leaky)
    assert vocab == base_vocab and "leakword" not in vocab
    assert (counts != base_counts).nnz == 0
    leaky[parts["train"][0]] += " trainword"  # sanity: the train part does count
    assert "trainword" in run(leaky)[1]
