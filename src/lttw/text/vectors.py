"""Pretrained static word vectors (word2vec text format), as the seed system's BiLSTM and
Transformer use them to initialise their embeddings.

Format: ``.vec`` (plain) or ``.vec.gz`` (gzip, chosen by the suffix), UTF-8; line 1 is the
header ``count dim``; then one ``word v1 ... vdim`` line per word, fields separated by ASCII
whitespace (so a word may hold a non-ASCII space such as U+3000). Blank lines are skipped.

Reading is streamed and strict: a bad header, a line with the wrong number of fields, a value
that is not a finite number, undecodable UTF-8, a duplicate word, a gzip stream that ends early
or a row count that differs from the header is a one-line ``DataError`` naming the file and the
line. With a ``vocabulary`` only the rows of those words are split, parsed and checked (a
duplicate among them too); the other rows are only counted, which keeps a 2-million-row file
fast to stream.
"""

from __future__ import annotations

import gzip
import zlib
from collections.abc import Iterator, Sequence
from pathlib import Path

import numpy as np

from lttw.errors import DataError, UserError


def _shown(raw: bytes, limit: int = 40) -> str:
    text = raw.decode("utf-8", errors="replace").strip()
    return repr(text if len(text) <= limit else text[:limit] + "...")


def _lines(path: Path) -> Iterator[tuple[int, bytes]]:
    """(line number, raw line) pairs; read errors become a ``DataError`` naming the line."""
    number = 0
    try:
        with gzip.open(path, "rb") if path.suffix == ".gz" else path.open("rb") as stream:
            for number, raw in enumerate(stream, start=1):
                yield number, raw
    except FileNotFoundError:
        raise DataError(f"{path}: word-vectors file not found") from None
    except EOFError:
        raise DataError(
            f"{path}: line {number + 1}: the gzip stream ends early (truncated file?)"
        ) from None
    except (gzip.BadGzipFile, zlib.error) as err:
        raise DataError(f"{path}: line {number + 1}: not a valid gzip file ({err})") from None
    except OSError as err:
        raise DataError(f"{path}: line {number + 1}: cannot read it ({err})") from None


def _header(path: Path, number: int, raw: bytes) -> tuple[int, int]:
    fields = raw.split()
    try:
        count, dim = (int(field) for field in fields)
        if count < 0 or dim < 1:
            raise ValueError
    except ValueError:
        raise DataError(
            f"{path}: line {number}: expected the header 'count dim' (two "
            f"integers, word2vec text format), got {_shown(raw)}"
        ) from None
    return count, dim


def read_word_vectors(
    path: str | Path, vocabulary: Sequence[str] | None = None
) -> tuple[list[str], np.ndarray]:
    """The words (file order) and their vectors, float32 (n_words x dim); with ``vocabulary``
    only the words in it (those the file has)."""
    path = Path(path)
    wanted = None if vocabulary is None else {word.encode("utf-8") for word in vocabulary}
    words: list[str] = []
    rows: list[np.ndarray] = []
    seen: dict[str, int] = {}
    count: int | None = None
    dim: int  # set with count, from the header line, before any vector line is read
    last = rows_read = 0
    for number, raw in _lines(path):
        last = number
        if count is None:
            count, dim = _header(path, number, raw)
            continue
        head = raw.split(maxsplit=1)
        if not head:
            continue
        rows_read += 1
        if wanted is not None and head[0] not in wanted:
            continue
        fields = raw.split()
        if len(fields) != dim + 1:
            raise DataError(
                f"{path}: line {number}: expected a word and {dim} values, got "
                f"{len(fields)} fields ({_shown(raw)})"
            )
        try:
            word = fields[0].decode("utf-8")
        except UnicodeDecodeError:
            raise DataError(
                f"{path}: line {number}: the word is not valid UTF-8 ({_shown(fields[0])})"
            ) from None
        if word in seen:
            raise DataError(
                f"{path}: line {number}: duplicate word {word!r} (first on line {seen[word]})"
            )
        seen[word] = number
        try:
            values = np.array(fields[1:], dtype=np.float32)
        except ValueError:
            bad = next(f for f in fields[1:] if not _is_number(f))
            raise DataError(f"{path}: line {number}: {_shown(bad)} is not a number") from None
        if not np.isfinite(values).all():
            raise DataError(f"{path}: line {number}: word {word!r} has a non-finite value")
        words.append(word)
        rows.append(values)
    if count is None:
        raise DataError(f"{path}: line 1: empty file, expected the header 'count dim'")
    if rows_read != count:
        raise DataError(
            f"{path}: line {last}: the header says {count} vectors but the file "
            f"has {rows_read} (truncated or wrong header?)"
        )
    matrix = np.stack(rows) if rows else np.zeros((0, dim), dtype=np.float32)
    return words, matrix.astype(np.float32, copy=False)


def _is_number(field: bytes) -> bool:
    try:
        float(field)
    except ValueError:
        return False
    return True


def embedding_matrix(
    vocabulary: Sequence[str],
    vectors: tuple[Sequence[str], np.ndarray],
    dim: int,
    random_state: int | None,
    token_counts: Sequence[int] | np.ndarray | None = None,
    padding_index: int | None = None,
    compose_from_characters: bool = False,
) -> tuple[np.ndarray, dict]:
    """Embedding rows (float32, len(vocabulary) x dim) for ``vocabulary`` from ``vectors`` (as
    ``read_word_vectors`` returns them), and their coverage.

    A word found in the vectors gets its vector. With ``compose_from_characters`` a word not
    found whose characters all are (e.g. a jieba word with character vectors) gets the mean of
    their vectors. Every other word gets random values ~ N(0, std of the pretrained values),
    drawn from ``random_state``; the ``padding_index`` row is zeros and left out of coverage.

    Coverage: ``vocabulary`` (words counted), ``found``, ``composed``, ``vocabulary_share``
    (found / vocabulary), ``vocabulary_share_composed`` ((found + composed) / vocabulary) and,
    given ``token_counts`` (one per vocabulary word), ``token_share`` and
    ``token_share_composed``: the same shares weighted by the words' token counts.
    """
    words, matrix = vectors
    matrix = np.asarray(matrix, dtype=np.float32)
    if matrix.ndim != 2 or matrix.shape[1] != dim:
        raise UserError(
            f"the word vectors are {matrix.shape[-1]}-dimensional but the embedding "
            f"has {dim} dimensions (model.word_vectors)"
        )
    if len(words) != matrix.shape[0]:
        raise ValueError(f"{len(words)} words but {matrix.shape[0]} vectors")
    if token_counts is not None and len(token_counts) != len(vocabulary):
        raise ValueError(f"{len(token_counts)} token counts for {len(vocabulary)} words")
    index = {word: row for row, word in enumerate(words)}
    scale = float(matrix.std()) if matrix.size else 1.0 / np.sqrt(dim)
    rng = np.random.default_rng(random_state)
    out = rng.normal(0.0, scale, size=(len(vocabulary), dim)).astype(np.float32)
    found = np.zeros(len(vocabulary), dtype=bool)
    composed = np.zeros(len(vocabulary), dtype=bool)
    for i, word in enumerate(vocabulary):
        row = index.get(word)
        if row is not None:
            out[i], found[i] = matrix[row], True
        elif compose_from_characters and len(word) > 1 and all(c in index for c in word):
            out[i] = matrix[[index[c] for c in word]].mean(axis=0)
            composed[i] = True
    counted = np.ones(len(vocabulary), dtype=bool)
    if padding_index is not None:
        out[padding_index] = 0.0
        found[padding_index] = composed[padding_index] = counted[padding_index] = False
    return out, _coverage(found, composed, counted, token_counts)


def _coverage(
    found: np.ndarray,
    composed: np.ndarray,
    counted: np.ndarray,
    token_counts: Sequence[int] | np.ndarray | None,
) -> dict:
    n = int(counted.sum())
    coverage = {
        "vocabulary": n,
        "found": int(found.sum()),
        "composed": int(composed.sum()),
        "vocabulary_share": float(found.sum() / n) if n else 0.0,
        "vocabulary_share_composed": float((found | composed).sum() / n) if n else 0.0,
    }
    if token_counts is not None:
        counts = np.where(counted, np.asarray(token_counts, dtype=np.float64), 0.0)
        total = counts.sum()
        coverage["tokens"] = int(total)
        coverage["token_share"] = float(counts[found].sum() / total) if total else 0.0
        coverage["token_share_composed"] = (
            float(counts[found | composed].sum() / total) if total else 0.0
        )
    return coverage
