"""Word-label counts of multi-label data (issue 42): n(w, c) = sum_i x_{i,w} Y_{i,c}, i.e.
N = X^T Y with Y the indicator matrix; a text counts once for each of its labels."""

from __future__ import annotations

import numpy as np
import pytest

from lttw.errors import DataError
from lttw.factors.counts import label_matrix, word_label_counts
from lttw.settings import CountSettings


def test_counts_are_x_transpose_y_on_a_tiny_example():
    texts = ["red red apple", "apple pie", "red pie pie"]
    Y = np.array([[1, 0, 1], [0, 1, 0], [1, 1, 0]], np.uint8)  # text 0: labels 0 and 2
    counts, vocabulary = word_label_counts(texts, Y, 3, CountSettings())
    assert vocabulary == ["apple", "pie", "red"]
    X = np.array([[1, 0, 2], [1, 1, 0], [0, 2, 1]])  # texts x words
    np.testing.assert_array_equal(counts.toarray(), X.T @ Y)
    # by hand: "red" is twice in text 0 (labels 0, 2) and once in text 2 (labels 0, 1)
    assert counts[vocabulary.index("red")].toarray().tolist() == [[3, 1, 2]]


def test_one_label_per_text_as_an_indicator_matrix_equals_class_ids():
    texts = ["a b", "b c", "c a a"]
    ids = np.array([0, 2, 1])
    one_hot = np.eye(3, dtype=np.uint8)[ids]
    by_ids, _ = word_label_counts(texts, ids, 3, CountSettings())
    by_matrix, _ = word_label_counts(texts, one_hot, 3, CountSettings())
    np.testing.assert_array_equal(by_ids.toarray(), by_matrix.toarray())
    np.testing.assert_array_equal(label_matrix(one_hot, 3).toarray(), one_hot)


def test_label_matrix_rejects_a_matrix_of_the_wrong_width_or_values():
    with pytest.raises(DataError, match=r"\(n, 3\) of 0/1"):
        label_matrix(np.ones((2, 4), np.uint8), 3)
    with pytest.raises(DataError, match=r"\(n, 2\) of 0/1"):
        label_matrix(np.array([[2, 0]]), 2)
