"""The k top and s bottom slots of H_tw (``lttw.factors.features``): how many there are
(``model.k`` / ``model.s``, ``auto`` resolved from the texts) and how many a tensor fills."""

from __future__ import annotations

import logging
import math
from dataclasses import dataclass

import numpy as np

log = logging.getLogger(__name__)


#: the paper's k and s (AG News); ``model.k`` / ``model.s`` ``auto`` never go above it
PAPER_SLOTS = 10


def resolve_slots(k: int | str, s: int | str, words_per_text: np.ndarray) -> tuple[int, int]:
    """``model.k`` and ``model.s`` as numbers. ``auto`` is half the mean number of distinct
    vocabulary words a text holds (``words_per_text``: one count per text of the fold's train
    part), rounded up, at least 1 and at most the paper's 10: no more slots than a typical
    text fills. AG News' texts (about 30 distinct words) keep the paper's 10 + 10; THUCNews
    titles (9.9) get 5 + 5, which measured better than 10 + 10 (README, "Choosing parameters
    for your data"); empty slots are zero vectors that the fusion carries for nothing."""
    mean = float(np.mean(words_per_text)) if len(words_per_text) else 0.0
    half = min(PAPER_SLOTS, max(1, math.ceil(mean / 2)))
    resolved = (half if k == "auto" else int(k), half if s == "auto" else int(s))
    if "auto" in (k, s):
        log.info(
            "model.k=%s, model.s=%s: %.1f distinct vocabulary words a text on average -> "
            "k=%d, s=%d",
            k,
            s,
            mean,
            *resolved,
        )
    return resolved


@dataclass(frozen=True)
class SlotFill:
    """How many of the k top and s bottom slots of H_tw hold a word, on average per text."""

    top: float
    bottom: float
    k: int
    s: int

    def __str__(self) -> str:
        return (
            f"{self.top:.1f} of k={self.k} top and {self.bottom:.1f} of s={self.s} bottom "
            "slots filled on average"
        )

    @property
    def sparse(self) -> bool:
        """Under half of the top or of the bottom slots filled (short texts, large k / s)."""
        return self.top < self.k / 2 or self.bottom < self.s / 2


def slot_fill(tensor: np.ndarray, k: int, s: int) -> SlotFill:
    """Mean filled top (slots 0..k-1) and bottom (k..k+s-1) slots per text of an H_tw tensor
    (n_texts, k+s, rank). A slot is filled when its factor row is non-zero (a word whose
    factor row is all zero carries nothing and counts as empty); no texts: 0."""
    filled = np.any(np.asarray(tensor) != 0, axis=2)  # (n_texts, k+s)
    if not filled.shape[0]:
        return SlotFill(0.0, 0.0, k, s)
    return SlotFill(
        float(filled[:, :k].sum(axis=1).mean()),
        float(filled[:, k : k + s].sum(axis=1).mean()),
        k,
        s,
    )
