"""The TF-IDF vectoriser settings of ``tfidf_linear`` (``lttw.models.tfidf``): the arguments
of scikit-learn's ``TfidfVectorizer`` that matter, JSON-able, so that a model folder's
``config.json`` rebuilds the same vectoriser."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from lttw.settings import DEFAULT_TOKEN_PATTERN
from lttw.text.words import WordSplitter

#: word-splitting rules of CJK text: tfidf_linear reads its characters where auto chose one
CJK_RULES = ("jieba", "char")


@dataclass(frozen=True)
class VectorizerSettings:
    """Arguments of sklearn's ``TfidfVectorizer`` (the ones that matter, all JSON-able)."""

    lowercase: bool = True
    token_pattern: str = DEFAULT_TOKEN_PATTERN
    ngram_max: int = 2  # word (or character) n-grams 1..ngram_max
    min_df: int = 1
    max_features: int | None = 200_000
    sublinear_tf: bool = True
    # the pipeline's words.splitter rule (with lowercase and token_pattern above); None: plain
    # scikit-learn token_pattern splitting (folders saved before the rule was recorded)
    splitter: str | None = None
    # word: n-grams of the words; char: n-grams of the raw text's characters (scikit-learn's
    # analyzer="char", spaces and punctuation included), the default for CJK text
    analyzer: str = "word"

    @classmethod
    def for_words(cls, words: WordSplitter, auto: bool = False) -> VectorizerSettings:
        """The pipeline's recorded word-splitting rule, with word 1..ngram_max-grams; where
        ``auto`` (``words.splitter: auto``) chose a CJK rule, character 1..ngram_max-grams
        (THUCNews, 6,400 titles: 0.865 against 0.824 on jieba words; README)."""
        chars = auto and words.rule in CJK_RULES
        return cls(
            lowercase=words.lowercase,
            token_pattern=words.token_pattern,
            splitter=words.rule,
            analyzer="char" if chars else "word",
        )

    def words(self) -> WordSplitter | None:
        if self.splitter is None:
            return None
        return WordSplitter(self.splitter, self.token_pattern, self.lowercase)

    def vectorizer(self, vocabulary: list[str] | None = None):
        from sklearn.feature_extraction.text import TfidfVectorizer

        words = self.words()
        split = (
            {"lowercase": self.lowercase, "token_pattern": self.token_pattern}
            if words is None
            else words.vectorizer_params()
        )
        if self.analyzer == "char":
            split = {"lowercase": self.lowercase, "analyzer": "char"}
        return TfidfVectorizer(
            **split,
            ngram_range=(1, self.ngram_max),
            min_df=self.min_df,
            max_features=None if vocabulary else self.max_features,
            sublinear_tf=self.sublinear_tf,
            vocabulary=vocabulary,
            dtype=np.float64,
        )
