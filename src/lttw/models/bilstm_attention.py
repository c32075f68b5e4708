"""``model.variant: bilstm_attention`` -- embedding -> BiLSTM -> additive attention -> two
linear layers (the BiLSTM baseline of the reference text).

Word embeddings live on the pretrained encoder's tokenizer vocabulary; with
``model.pretrained_embeddings`` they start as a copy of the encoder's input word embeddings
(whose width sets the embedding size), otherwise random of the same size. With
``model.vocab: words`` they live on the counts stage's words instead (``from_words``):
pretrained static vectors where given (their width), else random of width ``model.hidden``.
The LSTM runs on packed sequences, so padding never reaches either direction; attention
scores are v . tanh(W h_t), softmax over the real tokens.
"""

from __future__ import annotations

from dataclasses import dataclass

import torch
from torch import nn
from torch.nn.utils.rnn import pack_padded_sequence, pad_packed_sequence

from lttw.models._layers import (
    ClassifierHead,
    EmbeddingBuilt,
    init_embedding,
    lengths,
    masked_softmax,
)
from lttw.models.registry import Classifier, register


@dataclass
class BiLSTMAttentionConfig:
    n_labels: int
    vocab_size: int
    embed_dim: int
    hidden: int = 256  # per direction
    layers: int = 2
    dropout: float = 0.1


@register("bilstm_attention")
class BiLSTMAttentionClassifier(EmbeddingBuilt, Classifier):
    config_class = BiLSTMAttentionConfig

    def __init__(self, config: BiLSTMAttentionConfig):
        super().__init__(config)
        h2 = 2 * config.hidden
        self.embed = nn.Embedding(config.vocab_size, config.embed_dim)
        self.dropout = nn.Dropout(config.dropout)
        self.lstm = nn.LSTM(
            config.embed_dim,
            config.hidden,
            num_layers=config.layers,
            batch_first=True,
            bidirectional=True,
            dropout=config.dropout if config.layers > 1 else 0.0,
        )
        self.att_proj = nn.Linear(h2, h2)  # W
        self.att_vec = nn.Linear(h2, 1, bias=False)  # v
        self.head = ClassifierHead(h2, config.n_labels, config.dropout, hidden=config.hidden)

    @classmethod
    def _built(cls, model, n_labels, vocab, dim, weight):
        net = cls(
            BiLSTMAttentionConfig(
                n_labels=n_labels,
                vocab_size=vocab,
                embed_dim=dim,
                hidden=model.hidden,
                layers=model.layers,
                dropout=model.dropout,
            )
        )
        init_embedding(net.embed, weight)
        return net

    def forward(self, input_ids, attention_mask, factors=None) -> torch.Tensor:
        seq = input_ids.shape[1]
        x = self.dropout(self.embed(input_ids))  # (b, seq, embed_dim)
        packed = pack_padded_sequence(
            x, lengths(attention_mask), batch_first=True, enforce_sorted=False
        )
        h, _ = pad_packed_sequence(self.lstm(packed)[0], batch_first=True, total_length=seq)
        scores = self.att_vec(torch.tanh(self.att_proj(h))).squeeze(-1)  # (b, seq)
        alpha = masked_softmax(scores, attention_mask)  # (b, seq)
        context = torch.einsum("bs,bsh->bh", alpha, h)  # (b, 2 * hidden)
        return self.head(context)  # (b, n_labels)
