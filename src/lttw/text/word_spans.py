"""Where each word of a ``WordSplitter`` lies in the original text: character spans.

``word_spans(splitter, text)`` gives one ``(start, end)`` per word of ``splitter(text)``, in
order, such that ``text[start:end]`` (lower-cased where the rule lower-cases) is that word:

- ``regex``: the pattern's matches (or its one group's) on the lower-cased text;
- ``char``: inside each such match, every CJK character and each run of other characters;
- ``jieba``: jieba's pieces with their offsets (``Tokenizer.tokenize``), then the pattern's
  matches inside each lower-cased piece.

Lower-casing keeps a text's length except for a few letters (``"İ".lower()`` is two
characters); there a span covers the original characters whose lower-cased form holds the
word, so the spans still number the words and cut the text between them.
``inference.long_texts`` uses them to count and window texts for models on word ids.
"""

from __future__ import annotations

import bisect
import itertools
import re
from collections.abc import Callable

from lttw.text.words import _CJK_OR_RUN, JIEBA_HMM, WordSplitter, _jieba_tokenizer

Span = tuple[int, int]


def word_spans(splitter: WordSplitter, text: str) -> list[Span]:
    """The character span of each word of ``splitter(text)`` in ``text`` (see the module
    docstring)."""
    pattern = re.compile(splitter.token_pattern)
    if splitter.rule != "jieba":
        return _matches(pattern, text, splitter.lowercase, 0, splitter.rule == "char")
    found: list[Span] = []
    for _, start, end in _jieba_tokenizer().tokenize(text, HMM=JIEBA_HMM):
        found.extend(_matches(pattern, text[start:end], splitter.lowercase, start))
    return found


def _matches(
    pattern: re.Pattern, text: str, lowercase: bool, base: int, by_char: bool = False
) -> list[Span]:
    """The spans (offset by ``base``) in ``text`` of the pattern's matches on the text as
    the splitter sees it (lower-cased where ``lowercase``), as ``re.findall`` picks them (the
    whole match, or its one group's); ``by_char``: each match cut into its CJK characters
    and the runs of other characters (the char rule)."""
    seen = text.lower() if lowercase else text
    group = 1 if pattern.groups == 1 else 0
    found = []
    for m in pattern.finditer(seen):
        start, end = m.span(group)
        if start < 0:  # the group took no part: findall gives ""
            start = end = m.start()
        if not by_char:
            found.append((start, end))
            continue
        pieces = _CJK_OR_RUN.finditer(seen, start, end)
        found.extend(piece.span() for piece in pieces)
    back = _back_map(text, seen)
    return [(base + a, base + b) for a, b in map(back, found)]


def _back_map(text: str, seen: str) -> Callable[[Span], Span]:
    """Maps a span of ``seen`` (``text`` lower-cased) onto ``text``'s characters."""
    if len(seen) == len(text):  # every character lowers to one: the same positions
        return lambda span: span
    ends = list(itertools.accumulate(len(c.lower()) for c in text))

    def back(span: Span) -> Span:
        start, end = span
        a = min(bisect.bisect_right(ends, start), len(text))  # the character holding start
        if end <= start:  # an empty match: empty here too
            return a, a
        return a, max(a, min(bisect.bisect_left(ends, end) + 1, len(text)))

    return back
