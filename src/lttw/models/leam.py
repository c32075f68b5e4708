"""``model.variant: leam`` -- LEAM, joint embedding of words and labels (Wang et al., 2018).

Label embeddings C (p x d) live in the word-embedding space V:
    G     = cosine(V, C)                  (b, n, p)   zero at padded words
    u     = ReLU(conv_{2r+1}(G))           (b, n, p)   width 2r+1 over the word axis, p -> p
    m     = max over labels of u           (b, n)
    beta  = softmax of m over real words   (b, n)
    z     = sum_l beta_l v_l               (b, d)
    logits = f2(z)                         two linear layers
Word embeddings are initialised like ``bilstm_attention``'s (``from_words``: on the counts
stage's words, ``model.vocab: words``). The paper's label regulariser
(f2 applied to each label embedding should predict that label) is ``label_regularizer()``;
training adds it to the loss times ``label_reg_weight`` (1, as LEAM's ``class_penalty``)
through ``auxiliary_loss()``.
"""

from __future__ import annotations

from dataclasses import dataclass

import torch
import torch.nn.functional as F
from torch import nn

from lttw.models._layers import ClassifierHead, EmbeddingBuilt, init_embedding, masked_softmax
from lttw.models.registry import Classifier, register


@dataclass
class LEAMConfig:
    n_labels: int
    vocab_size: int
    embed_dim: int
    r: int = 2  # attention window 2r + 1
    hidden: int = 256  # width of f2's hidden layer
    dropout: float = 0.1
    label_reg_weight: float = 1.0  # weight of label_regularizer() in the training loss


@register("leam")
class LEAMClassifier(EmbeddingBuilt, Classifier):
    config_class = LEAMConfig

    def __init__(self, config: LEAMConfig):
        super().__init__(config)
        p = config.n_labels
        self.embed = nn.Embedding(config.vocab_size, config.embed_dim)
        self.label_embed = nn.Parameter(torch.randn(p, config.embed_dim) * 0.02)  # C
        self.att_conv = nn.Conv1d(p, p, 2 * config.r + 1, padding=config.r)
        self.head = ClassifierHead(config.embed_dim, p, config.dropout, hidden=config.hidden)

    @classmethod
    def _built(cls, model, n_labels, vocab, dim, weight):
        net = cls(
            LEAMConfig(
                n_labels=n_labels,
                vocab_size=vocab,
                embed_dim=dim,
                r=model.leam_r,
                hidden=model.hidden,
                dropout=model.dropout,
            )
        )
        init_embedding(net.embed, weight)
        return net

    def attention(self, input_ids, attention_mask) -> tuple[torch.Tensor, torch.Tensor]:
        """(word embeddings V (b, n, d), attention beta (b, n))."""
        v = self.embed(input_ids)  # (b, n, d)
        g = F.normalize(v, dim=-1) @ F.normalize(self.label_embed, dim=-1).T  # (b, n, p)
        g = g * attention_mask.unsqueeze(-1).to(g.dtype)
        u = torch.relu(self.att_conv(g.transpose(1, 2)))  # (b, p, n)
        m = u.amax(dim=1)  # (b, n)
        return v, masked_softmax(m, attention_mask)

    def forward(self, input_ids, attention_mask, factors=None) -> torch.Tensor:
        v, beta = self.attention(input_ids, attention_mask)
        z = torch.einsum("bn,bnd->bd", beta.to(v.dtype), v)  # (b, d)
        return self.head(z)  # (b, p)

    def auxiliary_loss(self) -> torch.Tensor | None:
        if not self.config.label_reg_weight:
            return None
        return self.config.label_reg_weight * self.label_regularizer()

    def label_regularizer(self) -> torch.Tensor:
        """Cross-entropy of f2 on the label embeddings against their own labels (scalar)."""
        target = torch.arange(self.config.n_labels, device=self.label_embed.device)
        return F.cross_entropy(self.head(self.label_embed), target)
