"""Each word's character span in the original text (``text.word_spans``): for every rule the
spans, cut from the text and lower-cased where the rule lower-cases, are the rule's words."""

from __future__ import annotations

import pytest

from lttw.text.word_spans import word_spans
from lttw.text.words import WordSplitter

ENGLISH = ["The cat sat on the mat.", "Stocks FELL 3.5% -- oil_price up!", "", "C++ & naïve café"]
CHINESE = ["我来到北京清华大学", "60年铁树开花形状似玉米芯(组图)", "锌价难续去年辉煌！  \n"]
MIXED = [
    "苹果发布iPhone 15，售价5999元！",
    "布拉特：放球员一条生路吧 FIFA能消化",
    "iPhone6手机 in Beijing, 今天 ΣΟΦΟΣ",
    "東京でラーメンを食べました",
]
PATTERNS = [r"(?u)\b\w+\b", r"(?u)\b\w\w+\b", r"([a-z]+)\d*"]


def cut(splitter: WordSplitter, text: str) -> list[str]:
    pieces = [text[a:b] for a, b in word_spans(splitter, text)]
    return [p.lower() for p in pieces] if splitter.lowercase else pieces


@pytest.mark.parametrize("rule", ["regex", "jieba", "char"])
@pytest.mark.parametrize("pattern", PATTERNS)
@pytest.mark.parametrize("lowercase", [True, False])
def test_the_spans_cut_out_the_rules_words(rule, pattern, lowercase):
    splitter = WordSplitter(rule, pattern, lowercase)
    for text in ENGLISH + CHINESE + MIXED:
        assert cut(splitter, text) == splitter(text), (rule, text)


def test_spans_are_ordered_and_inside_the_text():
    for rule in ("regex", "jieba", "char"):
        for text in ENGLISH + CHINESE + MIXED:
            spans = word_spans(WordSplitter(rule), text)
            assert all(0 <= a < b <= len(text) for a, b in spans)
            assert all(b1 <= a2 for (_, b1), (a2, _) in zip(spans, spans[1:]))


def test_chinese_has_a_span_per_word_not_per_clause():
    text = CHINESE[0]
    assert word_spans(WordSplitter("char"), text) == [(i, i + 1) for i in range(len(text))]
    assert word_spans(WordSplitter("jieba"), text) == [(0, 1), (1, 3), (3, 5), (5, 9)]
    assert word_spans(WordSplitter("regex"), text) == [(0, len(text))]  # no spaces: one word


def test_a_letter_that_lowers_to_two_characters_keeps_the_count():
    """``"İ".lower()`` is two characters: the spans still number the words, each covering
    the original characters that hold it."""
    text = "İstanbul straße İ"
    for rule in ("regex", "jieba", "char"):
        splitter = WordSplitter(rule)
        spans = word_spans(splitter, text)
        assert len(spans) == len(splitter(text))
        assert all(0 <= a <= b <= len(text) for a, b in spans)
    assert word_spans(WordSplitter("regex"), text)[:3] == [(0, 1), (1, 8), (9, 15)]
