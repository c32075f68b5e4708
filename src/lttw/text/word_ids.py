"""Word ids over the counts stage's vocabulary (``model.vocab: words``), for the baselines that
embed words themselves (``bilstm_attention``, ``transformer``, ``leam``).

Id 0 is padding, id 1 a word outside the vocabulary, word ``i`` of the vocabulary is ``i + 2``.
Texts are split with the recorded rule (``words.json``), so training and prediction split
alike. ``word_ids`` gives arrays shaped like the encoder's tokens (``encoder.tokens``): ids int32
and mask int8, (n, max_len), padding on the right; a text with no word gets one unknown-word
id, so no row is all padding. A model folder keeps the vocabulary and the rule in ``words/``.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from pathlib import Path

import numpy as np

from lttw.errors import DataError
from lttw.text.words import WordSplitter, read_rule, write_rule

PAD_ID, UNK_ID = 0, 1
SPECIALS = ("<pad>", "<unk>")
VOCABULARY_FILE = "vocabulary.json"


def word_ids(
    texts: Sequence[str], vocabulary: Sequence[str] | dict, splitter: WordSplitter, max_len: int
) -> tuple[np.ndarray, np.ndarray]:
    """(ids (n, max_len) int32, mask (n, max_len) int8) of ``texts`` split by ``splitter``:
    the first ``max_len`` words of each text; unknown words get ``UNK_ID``."""
    index = vocabulary if isinstance(vocabulary, dict) else word_index(vocabulary)
    ids = np.full((len(texts), max_len), PAD_ID, dtype=np.int32)
    mask = np.zeros((len(texts), max_len), dtype=np.int8)
    for row, text in enumerate(texts):
        found = [index.get(word, UNK_ID) for word in splitter(text)[:max_len]] or [UNK_ID]
        ids[row, : len(found)] = found
        mask[row, : len(found)] = 1
    return ids, mask


def word_index(vocabulary: Sequence[str]) -> dict[str, int]:
    """word -> id (``i + 2`` for the vocabulary's word ``i``)."""
    return {word: i + len(SPECIALS) for i, word in enumerate(vocabulary)}


def token_counts(
    texts: Sequence[str], vocabulary: Sequence[str], splitter: WordSplitter
) -> np.ndarray:
    """How often each vocabulary word occurs in ``texts`` (all their words, untruncated)."""
    index = {word: i for i, word in enumerate(vocabulary)}
    counts = np.zeros(len(vocabulary), dtype=np.int64)
    for text in texts:
        for word in splitter(text):
            i = index.get(word)
            if i is not None:
                counts[i] += 1
    return counts


@dataclasses.dataclass(frozen=True)
class WordVocabulary:
    """The words a model embeds (without the specials) and the rule that splits texts."""

    words: tuple[str, ...]
    splitter: WordSplitter

    @property
    def size(self) -> int:
        """Rows of the embedding: the specials and the words."""
        return len(self.words) + len(SPECIALS)

    @property
    def embedding_words(self) -> list[str]:
        """One name per embedding row (``SPECIALS`` first)."""
        return list(SPECIALS) + list(self.words)

    def ids(self, texts: Sequence[str], max_len: int) -> tuple[np.ndarray, np.ndarray]:
        return word_ids(texts, self._index, self.splitter, max_len)

    @property
    def _index(self) -> dict[str, int]:
        cached = self.__dict__.get("_cached_index")
        if cached is None:
            cached = word_index(self.words)
            object.__setattr__(self, "_cached_index", cached)
        return cached

    def save(self, folder: str | Path) -> None:
        """``vocabulary.json`` and ``words.json`` into ``folder`` (made here)."""
        from lttw.io import write_json

        folder = Path(folder)
        folder.mkdir(parents=True, exist_ok=True)
        write_json(folder / VOCABULARY_FILE, list(self.words))
        write_rule(folder, self.splitter, reason="recorded with the model's vocabulary")

    @classmethod
    def load(cls, folder: str | Path) -> WordVocabulary:
        """The vocabulary and rule of ``folder`` (a counts stage folder); a one-line error
        naming the file when one is missing or malformed."""
        from lttw.io import read_json

        path = Path(folder) / VOCABULARY_FILE
        if not path.is_file():
            raise DataError(f"{path}: not found (run the counts stage first)")
        return cls.from_documents(read_json(path), path, read_rule(folder))

    @classmethod
    def from_documents(cls, words: object, path: Path, splitter: WordSplitter) -> WordVocabulary:
        """The vocabulary of vocabulary.json's document ``words`` (read from ``path``), split
        by ``splitter``."""
        if not (isinstance(words, list) and all(isinstance(w, str) for w in words)):
            raise DataError(f"{path}: expected a JSON list of words")
        if len(set(words)) != len(words):
            raise DataError(f"{path}: a word occurs twice")
        return cls(tuple(words), splitter)
