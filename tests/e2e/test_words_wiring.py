"""The words.splitter rule wired into its consumers (issue 12): English stays byte-identical
under `auto`, tfidf_linear and model folders carry the rule, `lttw data check` reports it."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
from sklearn.feature_extraction.text import CountVectorizer
from support.datasets import EMBEDDED, full_root, needs_full

from lttw.checks.dataset import check_dataset
from lttw.errors import DataError
from lttw.factors.counts import choose_splitter, corpus_counts, word_label_counts
from lttw.factors.features import latent_factor_tensor
from lttw.inference.predict import model_words
from lttw.models.tfidf import TfidfLinear, fit_tfidf_linear
from lttw.settings import CountSettings, settings_from_dict
from lttw.text.words import WordSplitter


def test_auto_on_ag_news_is_regex_with_identical_counts_and_features():
    frame = pd.read_parquet(EMBEDDED / "ag_news" / "test.parquet").iloc[:300]
    texts, labels = frame["text"].tolist(), frame["label"].to_numpy(np.int64)
    settings = CountSettings()
    splitter, reason = choose_splitter("auto", settings, texts, language=None)
    assert splitter == WordSplitter("regex") and "-> regex" in reason
    counts, vocabulary = word_label_counts(texts, labels, 4, settings, splitter)
    # today's rule, written out independently: scikit-learn with counts.token_pattern
    plain = CountVectorizer(token_pattern=settings.token_pattern, lowercase=True, dtype=np.int64)
    x = plain.fit_transform(texts)
    assert vocabulary == plain.get_feature_names_out().tolist()
    np.testing.assert_array_equal(counts.toarray(), (x.T @ np.eye(4, dtype=np.int64)[labels]))
    factors = np.random.default_rng(0).random((len(vocabulary), 3)).astype(np.float32)
    tensor = latent_factor_tensor(
        texts, vocabulary, corpus_counts(counts), factors, 4, 4, "count_then_corpus", splitter
    )
    again = latent_factor_tensor(
        texts,
        vocabulary,
        corpus_counts(counts),
        factors,
        4,
        4,
        "count_then_corpus",
        WordSplitter("regex"),
    )
    assert tensor.tobytes() == again.tobytes() and tensor.any()


def test_tfidf_linear_splits_with_the_rule_and_keeps_it_when_saved(tmp_path):
    texts = ["球队赢得联赛冠军", "银行股票市场上涨", "球员进球比赛", "基金投资利率"] * 3
    labels = [0, 1, 0, 1] * 3
    model = fit_tfidf_linear(texts, labels, 2, words=WordSplitter("jieba"))
    assert {"球队", "联赛", "股票市场", "球队 赢得"} <= set(model.vocabulary)
    model.save(tmp_path)
    loaded = TfidfLinear.load(tmp_path)
    assert loaded.settings.splitter == "jieba"
    np.testing.assert_array_equal(  # saved and loaded: the same computation, exact
        loaded.predict_proba(["冠军球队"]), model.predict_proba(["冠军球队"])
    )
    assert loaded.predict(["冠军球队", "股票上涨"]).tolist() == [0, 1]


def test_model_words_reads_lttw_json_only(tmp_path):
    """The rule is lttw.json's ``words``; a folder without one is a one-line error naming
    lttw.json, not a rule guessed from its ``counts``."""
    record = WordSplitter("char").record()
    assert model_words(tmp_path, {"words": record}) == WordSplitter("char")
    counts = {"counts": {"token_pattern": r"(?u)\b\w\w+\b", "lowercase": False, "min_count": 1}}
    for meta in (counts, {"words": {"splitter": "spaces"}}):
        with pytest.raises(DataError, match="lttw.json: word-splitting record") as err:
            model_words(tmp_path, meta)
        assert "\n" not in str(err.value)


def test_data_check_reports_the_rule_and_degenerate_splitting(tmp_path):
    texts = ["球队赢得联赛冠军", "银行股票市场上涨", "球员进球比赛", "基金投资利率"] * 10
    pd.DataFrame({"text": texts, "label": [0, 1, 0, 1] * 10}).to_csv(
        tmp_path / "zh.csv", index=False
    )
    base = {"data": {"train_size": 20, "test_size": 4, "predict_size": 4}}
    auto = check_dataset(settings_from_dict(base), str(tmp_path / "zh.csv")).words
    assert auto["rule"] == "jieba" and "CJK letters" in auto["reason"]
    assert auto["warning"] is None and auto["median_words"] >= 3
    # k / s auto on these 3-4 word texts: 2 + 2 slots (and nothing where both are numbers)
    assert 3 <= auto["distinct_words"] <= 4 and auto["slots"] == (2, 2)
    fixed = check_dataset(
        settings_from_dict({**base, "model": {"k": 10, "s": 10}}), str(tmp_path / "zh.csv")
    ).words
    assert fixed["slots"] is None and fixed["distinct_words"] == auto["distinct_words"]
    regex = check_dataset(
        settings_from_dict({**base, "words": {"splitter": "regex"}}), str(tmp_path / "zh.csv")
    ).words
    assert regex["rule"] == "regex" and regex["median_words"] == 1
    assert "set words.splitter to" in regex["warning"]


@needs_full("thucnews")
def test_thucnews_resolves_to_jieba_from_its_manifest():
    check = check_dataset(settings_from_dict({"data": {"root": str(full_root())}}), "thucnews")
    assert check.dataset.language == "zh" and check.dataset.word_vectors.endswith(".vec.gz")
    assert check.words["rule"] == "jieba" and "language 'zh'" in check.words["reason"]
    assert check.plan.loc["train", "from"] == "all rows (pooled)"  # dev + test pooled
    assert not check.problems
