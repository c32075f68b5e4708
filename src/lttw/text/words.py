"""One word-splitting rule for every consumer of words (counts, features, tfidf, explain, ...).

``WordSplitter`` is a frozen, callable rule: ``splitter(text) -> list[str]``. The three concrete
rules all refine today's regular-expression rule, so they agree on what is *not* a word:

- ``regex``: today's rule, exactly: optional lower-casing, then ``counts.token_pattern``
  (default ``(?u)\\b\\w+\\b``) as scikit-learn's ``CountVectorizer`` applies it.
- ``jieba``: jieba (the seed system's Chinese segmenter, bundled dictionary, offline) finds the
  word boundaries from its dictionary alone (``JIEBA_HMM`` off: the HMM's new words, such as
  the name 中青宝, are mostly one-off words that no count or vector helps with; off is also
  ~25% faster and measured slightly better on THUCNews). Inside each jieba piece the pattern
  then picks the words as the regex rule does, after lower-casing: punctuation and whitespace
  drop, Latin runs are lower-cased, "3.5%" gives 3 and 5.
- ``char``: every CJK character (Han, kana, Hangul) is one word; runs of other word characters
  (Latin letters, digits) stay whole, as in the regex rule ("iphone6手机" -> iphone6 手 机).
  Character n-grams of Latin words carry little meaning and would swamp the counts.

``auto`` is resolved by ``resolve_splitter``: a language hint (a dataset manifest's
``language``) first (zh -> jieba, ja -> char, anything else -> regex), else the share of CJK
letters among all letters in an evenly spaced sample of the texts: below ``CJK_SHARE`` -> regex;
otherwise mostly Hangul -> regex (Korean separates words with spaces), kana present (at least
``KANA_SHARE`` of the CJK letters) -> char (Japanese has no spaces and jieba is Chinese-only),
else jieba.
"""

from __future__ import annotations

import dataclasses
import functools
import logging
import re
from collections.abc import Iterable, Sequence
from pathlib import Path

import numpy as np

from lttw.errors import DataError, UserError
from lttw.settings import DEFAULT_TOKEN_PATTERN

log = logging.getLogger(__name__)

SPLITTER_PARAMETER = "words.splitter"
PATTERN_PARAMETER = "counts.token_pattern"
#: jieba's HMM discovery of words outside its dictionary (see the module docstring)
JIEBA_HMM = False
RULES = ("regex", "jieba", "char")
NAMES = RULES + ("auto",)

#: auto: texts whose letters are at least this share CJK are treated as CJK text
CJK_SHARE = 0.3
#: auto: CJK text with at least this share of kana among its CJK letters is Japanese
KANA_SHARE = 0.1
#: auto: texts (evenly spaced) and characters per text looked at
SAMPLE_TEXTS = 2000
SAMPLE_CHARS = 500

_HAN = "\u3005\u3007\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff\U00020000-\U0003134f"
_KANA = "\u3040-\u309f\u30a0-\u30ff\u31f0-\u31ff\uff66-\uff9f"
_HANGUL = "\u1100-\u11ff\u3130-\u318f\uac00-\ud7af"
_CJK = _HAN + _KANA + _HANGUL
_CJK_OR_RUN = re.compile(f"[{_CJK}]|[^{_CJK}]+")
_LETTER = re.compile(r"[^\W\d_]")
_LANGUAGE_RULES = {
    "zh": "jieba",
    "zho": "jieba",
    "chi": "jieba",
    "cmn": "jieba",
    "yue": "jieba",
    "chinese": "jieba",
    "ja": "char",
    "jpn": "char",
    "japanese": "char",
}


def check_token_pattern(pattern: str) -> None:
    """A ``UserError`` naming ``counts.token_pattern`` unless it is a regex with <= 1 group."""
    try:
        groups = re.compile(pattern).groups
    except re.error as err:
        raise UserError(
            f"{PATTERN_PARAMETER} {pattern!r} is not a valid regular expression: {err}"
        ) from None
    if groups > 1:
        raise UserError(
            f"{PATTERN_PARAMETER} {pattern!r} has {groups} capturing groups; "
            "use at most one (write (?:...) for the others)"
        )


@dataclasses.dataclass(frozen=True)
class WordSplitter:
    """A concrete word-splitting rule; call it on one text to get its words in order.

    Usable as ``CountVectorizer(analyzer=splitter)`` or, for n-grams,
    ``CountVectorizer(**splitter.vectorizer_params(), ngram_range=...)``.
    """

    rule: str = "regex"
    token_pattern: str = DEFAULT_TOKEN_PATTERN
    lowercase: bool = True

    def __post_init__(self) -> None:
        if self.rule not in RULES:
            hint = " (resolve it first with resolve_splitter)" if self.rule == "auto" else ""
            raise UserError(
                f"{SPLITTER_PARAMETER}={self.rule!r} is not a concrete rule: "
                f"use one of {', '.join(RULES)}{hint}"
            )
        check_token_pattern(self.token_pattern)

    def __call__(self, text: str) -> list[str]:
        if self.rule == "regex":
            return _regex_analyzer(self.token_pattern, self.lowercase)(text)
        if self.rule == "char":
            return [
                piece
                for word in _regex_analyzer(self.token_pattern, self.lowercase)(text)
                for piece in _CJK_OR_RUN.findall(word)
            ]
        find = _pattern_tokenizer(self.token_pattern)
        words: list[str] = []
        for piece in _jieba_tokenizer().cut(text, HMM=JIEBA_HMM):
            words.extend(find(piece.lower() if self.lowercase else piece))
        return words

    def split_many(self, texts: Iterable[str]) -> list[list[str]]:
        return [self(text) for text in texts]

    def vectorizer_params(self) -> dict:
        """Keyword arguments for scikit-learn's Count/TfidfVectorizer that apply this rule."""
        if self.rule == "regex":
            return {"token_pattern": self.token_pattern, "lowercase": self.lowercase}
        return {"tokenizer": self, "token_pattern": None, "lowercase": False}

    def count_vectorizer(self, vocabulary: Sequence[str] | None = None):
        """An unfitted ``CountVectorizer`` with this rule (int64 counts); with ``vocabulary`` it
        maps texts onto that fixed column order."""
        from sklearn.feature_extraction.text import CountVectorizer

        return CountVectorizer(
            **self.vectorizer_params(),
            dtype=np.int64,
            vocabulary=None if vocabulary is None else list(vocabulary),
        )

    def record(self) -> dict:
        """What a model folder stores so that prediction splits exactly as training did."""
        return {
            "splitter": self.rule,
            "token_pattern": self.token_pattern,
            "lowercase": self.lowercase,
        }

    @classmethod
    def from_record(cls, record: object, source: str) -> WordSplitter:
        """Inverse of ``record``; ``source`` (a file) is named when the record is malformed."""
        fields = {"splitter": str, "token_pattern": str, "lowercase": bool}
        if not isinstance(record, dict) or any(
            not isinstance(record.get(key), kind) for key, kind in fields.items()
        ):
            raise DataError(
                f"{source}: word-splitting record must hold splitter and "
                f"token_pattern (strings) and lowercase (true/false), got {record!r}"
            )
        try:
            return cls(record["splitter"], record["token_pattern"], record["lowercase"])
        except UserError as err:
            raise DataError(f"{source}: {err}") from None


@functools.lru_cache(maxsize=16)
def _regex_analyzer(pattern: str, lowercase: bool):
    """What scikit-learn's default word analyzer does (lower-case, then the pattern's
    matches, or its one group's), without importing scikit-learn: `lttw predict` starts fast.
    tests/text/test_words.py checks both give the same words."""
    find = _pattern_tokenizer(pattern)
    return (lambda text: find(text.lower())) if lowercase else find


@functools.lru_cache(maxsize=16)
def _pattern_tokenizer(pattern: str):
    return re.compile(pattern).findall


@functools.lru_cache(maxsize=1)
def _jieba_tokenizer():
    """jieba's segmenter, loaded once; its "Building prefix dict" lines only at debug level."""
    try:
        import jieba
    except ImportError:
        raise UserError(
            f"{SPLITTER_PARAMETER}=jieba needs the jieba package: pip install 'lttw[jieba]'"
        ) from None
    jieba.setLogLevel(logging.DEBUG if log.isEnabledFor(logging.DEBUG) else logging.WARNING)
    tokenizer = jieba.Tokenizer()  # own instance: nobody's add_word changes our words
    tokenizer.initialize()
    return tokenizer


def make_splitter(
    name: str,
    token_pattern: str = DEFAULT_TOKEN_PATTERN,
    lowercase: bool = True,
    texts: Sequence[str] | None = None,
    language: str | None = None,
) -> tuple[WordSplitter, str]:
    """``resolve_splitter`` then the concrete ``WordSplitter``; returns it and the reason."""
    rule, reason = resolve_splitter(name, texts=texts, language=language)
    return WordSplitter(rule, token_pattern, lowercase), reason


def resolve_splitter(
    name: str, texts: Sequence[str] | None = None, language: str | None = None
) -> tuple[str, str]:
    """The concrete rule for ``name`` (``auto`` resolved) and a one-line reason for the log."""
    if name not in NAMES:
        raise UserError(f"{SPLITTER_PARAMETER}={name!r}: use one of {', '.join(NAMES)}")
    if name != "auto":
        return name, f"{SPLITTER_PARAMETER}={name}"
    if language:
        primary = language.strip().lower().replace("_", "-").split("-")[0]
        rule = _LANGUAGE_RULES.get(primary, "regex")
        return rule, f"{SPLITTER_PARAMETER}=auto: language {language!r} -> {rule}"
    if not texts:
        return "regex", f"{SPLITTER_PARAMETER}=auto: no language and no texts -> regex"
    shares = script_shares(texts)
    detail = (
        f"{shares['cjk']:.0%} CJK letters (threshold {CJK_SHARE:.0%}) in {shares['texts']} texts"
    )
    if shares["cjk"] < CJK_SHARE:
        rule = "regex"
    elif shares["hangul"] > 0.5:
        rule, detail = "regex", detail + ", mostly Hangul"
    elif shares["kana"] >= KANA_SHARE:
        rule, detail = "char", detail + f", {shares['kana']:.0%} of them kana"
    else:
        rule = "jieba"
    return rule, f"{SPLITTER_PARAMETER}=auto: {detail} -> {rule}"


def script_shares(texts: Sequence[str]) -> dict:
    """Over an evenly spaced sample (``SAMPLE_TEXTS`` texts, first ``SAMPLE_CHARS`` characters
    each): the share of letters that are CJK, and of CJK letters that are kana / Hangul."""
    step = max(1, len(texts) // SAMPLE_TEXTS)
    sample = [str(text)[:SAMPLE_CHARS] for text in list(texts)[::step][:SAMPLE_TEXTS]]
    joined = "\n".join(sample)
    letters = len(_LETTER.findall(joined))
    cjk = len(re.findall(f"[{_CJK}]", joined))
    kana = len(re.findall(f"[{_KANA}]", joined))
    hangul = len(re.findall(f"[{_HANGUL}]", joined))
    return {
        "texts": len(sample),
        "cjk": cjk / letters if letters else 0.0,
        "kana": kana / cjk if cjk else 0.0,
        "hangul": hangul / cjk if cjk else 0.0,
    }


#: the resolved rule beside the counts stage's vocabulary.json, and in model folders
WORDS_FILE = "words.json"


def write_rule(directory, splitter: WordSplitter, reason: str = "") -> None:
    """``words.json`` in ``directory``: the splitter's record and why it was chosen."""
    from lttw.io import write_json

    write_json(Path(directory) / WORDS_FILE, {**splitter.record(), "reason": reason})


def read_rule(directory) -> WordSplitter:
    """The ``WordSplitter`` recorded in ``directory``'s ``words.json`` (a one-line error
    naming the file when it is missing or malformed)."""
    from lttw.io import read_json

    path = Path(directory) / WORDS_FILE
    if not path.is_file():
        raise DataError(
            f"{path}: not found (run the counts stage, which records the {SPLITTER_PARAMETER} rule)"
        )
    return WordSplitter.from_record(read_json(path), str(path))
