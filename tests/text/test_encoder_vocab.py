"""model.extend_vocab (issue 26): the pieces an encoder reads as [UNK] join its vocabulary, with
new embedding rows mapped from word vectors where the dataset has them (lttw.text.encoder_vocab),
on the tiny encoder, which has no CJK character."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from lttw.encoder.pretrained import load_pretrained_encoder, load_transformers_encoder
from lttw.encoder.tokenizer import load_saved_tokenizer, load_tokenizer, save_tokenizer
from lttw.encoder.tokens import UNK_SHARE_WARN, encode_texts, unknown_share
from lttw.settings import ModelSettings
from lttw.text.encoder_vocab import (
    MIN_SHARED,
    extend_encoder,
    new_rows,
    should_extend,
    unknown_pieces,
)

# 新, 闻, 体, 育 twice; 财, 经, 快, 讯 once
CHINESE = ["体育新闻 the cat", "财经新闻", "体育快讯"]


def test_should_extend_follows_the_setting_and_the_threshold():
    assert should_extend("auto", 0.5, UNK_SHARE_WARN)
    assert not should_extend("auto", UNK_SHARE_WARN, UNK_SHARE_WARN)
    assert should_extend(True, 0.0, UNK_SHARE_WARN) and not should_extend(False, 0.9, 0.1)
    assert ModelSettings().extend_vocab == "auto"
    assert ModelSettings(extend_vocab=False).extend_vocab is False
    with pytest.raises(ValueError):
        ModelSettings(extend_vocab="sometimes")


def test_unknown_pieces_are_the_unk_spans_seen_often_enough(tiny_encoder_dir):
    tokenizer = load_tokenizer(tiny_encoder_dir)
    assert unknown_pieces(tokenizer, CHINESE) == [("体", 2), ("新", 2), ("育", 2), ("闻", 2)]
    assert len(unknown_pieces(tokenizer, CHINESE, min_count=1)) == 8
    assert unknown_pieces(tokenizer, ["the cat sat"]) == []


def test_new_rows_map_the_vectors_into_the_embedding_space():
    rng = np.random.default_rng(0)
    n_known, dim, width = MIN_SHARED + 40, 8, 6
    mapping = rng.normal(size=(dim, width))
    vectors = rng.normal(size=(n_known + 2, dim)).astype(np.float32)
    embeddings = np.zeros((n_known + 1, width), np.float32)  # row 0: [UNK]
    embeddings[0] = 5.0
    embeddings[1:] = vectors[:n_known] @ mapping
    vocab = {"[UNK]": 0, **{f"w{i}": i + 1 for i in range(n_known)}}
    words = [f"w{i}" for i in range(n_known)] + ["new1", "new2"]
    rows, record = new_rows(embeddings, vocab, ["new1", "missing", "new2"], (words, vectors), 0)
    assert record == {"added": 3, "from_vectors": 2, "from_unk": 1, "shared_for_map": n_known}
    assert np.array_equal(rows[1], embeddings[0])  # no vector: [UNK]'s row
    mean_norm = np.linalg.norm(embeddings[1:], axis=1).mean()
    for row, vector in ((rows[0], vectors[-2]), (rows[2], vectors[-1])):
        target = vector @ mapping
        cosine = row @ target / np.linalg.norm(row) / np.linalg.norm(target)
        assert cosine > 0.95 and np.linalg.norm(row) == pytest.approx(mean_norm, rel=1e-4)
    # too few tokens known to both: every new row starts as [UNK]'s
    few = (words[: MIN_SHARED - 1] + ["new1"], vectors[list(range(MIN_SHARED - 1)) + [-2]])
    rows, record = new_rows(embeddings, vocab, ["new1"], few, 0)
    assert record["from_vectors"] == 0 and np.array_equal(rows[0], embeddings[0])


def test_extend_encoder_grows_tokenizer_and_embeddings(tiny_encoder_dir, tmp_path):
    tokenizer = load_tokenizer(tiny_encoder_dir)
    encoder = load_transformers_encoder(tiny_encoder_dir)  # resize_token_embeddings
    before = encoder.get_input_embeddings().weight.detach().clone()
    share, _ = unknown_share(tokenizer, *encode_texts(tokenizer, CHINESE, 16))
    pieces = [p for p, _ in unknown_pieces(tokenizer, CHINESE, min_count=1)]
    record = extend_encoder(tokenizer, encoder, pieces, None)
    n = len(pieces)
    assert record["added"] == n and record["vocab_after"] == record["vocab_before"] + n
    weight = encoder.get_input_embeddings().weight.detach()
    assert weight.shape[0] == len(tokenizer) == encoder.config.vocab_size == before.shape[0] + n
    assert torch.equal(weight[: before.shape[0]], before)  # the old rows are kept
    unk = tokenizer.unk_token_id
    assert torch.equal(weight[before.shape[0] :], before[unk].expand(n, -1))  # no vectors
    ids, mask = encode_texts(tokenizer, CHINESE, 16)
    assert share > 0.5 and unknown_share(tokenizer, ids, mask)[0] == 0.0
    # saved and loaded the way the model folder's tokenizer is (lttw predict): the same ids
    save_tokenizer(tokenizer, tmp_path / "tok")
    saved = load_saved_tokenizer(tmp_path / "tok")
    assert np.array_equal(encode_texts(saved, CHINESE, 16)[0], ids)
    encoder.save_pretrained(tmp_path / "enc")
    again = load_pretrained_encoder(tmp_path / "enc")
    assert torch.equal(again.get_input_embeddings().weight, weight)
