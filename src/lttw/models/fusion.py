"""Fusion of the encoder's token states with the latent factors (paper 2.4, eq. 8), one class
per ``model.fusion`` as the attention kinds are (``models.attention``):

    concat:   H_V = [H_BERT ; flatten(H_tw) on every token]   (B, n, d + (k+s)*z)
    sequence: H_V = [H_BERT[:, :1] ; H_tw W ; H_BERT[:, 1:]]  (B, n+k+s, d)
    none:     H_V = H_BERT                                    (B, n, d)     LTTW-M

H_BERT (B, n, d) the encoder's token states, H_tw (B, k+s, z) the latent-factor rows. A fusion
is one class registered under its name (``register_fusion``); the classifier, ``lttw explain``
and the report ask it (width, extra positions, mask, position labels, note, report label)
instead of matching its name. ``settings.FUSIONS`` lists the same names (it validates
parameters without torch; ``tests/models/test_fusion.py`` checks both lists agree).

With ``sequence`` the k+s factor tokens go right after [CLS] (not after the padding), so they
sit at the same positions whatever the padding, and Linformer's positional projection treats
a padded sample exactly like the unpadded one.
"""

from __future__ import annotations

from typing import ClassVar

import torch
from torch import nn

from lttw.errors import UserError
from lttw.models.registrar import registrar

FUSION_REGISTRY: dict[str, type[Fusion]] = {}
#: class decorator: ``@register_fusion(name)`` makes a fusion available as ``model.fusion: name``
register_fusion = registrar(FUSION_REGISTRY, "name")


class Fusion(nn.Module):
    """H_BERT (B, n, d) and H_tw (B, k+s, z) -> H_V (B, n + extra_positions, width)."""

    name: ClassVar[str]
    uses_factors: ClassVar[bool] = True
    #: the report's name of an LTTW run with this fusion where it is an ablation (else None)
    ablation: ClassVar[str | None] = None
    #: what ``lttw explain`` says about the positions it shows (None: nothing to add)
    note: ClassVar[str | None] = None

    def __init__(self, d: int, slots: int, rank: int):
        super().__init__()
        self.d, self.slots, self.rank = d, slots, rank

    @classmethod
    def check(cls, config) -> None:
        """Raise a UserError for an ``LTTWConfig`` this fusion cannot run with."""
        if cls.uses_factors and config.factor_slots * config.rank == 0:
            raise UserError(
                f"model.fusion: {cls.name} needs latent factors: model.k + model.s "
                "and nmf.rank must be >= 1"
            )

    @property
    def width(self) -> int:
        """The fused features' width (the attention blocks' and classifier's d_model)."""
        return self.d

    @property
    def extra_positions(self) -> int:
        """Positions the fusion adds to the n tokens."""
        return 0

    def forward(
        self, hidden: torch.Tensor, attention_mask: torch.Tensor, factors: torch.Tensor | None
    ) -> tuple[torch.Tensor, torch.Tensor]:
        """(H_BERT (B, n, d), mask (B, n), H_tw (B, k+s, z)) -> (H_V, its mask)."""
        expected = (self.slots, self.rank)
        if factors is None or tuple(factors.shape[1:]) != expected:
            got = None if factors is None else tuple(factors.shape)
            raise ValueError(
                f"fusion {self.name!r} needs factors of shape (B, {expected[0]}, "
                f"{expected[1]}); got {got}"
            )
        return self.fuse(hidden, factors.to(hidden.dtype)), self.mask(attention_mask)

    def fuse(self, hidden: torch.Tensor, factors: torch.Tensor) -> torch.Tensor:
        raise NotImplementedError

    def mask(self, attention_mask: torch.Tensor) -> torch.Tensor:
        """The attention blocks' mask for the tokens' mask (B, n)."""
        return attention_mask

    def position_labels(self, tokens: list[str], slot_words: list[str | None]) -> list[str]:
        """A label per position of the attention blocks' input, from the n tokens and the
        word of each factor slot (None: an empty slot)."""
        return list(tokens)


@register_fusion("concat")
class ConcatFusion(Fusion):
    """The paper's fusion: flatten(H_tw) appended to every token's features."""

    note = (
        "fusion concat: the latent factors are concatenated to every token, so they have "
        "no positions of their own"
    )

    @property
    def width(self) -> int:
        return self.d + self.slots * self.rank  # the paper's d_BERT + d_tw

    def fuse(self, hidden: torch.Tensor, factors: torch.Tensor) -> torch.Tensor:
        b, n, _ = hidden.shape
        flat = factors.reshape(b, 1, -1).expand(b, n, -1)  # (B, n, (k+s)*z)
        return torch.cat([hidden, flat], dim=-1)  # (B, n, d+(k+s)*z)


@register_fusion("sequence")
class SequenceFusion(Fusion):
    """H_tw's rows projected to d (``proj``) and inserted as k+s tokens right after [CLS]."""

    note = "fusion sequence: the k+s factor rows are extra positions right after [CLS]"

    def __init__(self, d: int, slots: int, rank: int):
        super().__init__(d, slots, rank)
        self.proj = nn.Linear(rank, d)  # H_tw rows -> token features

    @classmethod
    def check(cls, config) -> None:
        super().check(config)
        if config.attention == "none":
            raise UserError(
                "model.fusion: sequence needs an attention block (model.attention: "
                "linformer or mha); without one the factor tokens never reach [CLS]"
            )

    @property
    def extra_positions(self) -> int:
        return self.slots

    def fuse(self, hidden: torch.Tensor, factors: torch.Tensor) -> torch.Tensor:
        tokens = self.proj(factors).to(hidden.dtype)  # (B, k+s, d)
        return torch.cat([hidden[:, :1], tokens, hidden[:, 1:]], dim=1)  # (B, n+k+s, d)

    def mask(self, attention_mask: torch.Tensor) -> torch.Tensor:
        ones = attention_mask.new_ones(attention_mask.shape[0], self.slots)
        return torch.cat([attention_mask[:, :1], ones, attention_mask[:, 1:]], dim=1)  # (B, n+k+s)

    def position_labels(self, tokens: list[str], slot_words: list[str | None]) -> list[str]:
        slots = [
            f"<factor {i}: {w if w is not None else 'empty'}>" for i, w in enumerate(slot_words)
        ]
        return tokens[:1] + slots + tokens[1:]


@register_fusion("none")
class NoFusion(Fusion):
    """The ablation without latent factors (LTTW-M): H_V = H_BERT."""

    uses_factors = False
    ablation = "LTTW-M"

    def forward(
        self, hidden: torch.Tensor, attention_mask: torch.Tensor, factors: torch.Tensor | None
    ) -> tuple[torch.Tensor, torch.Tensor]:
        return hidden, attention_mask
