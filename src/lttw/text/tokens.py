"""Encoder tokenisation, done once per sample in its own stage (it depends on the encoder and
``model.max_len`` only, so changing k, s or rank never re-tokenises)."""

from __future__ import annotations

from typing import Sequence

import numpy as np

from lttw.progress import progress as progress_bar


def encode_texts(tokenizer, texts: Sequence[str], max_len: int, batch_size: int = 2048,
                 progress: bool = False) -> tuple[np.ndarray, np.ndarray]:
    """Token ids and attention masks, padded / truncated to ``max_len``.

    Returns ``input_ids`` (n, max_len) int32 and ``attention_mask`` (n, max_len) int8.
    """
    n = len(texts)
    ids = np.zeros((n, max_len), dtype=np.int32)
    mask = np.zeros((n, max_len), dtype=np.int8)
    pad_id = tokenizer.pad_token_id or 0
    ids.fill(pad_id)
    for start in progress_bar(range(0, n, batch_size), desc="tokenise", unit="batch",
                              disable=not progress or n <= batch_size):
        chunk = list(texts[start:start + batch_size])
        enc = tokenizer(chunk, max_length=max_len, truncation=True, padding="max_length",
                        return_attention_mask=True)
        ids[start:start + len(chunk)] = np.asarray(enc["input_ids"], dtype=np.int32)
        mask[start:start + len(chunk)] = np.asarray(enc["attention_mask"], dtype=np.int8)
    return ids, mask
