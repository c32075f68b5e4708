"""Pretrained word vectors (word2vec text format): reading, strict errors, embedding rows."""

from __future__ import annotations

import gzip
from pathlib import Path

import numpy as np
import pytest
from support.datasets import full_root

from lttw.errors import DataError, UserError
from lttw.text.vectors import embedding_matrix, read_word_vectors

TENCENT = Path(str(full_root()), "thucnews", "char_vectors_tencent_200d.vec.gz")
GOOD = "3 2\n北 0.5 -1\nbank 1e-1 2.0 \n京\u3000x 3 4\n"  # a word may hold U+3000


def write(path: Path, text: str | bytes) -> Path:
    data = text.encode("utf-8") if isinstance(text, str) else text
    if path.suffix == ".gz":
        data = gzip.compress(data)
    path.write_bytes(data)
    return path


@pytest.mark.parametrize("name", ["v.vec", "v.vec.gz"])
def test_reads_plain_and_gzipped_files(tmp_path, name):
    words, matrix = read_word_vectors(write(tmp_path / name, GOOD))
    assert words == ["北", "bank", "京\u3000x"]
    assert matrix.dtype == np.float32
    np.testing.assert_array_equal(matrix, np.array([[0.5, -1], [0.1, 2], [3, 4]], np.float32))


def test_vocabulary_reads_only_its_rows_in_file_order(tmp_path):
    path = write(tmp_path / "v.vec", GOOD)
    words, matrix = read_word_vectors(path, vocabulary=["京\u3000x", "北", "missing"])
    assert words == ["北", "京\u3000x"]
    np.testing.assert_array_equal(matrix, np.array([[0.5, -1], [3, 4]], np.float32))
    words, matrix = read_word_vectors(path, vocabulary=[])
    assert words == [] and matrix.shape == (0, 2)


def test_rows_outside_the_vocabulary_are_only_counted(tmp_path):
    path = write(tmp_path / "v.vec", "2 2\na 1 2\nb 1 oops 7\n")
    assert read_word_vectors(path, vocabulary=["a"])[0] == ["a"]
    with pytest.raises(DataError, match="line 3"):
        read_word_vectors(path)


MALFORMED = {
    "no header": ("北 0.5 -1\n", 1, "header 'count dim'"),
    "header not integers": ("3 two\n", 1, "header 'count dim'"),
    "zero dim": ("1 0\na\n", 1, "header 'count dim'"),
    "empty file": ("", 1, "empty file"),
    "too few values": ("2 2\na 1 2\nb 1\n", 3, "expected a word and 2 values, got 2 fields"),
    "too many values": ("2 2\na 1 2 3\nb 1 2\n", 2, "got 4 fields"),
    "not a number": ("2 2\na 1 2\nb 1 x1\n", 3, "'x1' is not a number"),
    "nan": ("1 2\na nan 1\n", 2, "non-finite"),
    "duplicate word": ("3 2\na 1 2\nb 1 2\na 3 4\n", 4, "duplicate word 'a' \\(first on line 2\\)"),
    "fewer rows than header": (
        "3 2\na 1 2\nb 1 2\n",
        3,
        "header says 3 vectors but the file has 2",
    ),
    "more rows than header": ("1 2\na 1 2\nb 1 2\n", 3, "header says 1 vectors but the file has 2"),
    "bad utf-8": (b"1 2\n\xff\xfe 1 2\n", 2, "not valid UTF-8"),
}


@pytest.mark.parametrize("suffix", [".vec", ".vec.gz"])
@pytest.mark.parametrize("case", sorted(MALFORMED))
def test_malformed_file_is_a_one_line_error_naming_file_and_line(tmp_path, case, suffix):
    text, line, problem = MALFORMED[case]
    path = write(tmp_path / f"bad{suffix}", text)
    with pytest.raises(DataError, match=f"line {line}: .*{problem}") as err:
        read_word_vectors(path)
    assert str(err.value).startswith(f"{path}: ") and "\n" not in str(err.value)


def test_truncated_gzip_names_the_line_where_it_stops(tmp_path):
    body = "400 3\n" + "".join(f"w{i} {i} 0.25 -1.5\n" for i in range(400))
    path = tmp_path / "cut.vec.gz"
    path.write_bytes(gzip.compress(body.encode())[:-30])
    with pytest.raises(DataError, match=r"cut\.vec\.gz: line \d+: the gzip stream ends early"):
        read_word_vectors(path)


def test_plain_text_named_gz_and_missing_file(tmp_path):
    path = tmp_path / "plain.vec.gz"
    path.write_text(GOOD, encoding="utf-8")
    with pytest.raises(DataError, match="plain.vec.gz: line 1: not a valid gzip file"):
        read_word_vectors(path)
    with pytest.raises(DataError, match="nope.vec: word-vectors file not found"):
        read_word_vectors(tmp_path / "nope.vec")


@pytest.mark.skipif(
    not TENCENT.is_file(), reason="needs the THUCNews vectors: set LTTW_DATA_ROOT (see docs)"
)
def test_real_tencent_character_vectors():
    words, matrix = read_word_vectors(TENCENT)
    assert matrix.shape == (4729, 200) and len(set(words)) == 4729
    assert matrix.dtype == np.float32 and np.isfinite(matrix).all()
    some, rows = read_word_vectors(TENCENT, vocabulary=["中", "国", "iphone", "a"])
    assert sorted(some) == ["a", "中", "国"]
    for word, row in zip(some, rows):
        np.testing.assert_array_equal(row, matrix[words.index(word)])


VECTORS = (["北", "京", "bank"], np.array([[1, 0], [0, 1], [2, 2]], np.float32))


def test_embedding_matrix_rows_and_coverage():
    vocabulary = ["<pad>", "北", "bank", "北京", "上海"]
    matrix, coverage = embedding_matrix(
        vocabulary, VECTORS, 2, random_state=0, token_counts=[0, 5, 3, 1, 1], padding_index=0
    )
    assert matrix.shape == (5, 2) and matrix.dtype == np.float32
    np.testing.assert_array_equal(matrix[:3], [[0, 0], [1, 0], [2, 2]])
    assert coverage == {
        "vocabulary": 4,
        "found": 2,
        "composed": 0,
        "vocabulary_share": 0.5,
        "vocabulary_share_composed": 0.5,
        "tokens": 10,
        "token_share": 0.8,
        "token_share_composed": 0.8,
    }
    again, _ = embedding_matrix(vocabulary, VECTORS, 2, random_state=0, padding_index=0)
    other, _ = embedding_matrix(vocabulary, VECTORS, 2, random_state=1, padding_index=0)
    np.testing.assert_array_equal(again, matrix)
    assert not np.allclose(other[3:], matrix[3:])


def test_embedding_matrix_composes_words_from_character_vectors():
    matrix, coverage = embedding_matrix(
        ["北京", "北海", "bank"],
        VECTORS,
        2,
        random_state=0,
        token_counts=[2, 1, 1],
        compose_from_characters=True,
    )
    np.testing.assert_allclose(matrix[0], [0.5, 0.5])
    assert (coverage["found"], coverage["composed"]) == (1, 1)
    assert coverage["vocabulary_share_composed"] == pytest.approx(2 / 3)
    assert coverage["token_share"] == pytest.approx(1 / 4)
    assert coverage["token_share_composed"] == pytest.approx(3 / 4)


def test_embedding_matrix_dimension_must_match():
    with pytest.raises(UserError, match="2-dimensional but the embedding has 8"):
        embedding_matrix(["北"], VECTORS, 8, random_state=0)
