"""``model.variant: encoder_cnn`` -- BERT-CNN: the pretrained encoder's token features go
through 1-D convolutions of widths ``cnn_widths`` (``cnn_channels`` each, ReLU), are max-pooled
over the real positions, concatenated -> dropout -> linear.

The convolutions are "full" (padding = width - 1, padded tokens zeroed first), so a text
shorter than the widest filter still has outputs, and padding a batch does not change them.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import torch
from torch import nn

from lttw.errors import UserError
from lttw.models._layers import (
    ClassifierHead,
    build_encoder,
    hidden_size,
    masked_max,
    pretrained_encoder,
    require_encoder_path,
    window_mask,
)
from lttw.models.registry import Classifier, register


@dataclass
class EncoderCNNConfig:
    n_labels: int
    encoder_config: dict = field(default_factory=dict)
    cnn_widths: list[int] = field(default_factory=lambda: [2, 3, 4])
    cnn_channels: int = 128
    dropout: float = 0.1

    def __post_init__(self):
        if not self.cnn_widths or min(self.cnn_widths) < 1:
            raise UserError(
                f"model.cnn_widths must be a non-empty list of widths >= 1 (got {self.cnn_widths})"
            )


@register("encoder_cnn")
class EncoderCNNClassifier(Classifier):
    config_class = EncoderCNNConfig

    def __init__(self, config: EncoderCNNConfig, encoder: nn.Module | None = None):
        super().__init__(config)
        self.encoder = build_encoder(config.encoder_config, encoder)
        d = hidden_size(self.encoder)
        self.convs = nn.ModuleList(
            nn.Conv1d(d, config.cnn_channels, w, padding=w - 1) for w in config.cnn_widths
        )
        self.head = ClassifierHead(
            config.cnn_channels * len(config.cnn_widths), config.n_labels, config.dropout
        )

    @classmethod
    def from_settings(cls, model, n_labels, factor_shape, encoder_path):
        encoder, enc_cfg = pretrained_encoder(require_encoder_path(encoder_path, model))
        return cls(
            EncoderCNNConfig(
                n_labels=n_labels,
                encoder_config=enc_cfg,
                cnn_widths=list(model.cnn_widths),
                cnn_channels=model.cnn_channels,
                dropout=model.dropout,
            ),
            encoder=encoder,
        )

    def forward(self, input_ids, attention_mask, factors=None, encoder_states=None) -> torch.Tensor:
        h = self.hidden_states(input_ids, attention_mask, encoder_states)  # (batch, seq, d)
        h = (h * attention_mask.unsqueeze(-1).to(h.dtype)).transpose(1, 2)  # (batch, d, seq)
        pooled = []
        for conv, w in zip(self.convs, self.config.cnn_widths):
            c = torch.relu(conv(h)).transpose(1, 2)  # (batch, seq + w - 1, channels)
            pooled.append(masked_max(c, window_mask(attention_mask, w)))  # (batch, channels)
        return self.head(torch.cat(pooled, dim=-1))  # (batch, channels * n_widths) -> logits
