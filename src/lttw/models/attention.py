"""Self-attention over the fused features H_V (paper 2.5, eqs 9-13), and its Transformer block.

Shapes: B batch, n sequence length, d model width, h heads, dh = ceil(d / h) head width,
K the Linformer projected length. The fused width (e.g. 384 + 20 * 5 = 484) need not divide
by h: queries, keys and values use an inner width h * dh >= d and an output projection maps
back to d. Every attention product goes through ``F.scaled_dot_product_attention``.

``attention_mask`` is (B, n) with 1 for real tokens and 0 for padding.

Every module takes ``first_only`` (queries, output projection and feed-forward at position 0
alone, keys and values still from all positions: exact for position 0, what the classifier
reads after the last block) and ``output_attentions`` (also return the softmax weights, as
Hugging Face's ``output_attentions``: (B, h, n_q, n) for ``mha``, (B, h, n_q, K) for
``linformer``; computed explicitly only then, the fused SDPA kernel stays the default).
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import ClassVar, cast

import torch
import torch.nn.functional as F
from torch import nn


def dropout_at_first(
    x: torch.Tensor, p: float, training: bool, length: int, dim: int = 1
) -> torch.Tensor:
    """Dropout of ``x``, the position-0 slice (size 1 along ``dim``) of a ``length``-position
    tensor, exactly as dropout of the whole tensor treats that slice: the noise is drawn for
    all ``length`` positions (the same random numbers, in the same order, as
    ``F.dropout``) and its position-0 slice kept. The ``first_only`` path thus trains on the
    same random stream as the full one, not merely an equally random one."""
    if not training or p == 0.0:
        return x
    if p >= 1.0:
        return x * 0.0
    shape = list(x.shape)
    shape[dim] = length
    noise = x.new_empty(shape).bernoulli_(1 - p).narrow(dim, 0, 1)
    return x * noise.div_(1 - p)


class _SelfAttention(nn.Module):
    """Q/K/V and output projections shared by both attention kinds."""

    #: the report's name of an LTTW run with this attention kind where it is an ablation
    ablation: ClassVar[str | None] = None

    def __init__(self, d_model: int, heads: int, dropout: float = 0.0):
        super().__init__()
        self.heads = heads
        self.head_dim = math.ceil(d_model / heads)
        inner = heads * self.head_dim
        self.query = nn.Linear(d_model, inner)
        self.key = nn.Linear(d_model, inner)
        self.value = nn.Linear(d_model, inner)
        self.out = nn.Linear(inner, d_model)
        self.dropout = dropout

    def _split(self, x: torch.Tensor) -> torch.Tensor:
        # (B, L, h*dh) -> (B, h, L, dh)
        b, length, _ = x.shape
        return x.view(b, length, self.heads, self.head_dim).transpose(1, 2)

    def _merge(self, x: torch.Tensor) -> torch.Tensor:
        # (B, h, n, dh) -> (B, n, d)
        b, _, n, _ = x.shape
        return self.out(x.transpose(1, 2).reshape(b, n, self.heads * self.head_dim))

    def _attend(
        self,
        q,
        k,
        v,
        attn_mask=None,
        output_attentions: bool = False,
        queries_of: int | None = None,
    ) -> tuple[torch.Tensor, torch.Tensor | None]:
        """(output (B, h, n_q, dh), weights (B, h, n_q, n_k) or None). ``attn_mask`` is
        boolean, True = attend. ``queries_of``: ``q`` is position 0 of that many queries
        (``first_only``); in training its attention dropout is drawn as for all of them."""
        p = self.dropout if self.training else 0.0
        first_dropout = queries_of is not None and p > 0
        if not output_attentions and not first_dropout:
            return F.scaled_dot_product_attention(q, k, v, attn_mask=attn_mask, dropout_p=p), None
        scores = (q @ k.transpose(-1, -2)) / math.sqrt(self.head_dim)
        if attn_mask is not None:
            scores = scores.masked_fill(~attn_mask, float("-inf"))
        weights = torch.softmax(scores.float(), dim=-1).to(q.dtype)
        if first_dropout:  # as SDPA's dropout of the (B, h, queries_of, n_k) weights draws it
            assert queries_of is not None  # first_dropout implies it
            dropped = dropout_at_first(weights, p, True, queries_of, dim=2)
        else:
            dropped = F.dropout(weights, p)
        return dropped @ v, (weights if output_attentions else None)


class MultiHeadSelfAttention(_SelfAttention):
    """Standard multi-head self-attention (eq. 9): O(n^2) scores, key padding masked."""

    ablation = "LTTW-Att"

    def forward(
        self,
        x: torch.Tensor,
        attention_mask: torch.Tensor,
        first_only: bool = False,
        output_attentions: bool = False,
    ):
        # x (B, n, d), attention_mask (B, n) -> (B, n_q, d) [, weights (B, h, n_q, n)]
        q = self._split(self.query(x[:, :1] if first_only else x))  # (B, h, n_q, dh)
        k, v = self._split(self.key(x)), self._split(self.value(x))  # (B, h, n, dh)
        keep = attention_mask[:, None, None, :].bool()  # (B, 1, 1, n) True = attend
        out, weights = self._attend(
            q, k, v, keep, output_attentions, x.shape[1] if first_only else None
        )  # (B, h, n_q, n)
        return (self._merge(out), weights) if output_attentions else self._merge(out)


class LinformerSelfAttention(_SelfAttention):
    """Linformer self-attention (eqs 10-13): keys and values are projected along the SEQUENCE
    axis from n to K by learned E, F of shape (K, max_seq) (one shared matrix when
    ``share_kv``, eq. 13), so the scores are (B, h, n, K): linear in n.

    Padded positions are zeroed before the projection, and E, F are sliced to the first n
    columns, so a padded sample gives the same output as the unpadded one.
    """

    def __init__(
        self,
        d_model: int,
        heads: int,
        max_seq: int,
        k: int = 32,
        share_kv: bool = True,
        dropout: float = 0.0,
    ):
        super().__init__(d_model, heads, dropout)
        self.max_seq = max_seq
        self.proj_k = nn.Parameter(torch.empty(k, max_seq))  # E (K, max_seq)
        self.proj_v = None if share_kv else nn.Parameter(torch.empty(k, max_seq))  # F
        for p in (self.proj_k, self.proj_v):
            if p is not None:
                nn.init.xavier_uniform_(p, gain=2**-0.5)  # as fairseq's Linformer

    def forward(
        self,
        x: torch.Tensor,
        attention_mask: torch.Tensor,
        first_only: bool = False,
        output_attentions: bool = False,
    ):
        # x (B, n, d), attention_mask (B, n) -> (B, n_q, d) [, weights (B, h, n_q, K)]
        n = x.shape[1]
        if n > self.max_seq:
            raise ValueError(
                f"sequence of {n} positions exceeds the Linformer projection's "
                f"max_seq={self.max_seq}"
            )
        keep = attention_mask[..., None].to(x.dtype)  # (B, n, 1)
        e = self.proj_k[:, :n]  # (K, n)
        f = e if self.proj_v is None else self.proj_v[:, :n]  # (K, n)
        k = torch.einsum("kn,bni->bki", e.to(x.dtype), self.key(x) * keep)  # (B, K, h*dh)
        v = torch.einsum("kn,bni->bki", f.to(x.dtype), self.value(x) * keep)  # (B, K, h*dh)
        q = self._split(self.query(x[:, :1] if first_only else x))  # (B, h, n_q, dh)
        out, weights = self._attend(
            q,
            self._split(k),
            self._split(v),
            output_attentions=output_attentions,
            queries_of=n if first_only else None,
        )  # (B, h, n_q, K)
        return (self._merge(out), weights) if output_attentions else self._merge(out)

    def token_relevance(self, weights: torch.Tensor, attention_mask: torch.Tensor) -> torch.Tensor:
        """Slot weights (B, h, n_q, K) -> each token's coefficient (B, h, n_q, n) in the
        attention output: weights @ F[:, :n] (the value projection), zero at padding. Exact
        (the output is sum over tokens of coefficient * value), but signed and not normalised."""
        n = attention_mask.shape[1]
        f = self.proj_k if self.proj_v is None else self.proj_v
        relevance = weights.float() @ f[:, :n].float()
        return relevance * attention_mask[:, None, None, :].float()


#: ``model.attention`` -> its module (``none``: no attention block at all)
ATTENTION_KINDS: dict[str, type[_SelfAttention]] = {
    "linformer": LinformerSelfAttention,
    "mha": MultiHeadSelfAttention,
}


def attention_ablation(kind: str | None) -> str | None:
    """The report's name of an LTTW run with ``model.attention: kind`` where it is an
    ablation of the paper's Linformer (None: the paper's model, or an unknown kind)."""
    if kind == "none":
        return "LTTW-L"  # no attention block: the fused [CLS] features go to the classifier
    return getattr(ATTENTION_KINDS.get(kind) if kind is not None else None, "ablation", None)


class AttentionBlock(nn.Module):
    """Transformer block: self-attention + residual + LayerNorm, feed-forward (ffn_mult * d)
    + residual + LayerNorm, with dropout; post-norm (BERT-style) unless ``norm_first``."""

    def __init__(
        self,
        d_model: int,
        attention: str = "linformer",
        heads: int = 4,
        ffn_mult: int = 4,
        dropout: float = 0.1,
        max_seq: int = 512,
        linformer_k: int = 32,
        share_kv: bool = True,
        norm_first: bool = False,
    ):
        super().__init__()
        if attention == "linformer":
            self.attn: _SelfAttention = LinformerSelfAttention(
                d_model, heads, max_seq, linformer_k, share_kv, dropout
            )
        elif attention == "mha":
            self.attn = MultiHeadSelfAttention(d_model, heads, dropout)
        else:
            raise ValueError(
                f"attention must be one of {', '.join(ATTENTION_KINDS)}, got {attention!r}"
            )
        self.norm_first = norm_first
        self.norm1 = nn.LayerNorm(d_model)
        self.norm2 = nn.LayerNorm(d_model)
        self.ffn = nn.Sequential(
            nn.Linear(d_model, ffn_mult * d_model),
            nn.GELU(),
            nn.Dropout(dropout),
            nn.Linear(ffn_mult * d_model, d_model),
        )
        self.drop = nn.Dropout(dropout)

    def forward(
        self,
        x: torch.Tensor,
        attention_mask: torch.Tensor,
        first_only: bool = False,
        output_attentions: bool = False,
    ):
        """x (B, n, d), attention_mask (B, n) -> (B, n, d), or (B, 1, d) with ``first_only``
        (position 0 alone: its result is exact); with ``output_attentions`` also the weights
        (see the module docstring)."""
        h = self.norm1(x) if self.norm_first else x
        attended = self.attn(h, attention_mask, first_only, output_attentions)
        attended, weights = attended if output_attentions else (attended, None)
        drop: Callable[[torch.Tensor], torch.Tensor]
        ffn: Callable[[torch.Tensor], torch.Tensor]
        drop, ffn = self.drop, self.ffn
        if first_only:  # dropout drawn as for all n positions: the full path's random stream
            n, x = x.shape[1], x[:, :1]
            drop = lambda t: dropout_at_first(t, self.drop.p, self.training, n)  # noqa: E731
            ffn = lambda t: self.ffn[3](
                dropout_at_first(  # noqa: E731
                    self.ffn[1](self.ffn[0](t)), cast(nn.Dropout, self.ffn[2]).p, self.training, n
                )
            )
        if self.norm_first:
            x = x + drop(attended)
            x = x + drop(ffn(self.norm2(x)))
        else:
            x = self.norm1(x + drop(attended))
            x = self.norm2(x + drop(ffn(x)))
        return (x, weights) if output_attentions else x
