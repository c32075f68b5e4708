"""A tiny LTTW model (a 2-layer, 32-wide random BERT inside) and a few padded batches, for the tests that count or compile a training step."""

from __future__ import annotations

import torch

from lttw.data.batching import Batchable
from lttw.models.lttw import LTTWClassifier, LTTWConfig

ENCODER = {
    "model_type": "bert",
    "vocab_size": 100,
    "hidden_size": 32,
    "num_hidden_layers": 2,
    "num_attention_heads": 4,
    "intermediate_size": 64,
    "max_position_embeddings": 64,
    "pad_token_id": 0,
}


SEQ, BATCH, SLOTS, RANK = 16, 4, 3, 2


def tiny_model() -> LTTWClassifier:
    torch.manual_seed(0)
    config = LTTWConfig(
        n_labels=3, encoder_config=dict(ENCODER), factor_slots=SLOTS, rank=RANK, max_len=SEQ
    )
    return LTTWClassifier(config)


def tiny_data(n: int = 4 * BATCH) -> Batchable:
    g = torch.Generator().manual_seed(1)
    ids = torch.randint(5, 100, (n, SEQ), generator=g)
    mask = torch.ones(n, SEQ, dtype=torch.int64)
    mask[::2, SEQ // 2 :] = 0  # half the rows padded
    factors = torch.rand(n, SLOTS, RANK, generator=g)
    return Batchable(ids * mask, mask, factors, torch.randint(0, 3, (n,), generator=g))
