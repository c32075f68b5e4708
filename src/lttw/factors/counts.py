"""Word-label count matrix (paper 2.3, Algorithm 1, eq. 1) and its row normalisation.

One word-splitting rule serves every consumer: a ``lttw.text.words.WordSplitter`` (``words.splitter``
with ``counts.token_pattern`` and ``counts.lowercase``), resolved once by the counts stage and
recorded beside the vocabulary (``words.json``), so counts, features and predict-time features
always see the same words. ``tokenize`` / ``build_vectorizer`` are the ``regex`` rule.

n(w, c) is the number of occurrences of word w in training texts of label c. It is computed as
``X.T @ Y`` where X (n_texts x n_words) is the document-term count matrix and Y (n_texts x
n_labels) the sparse label matrix: no Python loop over words.

Multi-label data (Algorithm 1 extended): a text counts once for each of its labels,

    n(w, c) = sum_i x_{i,w} * Y_{i,c},   i.e.   N = X^T Y,

with x_{i,w} the occurrences of word w in text i and Y the 0/1 indicator matrix (Y_{i,c} = 1
where text i has label c; one-hot for single-label data, where this is Algorithm 1 itself).
The row normalisation (eq. 1), the NMF and the factor features read N as before.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np

from lttw.errors import DataError
from lttw.io import read_arrays, write_arrays
from lttw.settings import CountSettings
from lttw.text.splitting_quality import degenerate_warning, splitting_quality
from lttw.text.words import WordSplitter, make_splitter, write_rule

if TYPE_CHECKING:  # scipy is imported where a matrix is built: a model folder's factor
    import scipy.sparse as sp  # lookup (``load_corpus_counts``) runs without it

log = logging.getLogger(__name__)

COUNTS_FILE = "word_label_counts.safetensors"
VOCABULARY_FILE = "vocabulary.json"


def regex_splitter(settings: CountSettings) -> WordSplitter:
    """The ``regex`` rule with ``counts.token_pattern`` / ``counts.lowercase``."""
    return WordSplitter("regex", settings.token_pattern, settings.lowercase)


def build_vectorizer(settings: CountSettings, vocabulary: Sequence[str] | None = None):
    """The ``regex`` rule as an (unfitted) ``CountVectorizer``; with ``vocabulary`` it maps
    texts onto that fixed column order (words outside it are ignored)."""
    return regex_splitter(settings).count_vectorizer(vocabulary)


def tokenize(text: str, settings: CountSettings) -> list[str]:
    """The words of one text, in order, as the ``regex`` rule's count matrix sees them."""
    return regex_splitter(settings)(text)


def choose_splitter(
    words_splitter: str, settings: CountSettings, texts: Sequence[str], language: str | None = None
) -> tuple[WordSplitter, str]:
    """The concrete rule for ``words.splitter`` (``auto``: the manifest's ``language``, else
    the training ``texts``) and its reason; logs both, the splitting quality and, when the
    splitting is degenerate, a warning naming the parameter to change."""
    splitter, reason = make_splitter(
        words_splitter, settings.token_pattern, settings.lowercase, texts=texts, language=language
    )
    log.info("word splitting: %s", reason)
    quality = splitting_quality(texts, splitter)
    log.info(
        "words.splitter=%s: median %g words per text, %.0f%% of %d texts with <= 2 words, "
        "%d distinct words",
        splitter.rule,
        quality.median_words,
        100 * quality.share_short,
        quality.texts,
        quality.vocabulary,
    )
    warning = degenerate_warning(splitter.rule, quality)
    if warning:
        log.warning(warning)
    return splitter, reason


def write_part_counts(
    directory: str | Path,
    texts: Sequence[str],
    labels: np.ndarray,
    n_labels: int,
    words_splitter: str,
    settings: CountSettings,
    language: str | None = None,
) -> None:
    """The counts stage's folder for one set of labelled training texts (a fold's train part,
    or every labelled row for the final model): the word-splitting rule chosen on ``texts``
    (``words.json``), n(w, c) and the vocabulary."""
    splitter, reason = choose_splitter(words_splitter, settings, texts, language)
    counts, vocabulary = word_label_counts(texts, labels, n_labels, settings, splitter)
    save_counts(directory, counts, vocabulary)
    write_rule(directory, splitter, reason)


def label_matrix(labels: np.ndarray, n_labels: int) -> sp.csr_matrix:
    """Sparse label matrix Y (n_texts x n_labels, int64): one-hot, Y[i, labels[i]] = 1, for
    ``(n,)`` class ids; for an ``(n, n_labels)`` 0/1 indicator matrix (multi-label) Y is that
    matrix."""
    import scipy.sparse as sp

    labels = np.asarray(labels)
    if labels.ndim == 2:
        if labels.shape[1] != n_labels or not np.isin(labels, (0, 1)).all():
            raise DataError(
                f"an indicator label matrix must be (n, {n_labels}) of 0/1 "
                f"(got shape {labels.shape})"
            )
        return sp.csr_matrix(labels.astype(np.int64))
    labels = labels.astype(np.int64)
    if labels.size and (labels.min() < 0 or labels.max() >= n_labels):
        raise DataError(f"labels must be in 0..{n_labels - 1} (got {labels.min()}..{labels.max()})")
    ones = np.ones(labels.size, dtype=np.int64)
    return sp.csr_matrix((ones, (np.arange(labels.size), labels)), shape=(labels.size, n_labels))


def word_label_counts(
    texts: Iterable[str],
    labels: np.ndarray,
    n_labels: int,
    settings: CountSettings,
    splitter: WordSplitter | None = None,
) -> tuple[sp.csr_matrix, list[str]]:
    """Algorithm 1: n(w, c) for the given (training) texts, split by ``splitter`` (default:
    the ``regex`` rule of ``settings``). ``labels``: ``(n,)`` class ids, or an ``(n,
    n_labels)`` indicator matrix (multi-label: ``N = X^T Y``, a text counted once per label).

    Returns ``(counts, vocabulary)``: counts is a CSR int64 matrix (n_words x n_labels), row i
    belonging to ``vocabulary[i]`` (alphabetical order). Words seen fewer than
    ``settings.min_count`` times in these texts are dropped.
    """
    texts = list(texts)
    labels = np.asarray(labels)
    if len(texts) != labels.shape[0]:
        raise DataError(f"{len(texts)} texts but {labels.shape[0]} labels")
    splitter = splitter or regex_splitter(settings)
    vectorizer = splitter.count_vectorizer()
    try:
        X = vectorizer.fit_transform(texts)  # (n_texts, n_words)
    except ValueError as err:  # "empty vocabulary"
        raise DataError(
            f"no words found in {len(texts)} training texts with words.splitter="
            f"{splitter.rule} and counts.token_pattern {splitter.token_pattern!r} "
            f"({err})"
        ) from None
    counts = (X.T.tocsr() @ label_matrix(labels, n_labels)).tocsr()  # (n_words, n_labels)
    vocabulary = vectorizer.get_feature_names_out().tolist()
    counts, vocabulary = drop_rare(counts, vocabulary, settings.min_count)
    counts.sort_indices()
    log.info(
        "word-label counts: %d texts, %d words, %d labels, %d tokens",
        len(texts),
        len(vocabulary),
        n_labels,
        int(counts.sum()),
    )
    return counts, vocabulary


def drop_rare(
    counts: sp.csr_matrix, vocabulary: list[str], min_count: int
) -> tuple[sp.csr_matrix, list[str]]:
    """Keep rows (words) whose total count n(w) is at least ``min_count``."""
    if min_count <= 1:
        return counts, vocabulary
    keep = np.flatnonzero(corpus_counts(counts) >= min_count)
    if keep.size == 0:
        raise DataError(
            f"counts.min_count={min_count} drops every word (the most frequent word "
            f"occurs {int(corpus_counts(counts).max())} times)"
        )
    log.info("counts.min_count=%d: kept %d of %d words", min_count, keep.size, len(vocabulary))
    return counts[keep].tocsr(), [vocabulary[i] for i in keep]


def corpus_counts(counts: sp.spmatrix) -> np.ndarray:
    """n(w) = sum over labels of n(w, c): shape (n_words,), int64."""
    return np.asarray(counts.sum(axis=1)).ravel().astype(np.int64)


def normalise_rows(counts: sp.spmatrix) -> sp.csr_matrix:
    """V[w, c] = n(w, c) / n(w) (eq. 1) as CSR float64, shape (n_words, n_labels).

    A word with n(w) = 0 (only possible for a hand-made matrix) keeps an all-zero row.
    """
    import scipy.sparse as sp

    counts = sp.csr_matrix(counts, dtype=np.float64)
    totals = corpus_counts(counts).astype(np.float64)
    inverse = np.divide(1.0, totals, out=np.zeros_like(totals), where=totals > 0)
    return (sp.diags(inverse) @ counts).tocsr()


def save_counts(directory: str | Path, counts: sp.spmatrix, vocabulary: list[str]) -> None:
    """Write ``word_label_counts.safetensors`` (COO row/col/data + shape) and
    ``vocabulary.json`` (words in row order) into ``directory``."""
    import scipy.sparse as sp

    directory = Path(directory)
    coo = sp.coo_matrix(counts)
    if coo.shape[0] != len(vocabulary):
        raise ValueError(f"{coo.shape[0]} count rows but {len(vocabulary)} words")
    write_arrays(
        directory / COUNTS_FILE,
        row=coo.row.astype(np.int64),
        col=coo.col.astype(np.int64),
        data=coo.data.astype(np.int64),
        shape=np.asarray(coo.shape, dtype=np.int64),
    )
    (directory / VOCABULARY_FILE).write_text(
        json.dumps(vocabulary, ensure_ascii=False) + "\n", encoding="utf-8"
    )


def _read_counts(directory: str | Path) -> tuple[dict[str, np.ndarray], list[str]]:
    """The arrays ``save_counts`` wrote (COO row/col/data + shape) and the vocabulary,
    checked against each other."""
    directory = Path(directory)
    for name in (COUNTS_FILE, VOCABULARY_FILE):
        if not (directory / name).is_file():
            raise DataError(f"{directory / name}: not found (run the counts stage first)")
    arrays = read_arrays(directory / COUNTS_FILE)
    vocabulary = json.loads((directory / VOCABULARY_FILE).read_text(encoding="utf-8"))
    return checked_counts(arrays, vocabulary, directory)


def checked_counts(
    arrays: dict[str, np.ndarray], vocabulary: object, directory: Path
) -> tuple[dict[str, np.ndarray], list[str]]:
    """``save_counts``' arrays and vocabulary (read from ``directory``), checked against
    each other."""
    shape = tuple(int(v) for v in arrays["shape"])
    if not (isinstance(vocabulary, list) and len(vocabulary) == shape[0]):
        size = len(vocabulary) if isinstance(vocabulary, list) else "no list of"
        raise DataError(
            f"{directory}: {size} words in {VOCABULARY_FILE} but {shape[0]} rows in {COUNTS_FILE}"
        )
    return arrays, vocabulary


def corpus_totals(arrays: dict[str, np.ndarray], vocabulary: list[str]) -> np.ndarray:
    """n(w) (n_words,) int64 of ``save_counts``' checked arrays, in numpy alone."""
    totals = np.zeros(len(vocabulary), dtype=np.int64)
    np.add.at(totals, arrays["row"].astype(np.int64), arrays["data"].astype(np.int64))
    return totals


def load_counts(directory: str | Path) -> tuple[sp.csr_matrix, list[str]]:
    """Inverse of ``save_counts``: (counts CSR int64 (n_words x n_labels), vocabulary)."""
    import scipy.sparse as sp

    arrays, vocabulary = _read_counts(directory)
    shape = tuple(int(v) for v in arrays["shape"])
    counts = sp.coo_matrix((arrays["data"], (arrays["row"], arrays["col"])), shape=shape).tocsr()
    return counts, vocabulary


def load_corpus_counts(directory: str | Path) -> tuple[np.ndarray, list[str]]:
    """(n(w) (n_words,) int64, vocabulary) of a ``save_counts`` folder, in numpy alone:
    ``corpus_counts(load_counts(directory)[0])`` without scipy (a model folder's lookup)."""
    arrays, vocabulary = _read_counts(directory)
    return corpus_totals(arrays, vocabulary), vocabulary
