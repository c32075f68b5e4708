"""``model.variant: encoder`` -- fine-tune the pretrained encoder: [CLS] (or the mean of the
token states, ``model.pooling``) -> dropout -> linear.

The paper's "BERT" row (and its "ERNIE" row with ``model.encoder`` set to an ERNIE checkpoint):
any Hugging Face encoder ``AutoModel`` loads, since only ``last_hidden_state`` is used.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import torch
from torch import nn

from lttw.models._layers import (
    ClassifierHead,
    build_encoder,
    hidden_size,
    pool,
    pretrained_encoder,
    require_encoder_path,
)
from lttw.models.registry import Classifier, register


@dataclass
class EncoderHeadConfig:
    n_labels: int
    encoder_config: dict = field(default_factory=dict)  # rebuilds the encoder without the hub
    dropout: float = 0.1
    pooling: str = "cls"  # cls (position 0) | mean (a sentence-transformers encoder's own)


@register("encoder")
class EncoderClassifier(Classifier):
    config_class = EncoderHeadConfig

    def __init__(self, config: EncoderHeadConfig, encoder: nn.Module | None = None):
        super().__init__(config)
        self.encoder = build_encoder(config.encoder_config, encoder)
        self.head = ClassifierHead(hidden_size(self.encoder), config.n_labels, config.dropout)

    @classmethod
    def from_settings(cls, model, n_labels, factor_shape, encoder_path):
        encoder, enc_cfg = pretrained_encoder(require_encoder_path(encoder_path, model))
        return cls(
            EncoderHeadConfig(
                n_labels=n_labels,
                encoder_config=enc_cfg,
                dropout=model.dropout,
                pooling=model.pooling,
            ),
            encoder=encoder,
        )

    def forward(self, input_ids, attention_mask, factors=None, encoder_states=None) -> torch.Tensor:
        h = self.hidden_states(input_ids, attention_mask, encoder_states)  # (batch, seq, d)
        return self.head(pool(h, attention_mask, self.config.pooling))  # (batch, n_labels)
