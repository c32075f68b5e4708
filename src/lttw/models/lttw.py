"""The LTTW classifier (paper 2.4-2.6, SPEC steps 4-7) and its ablations, one config.

    H_BERT = encoder(input_ids, attention_mask)                       (B, n, d)
    fusion  concat:   H_V = [H_BERT ; flatten(H_tw) on every token]   (B, n, d + (k+s)*z)
            sequence: H_V = [H_BERT[:, :1] ; H_tw W ; H_BERT[:, 1:]]  (B, n+k+s, d)
            none:     H_V = H_BERT                                    (B, n, d)     LTTW-M
    attention linformer | mha (LTTW-Att) | none (LTTW-L): depth blocks over H_V
    Y = H[:, 0] ([CLS]);  logits = dropout(Y) M + b                   (B, p)

With ``sequence`` fusion the k+s factor tokens go right after [CLS] (not after the padding),
so they sit at the same positions whatever the padding, and Linformer's positional
projection treats a padded sample exactly like the unpadded one.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import torch
from torch import nn

from lttw.models.attention import AttentionBlock
from lttw.encoder.pretrained import (check_max_len, encoder_config_dict, encoder_from_config,
                       load_pretrained_encoder, resolve_encoder)
from lttw.errors import UserError
from lttw.settings import ATTENTIONS, FUSIONS
from lttw.models.registry import Classifier, register


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
    if config.fusion not in FUSIONS:
        raise UserError(f"model.fusion must be one of {', '.join(FUSIONS)} "
                        f"(got {config.fusion!r})")
    if config.attention not in ATTENTIONS:
        raise UserError(f"model.attention must be one of {', '.join(ATTENTIONS)} "
                        f"(got {config.attention!r})")
    if config.fusion != "none" and config.factor_slots * config.rank == 0:
        raise UserError(f"model.fusion: {config.fusion} needs latent factors: model.k + model.s "
                        "and nmf.rank must be >= 1")
    if config.fusion == "sequence" and config.attention == "none":
        raise UserError("model.fusion: sequence needs an attention block (model.attention: "
                        "linformer or mha); without one the factor tokens never reach [CLS]")
    check_max_len(config.encoder_config, config.max_len)


@register("lttw")
class LTTWClassifier(Classifier):
    config_class = LTTWConfig

    def __init__(self, config: LTTWConfig, encoder: nn.Module | None = None):
        """Build the architecture from ``config`` alone (random weights), or around a given
        pretrained ``encoder`` (``from_settings``)."""
        super().__init__(config)
        _check(config)
        self.encoder = encoder if encoder is not None else encoder_from_config(
            config.encoder_config)
        d = self.encoder.config.hidden_size
        flat = config.factor_slots * config.rank
        self.factor_proj = None
        width, max_seq = d, config.max_len
        if config.fusion == "concat":
            width = d + flat  # the paper's d_BERT + d_tw
        elif config.fusion == "sequence":
            self.factor_proj = nn.Linear(config.rank, d)  # H_tw rows -> token features
            max_seq = config.max_len + config.factor_slots
        self.width = width
        self.blocks = nn.ModuleList()
        if config.attention != "none":
            self.blocks.extend(
                AttentionBlock(width, config.attention, config.heads, config.ffn_mult,
                               config.dropout, max_seq, config.linformer_k, config.share_kv,
                               config.norm_first)
                for _ in range(config.depth))
        self.final_norm = nn.LayerNorm(width) if config.norm_first and self.blocks \
            else nn.Identity()
        self.dropout = nn.Dropout(config.dropout)
        self.classifier = nn.Linear(width, config.n_labels)  # eq. 14: logits = Y M + b

    @classmethod
    def from_settings(cls, model, n_labels: int, factor_shape: tuple[int, int] | None,
                      encoder_path: str | None) -> "LTTWClassifier":
        if model.fusion != "none" and factor_shape is None:
            raise UserError(f"model.fusion: {model.fusion} needs the latent factors, but none "
                            "were given (factor_shape is None)")
        if encoder_path is None:
            encoder_path = resolve_encoder(model.encoder)
        slots, rank = factor_shape if model.fusion != "none" else (0, 0)
        config = LTTWConfig(
            n_labels=n_labels, encoder_config={}, factor_slots=slots, rank=rank,
            fusion=model.fusion, attention=model.attention, linformer_k=model.linformer_k,
            share_kv=model.share_kv, depth=model.depth, heads=model.heads,
            ffn_mult=model.ffn_mult, dropout=model.dropout, max_len=model.max_len)
        check_max_len(encoder_path, model.max_len)  # before loading any weights
        encoder = load_pretrained_encoder(encoder_path)
        config.encoder_config = encoder_config_dict(encoder)
        return cls(config, encoder=encoder)

    def fuse(self, hidden: torch.Tensor, attention_mask: torch.Tensor,
             factors: torch.Tensor | None) -> tuple[torch.Tensor, torch.Tensor]:
        """(H_BERT (B, n, d), mask (B, n), H_tw (B, k+s, z)) -> (H_V, its mask)."""
        cfg = self.config
        if cfg.fusion == "none":
            return hidden, attention_mask
        expected = (cfg.factor_slots, cfg.rank)
        if factors is None or tuple(factors.shape[1:]) != expected:
            got = None if factors is None else tuple(factors.shape)
            raise ValueError(f"fusion {cfg.fusion!r} needs factors of shape (B, {expected[0]}, "
                             f"{expected[1]}); got {got}")
        factors = factors.to(hidden.dtype)
        b, n, _ = hidden.shape
        if cfg.fusion == "concat":
            flat = factors.reshape(b, 1, -1).expand(b, n, -1)              # (B, n, (k+s)*z)
            return torch.cat([hidden, flat], dim=-1), attention_mask       # (B, n, d+(k+s)*z)
        tokens = self.factor_proj(factors)                                 # (B, k+s, d)
        fused = torch.cat([hidden[:, :1], tokens.to(hidden.dtype), hidden[:, 1:]], dim=1)
        return fused, self.fused_mask(attention_mask)                      # (B, n+k+s, d)

    def fused_mask(self, attention_mask: torch.Tensor) -> torch.Tensor:
        """The attention blocks' mask for the tokens' mask (B, n): with ``sequence`` fusion
        the k+s factor positions after [CLS] are real, (B, n+k+s); otherwise unchanged."""
        if self.config.fusion != "sequence":
            return attention_mask
        ones = attention_mask.new_ones(attention_mask.shape[0], self.config.factor_slots)
        return torch.cat([attention_mask[:, :1], ones, attention_mask[:, 1:]], dim=1)

    def forward(self, input_ids: torch.Tensor, attention_mask: torch.Tensor,
                factors: torch.Tensor | None = None, output_attentions: bool = False,
                encoder_states: torch.Tensor | None = None):
        """input_ids, attention_mask (B, n); factors (B, k+s, z) or None -> logits (B, p).
        ``encoder_states`` (B, n, d): a frozen encoder's cached output, used instead of
        running the encoder.

        The classifier reads position 0 only, so the last block runs its queries, output
        projection and feed-forward at position 0 alone (keys and values from every position):
        exact, and about depth times cheaper in those layers. ``output_attentions=True``
        returns ``(logits, attentions)`` instead, a tuple with every block's weights
        ((B, h, n, n) for mha, (B, h, n, K) for linformer; all positions, the full blocks)."""
        if input_ids.shape[1] > self.config.max_len:
            raise ValueError(f"input of {input_ids.shape[1]} tokens exceeds max_len="
                             f"{self.config.max_len}")
        hidden = self.hidden_states(input_ids, attention_mask, encoder_states)  # (B, n, d)
        x, mask = self.fuse(hidden, attention_mask, factors)
        attentions = []
        for i, block in enumerate(self.blocks):
            if output_attentions:
                x, weights = block(x, mask, output_attentions=True)
                attentions.append(weights)
            else:
                x = block(x, mask, first_only=i == len(self.blocks) - 1)
        y = self.final_norm(x[:, 0])                                        # Y: [CLS] (B, width)
        logits = self.classifier(self.dropout(y))
        return (logits, tuple(attentions)) if output_attentions else logits
