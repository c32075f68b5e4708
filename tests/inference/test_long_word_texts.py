"""``--chunk`` for models on word ids counts and windows a text by the model's own word rule
(``words/words.json``): a long Chinese title without spaces is cut (and read in windows),
where a whitespace count would see one word; English is counted as before."""

from __future__ import annotations

from pathlib import Path
from types import SimpleNamespace

import numpy as np
import pandas as pd
import pytest
from support.cli_runner import invoke

from lttw.inference.long_texts import (
    WindowedPredictor,
    reading_part,
    spans,
    windows,
    word_rule,
)
from lttw.inference.predict import Predictor
from lttw.text.words import WordSplitter

MAX_LEN = 16
ZH = "球队赢得联赛冠军股票市场上涨" * 6  # 84 characters, no space: far more than 16 words
EN = "team game match player season score " * 6  # 36 words


def word_id_folder(folder: Path, rule: WordSplitter) -> Path:
    """A tiny bilstm_attention model folder on word ids (random weights), as training lays
    it out: lttw.json ``vocab: words`` and ``words/`` (vocabulary and rule), no tokenizer,
    the checksums recorded last."""
    import torch

    from lttw import models  # noqa: F401  (registers the variants)
    from lttw.models.bundle import write_model_folder
    from lttw.models.folder_files import record_checksums
    from lttw.models.registry import MODEL_REGISTRY, save_model
    from lttw.settings import CountSettings, ModelSettings
    from lttw.text.word_ids import WordVocabulary

    words = ("球队", "联赛", "冠军", "股票", "市场", "上涨", *"球队赛冠军股票市场", *EN.split()[:6])
    vocabulary = WordVocabulary(tuple(dict.fromkeys(words)), rule)
    settings = ModelSettings(
        variant="bilstm_attention", vocab="words", hidden=8, layers=1, max_len=MAX_LEN
    )
    torch.manual_seed(0)
    net = MODEL_REGISTRY[settings.variant].from_words(settings, 2, vocabulary.size, None)
    save_model(net, folder)
    write_model_folder(
        folder,
        ["sports", "finance"],
        settings,
        0,
        counts=CountSettings(),
        seed=0,
        words=rule,
        word_vocabulary=vocabulary,
    )
    record_checksums(folder)
    return folder


@pytest.fixture(scope="module", params=["char", "jieba"])
def model(request, tmp_path_factory) -> Path:
    return word_id_folder(tmp_path_factory.mktemp(request.param) / "m", WordSplitter(request.param))


def test_a_long_chinese_text_is_cut_and_read_in_windows(model):
    plain = Predictor.load(model)
    rule = plain.words.splitter
    assert word_rule(plain) == rule
    (found,) = spans(plain, [ZH])
    assert len(found) == len(rule(ZH)) > 2 * MAX_LEN
    counting = WindowedPredictor(Predictor.load(model))
    np.testing.assert_array_equal(counting.predict_proba([ZH]), plain.predict_proba([ZH]))
    assert counting.long == 1 and "16 words were cut" in (counting.note() or "")

    windowed = WindowedPredictor(Predictor.load(model), chunk=True)
    got = windowed.predict_proba([ZH, "股票上涨"])
    pieces = windows(ZH, found, MAX_LEN)
    assert len(pieces) >= 4 and all(len(rule(p)) <= MAX_LEN for p in pieces)
    assert sum(len(rule(p)) for p in pieces) >= len(found)  # every word is read
    np.testing.assert_allclose(got[0], plain.predict_proba(pieces).mean(axis=0), atol=1e-6)
    np.testing.assert_allclose(got[1], plain.predict_proba(["股票上涨"])[0], atol=1e-6)
    assert windowed.long == 1


def test_predict_chunk_reads_a_long_chinese_text_in_windows(model, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    args = ["predict", "--model", model, ZH]
    cut = invoke(*args, "--out", "cut.csv")
    assert cut.exit_code == 0, cut.output
    assert "warning: 1 texts longer than the model's 16 words were cut" in cut.stderr
    whole = invoke(*args, "--chunk", "--out", "whole.csv")
    assert whole.exit_code == 0, whole.output
    assert "1 texts longer than the model's 16 words: read in sliding windows" in whole.stderr
    probs = pd.read_csv("whole.csv")[["prob_sports", "prob_finance"]].to_numpy()[0]
    windowed = WindowedPredictor(Predictor.load(model), chunk=True).predict_proba([ZH])[0]
    np.testing.assert_allclose(probs, windowed, atol=1e-5)


def test_english_words_are_counted_as_before(tmp_path):
    """Words between spaces: the regex rule counts and windows them as whitespace did."""
    folder = word_id_folder(tmp_path / "en", WordSplitter("regex"))
    predictor = WindowedPredictor(Predictor.load(folder), chunk=True)
    (found,) = spans(predictor.predictor, [EN])
    assert [EN[a:b] for a, b in found] == EN.split()
    assert windows(EN, found, MAX_LEN) == [
        " ".join(EN.split()[i : i + MAX_LEN]) for i in range(0, len(found) - MAX_LEN // 2, 8)
    ]
    predictor.predict_proba([EN, "team game"])
    assert predictor.long == 1


def stub(meta: dict) -> SimpleNamespace:
    return SimpleNamespace(meta=meta, model_inputs=lambda texts: texts, tokenizer=None)


def test_without_a_vocabulary_the_rule_of_lttw_json_or_whitespace():
    """A predictor on word ids without ``words`` (lttw.json's rule), and one with no rule of
    its own (an ensemble's: whitespace, as ever)."""
    record = WordSplitter("char").record()
    chinese = stub({"max_len": MAX_LEN, "vocab": "words", "words": record})
    assert word_rule(chinese) == WordSplitter("char")
    assert len(spans(chinese, [ZH])[0]) == len(ZH)
    ensemble = stub({"max_len": MAX_LEN})
    assert word_rule(ensemble) is None
    assert spans(ensemble, [ZH, "a b  c"]) == [[(0, len(ZH))], [(0, 1), (2, 3), (5, 6)]]


def test_an_ensemble_is_cut_as_its_part_that_reads_the_fewest():
    """An ensemble (``parts``) counts and windows as the part that reads the fewest words or
    tokens (LTTW beside tf-idf: the tf-idf part reads whole texts); one whose parts all read
    whole texts cuts nothing."""
    long = " ".join(f"w{i}" for i in range(3 * MAX_LEN))
    word_ids, whole = stub({"max_len": MAX_LEN}), stub({})
    mixed = SimpleNamespace(
        meta={"max_len": 4 * MAX_LEN},
        model_inputs=lambda texts: texts,
        tokenizer=None,
        parts=[whole, word_ids],
        predict_proba=lambda texts, batch_size=64: np.full((len(texts), 2), 0.5, np.float32),
    )
    assert reading_part(mixed) is word_ids
    windowed = WindowedPredictor(mixed)
    assert windowed.size == MAX_LEN
    windowed.predict_proba([long, "short text"])
    assert windowed.long == 1 and f"longer than the model's {MAX_LEN} words" in windowed.note()
    tfidf_only = SimpleNamespace(**{**vars(mixed), "parts": [whole, whole]})
    assert reading_part(tfidf_only) is None
    nothing_cut = WindowedPredictor(tfidf_only)
    nothing_cut.predict_proba([long])
    assert nothing_cut.size is None and nothing_cut.long == 0 and nothing_cut.note() is None
