"""``model.vocab: words`` for the train stage: the fold's word vocabulary (the counts stage's
words and rule), and the embedding rows from pretrained static vectors with their coverage.

The vectors file is ``model.word_vectors``, else the dataset manifest's ``word_vectors``
(``labels.json``), else none (a random embedding). It is read before the stage writes
anything, so a malformed file stops it with one line naming the file and the line and leaves
no output behind.
"""

from __future__ import annotations

import logging

import numpy as np

from lttw import layout
from lttw.io import read_json
from lttw.text.vectors import embedding_matrix, read_word_vectors
from lttw.text.word_ids import SPECIALS, WordVocabulary, token_counts

log = logging.getLogger(__name__)


def fold_vocabulary(counts_dir) -> WordVocabulary:
    """The vocabulary and word-splitting rule of a counts folder (a fold's counts stage
    output, or the final model's counts)."""
    return WordVocabulary.load(counts_dir)


def vectors_file(model_settings) -> tuple[str | None, str]:
    """The word-vectors file to read and where it was named (for the log)."""
    if model_settings.word_vectors:
        return model_settings.word_vectors, "model.word_vectors"
    manifest = read_json(layout.LABELS_JSON).get("word_vectors")
    if manifest:
        return str(manifest), "the dataset manifest's word_vectors"
    return None, "none: model.word_vectors is null and the manifest names none"


def word_embedding(model_settings, vocabulary: WordVocabulary, train_texts: list[str], seed: int):
    """(weight tensor (vocabulary.size x dim) or None, record for the train metrics)."""
    import torch

    path, source = vectors_file(model_settings)
    if path is None:
        log.info(
            "model.vocab=words: %d words, random embeddings (%s)", len(vocabulary.words), source
        )
        return None, {"file": None}
    words, matrix = read_word_vectors(path, list(vocabulary.words) + _characters(vocabulary.words))
    counts = token_counts(train_texts, vocabulary.words, vocabulary.splitter)
    rows, coverage = embedding_matrix(
        vocabulary.words,
        (words, matrix),
        matrix.shape[1],
        seed,
        token_counts=counts,
        compose_from_characters=True,
    )
    # the padding and unknown-word rows (ids 0 and 1) start at zero
    weight = np.concatenate([np.zeros((len(SPECIALS), matrix.shape[1]), np.float32), rows])
    log.info(
        "word vectors %s (%s, %d-d): %d of %d words found (%.1f%%), %d more composed "
        "from their characters; %.1f%% of training tokens covered (%.1f%% with the "
        "composed)",
        path,
        source,
        matrix.shape[1],
        coverage["found"],
        coverage["vocabulary"],
        100 * coverage["vocabulary_share"],
        coverage["composed"],
        100 * coverage.get("token_share", 0.0),
        100 * coverage.get("token_share_composed", 0.0),
    )
    return torch.from_numpy(weight), {"file": str(path), "dim": int(matrix.shape[1]), **coverage}


def _characters(words) -> list[str]:
    """The distinct characters of multi-character words (for composed vectors)."""
    return sorted({c for word in words if len(word) > 1 for c in word})
