"""The word-splitting rules (regex / jieba / char / auto), their quality measures and warning."""

from __future__ import annotations

import logging

import numpy as np
import pytest
from sklearn.feature_extraction.text import CountVectorizer, TfidfVectorizer

from lttw.errors import DataError, UserError
from lttw.factors.counts import build_vectorizer, tokenize
from lttw.settings import CountSettings
from lttw.text import words
from lttw.text.splitting_quality import degenerate_warning, splitting_quality, zero_row_share
from lttw.text.words import WordSplitter, make_splitter, resolve_splitter

ENGLISH = ["The cat sat on the mat.", "Stocks FELL 3.5% -- oil_price up!", "", "C++ & naïve café"]
CHINESE = [
    "我来到北京清华大学",
    "苹果发布iPhone 15，售价5999元！",
    "布拉特：放球员一条生路吧 FIFA能消化",
    "60年铁树开花形状似玉米芯(组图)",
    "锌价难续去年辉煌",
]
JAPANESE = ["東京でラーメンを食べました", "今日はとても暑いですね", "新しいパソコンを買いたい"]
KOREAN = ["오늘 날씨가 정말 좋네요", "서울에서 친구를 만났습니다"]


@pytest.mark.parametrize(
    "pattern,lowercase", [(r"(?u)\b\w+\b", True), (r"(?u)\b\w\w+\b", False), (r"([a-z]+)\d*", True)]
)
def test_regex_rule_is_todays_rule(pattern, lowercase):
    settings = CountSettings(token_pattern=pattern, lowercase=lowercase)
    splitter = WordSplitter("regex", pattern, lowercase)
    sklearn_words = CountVectorizer(token_pattern=pattern, lowercase=lowercase).build_analyzer()
    for text in ENGLISH + CHINESE:
        assert splitter(text) == tokenize(text, settings) == sklearn_words(text)
    ours = splitter.count_vectorizer().fit(ENGLISH + CHINESE)
    today = build_vectorizer(settings).fit(ENGLISH + CHINESE)
    assert ours.get_feature_names_out().tolist() == today.get_feature_names_out().tolist()


def test_regex_rule_keeps_a_chinese_clause_whole():
    assert WordSplitter("regex")(CHINESE[2]) == ["布拉特", "放球员一条生路吧", "fifa能消化"]


def test_jieba_splits_chinese_words_and_drops_punctuation():
    splitter = WordSplitter("jieba")
    assert splitter(CHINESE[0]) == ["我", "来到", "北京", "清华大学"]
    got = splitter(CHINESE[1])
    assert "苹果" in got and "iphone" in got and "15" in got and "5999" in got
    assert not any(ch in "".join(got) for ch in "，！ ")
    assert "iPhone" in WordSplitter("jieba", lowercase=False)(CHINESE[1])


def test_jieba_uses_its_dictionary_without_hmm_new_words():
    assert WordSplitter("jieba")("中青宝sg现场抓拍") == ["中", "青", "宝", "sg", "现场", "抓拍"]


def test_jieba_applies_the_token_pattern_inside_its_pieces():
    assert WordSplitter("jieba")("售价3.5%") == ["售价", "3", "5"]
    two_or_more = WordSplitter("jieba", token_pattern=r"(?u)\b\w\w+\b")
    assert two_or_more("我来到北京") == ["来到", "北京"]


def test_jieba_is_deterministic_across_loads():
    first = WordSplitter("jieba").split_many(CHINESE)
    words._jieba_tokenizer.cache_clear()
    assert WordSplitter("jieba").split_many(CHINESE) == first


def test_jieba_is_quiet_unless_debug(caplog):
    """jieba logs "Building prefix dict ..." to its own stderr handler at DEBUG; its logger
    level is what silences it (the records then reach no handler, caplog's included)."""
    caplog.set_level(logging.DEBUG, logger="jieba")  # caplog restores this level afterwards

    def jieba_lines() -> list[str]:
        lines = [r.getMessage() for r in caplog.records if r.name == "jieba"]
        caplog.clear()
        return lines

    words._jieba_tokenizer.cache_clear()
    WordSplitter("jieba")(CHINESE[0])
    assert jieba_lines() == []
    logger = logging.getLogger("lttw.text.words")
    level = logger.level
    logger.setLevel(logging.DEBUG)
    try:
        words._jieba_tokenizer.cache_clear()
        WordSplitter("jieba")(CHINESE[0])
        assert any("prefix dict" in line for line in jieba_lines())
    finally:
        logger.setLevel(level)
        words._jieba_tokenizer.cache_clear()  # the next load is quiet again


def test_char_rule_splits_cjk_and_keeps_latin_words_whole():
    assert WordSplitter("char")("iPhone6手机，很好！") == ["iphone6", "手", "机", "很", "好"]
    assert WordSplitter("char")("今日は") == ["今", "日", "は"]
    assert WordSplitter("char")(ENGLISH[0]) == WordSplitter("regex")(ENGLISH[0])


@pytest.mark.parametrize("rule", ["regex", "jieba", "char"])
def test_each_rule_works_inside_scikit_learn(rule):
    splitter = WordSplitter(rule)
    by_analyzer = CountVectorizer(analyzer=splitter).fit(CHINESE)
    by_params = splitter.count_vectorizer().fit(CHINESE)
    names = by_params.get_feature_names_out().tolist()
    assert by_analyzer.get_feature_names_out().tolist() == names
    assert set(names) == {w for text in CHINESE for w in splitter(text)}
    bigrams = TfidfVectorizer(**splitter.vectorizer_params(), ngram_range=(1, 2)).fit(CHINESE)
    assert len(bigrams.get_feature_names_out()) > len(names)
    fixed = splitter.count_vectorizer(vocabulary=names[:3]).transform(CHINESE)
    assert fixed.shape == (len(CHINESE), 3) and fixed.dtype == np.int64


@pytest.mark.parametrize(
    "language,rule",
    [
        ("zh", "jieba"),
        ("zh-CN", "jieba"),
        ("zh_Hant", "jieba"),
        ("ja", "char"),
        ("en", "regex"),
        ("ko", "regex"),
        ("de", "regex"),
    ],
)
def test_auto_follows_the_language_hint(language, rule):
    got, reason = resolve_splitter("auto", texts=ENGLISH, language=language)
    assert got == rule and language in reason and "\n" not in reason


@pytest.mark.parametrize(
    "texts,rule",
    [
        (CHINESE, "jieba"),
        (ENGLISH, "regex"),
        (JAPANESE, "char"),
        (KOREAN, "regex"),
        ([], "regex"),
        (["", "  "], "regex"),
    ],
)
def test_auto_detects_the_script_of_the_texts(texts, rule):
    got, reason = resolve_splitter("auto", texts=texts)
    assert got == rule, reason
    assert reason.startswith("words.splitter=auto")


def test_auto_detection_threshold_is_the_cjk_share_of_letters():
    mostly_english = ["a long english sentence about the market today 北京"]  # 2 of 44 letters
    assert resolve_splitter("auto", texts=mostly_english)[0] == "regex"
    assert words.script_shares(["北京 market"])["cjk"] == pytest.approx(2 / 8)
    assert resolve_splitter("auto", texts=["北京 market"])[0] == "regex"  # 25% < 30%
    assert resolve_splitter("auto", texts=["北京上海 market"])[0] == "jieba"  # 40%


def test_concrete_names_resolve_to_themselves_and_bad_names_fail():
    assert resolve_splitter("char", texts=ENGLISH, language="en") == ("char", "words.splitter=char")
    with pytest.raises(UserError, match="words.splitter='spaces'"):
        resolve_splitter("spaces")
    with pytest.raises(UserError, match="resolve it first"):
        WordSplitter("auto")
    with pytest.raises(UserError, match="counts.token_pattern"):
        WordSplitter("jieba", token_pattern="(a)(b)")
    splitter, reason = make_splitter("auto", lowercase=False, language="zh")
    assert splitter == WordSplitter("jieba", lowercase=False) and "zh" in reason


def test_record_round_trip_and_malformed_record():
    splitter = WordSplitter("char", r"(?u)\b\w\w+\b", False)
    assert WordSplitter.from_record(splitter.record(), "m/words.json") == splitter
    with pytest.raises(DataError, match="m/words.json"):
        WordSplitter.from_record({"splitter": "char"}, "m/words.json")
    with pytest.raises(DataError, match="m/words.json: words.splitter='auto'"):
        WordSplitter.from_record({**splitter.record(), "splitter": "auto"}, "m/words.json")


def test_splitting_quality_and_degenerate_warning():
    regex = splitting_quality(CHINESE, WordSplitter("regex"))
    assert (regex.texts, regex.median_words) == (5, 2.0)
    assert regex.share_short == pytest.approx(0.6)
    assert regex.degenerate
    jieba = splitting_quality(CHINESE, WordSplitter("jieba"))
    assert jieba.median_words > 4 and not jieba.degenerate and jieba.vocabulary > regex.vocabulary
    message = degenerate_warning("regex", regex)
    assert "words.splitter=regex" in message and "median text has 2 word(s)" in message
    assert "jieba" in message and "\n" not in message
    assert degenerate_warning("jieba", jieba) is None
    assert degenerate_warning("jieba", jieba, zero_rows=0.30) is None
    assert "77% of texts get all-zero factor rows" in degenerate_warning("char", zero_rows=0.77)
    assert splitting_quality([], WordSplitter()).degenerate is False


def test_zero_row_share_over_any_trailing_shape():
    rows = np.zeros((4, 3, 2))
    rows[0, 1, 1] = 0.5
    assert zero_row_share(rows) == pytest.approx(0.75)
    assert zero_row_share(np.zeros((0, 5))) == 0.0
