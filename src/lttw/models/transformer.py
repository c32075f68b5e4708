"""``model.variant: transformer`` -- a Transformer encoder trained from scratch.

Token embeddings on the pretrained encoder's tokenizer vocabulary (so every variant reads the
same ``input_ids``), scaled by sqrt(hidden), plus sinusoidal positions; ``layers`` pre-norm
``nn.TransformerEncoderLayer`` blocks of width ``hidden`` with ``heads`` heads and a 4x
feed-forward; padding is masked out of the attention; ``pooling`` cls (position 0) or mean
over real tokens -> dropout -> linear. With ``model.vocab: words`` (``from_words``) the
embeddings live on the counts stage's words; pretrained static vectors set their width
(``embed_dim``), projected to ``hidden`` by a linear layer where the two differ.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import torch
from torch import nn

from lttw.models._layers import (
    ClassifierHead,
    check_divisible,
    init_embedding,
    pool,
    require_encoder_path,
    sinusoidal_positions,
    words_embedding_init,
)
from lttw.models.registry import Classifier, register


@dataclass
class TransformerConfig:
    n_labels: int
    vocab_size: int
    hidden: int = 256
    layers: int = 2
    heads: int = 4
    ffn_mult: int = 4
    pooling: str = "cls"  # cls | mean
    dropout: float = 0.1
    embed_dim: int | None = None  # None: hidden (no projection)

    def __post_init__(self):
        check_divisible(self.hidden, self.heads, "model.hidden")


@register("transformer")
class TransformerClassifier(Classifier):
    config_class = TransformerConfig

    def __init__(self, config: TransformerConfig):
        super().__init__(config)
        width = config.embed_dim or config.hidden
        self.embed = nn.Embedding(config.vocab_size, width)
        self.embed_proj = nn.Linear(width, config.hidden) if width != config.hidden else None
        self.dropout = nn.Dropout(config.dropout)
        block = nn.TransformerEncoderLayer(
            config.hidden,
            config.heads,
            config.ffn_mult * config.hidden,
            config.dropout,
            activation="gelu",
            batch_first=True,
            norm_first=True,
        )
        self.blocks = nn.TransformerEncoder(
            block, config.layers, norm=nn.LayerNorm(config.hidden), enable_nested_tensor=False
        )
        self.head = ClassifierHead(config.hidden, config.n_labels, config.dropout)

    @classmethod
    def from_settings(cls, model, n_labels, factor_shape, encoder_path):
        from lttw.encoder.tokenizer import load_tokenizer

        tokenizer = load_tokenizer(require_encoder_path(encoder_path, model))
        return cls(
            TransformerConfig(
                n_labels=n_labels,
                vocab_size=len(tokenizer),
                hidden=model.hidden,
                layers=model.layers,
                heads=model.heads,
                ffn_mult=model.ffn_mult,
                pooling=model.pooling,
                dropout=model.dropout,
            )
        )

    @classmethod
    def from_words(cls, model, n_labels, vocab_size, weight=None):
        """On word ids (``model.vocab: words``), ``weight`` the pretrained rows or None."""
        vocab, dim, weight = words_embedding_init(vocab_size, weight, model.hidden)
        net = cls(
            TransformerConfig(
                n_labels=n_labels,
                vocab_size=vocab,
                hidden=model.hidden,
                layers=model.layers,
                heads=model.heads,
                ffn_mult=model.ffn_mult,
                pooling=model.pooling,
                dropout=model.dropout,
                embed_dim=None if dim == model.hidden else dim,
            )
        )
        init_embedding(net.embed, weight)
        return net

    def forward(self, input_ids, attention_mask, factors=None) -> torch.Tensor:
        seq, d = input_ids.shape[1], self.config.hidden
        x = self.embed(input_ids)
        if self.embed_proj is not None:
            x = self.embed_proj(x)
        x = x * math.sqrt(d) + sinusoidal_positions(seq, d, input_ids.device)
        x = self.blocks(self.dropout(x), src_key_padding_mask=attention_mask == 0)  # (b, seq, d)
        return self.head(pool(x, attention_mask, self.config.pooling))  # (b, n_labels)
