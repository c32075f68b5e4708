"""Encoder tokenisation, done once per sample in its own stage (it depends on the encoder and
``model.max_len`` only, so changing k, s or rank never re-tokenises), and ``WordPieceFile``:
a saved BERT tokenizer run by the ``tokenizers`` library alone, without importing
transformers (``lttw predict``'s start-up)."""

from __future__ import annotations

import json
import os
from collections.abc import Sequence
from pathlib import Path

import numpy as np

from lttw.progress import progress as progress_bar

#: tokenizer classes whose whole pipeline is their ``tokenizer.json`` (transformers writes it
#: from the backend it runs, and rebuilds the same one from ``tokenizer_config.json``)
_BERT_CLASSES = {"BertTokenizer", "BertTokenizerFast"}
#: trimmed batch lengths are rounded up to a multiple of this (tensor-core friendly, and
#: at most max_len / 8 distinct shapes for ``torch.compile``)
LENGTH_MULTIPLE = 8


def trimmed_length(longest: int, seq: int) -> int:
    """The columns of a padded batch of token rows whose longest row has ``longest`` tokens
    that it keeps of ``seq``: the padding no row uses is cut, to a multiple of
    ``LENGTH_MULTIPLE``."""
    return min(seq, -(-max(1, longest) // LENGTH_MULTIPLE) * LENGTH_MULTIPLE)


class WordPieceFile:
    """A BERT tokenizer folder's ``tokenizer.json`` through ``tokenizers.Tokenizer``: the same
    ids as transformers' ``BertTokenizer`` from that folder (``tests/encoder/test_plain_bert.py``)."""

    def __init__(self, tokenizer, pad_token: str):
        self.tokenizer = tokenizer
        self.pad_token = pad_token
        self.pad_token_id = tokenizer.token_to_id(pad_token) or 0

    @classmethod
    def load(cls, folder: str | os.PathLike) -> WordPieceFile | None:
        """The folder's tokenizer, or None where it is not a BERT tokenizer with a
        ``tokenizer.json`` (load it with transformers then)."""
        folder = Path(folder)
        return cls.from_files(
            {
                name: (folder / name).read_bytes()
                for name in ("tokenizer_config.json", "tokenizer.json")
                if (folder / name).is_file()
            }
        )

    @classmethod
    def from_files(cls, files: dict[str, bytes]) -> WordPieceFile | None:
        """``load`` of a tokenizer folder's files read into memory (name -> bytes)."""
        from tokenizers import Tokenizer

        config_data, json_data = files.get("tokenizer_config.json"), files.get("tokenizer.json")
        if config_data is None or json_data is None:
            return None
        config = json.loads(config_data.decode("utf-8"))
        if not isinstance(config, dict) or config.get("tokenizer_class") not in _BERT_CLASSES:
            return None
        pad = config.get("pad_token", "[PAD]")
        pad = pad.get("content", "[PAD]") if isinstance(pad, dict) else str(pad)
        return cls(Tokenizer.from_str(json_data.decode("utf-8")), pad)

    def encode_padded(self, texts: list[str], max_len: int) -> tuple[list, list]:
        """Token ids and attention masks, [CLS] ... [SEP], truncated and padded to max_len."""
        encodings = _padded_batch(self.tokenizer, texts, max_len, self.pad_token_id, self.pad_token)
        return [e.ids for e in encodings], [e.attention_mask for e in encodings]

    def convert_ids_to_tokens(self, ids: Sequence[int]) -> list[str]:
        return [self.tokenizer.id_to_token(int(i)) for i in ids]


def _padded_batch(backend, texts: list[str], max_len: int, pad_id: int, pad_token: str) -> list:
    """``tokenizers.Tokenizer.encode_batch`` (native threads, no per-text Python) with
    truncation and padding to ``max_len`` on the right, as transformers asks it for
    ``truncation=True, padding="max_length"``."""
    backend.enable_truncation(max_len)
    backend.enable_padding(length=max_len, pad_id=pad_id, pad_token=pad_token)
    return backend.encode_batch(texts)


def _backend_of(tokenizer):
    """A copy of a transformers fast tokenizer's ``tokenizers.Tokenizer`` (its whole pipeline:
    normaliser, pre-tokeniser, model, added tokens, [CLS] / [SEP] post-processor), or None
    where it has none or pads / truncates on the left. Called directly it skips transformers'
    per-call wrapping of every encoding (about half of the ``tokens`` stage's time); a copy, so
    the caller's tokenizer keeps its own truncation and padding."""
    backend = getattr(tokenizer, "backend_tokenizer", None)
    if backend is None or not getattr(tokenizer, "is_fast", False):
        return None
    if getattr(tokenizer, "padding_side", "right") != "right":
        return None
    if getattr(tokenizer, "truncation_side", "right") != "right":
        return None
    return type(backend).from_str(backend.to_str())


def encode_texts(
    tokenizer, texts: Sequence[str], max_len: int, batch_size: int = 2048, progress: bool = False
) -> tuple[np.ndarray, np.ndarray]:
    """Token ids and attention masks, padded / truncated to ``max_len``, with a transformers
    tokenizer or a ``WordPieceFile``. A transformers fast tokenizer runs through its
    ``tokenizers`` backend directly (``_backend_of``): the same ids, tested.

    Returns ``input_ids`` (n, max_len) int32 and ``attention_mask`` (n, max_len) int8.
    """
    n = len(texts)
    ids = np.zeros((n, max_len), dtype=np.int32)
    mask = np.zeros((n, max_len), dtype=np.int8)
    pad_id = tokenizer.pad_token_id or 0
    ids.fill(pad_id)
    backend = None if isinstance(tokenizer, WordPieceFile) else _backend_of(tokenizer)
    for start in progress_bar(
        range(0, n, batch_size),
        desc="tokenise",
        unit="batch",
        disable=not progress or n <= batch_size,
    ):
        chunk = list(texts[start : start + batch_size])
        if isinstance(tokenizer, WordPieceFile):
            chunk_ids, chunk_mask = tokenizer.encode_padded(chunk, max_len)
        elif backend is not None:
            encodings = _padded_batch(backend, chunk, max_len, pad_id, tokenizer.pad_token)
            chunk_ids = [e.ids for e in encodings]
            chunk_mask = [e.attention_mask for e in encodings]
        else:
            enc = tokenizer(
                chunk,
                max_length=max_len,
                truncation=True,
                padding="max_length",
                return_attention_mask=True,
            )
            chunk_ids, chunk_mask = enc["input_ids"], enc["attention_mask"]
        ids[start : start + len(chunk)] = np.asarray(chunk_ids, dtype=np.int32)
        mask[start : start + len(chunk)] = np.asarray(chunk_mask, dtype=np.int8)
    return ids, mask


# ---------------------------------------------------------------- encoder coverage (issue 26)

#: warn when more than this share of the texts' tokens (special tokens aside) are unknown
UNK_SHARE_WARN = 0.10
#: an encoder that reads the language, for the hint (where the Hugging Face hub is reachable)
LANGUAGE_ENCODERS = {
    "zh": "bert-base-chinese",
    "ja": "tohoku-nlp/bert-base-japanese-v3",
    "ko": "klue/bert-base",
}
MULTILINGUAL_ENCODER = "bert-base-multilingual-cased"
#: offline: what reads such text without another encoder (README: choosing parameters)
OFFLINE_OPTIONS = (
    "a local folder of an encoder that reads it as model.encoder, or "
    "model.variant=tfidf_linear (character n-grams for CJK text, no encoder)"
)


def unknown_share(tokenizer, ids: np.ndarray, mask: np.ndarray) -> tuple[float, int]:
    """Share of the real tokens (attention mask 1, special tokens aside) that are the
    tokenizer's unknown token, and how many real tokens there were."""
    if isinstance(tokenizer, WordPieceFile):
        unk = tokenizer.tokenizer.token_to_id("[UNK]")
        special = {
            i
            for i, token in tokenizer.tokenizer.get_added_tokens_decoder().items()
            if token.special
        }
    else:
        unk = tokenizer.unk_token_id
        special = set(tokenizer.all_special_ids)
    special.discard(unk)
    real = (np.asarray(mask) == 1) & ~np.isin(ids, sorted(special))
    n = int(real.sum())
    if unk is None or n == 0:
        return 0.0, n
    return float((np.asarray(ids)[real] == unk).sum()) / n, n


def coverage_warning(
    share: float, encoder: str, language: str | None, online: bool | None = None
) -> str | None:
    """A one-line warning naming ``model.encoder`` when more than ``UNK_SHARE_WARN`` of the
    tokens are unknown, and what to do: an encoder for the language where the hub is
    reachable (``online``; None: ask ``lttw.hub``), else the offline options; None when the
    encoder reads the text."""
    if share <= UNK_SHARE_WARN:
        return None
    if online is None:
        from lttw.hub import offline_reason

        online = offline_reason() is None
    primary = (language or "").strip().lower().replace("_", "-").split("-")[0]
    if online:
        fix = (
            f"set model.encoder to one that reads this text, e.g. "
            f"{LANGUAGE_ENCODERS.get(primary, MULTILINGUAL_ENCODER)}"
        )
    else:
        fix = f"offline, use {OFFLINE_OPTIONS}"
    return (
        f"encoder coverage: {share:.0%} of the tokens are [UNK] with model.encoder="
        f"{encoder} (more than {UNK_SHARE_WARN:.0%}): it cannot read most of this text; "
        f"{fix}"
    )
