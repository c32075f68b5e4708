"""Building blocks shared by the baseline classifiers (no variant is registered here).

Masks follow the registry's convention: ``attention_mask`` is (batch, seq), 1 for real tokens
and 0 for padding, padding on the right.
"""

from __future__ import annotations

import math
from typing import Any, cast

import torch
import torch.nn.functional as F
from torch import nn

from lttw.errors import UserError

# --------------------------------------------------------------------------- masked pooling


def masked_softmax(scores: torch.Tensor, mask: torch.Tensor, dim: int = -1) -> torch.Tensor:
    """Softmax over ``dim`` with padded positions (mask == 0) given zero weight."""
    scores = scores.masked_fill(mask == 0, torch.finfo(scores.dtype).min)
    return torch.softmax(scores, dim=dim)


def masked_mean(x: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
    """(batch, seq, dim), (batch, seq) -> (batch, dim): mean over the real positions."""
    m = mask.unsqueeze(-1).to(x.dtype)
    return (x * m).sum(1) / m.sum(1).clamp(min=1.0)


def masked_max(x: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
    """(batch, seq, dim), (batch, seq) -> (batch, dim): max over the real positions."""
    return x.masked_fill((mask == 0).unsqueeze(-1), torch.finfo(x.dtype).min).amax(1)


def pool(x: torch.Tensor, mask: torch.Tensor, how: str) -> torch.Tensor:
    """``cls`` (position 0), ``mean`` or ``max`` pooling of (batch, seq, dim) features."""
    if how == "cls":
        return x[:, 0]
    if how == "mean":
        return masked_mean(x, mask)
    if how == "max":
        return masked_max(x, mask)
    raise ValueError(f"unknown pooling {how!r} (expected cls, mean or max)")


# --------------------------------------------------------------------------- small modules


class ClassifierHead(nn.Sequential):
    """dropout -> linear, or (with ``hidden``) dropout -> linear -> ReLU -> dropout -> linear."""

    def __init__(self, in_dim: int, n_labels: int, dropout: float, hidden: int | None = None):
        if hidden:
            super().__init__(
                nn.Dropout(dropout),
                nn.Linear(in_dim, hidden),
                nn.ReLU(),
                nn.Dropout(dropout),
                nn.Linear(hidden, n_labels),
            )
        else:
            super().__init__(nn.Dropout(dropout), nn.Linear(in_dim, n_labels))


def sinusoidal_positions(length: int, dim: int, device=None) -> torch.Tensor:
    """(length, dim) table: PE[pos, 2i] = sin(pos / 10000^(2i/dim)), PE[pos, 2i+1] = cos(.)."""
    pos = torch.arange(length, device=device, dtype=torch.float32).unsqueeze(1)
    freq = torch.exp(
        torch.arange(0, dim, 2, device=device, dtype=torch.float32) * (-math.log(10000.0) / dim)
    )
    table = torch.zeros(length, dim, device=device)
    table[:, 0::2] = torch.sin(pos * freq)
    table[:, 1::2] = torch.cos(pos * freq[: dim // 2])
    return table


# --------------------------------------------------------------------------- pretrained parts


def require_encoder_path(encoder_path: str | None, settings) -> str:
    """The resolved encoder folder / name; resolved from ``model.encoder`` when not given."""
    if encoder_path:
        return str(encoder_path)
    from lttw.encoder.pretrained import resolve_encoder

    return resolve_encoder(settings.encoder)


def pretrained_encoder(encoder_path: str):
    """(encoder, its config as a JSON-able dict) for an encoder-backed variant."""
    from lttw.encoder.pretrained import encoder_config_dict, load_pretrained_encoder

    encoder = load_pretrained_encoder(encoder_path)
    return encoder, encoder_config_dict(encoder)


def build_encoder(config_dict: dict, encoder: nn.Module | None = None) -> nn.Module:
    """The given (pretrained) encoder, or a randomly initialised one of that config."""
    if encoder is not None:
        return encoder
    from lttw.encoder.pretrained import encoder_from_config

    return encoder_from_config(config_dict)


def hidden_size(encoder: nn.Module) -> int:
    """Width of ``last_hidden_state`` for any Hugging Face encoder."""
    return int(cast(Any, encoder).config.hidden_size)  # a Hugging Face model's config


def word_embedding_init(
    encoder_path: str, pretrained: bool
) -> tuple[int, int, torch.Tensor | None]:
    """(vocab_size, embed_dim, weight or None) for a word-embedding layer on the encoder's
    tokenizer vocabulary. The width is the encoder's input-embedding width either way (so
    random and pretrained runs differ only in their initialisation); with ``pretrained`` the
    weight is a copy of the encoder's input word embeddings (rows for ids the encoder lacks,
    e.g. added tokens, are left to the layer's random init)."""
    from lttw.encoder.pretrained import load_pretrained_encoder
    from lttw.encoder.tokenizer import load_tokenizer

    weight = load_pretrained_encoder(encoder_path).get_input_embeddings().weight.detach()
    vocab = max(len(load_tokenizer(encoder_path)), weight.shape[0])
    return vocab, int(weight.shape[1]), (weight.clone().float() if pretrained else None)


def words_embedding_init(
    vocab_size: int, weight: torch.Tensor | None, default_dim: int
) -> tuple[int, int, torch.Tensor | None]:
    """(vocab_size, embed_dim, weight or None) for a word-embedding layer on the counts
    stage's words (``model.vocab: words``): the pretrained vectors' width where there are
    vectors (``weight``: one row per word id), else ``default_dim`` (random init)."""
    if weight is None:
        return vocab_size, default_dim, None
    if weight.shape[0] != vocab_size:
        raise ValueError(f"{weight.shape[0]} embedding rows for {vocab_size} word ids")
    return vocab_size, int(weight.shape[1]), weight.float()


def init_embedding(embedding: nn.Embedding, weight: torch.Tensor | None) -> None:
    """Copy ``weight`` (rows x dim) into the first rows of ``embedding``; None leaves it."""
    if weight is not None:
        with torch.no_grad():
            embedding.weight[: weight.shape[0]].copy_(weight)


def check_divisible(width: int, heads: int, what: str) -> None:
    if width % heads:
        raise UserError(f"{what} ({width}) must be divisible by model.heads ({heads})")


def lengths(mask: torch.Tensor) -> torch.Tensor:
    """(batch, seq) mask -> (batch,) int64 number of real tokens (at least 1), on the CPU."""
    return mask.sum(1).clamp(min=1).to("cpu", torch.int64)


def window_mask(mask: torch.Tensor, width: int) -> torch.Tensor:
    """Mask of the outputs of a full (padding = width - 1) 1-D convolution of ``width``:
    an output is real when its window covers at least one real token. (batch, seq + width - 1)"""
    m = F.pad(mask.float().unsqueeze(1), (width - 1, width - 1))
    return F.max_pool1d(m, width, stride=1).squeeze(1)


class EmbeddingBuilt:
    """``from_settings`` / ``from_words`` of a classifier over its own word embedding
    (bilstm_attention, leam): the embedding's rows and width come from the encoder's input
    embeddings (``model.vocab: encoder``) or from the words and their vectors (``words``);
    the class builds the rest in ``_built(model, n_labels, vocab, dim, weight)``."""

    @classmethod
    def from_settings(cls, model, n_labels, factor_shape, encoder_path):
        vocab, dim, weight = word_embedding_init(
            require_encoder_path(encoder_path, model), model.pretrained_embeddings
        )
        return cls._built(model, n_labels, vocab, dim, weight)

    @classmethod
    def from_words(cls, model, n_labels, vocab_size, weight=None):
        """On word ids (``model.vocab: words``), ``weight`` the pretrained rows or None."""
        return cls._built(model, n_labels, *words_embedding_init(vocab_size, weight, model.hidden))
