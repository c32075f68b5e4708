"""Assemble one fold's model inputs from the cached stage outputs (no recomputation):
sample labels, fold parts, encoder tokens and latent-factor tensors."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, replace
from pathlib import Path
from typing import cast

import numpy as np
import pandas as pd
import torch

from lttw import layout
from lttw.data.batching import Batchable
from lttw.data.folds import read_fold_parts
from lttw.data.label_sets import is_multi_label, label_targets
from lttw.io import read_arrays, read_json

#: evaluation parts: the fold's own test part, and the held-out test and predict samples
EVAL_PARTS = ("fold_test", "test", "predict")


@dataclass
class FoldInputs:
    classes: list[str]
    parts: dict[str, np.ndarray]  # train / val / fold_test -> row indices into the train sample
    labels: dict[str, np.ndarray]  # split -> (n,) int64; multi-label: (n, C) uint8 indicator
    texts: dict[str, list[str]]  # split -> raw texts (for non-neural variants)
    #: sample splits appended to the train split (``join_samples``), their own left empty
    joined: tuple[str, ...] = ()

    @property
    def multi_label(self) -> bool:
        """Whether the labels are indicator matrices (labels.json ``"multi_label": true``)."""
        return next(iter(self.labels.values())).ndim == 2 if self.labels else False

    @property
    def n_labels(self) -> int:
        return len(self.classes)

    def split_of(self, part: str) -> tuple[str, np.ndarray | None]:
        """The sample split a part lives in, and its rows there (None: all rows)."""
        if part in ("train", "val", "fold_test"):
            return "train", self.parts[part]
        return part, None

    def part_texts(self, part: str) -> list[str]:
        split, rows = self.split_of(part)
        texts = self.texts[split]
        return texts if rows is None else [texts[i] for i in rows]

    def part_labels(self, part: str) -> np.ndarray:
        split, rows = self.split_of(part)
        return self.labels[split] if rows is None else self.labels[split][rows]


def load_fold_inputs(fold: int) -> FoldInputs:
    """One fold's sample labels (``label_sets.label_targets``: class ids, or for multi-label
    data the indicator matrix), texts and parts."""
    info = read_json(layout.LABELS_JSON)
    classes = info["classes"]
    labels, texts = {}, {}
    for split in layout.SPLITS:
        frame = pd.read_parquet(layout.sample_parquet(split), columns=["text", "label"])
        # a fresh, writable array: pandas' copy-on-write arrays are read-only, which
        # torch.from_numpy warns about
        labels[split] = label_targets(frame["label"], len(classes), is_multi_label(info))
        texts[split] = frame["text"].tolist()
    parts = read_fold_parts(layout.FOLDS_PARQUET, fold)
    parts["fold_test"] = parts.pop("test")
    return FoldInputs(classes=classes, parts=parts, labels=labels, texts=texts)


def join_samples(inputs: FoldInputs, splits: tuple[str, ...]) -> FoldInputs:
    """``inputs`` with the texts and labels of the sample ``splits`` (e.g. a test sample
    carved from the user's own rows) appended to the train split, in order, and those
    splits left empty; ``load_tensors`` joins their token arrays the same way. The parts
    (row indices into the train split) are the caller's to set."""
    if not splits:
        return inputs
    texts, labels = dict(inputs.texts), dict(inputs.labels)
    for split in splits:
        texts["train"] = texts["train"] + texts[split]
        labels["train"] = np.concatenate([labels["train"], labels[split]])
        texts[split], labels[split] = [], labels[split][:0]
    return replace(inputs, texts=texts, labels=labels, joined=inputs.joined + tuple(splits))


def _joined(arrays: dict[str, np.ndarray], splits: tuple[str, ...], key=str) -> dict:
    """Per-split arrays (``key(split)`` names a split's array) joined as ``join_samples``
    joins the texts."""
    out = dict(arrays)
    for split in splits:
        train, own = out[key("train")], out[key(split)]
        out[key("train")], out[key(split)] = np.concatenate([train, own]), own[:0]
    return out


def load_tensors(
    inputs: FoldInputs,
    fold: int | str,
    words=None,
    max_len: int | None = None,
    frozen_encoder: bool = False,
    features: Path | None = None,
) -> dict[str, Batchable]:
    """Batchable tensors for train / val / fold_test / test / predict: the encoder's tokens,
    or with ``words`` (a ``text.word_ids.WordVocabulary``) the texts' word ids at
    ``max_len``; with ``frozen_encoder`` also the encode stage's cached encoder states. The
    factor tensors are the fold's features stage output, or the file ``features``."""
    tokens = (
        read_arrays(layout.tokens_file())
        if words is None
        else word_arrays(inputs, words, cast(int, max_len))  # words come with their max_len
    )
    factors = read_arrays(features or layout.features_file(fold))
    states = {}
    if frozen_encoder:
        from lttw.encoder.states import frozen_states

        states = _joined(frozen_states(layout.ENCODED_DIR, layout.SPLITS), inputs.joined)
    if words is None:  # word ids come from the (joined) texts themselves
        for name in ("input_ids", "attention_mask"):
            tokens = _joined(tokens, inputs.joined, key=lambda split, n=name: f"{split}_{n}")
    out = {}
    for part in ("train", "val") + EVAL_PARTS:
        split, rows = inputs.split_of(part)
        take: Callable[..., np.ndarray] = (
            (lambda a: a) if rows is None else (lambda a, r=rows: a[r])
        )
        f = factors[split]
        out[part] = Batchable(
            input_ids=torch.from_numpy(take(tokens[f"{split}_input_ids"])),
            attention_mask=torch.from_numpy(take(tokens[f"{split}_attention_mask"])),
            factors=torch.from_numpy(take(f)) if f.size else None,
            labels=torch.from_numpy(inputs.part_labels(part)),
            encoder_states=torch.from_numpy(take(states[split])) if states else None,
        )
    return out


def word_arrays(inputs: FoldInputs, words, max_len: int) -> dict[str, np.ndarray]:
    """``{split}_input_ids`` / ``{split}_attention_mask`` of every sample split, as the tokens
    stage writes them, from word ids over ``words``' vocabulary."""
    out = {}
    for split in layout.SPLITS:
        ids, mask = words.ids(inputs.texts[split], max_len)
        out[f"{split}_input_ids"], out[f"{split}_attention_mask"] = ids, mask
    return out


def factor_shape(batches: dict[str, Batchable]) -> tuple[int, int] | None:
    f = batches["train"].factors
    return None if f is None else (int(f.shape[1]), int(f.shape[2]))
