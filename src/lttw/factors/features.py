"""Latent-factor features per text (paper 2.3, end; SPEC step 3): H_tw of shape (k+s, rank).

Selection rule. Only words of the factorisation vocabulary count. A text's n distinct in-vocab
words are ranked, highest first, by their count in the text; ties are broken by ``ranking``:

* ``count_then_corpus`` (default): training-corpus count n(w), higher first, then alphabetically;
* ``count_then_alpha``: alphabetically;
* ``first_occurrence``: position of the word's first occurrence in the text, earlier first.

top = the first min(k, n) words of the ranking; bottom = the last min(s, n - len(top)) words, in
ranking order (highest first). No word fills two slots: a text with fewer than k + s distinct
in-vocab words gives all of them to ``top`` first and the rest to ``bottom``.

Tensor layout: slots 0..k-1 hold the top words' factor rows, slots k..k+s-1 the bottom words',
each block filled from its first slot; unused slots are zero vectors (an empty or all
out-of-vocabulary text gives an all-zero (k+s, rank) block).
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from lttw.choices import Ranking
from lttw.errors import DataError
from lttw.factors.counts import checked_counts, corpus_totals, load_corpus_counts
from lttw.factors.nmf import load_word_factors
from lttw.settings import RANKINGS
from lttw.text.words import WordSplitter, read_rule


def _check_ranking(ranking: str) -> None:
    if ranking not in RANKINGS:
        raise DataError(f"model.ranking {ranking!r}: must be one of {', '.join(RANKINGS)}")


def top_bottom_words(
    tokens: Sequence[str],
    k: int,
    s: int,
    vocabulary_index: Mapping[str, int],
    corpus_counts: np.ndarray,
    ranking: Ranking = "count_then_corpus",
) -> tuple[list[str], list[str]]:
    """The top-k and bottom-s words of one tokenised text (reference implementation).

    ``vocabulary_index`` maps word -> row of the factorisation; ``corpus_counts[row]`` is n(w).
    Returns (top, bottom), both in ranking order, highest first, disjoint.
    """
    _check_ranking(ranking)
    in_vocab = [t for t in tokens if t in vocabulary_index]
    counts = Counter(in_vocab)
    first: dict[str, int] = {}
    for position, word in enumerate(in_vocab):
        first.setdefault(word, position)

    def key(word: str):
        if ranking == "count_then_corpus":
            return (-counts[word], -int(corpus_counts[vocabulary_index[word]]), word)
        if ranking == "count_then_alpha":
            return (-counts[word], word)
        return (-counts[word], first[word])

    ranked = sorted(counts, key=key)
    top = ranked[: min(k, len(ranked))]
    n_bottom = min(s, len(ranked) - len(top))
    bottom = ranked[len(ranked) - n_bottom :] if n_bottom else []
    return top, bottom


def _alpha_rank(vocabulary: Sequence[str]) -> np.ndarray:
    """Position of each word in alphabetical (code point) order: shape (n_words,), int64."""
    rank = np.empty(len(vocabulary), dtype=np.int64)
    order = np.argsort(np.asarray(vocabulary, dtype=object), kind="stable")
    rank[order] = np.arange(len(vocabulary))
    return rank


def _entries(
    texts: Sequence[str], vocabulary: Sequence[str], splitter: WordSplitter, with_positions: bool
) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray | None]:
    """(row, word, count, first_position) of every distinct (text, in-vocab word) pair,
    sorted by row then word. first_position is None unless ``with_positions``. Plain numpy (no
    scikit-learn): ``lttw predict`` starts without importing it."""
    index = {w: i for i, w in enumerate(vocabulary)}
    ids = [[index[t] for t in splitter(text) if t in index] for text in texts]
    lengths = np.fromiter((len(x) for x in ids), dtype=np.int64, count=len(ids))
    words = np.fromiter((i for x in ids for i in x), dtype=np.int64, count=int(lengths.sum()))
    rows = np.repeat(np.arange(len(ids)), lengths)
    positions = np.arange(words.size) - np.repeat(np.cumsum(lengths) - lengths, lengths)
    n_words = max(len(vocabulary), 1)
    unique, first, count = np.unique(rows * n_words + words, return_index=True, return_counts=True)
    return (
        unique // n_words,
        unique % n_words,
        count.astype(np.int64),
        positions[first] if with_positions else None,
    )


def selection_slots(
    rows: np.ndarray,
    words: np.ndarray,
    counts: np.ndarray,
    n_texts: int,
    k: int,
    s: int,
    tie_keys: Sequence[np.ndarray],
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Vectorised top/bottom selection over all (text, word) entries at once.

    ``tie_keys``: per-entry arrays, most significant first, smaller = ranked higher.
    Returns (row, slot, word) of every selected entry; slot in 0..k+s-1.
    """
    order = np.lexsort(tuple(reversed(tie_keys)) + (-counts, rows))
    rows, words = rows[order], words[order]
    per_text = np.bincount(rows, minlength=n_texts)
    starts = np.cumsum(per_text) - per_text
    position = np.arange(rows.size) - starts[rows]
    n = per_text[rows]
    n_top = np.minimum(k, n)
    n_bottom = np.minimum(s, n - n_top)
    is_top = position < n_top
    bottom_start = n - n_bottom
    is_bottom = position >= bottom_start
    slot = np.where(is_top, position, k + position - bottom_start)
    keep = is_top | is_bottom
    return rows[keep], slot[keep], words[keep]


def latent_factor_tensor(
    texts: Sequence[str],
    vocabulary: Sequence[str],
    corpus_counts: np.ndarray,
    word_factors: np.ndarray,
    k: int,
    s: int,
    ranking: Ranking,
    splitter: WordSplitter,
) -> np.ndarray:
    """H_tw for each text: float32 array (n_texts, k+s, rank).

    vocabulary: the factorisation's words in row order (n_words); corpus_counts: n(w), shape
    (n_words,); word_factors: (n_words, rank). Texts are raw strings, split by ``splitter``
    exactly as the count matrix was.
    """
    _check_ranking(ranking)
    word_factors = np.asarray(word_factors, dtype=np.float32)
    if word_factors.shape[0] != len(vocabulary) or len(corpus_counts) != len(vocabulary):
        raise DataError(
            f"vocabulary has {len(vocabulary)} words but word_factors has "
            f"{word_factors.shape[0]} rows and corpus_counts {len(corpus_counts)}"
        )
    texts = list(texts)
    out = np.zeros((len(texts), k + s, word_factors.shape[1]), dtype=np.float32)
    if not texts or k + s == 0 or not len(vocabulary):
        return out
    rows, words, counts, first = _entries(
        texts, vocabulary, splitter, with_positions=ranking == "first_occurrence"
    )
    _fill(out, rows, words, counts, first, vocabulary, corpus_counts, word_factors, k, s, ranking)
    return out


def tensor_from_document_terms(
    doc_terms,
    vocabulary: Sequence[str],
    corpus_counts: np.ndarray,
    word_factors: np.ndarray,
    k: int,
    s: int,
    ranking: Ranking,
) -> np.ndarray:
    """``latent_factor_tensor`` of texts already counted: ``doc_terms`` is their (n_texts,
    n_words) sparse count matrix over ``vocabulary``'s columns (the same split of the texts).
    The same tensor, without splitting the texts again (``out_of_fold_factors`` counts the
    train part once for all its groups). Not for ``first_occurrence``, which needs the
    words' positions."""
    if ranking == "first_occurrence":
        raise ValueError("first_occurrence needs the texts themselves: latent_factor_tensor")
    _check_ranking(ranking)
    word_factors = np.asarray(word_factors, dtype=np.float32)
    out = np.zeros((doc_terms.shape[0], k + s, word_factors.shape[1]), dtype=np.float32)
    if not doc_terms.shape[0] or k + s == 0 or not len(vocabulary):
        return out
    coo = doc_terms.tocoo()
    nonzero = coo.data > 0
    rows, words = coo.row[nonzero].astype(np.int64), coo.col[nonzero].astype(np.int64)
    counts = coo.data[nonzero].astype(np.int64)
    _fill(out, rows, words, counts, None, vocabulary, corpus_counts, word_factors, k, s, ranking)
    return out


def _fill(out, rows, words, counts, first, vocabulary, corpus_counts, word_factors, k, s, ranking):
    """Write the selected words' factor rows into ``out`` (n_texts, k+s, rank), from the
    (row, word, count[, first position]) entries of the texts' distinct in-vocabulary words."""
    if ranking == "count_then_corpus":
        corpus = np.asarray(corpus_counts, dtype=np.int64)
        tie_keys = [-corpus[words], _alpha_rank(vocabulary)[words]]
    elif ranking == "count_then_alpha":
        tie_keys = [_alpha_rank(vocabulary)[words]]
    else:
        tie_keys = [first]
    sel_rows, slots, sel_words = selection_slots(rows, words, counts, len(out), k, s, tie_keys)
    out[sel_rows, slots] = word_factors[sel_words]


@dataclass(frozen=True)
class FactorLookup:
    """Everything needed to turn raw texts into H_tw: one fold's vocabulary (row order),
    n(w) (n_words,), word factors (n_words, rank) and the word-splitting rule."""

    vocabulary: list[str]
    corpus_counts: np.ndarray
    word_factors: np.ndarray
    splitter: WordSplitter

    @classmethod
    def load(
        cls,
        counts_directory: str | Path,
        nmf_directory: str | Path,
        splitter: WordSplitter | None = None,
    ) -> FactorLookup:
        """The fold's lookup; ``splitter`` None: the rule recorded in the counts folder."""
        totals, vocabulary = load_corpus_counts(counts_directory)
        splitter = splitter or read_rule(counts_directory)
        factors = load_word_factors(nmf_directory)
        if factors.shape[0] != len(vocabulary):
            raise DataError(
                f"{nmf_directory}: {factors.shape[0]} factor rows but "
                f"{len(vocabulary)} words in {counts_directory}; rerun the nmf stage"
            )
        return cls(vocabulary, totals, factors, splitter)

    @classmethod
    def from_content(
        cls, counts: bytes, vocabulary: object, factors: bytes, where: Path, splitter: WordSplitter
    ) -> FactorLookup:
        """The lookup of a model folder's ``factors/`` files read into memory (``where``:
        the folder, named in messages): the counts' and factors' safetensors bytes and the
        vocabulary's JSON document."""
        from safetensors.numpy import load

        arrays, words = checked_counts(load(counts), vocabulary, where)
        word_factors = load(factors)["word_factors"]
        if word_factors.shape[0] != len(words):
            raise DataError(
                f"{where}: {word_factors.shape[0]} factor rows but {len(words)} words; "
                "the folder is damaged"
            )
        return cls(words, corpus_totals(arrays, words), word_factors, splitter)

    @property
    def rank(self) -> int:
        return int(self.word_factors.shape[1])

    def distinct_words(self, texts: Sequence[str]) -> np.ndarray:
        """(n_texts,) int64: how many distinct vocabulary words each text holds."""
        rows = _entries(list(texts), self.vocabulary, self.splitter, with_positions=False)[0]
        return np.bincount(rows, minlength=len(texts))

    def transform(
        self, texts: Sequence[str], k: int, s: int, ranking: Ranking = "count_then_corpus"
    ) -> np.ndarray:
        """(n_texts, k+s, rank) float32, see ``latent_factor_tensor``."""
        return latent_factor_tensor(
            texts,
            self.vocabulary,
            self.corpus_counts,
            self.word_factors,
            k,
            s,
            ranking,
            self.splitter,
        )


def empty_features(n_texts: int) -> np.ndarray:
    """Placeholder (n_texts, 0, 0) float32 for runs without latent factors: it does not depend
    on k, s or rank, so stages downstream of ``features`` stay cached when those change."""
    return np.zeros((n_texts, 0, 0), dtype=np.float32)
