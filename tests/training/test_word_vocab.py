"""``model.vocab: words`` and ``model.word_vectors`` (issue 12, item 3): word ids over the
counts stage's vocabulary, embeddings initialised from pretrained static vectors (composed
from characters where a word is missing), the coverage recorded, and the settings' checks."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from lttw.settings import ModelSettings
from lttw.text.word_ids import PAD_ID, UNK_ID, WordVocabulary, token_counts, word_ids
from lttw.text.words import WordSplitter
from lttw.training.word_vocab import word_embedding

CHAR = WordSplitter("char")
JIEBA = WordSplitter("jieba")


def write_vec(path, rows: dict[str, list[float]]) -> str:
    dim = len(next(iter(rows.values())))
    lines = [f"{len(rows)} {dim}"] + [f"{w} " + " ".join(map(str, v)) for w, v in rows.items()]
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return str(path)


def test_word_ids_pad_unknown_and_truncate():
    ids, mask = word_ids(["球队比赛球", "", "手机球队球队球队"], ["球", "队"], CHAR, max_len=4)
    assert ids.dtype == np.int32 and mask.dtype == np.int8 and ids.shape == (3, 4)
    assert ids[0].tolist() == [2, 3, UNK_ID, UNK_ID] and mask[0].tolist() == [1, 1, 1, 1]
    assert ids[1].tolist() == [UNK_ID, PAD_ID, PAD_ID, PAD_ID]  # no word: one unknown id
    assert mask[1].tolist() == [1, 0, 0, 0]
    assert ids[2].tolist() == [UNK_ID, UNK_ID, 2, 3]  # the first max_len words


def test_token_counts_and_round_trip(tmp_path):
    assert token_counts(["球队球", "队x"], ["球", "队"], CHAR).tolist() == [2, 2]
    vocabulary = WordVocabulary(("比赛", "球队"), JIEBA)
    vocabulary.save(tmp_path / "words")
    loaded = WordVocabulary.load(tmp_path / "words")
    assert loaded == vocabulary and loaded.size == 4
    assert loaded.ids(["球队比赛"], 3)[0].tolist() == [[3, 2, PAD_ID]]


@pytest.mark.parametrize("variant", ["bilstm_attention", "transformer", "leam"])
def test_embedding_rows_are_the_vectors(tmp_path, variant):
    from lttw import models  # noqa: F401  (registers the variants)
    from lttw.models.registry import MODEL_REGISTRY

    vectors = {
        "比赛": [1.0, 2.0, 3.0, 4.0],
        "球": [0.0, 2.0, 0.0, 2.0],
        "队": [2.0, 0.0, 2.0, 0.0],
        "x": [9.0, 9.0, 9.0, 9.0],
    }
    path = write_vec(tmp_path / "v.vec", vectors)
    vocabulary = WordVocabulary(("比赛", "球队", "股票"), JIEBA)
    settings = ModelSettings(
        variant=variant, vocab="words", word_vectors=path, hidden=8, heads=2, layers=1
    )
    weight, record = word_embedding(settings, vocabulary, ["球队比赛", "比赛股票", "比赛"], 0)
    assert record["found"] == 1 and record["composed"] == 1 and record["vocabulary"] == 3
    assert record["vocabulary_share"] == pytest.approx(1 / 3)
    assert record["token_share"] == pytest.approx(3 / 5)  # 比赛 x3 of 5 tokens
    assert record["token_share_composed"] == pytest.approx(4 / 5)
    assert record["dim"] == 4 and record["file"] == path
    net = MODEL_REGISTRY[variant].from_words(settings, 3, vocabulary.size, weight)
    rows = net.embed.weight.detach()
    assert rows.shape == (5, 4)  # the vectors' width, not model.hidden
    assert torch.equal(rows[:2], torch.zeros(2, 4))  # padding, unknown
    assert rows[2].tolist() == vectors["比赛"]
    assert rows[3].tolist() == [1.0, 1.0, 1.0, 1.0]  # 球队: mean of 球 and 队
    logits = net(
        input_ids=torch.tensor([[2, 3, 4, 0]]), attention_mask=torch.tensor([[1, 1, 1, 0]])
    )
    assert logits.shape == (1, 3) and torch.isfinite(logits).all()


def test_without_vectors_the_width_is_hidden(tmp_path, monkeypatch):
    from lttw.models.bilstm_attention import BiLSTMAttentionClassifier

    (tmp_path / "data/sample").mkdir(parents=True)
    (tmp_path / "data/sample/labels.json").write_text('{"classes": ["a", "b"]}')
    monkeypatch.chdir(tmp_path)
    settings = ModelSettings(variant="bilstm_attention", vocab="words", hidden=8)
    weight, record = word_embedding(settings, WordVocabulary(("a",), CHAR), ["a"], 0)
    assert weight is None and record == {"file": None}
    net = BiLSTMAttentionClassifier.from_words(settings, 2, 3, None)
    assert net.embed.weight.shape == (3, 8)


def test_settings():
    assert ModelSettings().vocab == "encoder" and ModelSettings().word_vectors is None
    assert ModelSettings(variant="leam", vocab="words").uses_word_vocab
    assert not ModelSettings(variant="lttw", vocab="words").uses_word_vocab
    with pytest.raises(ValueError, match="model.word_vectors needs model.vocab: words"):
        ModelSettings(word_vectors="v.vec")
    with pytest.raises(ValueError, match="vocab"):
        ModelSettings(vocab="subwords")
