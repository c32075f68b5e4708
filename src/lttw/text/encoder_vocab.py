"""Extending the encoder's vocabulary with what it cannot read (issue 26, ``model.extend_vocab``).

An encoder whose tokenizer maps much of a dataset to ``[UNK]`` (MiniLM-L6 on Chinese titles:
two tokens in three) cannot tell those texts apart, however long it is fine-tuned. The tokens
stage then adds the pieces that came out as ``[UNK]`` in the training sample (at least
``MIN_COUNT`` times) to the tokenizer as new tokens, and the encoder gets one new input
embedding row for each:

- where the dataset has pretrained word vectors (its manifest's ``word_vectors``, e.g. the
  Tencent character vectors of THUCNews), the new token's vector through a ridge map from the
  vectors' space to the encoder's embedding space, fitted on the tokens both know, rescaled to
  the known rows' mean norm;
- otherwise a copy of the ``[UNK]`` row (the model starts as it was, and training separates
  them).

The extended encoder and tokenizer are written as one Hugging Face folder
(``data/tokens/encoder``) that every later stage loads in place of ``model.encoder``
(``pretrained.encoder_for_tokens``), so all variants read the same token ids with the same
vocabulary.
Only the training sample's texts are read (not their labels, and not the held-out samples).
"""

from __future__ import annotations

import collections
import logging
from collections.abc import Sequence

import numpy as np

log = logging.getLogger(__name__)

#: a piece is added when it came out as [UNK] at least this often in the training sample
MIN_COUNT = 2
#: the ridge map needs at least this many tokens that both the encoder and the vectors know
MIN_SHARED = 32
RIDGE_ALPHA = 10.0  # chosen on held-out known characters of THUCNews (cosine 0.59 vs 0.49 mean)


def should_extend(setting: bool | str, unknown_share: float, threshold: float) -> bool:
    """``model.extend_vocab``: true / false as given; auto where more than ``threshold`` of
    the training sample's tokens are [UNK] (the encoder-coverage warning's threshold)."""
    if setting == "auto":
        return unknown_share > threshold
    return bool(setting)


def unknown_pieces(
    tokenizer, texts: Sequence[str], min_count: int = MIN_COUNT
) -> list[tuple[str, int]]:
    """(piece, count) of the text spans the tokenizer turns into its unknown token, seen at
    least ``min_count`` times, most frequent first (ties alphabetical). A BERT tokenizer's
    unknown token stands for one whole pre-token (a CJK character is one), so each span is a
    piece to add as it is."""
    unk = tokenizer.unk_token_id
    if unk is None or not len(texts):
        return []
    counts: collections.Counter[str] = collections.Counter()
    for start in range(0, len(texts), 2048):
        chunk = list(texts[start : start + 2048])
        enc = tokenizer(chunk, add_special_tokens=False, return_offsets_mapping=True)
        for text, ids, offsets in zip(chunk, enc["input_ids"], enc["offset_mapping"]):
            for token, (a, b) in zip(ids, offsets):
                if token == unk and b > a:
                    counts[text[a:b]] += 1
    kept = [(piece, n) for piece, n in counts.items() if n >= min_count and piece.strip()]
    return sorted(kept, key=lambda item: (-item[1], item[0]))


def new_rows(
    embeddings: np.ndarray,
    vocab: dict[str, int],
    pieces: Sequence[str],
    vectors: tuple[list[str], np.ndarray] | None,
    unk_id: int,
) -> tuple[np.ndarray, dict]:
    """One embedding row (width of ``embeddings``) for each new piece, and a record of how
    they were made. ``vectors``: (words, matrix) of pretrained vectors, or None."""
    width = embeddings.shape[1]
    rows = np.repeat(embeddings[unk_id][None, :], len(pieces), axis=0).astype(np.float32)
    record = {"added": len(pieces), "from_vectors": 0, "from_unk": len(pieces), "shared_for_map": 0}
    if vectors is None or not len(pieces):
        return rows, record
    from sklearn.linear_model import Ridge

    words, matrix = vectors
    index = {w: i for i, w in enumerate(words)}
    shared = [w for w in words if w in vocab and vocab[w] != unk_id]
    record["shared_for_map"] = len(shared)
    if len(shared) < MIN_SHARED:
        log.info(
            "vocabulary extension: only %d tokens known to both the encoder and the "
            "vectors (< %d): new rows start as [UNK]'s",
            len(shared),
            MIN_SHARED,
        )
        return rows, record
    x = matrix[[index[w] for w in shared]]
    y = embeddings[[vocab[w] for w in shared]]
    ridge = Ridge(alpha=RIDGE_ALPHA).fit(x, y)  # (dim of vectors) -> (width)
    found = [i for i, piece in enumerate(pieces) if piece in index]
    if found:
        mapped = ridge.predict(matrix[[index[pieces[i]] for i in found]]).astype(np.float32)
        norm = float(np.linalg.norm(y, axis=1).mean())
        mapped *= norm / np.maximum(np.linalg.norm(mapped, axis=1, keepdims=True), 1e-8)
        rows[found] = mapped.reshape(len(found), width)
    record.update(from_vectors=len(found), from_unk=len(pieces) - len(found))
    return rows, record


def extend_encoder(tokenizer, encoder, pieces: Sequence[str], vectors_path: str | None) -> dict:
    """Add ``pieces`` to ``tokenizer`` and grow ``encoder``'s input embeddings to match (new
    rows from ``new_rows``); returns the record for the tokens stage's log and metrics."""
    import torch

    from lttw.text.vectors import read_word_vectors

    vocab = tokenizer.get_vocab()
    pieces = [p for p in pieces if p not in vocab]  # e.g. a piece unknown only once normalised
    embedding = encoder.get_input_embeddings().weight
    weights = embedding.detach().float().cpu().numpy()
    vectors = None
    if vectors_path:
        vectors = read_word_vectors(vectors_path, [*vocab, *pieces])
    rows, record = new_rows(weights, vocab, pieces, vectors, tokenizer.unk_token_id)
    before = len(tokenizer)
    added = tokenizer.add_tokens(list(pieces))  # each new: ids before .. before + added - 1
    encoder.resize_token_embeddings(before + added, mean_resizing=False)
    with torch.no_grad():
        encoder.get_input_embeddings().weight[before : before + added] = torch.from_numpy(rows)
    record.update(vocab_before=before, vocab_after=before + added, vectors=vectors_path)
    return record
