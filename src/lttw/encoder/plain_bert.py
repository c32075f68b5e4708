"""BERT's encoder in plain torch, for loading a trained model folder without transformers.

Why by hand: ``lttw predict`` must start in <= 2.5 s (issue 13.7), and importing
transformers' modelling code alone takes about 2.3 s on top of torch (its activations pull in
``torch._dynamo``, BERT's module ``torch.distributed.tensor``). A saved classifier only needs
the forward pass of the architecture recorded in its ``config.json``, and for ``model_type:
bert`` (MiniLM, BERT, Chinese BERT) that is a few dozen lines.

``PlainBert`` has the parameter names of transformers' ``BertModel`` without its pooler
(``embeddings.word_embeddings.weight``, ``encoder.layer.0.attention.self.query.weight``, ...),
so a checkpoint written from ``BertModel`` loads into it unchanged, and it computes the same
function: embeddings (word + position + token type 0) -> LayerNorm -> layers of
post-norm self-attention (SDPA, padded keys masked) and GELU feed-forward. Dropout sits where
BERT has it. ``tests/encoder/test_plain_bert.py`` checks outputs and gradients against ``BertModel``.

``load_pretrained_encoder`` (training) and ``encoder_from_config`` (loading a trained
folder) build this one where ``supports`` holds; any other architecture or option falls back
to transformers.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from types import SimpleNamespace
from typing import Any

import torch
import torch.nn.functional as F
from torch import nn

#: transformers' ``hidden_act`` names -> the same function in torch
ACTIVATIONS: dict[str, Callable[[torch.Tensor], torch.Tensor]] = {
    "gelu": F.gelu,  # the exact (erf) GELU, transformers' GELUActivation
    "relu": F.relu,
}

#: config values this implementation computes exactly (anything else: use transformers)
_REQUIRED = {
    "is_decoder": False,
    "add_cross_attention": False,
    "position_embedding_type": "absolute",
    "chunk_size_feed_forward": 0,
}


def supports(config: dict[str, Any]) -> bool:
    """Whether ``config`` (an encoder config as ``encoder_config_dict`` writes it) is a BERT
    encoder that ``PlainBert`` computes exactly."""
    return (
        all(config.get(key, value) == value for key, value in _REQUIRED.items())
        and config.get("model_type") == "bert"
        and config.get("hidden_act", "gelu") in ACTIVATIONS
        and config.get("hidden_size", 768) % config.get("num_attention_heads", 12) == 0
    )


@dataclass
class EncoderOutput:
    last_hidden_state: torch.Tensor  # (B, n, d)


def _layer_norm(config: SimpleNamespace) -> nn.LayerNorm:
    return nn.LayerNorm(config.hidden_size, eps=config.layer_norm_eps)


def _embedding(rows: int, d: int, padding_idx: int | None = None) -> nn.Embedding:
    """``nn.Embedding(rows, d)``; built on the meta device (a folder's weights are assigned
    next) without its random init, since ``normal_`` on meta tensors imports
    ``torch._dynamo`` (about 2 s; training imports it anyway, through the optimiser, but the
    frozen ``encode`` stage need not)."""
    if torch.get_default_device().type == "meta":
        return nn.Embedding(rows, d, padding_idx=padding_idx, _weight=torch.empty(rows, d))
    return nn.Embedding(rows, d, padding_idx=padding_idx)


class Embeddings(nn.Module):
    def __init__(self, config: SimpleNamespace):
        super().__init__()
        d = config.hidden_size
        self.word_embeddings = _embedding(config.vocab_size, d, config.pad_token_id)
        self.position_embeddings = _embedding(config.max_position_embeddings, d)
        self.token_type_embeddings = _embedding(config.type_vocab_size, d)
        self.LayerNorm = _layer_norm(config)
        self.dropout = nn.Dropout(config.hidden_dropout_prob)

    def forward(self, input_ids: torch.Tensor) -> torch.Tensor:
        n = input_ids.shape[1]
        positions = torch.arange(n, device=input_ids.device)
        x = (
            self.word_embeddings(input_ids)
            + self.token_type_embeddings.weight[0]
            + self.position_embeddings(positions)
        )  # (B, n, d)
        return self.dropout(self.LayerNorm(x))


class SelfAttention(nn.Module):
    def __init__(self, config: SimpleNamespace):
        super().__init__()
        d = config.hidden_size
        self.heads = config.num_attention_heads
        self.query, self.key, self.value = nn.Linear(d, d), nn.Linear(d, d), nn.Linear(d, d)
        # a module, as in transformers: its p (read at each call) is what SDPA drops, so code
        # that sets every nn.Dropout's p (e.g. to 0) reaches the attention probabilities too
        self.dropout = nn.Dropout(config.attention_probs_dropout_prob)

    def forward(self, x: torch.Tensor, keep: torch.Tensor | None) -> torch.Tensor:
        b, n, d = x.shape

        def split(t: torch.Tensor) -> torch.Tensor:  # (B, n, d) -> (B, h, n, d/h)
            return t.view(b, n, self.heads, d // self.heads).transpose(1, 2)

        out = F.scaled_dot_product_attention(
            split(self.query(x)),
            split(self.key(x)),
            split(self.value(x)),
            attn_mask=keep,
            dropout_p=self.dropout.p if self.training else 0.0,
        )  # (B, h, n, d/h)
        return out.transpose(1, 2).reshape(b, n, d)


class ResidualOutput(nn.Module):
    """dense -> dropout -> LayerNorm(. + residual): BERT's SelfOutput and Output."""

    def __init__(self, config: SimpleNamespace, in_dim: int):
        super().__init__()
        self.dense = nn.Linear(in_dim, config.hidden_size)
        self.LayerNorm = _layer_norm(config)
        self.dropout = nn.Dropout(config.hidden_dropout_prob)

    def forward(self, x: torch.Tensor, residual: torch.Tensor) -> torch.Tensor:
        return self.LayerNorm(self.dropout(self.dense(x)) + residual)


class Attention(nn.Module):
    def __init__(self, config: SimpleNamespace):
        super().__init__()
        self.self = SelfAttention(config)
        self.output = ResidualOutput(config, config.hidden_size)

    def forward(self, x: torch.Tensor, keep: torch.Tensor | None) -> torch.Tensor:
        return self.output(self.self(x, keep), x)


class Intermediate(nn.Module):
    def __init__(self, config: SimpleNamespace):
        super().__init__()
        self.dense = nn.Linear(config.hidden_size, config.intermediate_size)
        self.act = ACTIVATIONS[config.hidden_act]

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.act(self.dense(x))


class Layer(nn.Module):
    def __init__(self, config: SimpleNamespace):
        super().__init__()
        self.attention = Attention(config)
        self.intermediate = Intermediate(config)
        self.output = ResidualOutput(config, config.intermediate_size)

    def forward(self, x: torch.Tensor, keep: torch.Tensor | None) -> torch.Tensor:
        x = self.attention(x, keep)
        return self.output(self.intermediate(x), x)


class Layers(nn.Module):
    def __init__(self, config: SimpleNamespace):
        super().__init__()
        self.layer = nn.ModuleList(Layer(config) for _ in range(config.num_hidden_layers))


#: BertConfig's defaults, for keys a config dict leaves out
_DEFAULTS = {
    "vocab_size": 30522,
    "hidden_size": 768,
    "num_hidden_layers": 12,
    "num_attention_heads": 12,
    "intermediate_size": 3072,
    "hidden_act": "gelu",
    "hidden_dropout_prob": 0.1,
    "attention_probs_dropout_prob": 0.1,
    "max_position_embeddings": 512,
    "type_vocab_size": 2,
    "layer_norm_eps": 1e-12,
    "pad_token_id": 0,
}


class PlainBert(nn.Module):
    """``BertModel(config, add_pooling_layer=False)``'s forward pass, in plain torch.

    ``config``: the encoder config dict (``config.hidden_size`` etc. read as attributes).
    ``forward(input_ids, attention_mask)`` (B, n) -> ``EncoderOutput`` with
    ``last_hidden_state`` (B, n, d), as transformers returns it."""

    def __init__(self, config: dict[str, Any]):
        super().__init__()
        if not supports(config):
            raise ValueError(
                "PlainBert computes BERT encoders only (model_type bert, absolute "
                f"positions, hidden_act in {sorted(ACTIVATIONS)})"
            )
        self.config = SimpleNamespace(**{**_DEFAULTS, **config})
        self.embeddings = Embeddings(self.config)
        self.encoder = Layers(self.config)

    def get_input_embeddings(self) -> nn.Embedding:
        return self.embeddings.word_embeddings

    def forward(
        self, input_ids: torch.Tensor, attention_mask: torch.Tensor | None = None
    ) -> EncoderOutput:
        x = self.embeddings(input_ids)
        # (B, 1, 1, n): True where a key is a real token. Passed whenever a mask is given,
        # even one of all ones: no data-dependent branch, so no device-to-host sync per
        # forward and no graph break under torch.compile (tests/encoder/test_compile_graph.py)
        keep = None if attention_mask is None else attention_mask.bool()[:, None, None, :]
        for layer in self.encoder.layer:
            x = layer(x, keep)
        return EncoderOutput(last_hidden_state=x)
