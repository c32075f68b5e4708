"""Texts longer than a model reads: counted, or read whole in sliding windows (``--chunk`` of
``lttw predict``, ``lttw evaluate`` and ``lttw serve``).

A model on encoder tokens reads the first ``max_len - 2`` tokens of a text ([CLS] and
[SEP] take two; lttw.json ``max_len``) and a model on word ids the first ``max_len`` words;
the rest is cut. ``WindowedPredictor`` wraps a ``Predictor``: it counts the texts that are
cut (``long``), and with ``chunk`` it splits each of them into windows of that many tokens
(words), each window starting half a window after the one before, so every token is read
and most twice, predicts every window and gives the text the mean of its windows'
probabilities. A window is a span of the original text, so the model reads each window
exactly as it reads a text: for encoder tokens the tokenizer's character offsets; for word
ids the character spans of the words that the model's own rule finds (``words/words.json``:
regex, jieba or char, ``text.word_spans``), so a Chinese text without spaces is counted in
its words. An ensemble is cut, counted and windowed as its part that reads the fewest
(``reading_part``: LTTW beside tf-idf), and every part reads the same windows. Where a
predictor has no rule of its own, words are the runs between whitespace. A model that reads
raw text (no ``max_len``: the tf-idf baselines) cuts nothing and is passed through.

The windows of one text are bounded by the text's length, which the commands cap
(``--max-chars``, ``--max-text-chars``).
"""

from __future__ import annotations

import re
from functools import partial
from typing import Any

import numpy as np

from lttw.inference.text_lines import as_texts

_WORD = re.compile(r"\S+")


def untruncated(tokenizer):
    """A copy of a ``WordPieceFile``'s ``tokenizers.Tokenizer`` that neither truncates nor
    pads (the original keeps its settings), or None for another tokenizer."""
    backend = getattr(tokenizer, "tokenizer", None)  # encoder.tokens.WordPieceFile
    if backend is None or not hasattr(backend, "to_str"):
        return None
    copy = type(backend).from_str(backend.to_str())
    copy.no_truncation()
    copy.no_padding()
    return copy


def _tokenizer_offsets(
    tokenizer, texts: list[str], backend=None
) -> list[list[tuple[int, int]]] | None:
    """Each text's token character spans (no special tokens, no truncation), or None where
    the tokenizer gives no offsets (a slow transformers tokenizer). ``backend``: the
    tokenizer's ``untruncated`` copy, where the caller keeps one."""
    backend = backend if backend is not None else untruncated(tokenizer)
    if backend is not None:
        return [list(e.offsets) for e in backend.encode_batch(texts, add_special_tokens=False)]
    if getattr(tokenizer, "is_fast", False):
        found = tokenizer(
            texts, add_special_tokens=False, truncation=False, return_offsets_mapping=True
        )
        return [list(map(tuple, spans)) for spans in found["offset_mapping"]]
    return None


def _word_offsets(texts: list[str]) -> list[list[tuple[int, int]]]:
    return [[m.span() for m in _WORD.finditer(t)] for t in texts]


def reach(predictor) -> int | None:
    """Tokens (or words) of a text the model reads; None: it reads whole texts."""
    meta = getattr(predictor, "meta", {}) or {}
    max_len = meta.get("max_len")
    if max_len is None or getattr(predictor, "model_inputs", None) is None:
        return None
    model = getattr(predictor, "model", None)
    if getattr(model, "reads", "tokens") == "texts":
        return None
    if getattr(predictor, "tokenizer", None) is None:
        return int(max_len)  # word ids (or an ensemble's parts): words
    return max(1, int(max_len) - 2)


def word_rule(predictor):
    """The ``WordSplitter`` a model on word ids splits texts with: its vocabulary's rule
    (``words/words.json``, what ``Predictor.model_inputs`` applies), else lttw.json's
    ``words`` where lttw.json says ``vocab: words``; None for a model on encoder tokens or
    without a rule of its own (an ensemble)."""
    if getattr(predictor, "tokenizer", None) is not None:
        return None
    vocabulary = getattr(predictor, "words", None)
    if vocabulary is not None:
        return vocabulary.splitter
    meta = getattr(predictor, "meta", {}) or {}
    record = meta.get("words")
    if meta.get("vocab") != "words" or record is None:
        return None
    from lttw.text.words import WordSplitter

    return WordSplitter.from_record(record, f"{getattr(predictor, 'folder', '.')}/lttw.json")


def spans(predictor, texts: list[str], backend=None, rule=None) -> list[list[tuple[int, int]]]:
    """Each text's token (or word) character spans as the model counts them (``backend``:
    see ``_tokenizer_offsets``; ``rule``: the predictor's ``word_rule``, where the caller
    keeps it)."""
    tokenizer = getattr(predictor, "tokenizer", None)
    if tokenizer is not None:
        found = _tokenizer_offsets(tokenizer, texts, backend)
        return found if found is not None else _word_offsets(texts)
    rule = rule if rule is not None else word_rule(predictor)
    if rule is None:
        return _word_offsets(texts)
    from lttw.text.word_spans import word_spans

    return [word_spans(rule, text) for text in texts]


def windows(text: str, offsets: list[tuple[int, int]], size: int) -> list[str]:
    """The windows of ``size`` tokens of ``text`` (``offsets``: its token spans), each
    starting ``size // 2`` tokens after the one before; the text itself where it fits."""
    if len(offsets) <= size:
        return [text]
    step = max(1, size // 2)
    out = []
    for start in range(0, len(offsets), step):
        end = min(start + size, len(offsets))
        out.append(text[offsets[start][0] : offsets[end - 1][1]])
        if end == len(offsets):
            break
    return out


def reading_part(predictor):
    """The predictor whose reach cuts texts: ``predictor`` itself, or for an ensemble
    (``parts``) the part that reads the fewest tokens or words (its LTTW part: the tf-idf
    part reads whole texts), so that its windows fit every part; None for an ensemble whose
    parts all read whole texts (nothing is cut)."""
    parts = getattr(predictor, "parts", None)
    if not parts:
        return predictor
    cutting = [(size, i) for i, part in enumerate(parts) if (size := reach(part)) is not None]
    return parts[min(cutting)[1]] if cutting else None


class WindowedPredictor:
    """A ``Predictor`` that counts the texts it cuts (``long``) and, with ``chunk``, reads
    them whole in sliding windows (see the module docstring). Everything else (classes,
    meta, calibration, ...) is the wrapped predictor's."""

    def __init__(self, predictor, chunk: bool = False):
        self.predictor, self.chunk = predictor, chunk
        self.long = 0
        #: who cuts texts: the predictor, or an ensemble's part that reads the fewest
        reader = reading_part(predictor)
        self.reader = predictor if reader is None else reader
        self.size = None if reader is None else reach(reader)
        tokenizer = getattr(self.reader, "tokenizer", None)
        self._backend = None if self.size is None else untruncated(tokenizer)
        self._rule = None if self.size is None else word_rule(self.reader)

    def __getattr__(self, name: str) -> Any:
        return getattr(self.predictor, name)

    def predict_proba(self, texts, batch_size: int = 64) -> np.ndarray:
        pieces, combine = self.split_windows(texts)
        probs = self.predictor.predict_proba(pieces, batch_size)
        return probs if combine is None else combine(probs)

    def split_windows(self, texts) -> tuple[list[str], Any]:
        """The pieces the wrapped predictor reads for ``texts`` (the texts, or with
        ``chunk`` each long text's windows) and what turns the pieces' probabilities into
        the texts' (the mean of each text's windows; None: the pieces are the texts).
        ``forward_windows`` computes pieces (``lttw serve`` queues and cancels them)."""
        texts = as_texts(texts)
        if self.size is None or not texts:
            return texts, None
        offsets = spans(self.reader, texts, self._backend, self._rule)
        long = [len(o) > self.size for o in offsets]
        self.long += sum(long)
        if not self.chunk or not any(long):
            return texts, None
        pieces: list[str] = []
        owner: list[int] = []
        for i, (text, spans_of) in enumerate(zip(texts, offsets)):
            parts = windows(text, spans_of, self.size)
            pieces.extend(parts)
            owner.extend([i] * len(parts))
        return pieces, partial(_mean_by_text, np.asarray(owner), len(texts))

    def forward_windows(self, pieces: list[str], batch_size: int = 64) -> np.ndarray:
        """The wrapped predictor's probabilities of ``split_windows``' pieces."""
        return self.predictor.predict_proba(pieces, batch_size)

    def note(self) -> str | None:
        """The warning about cut texts (None where none was cut)."""
        if not self.long:
            return None
        unit = "tokens" if getattr(self.reader, "tokenizer", None) is not None else "words"
        if self.chunk:
            return (
                f"{self.long} texts longer than the model's {self.size} {unit}: read in "
                "sliding windows (--chunk), probabilities averaged"
            )
        return (
            f"warning: {self.long} texts longer than the model's {self.size} {unit} were cut "
            "to their start; --chunk reads them whole in sliding windows"
        )


def _mean_by_text(owner: np.ndarray, n: int, probs: np.ndarray) -> np.ndarray:
    """The mean of each text's windows' rows (``owner``: the text of each window)."""
    probs = np.asarray(probs, np.float64)
    sums = np.zeros((n, probs.shape[1]))
    np.add.at(sums, owner, probs)
    counts = np.bincount(owner, minlength=n)[:, None]
    return (sums / counts).astype(np.float32)
