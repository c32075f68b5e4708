"""Batches of one part of a fold: padding trimmed per batch, and the row order of an epoch
(a seeded permutation, optionally grouped by length)."""

from __future__ import annotations

from dataclasses import dataclass
from functools import cached_property

import torch

from lttw.device import Runtime
from lttw.encoder.tokens import trimmed_length


@dataclass
class Batchable:
    """Model inputs for one part of a fold (all CPU tensors, rows aligned).

    ``batch`` trims the padding columns that no row of the batch uses (every model here is
    padding-invariant: the same logits with or without them, tested), so a batch of short
    texts costs what its longest text costs, not ``max_len``.
    """

    input_ids: torch.Tensor  # (n, seq) int32
    attention_mask: torch.Tensor  # (n, seq) int8
    factors: torch.Tensor | None  # (n, k+s, rank) float32, or None
    labels: torch.Tensor  # (n,) int64 class ids, or multi-label an (n, C) uint8 indicator matrix
    #: (n, seq, d) float16: the frozen encoder's cached last hidden states (train.freeze_encoder)
    encoder_states: torch.Tensor | None = None

    def __len__(self) -> int:
        return len(self.labels)

    @classmethod
    def unlabelled(cls, input_ids, attention_mask, factors=None) -> Batchable:
        """Inputs of texts to predict (numpy arrays from the tokenizer and the factor
        lookup; the labels are placeholders)."""
        return cls(
            torch.from_numpy(input_ids),
            torch.from_numpy(attention_mask),
            None if factors is None else torch.from_numpy(factors),
            torch.zeros(len(input_ids), dtype=torch.long),
        )

    @cached_property
    def lengths(self) -> torch.Tensor:
        """(n,) int64: 1 + the position of each row's last real token (any padding side)."""
        positions = torch.arange(1, self.attention_mask.shape[1] + 1)
        return ((self.attention_mask != 0) * positions).amax(1)

    def batch(self, idx: torch.Tensor, rt: Runtime, trim: bool = True) -> tuple[dict, torch.Tensor]:
        seq = self.input_ids.shape[1]
        if trim and len(idx):
            seq = trimmed_length(int(self.lengths[idx].max()), seq)

        def move(t, dtype):
            t = t[idx].to(dtype)
            return t.pin_memory().to(rt.device, non_blocking=True) if rt.pin else t.to(rt.device)

        inputs = {
            "input_ids": move(self.input_ids[:, :seq], torch.long),
            "attention_mask": move(self.attention_mask[:, :seq], torch.long),
            "factors": None if self.factors is None else move(self.factors, torch.float32),
        }
        if self.encoder_states is not None:  # the model skips its encoder
            inputs["encoder_states"] = move(self.encoder_states[:, :seq], torch.float32)
        # multi-label: float 0/1 targets of binary cross-entropy
        targets = torch.float32 if self.labels.ndim == 2 else torch.long
        return inputs, move(self.labels, targets)


#: group_by_length sorts rows by length within windows of this many batches
LENGTH_GROUP_BATCHES = 50


def epoch_order(
    data: Batchable, batch_size: int, seed: int, group_by_length: bool = False
) -> torch.Tensor:
    """The row order of one epoch: a seeded permutation, cut into batches in order.

    ``group_by_length`` (as in transformers' Trainer) sorts each window of
    ``LENGTH_GROUP_BATCHES`` batches of that permutation by length and shuffles the resulting
    batches, so each batch holds texts of similar length and is trimmed to little padding;
    batches stay random samples of the data (a text's batch-mates are drawn from its window).
    """
    g = torch.Generator().manual_seed(seed)
    order = torch.randperm(len(data), generator=g)
    if not group_by_length or len(data) <= batch_size:
        return order
    window = batch_size * LENGTH_GROUP_BATCHES
    chunks = [
        chunk[torch.argsort(data.lengths[chunk], descending=True, stable=True)]
        for chunk in order.split(window)
    ]
    batches = torch.cat(chunks).split(batch_size)
    # the last batch may be partial: keep it last, shuffle the full ones
    full, rest = (batches[:-1], batches[-1:]) if len(batches[-1]) < batch_size else (batches, ())
    shuffled = [full[i] for i in torch.randperm(len(full), generator=g)]
    return torch.cat(shuffled + list(rest))
