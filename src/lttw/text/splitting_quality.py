"""Whether a word-splitting rule suits the texts (issue 12): words per text and the share of
texts whose factor rows come out all zero, and a one-line warning naming the parameter to
change when the splitting is degenerate (``words`` holds the rules)."""

from __future__ import annotations

import dataclasses
from collections.abc import Iterable

import numpy as np

from lttw.text.words import PATTERN_PARAMETER, RULES, SPLITTER_PARAMETER, WordSplitter

#: degenerate splitting (issue 12): median words per text at most this, or a larger share of
#: texts with all-zero factor rows than this
DEGENERATE_MEDIAN_WORDS = 2


DEGENERATE_ZERO_ROW_SHARE = 0.30


@dataclasses.dataclass(frozen=True)
class SplittingQuality:
    texts: int
    median_words: float
    share_short: float  # share of texts with <= DEGENERATE_MEDIAN_WORDS words
    vocabulary: int

    @property
    def degenerate(self) -> bool:
        return self.texts > 0 and self.median_words <= DEGENERATE_MEDIAN_WORDS


def splitting_quality(texts: Iterable[str], splitter: WordSplitter) -> SplittingQuality:
    """Median words per text, the share of texts with <= 2 words and the distinct words."""
    vocabulary: set[str] = set()
    counted: list[int] = []
    for text in texts:
        words = splitter(text)
        counted.append(len(words))
        vocabulary.update(words)
    lengths = np.asarray(counted, dtype=np.int64)
    if lengths.size == 0:
        return SplittingQuality(0, 0.0, 0.0, 0)
    return SplittingQuality(
        int(lengths.size),
        float(np.median(lengths)),
        float(np.mean(lengths <= DEGENERATE_MEDIAN_WORDS)),
        len(vocabulary),
    )


def zero_row_share(factor_rows: np.ndarray) -> float:
    """Share of texts (first axis) whose factor rows are all zero, any trailing shape."""
    rows = np.asarray(factor_rows)
    if rows.shape[0] == 0:
        return 0.0
    return float(np.mean(~rows.reshape(rows.shape[0], -1).any(axis=1)))


def degenerate_warning(
    rule: str, quality: SplittingQuality | None = None, zero_rows: float | None = None
) -> str | None:
    """A one-line warning when splitting is degenerate (median text <= 2 words, or more than
    30% of texts with all-zero factor rows), naming the parameter to change; else None."""
    problems = []
    if quality is not None and quality.degenerate:
        problems.append(
            f"the median text has {quality.median_words:g} word(s) "
            f"({quality.share_short:.0%} of {quality.texts} texts have <= "
            f"{DEGENERATE_MEDIAN_WORDS})"
        )
    if zero_rows is not None and zero_rows > DEGENERATE_ZERO_ROW_SHARE:
        problems.append(
            f"{zero_rows:.0%} of texts get all-zero factor rows (more than "
            f"{DEGENERATE_ZERO_ROW_SHARE:.0%})"
        )
    if not problems:
        return None
    others = ", ".join(r for r in RULES if r != rule)
    return (
        f"degenerate word splitting with {SPLITTER_PARAMETER}={rule}: "
        f"{'; '.join(problems)}; set {SPLITTER_PARAMETER} to {others} or auto "
        f"(jieba for Chinese, char for Japanese), or change {PATTERN_PARAMETER}"
    )
