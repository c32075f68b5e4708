"""The LTTW classifier (paper 2.4-2.6, SPEC steps 4-7) and its ablations, one config.

    H_BERT = encoder(input_ids, attention_mask)                       (B, n, d)
    H_V = fusion(H_BERT, H_tw): concat | sequence | none (LTTW-M)     (B, n', width)
    attention linformer | mha (LTTW-Att) | none (LTTW-L): depth blocks over H_V
    Y = H[:, 0] ([CLS]);  logits = dropout(Y) M + b                   (B, p)

The fusions are modules (``models.fusion``): the classifier builds the one ``model.fusion``
names and asks it for the width, the extra positions and the mask.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, cast

import torch
from torch import nn

from lttw.encoder.pretrained import (
    check_max_len,
    encoder_config_dict,
    encoder_from_config,
    load_pretrained_encoder,
    resolve_encoder,
)
from lttw.errors import UserError
from lttw.models.attention import AttentionBlock
from lttw.models.fusion import FUSION_REGISTRY
from lttw.models.registry import Classifier, register
from lttw.settings import ATTENTIONS


@dataclass
class LTTWConfig:
    n_labels: int
    encoder_config: dict[str, Any]  # the encoder's architecture (encoder_config_dict)
    factor_slots: int = 20  # k + s
    rank: int = 5  # z
    fusion: str = "concat"  # concat | sequence | none
    attention: str = "linformer"  # linformer | mha | none
    linformer_k: int = 32
    share_kv: bool = True
    depth: int = 1
    heads: int = 4
    ffn_mult: int = 4
    dropout: float = 0.1
    max_len: int = 64
    norm_first: bool = False


def _check(config: LTTWConfig) -> None:
    if config.fusion not in FUSION_REGISTRY:
        raise UserError(
            f"model.fusion must be one of {', '.join(FUSION_REGISTRY)} (got {config.fusion!r})"
        )
    if config.attention not in ATTENTIONS:
        raise UserError(
            f"model.attention must be one of {', '.join(ATTENTIONS)} (got {config.attention!r})"
        )
    FUSION_REGISTRY[config.fusion].check(config)
    check_max_len(config.encoder_config, config.max_len)


#: the fusion's parameters in a state dict (model.safetensors, checkpoints) keep the names
#: they had before fusions were modules: saved folders load, and save to the same bytes
SAVED_NAMES = {"fusion.proj.": "factor_proj."}


def _rename(state_dict, prefix: str, names: dict[str, str]) -> None:
    """Rename ``state_dict``'s keys ``prefix + old...`` to ``prefix + new...`` in place,
    keeping their order."""

    def renamed(key: str) -> str:
        for old, new in names.items():
            if key.startswith(prefix + old):
                return prefix + new + key[len(prefix + old) :]
        return key

    if any(renamed(key) != key for key in state_dict):
        for key in list(state_dict):
            state_dict[renamed(key)] = state_dict.pop(key)


def _saved_names(module, state_dict, prefix, local_metadata) -> None:
    _rename(state_dict, prefix, SAVED_NAMES)


@register("lttw")
class LTTWClassifier(Classifier):
    config_class = LTTWConfig

    def __init__(self, config: LTTWConfig, encoder: nn.Module | None = None):
        """Build the architecture from ``config`` alone (random weights), or around a given
        pretrained ``encoder`` (``from_settings``)."""
        super().__init__(config)
        _check(config)
        self.encoder = (
            encoder if encoder is not None else encoder_from_config(config.encoder_config)
        )
        # built right after the encoder: a seeded run draws the same initial weights as ever
        self.fusion = FUSION_REGISTRY[config.fusion](
            cast(Any, self.encoder).config.hidden_size, config.factor_slots, config.rank
        )
        width = self.width = self.fusion.width
        max_seq = config.max_len + self.fusion.extra_positions
        self.blocks = nn.ModuleList()
        if config.attention != "none":
            self.blocks.extend(
                AttentionBlock(
                    width,
                    config.attention,
                    config.heads,
                    config.ffn_mult,
                    config.dropout,
                    max_seq,
                    config.linformer_k,
                    config.share_kv,
                    config.norm_first,
                )
                for _ in range(config.depth)
            )
        self.final_norm = (
            nn.LayerNorm(width) if config.norm_first and self.blocks else nn.Identity()
        )
        self.dropout = nn.Dropout(config.dropout)
        self.classifier = nn.Linear(width, config.n_labels)  # eq. 14: logits = Y M + b
        self._register_state_dict_hook(_saved_names)

    @classmethod
    def from_settings(
        cls, model, n_labels: int, factor_shape: tuple[int, int] | None, encoder_path: str | None
    ) -> LTTWClassifier:
        uses_factors = FUSION_REGISTRY[model.fusion].uses_factors
        if uses_factors and factor_shape is None:
            raise UserError(
                f"model.fusion: {model.fusion} needs the latent factors, but none "
                "were given (factor_shape is None)"
            )
        if encoder_path is None:
            encoder_path = resolve_encoder(model.encoder)
        slots, rank = factor_shape if uses_factors and factor_shape is not None else (0, 0)
        config = LTTWConfig(
            n_labels=n_labels,
            encoder_config={},
            factor_slots=slots,
            rank=rank,
            fusion=model.fusion,
            attention=model.attention,
            linformer_k=model.linformer_k,
            share_kv=model.share_kv,
            depth=model.depth,
            heads=model.heads,
            ffn_mult=model.ffn_mult,
            dropout=model.dropout,
            max_len=model.max_len,
        )
        check_max_len(encoder_path, model.max_len)  # before loading any weights
        encoder = load_pretrained_encoder(encoder_path)
        config.encoder_config = encoder_config_dict(encoder)
        return cls(config, encoder=encoder)

    def _load_from_state_dict(self, state_dict, prefix, *args) -> None:
        """Read the fusion's parameters under their saved names (``SAVED_NAMES``)."""
        _rename(state_dict, prefix, {saved: name for name, saved in SAVED_NAMES.items()})
        super()._load_from_state_dict(state_dict, prefix, *args)

    def forward(
        self,
        input_ids: torch.Tensor,
        attention_mask: torch.Tensor,
        factors: torch.Tensor | None = None,
        output_attentions: bool = False,
        encoder_states: torch.Tensor | None = None,
    ):
        """input_ids, attention_mask (B, n); factors (B, k+s, z) or None -> logits (B, p).
        ``encoder_states`` (B, n, d): a frozen encoder's cached output, used instead of
        running the encoder.

        The classifier reads position 0 only, so the last block runs its queries, output
        projection and feed-forward at position 0 alone (keys and values from every position):
        exact, and about depth times cheaper in those layers. ``output_attentions=True``
        returns ``(logits, attentions)`` instead, a tuple with every block's weights
        ((B, h, n, n) for mha, (B, h, n, K) for linformer; all positions, the full blocks)."""
        if input_ids.shape[1] > self.config.max_len:
            raise ValueError(
                f"input of {input_ids.shape[1]} tokens exceeds max_len={self.config.max_len}"
            )
        hidden = self.hidden_states(input_ids, attention_mask, encoder_states)  # (B, n, d)
        x, mask = self.fusion(hidden, attention_mask, factors)  # H_V (B, n', width)
        attentions = []
        for i, block in enumerate(self.blocks):
            if output_attentions:
                x, weights = block(x, mask, output_attentions=True)
                attentions.append(weights)
            else:
                x = block(x, mask, first_only=i == len(self.blocks) - 1)
        y = self.final_norm(x[:, 0])  # Y: [CLS] (B, width)
        logits = self.classifier(self.dropout(y))
        return (logits, tuple(attentions)) if output_attentions else logits
