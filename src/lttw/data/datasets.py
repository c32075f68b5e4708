"""Datasets: read ``data.dataset``'s files (found by ``lttw.data.dataset_sources``), validate
them and encode the labels.

Multi-label data (``data.multi_label``, ``data.label_delimiter``, the manifest's
``multi_label``; ``lttw.data.label_lists``) carries its labels as an ``(n, p)`` indicator matrix.

The balanced sampling itself is in ``lttw.data.sampling``.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass

import numpy as np
import pandas as pd

from lttw.data.dataset_sources import Resolved, resolve
from lttw.data.label_lists import (
    encode_label_lists,
    is_list_valued,
    split_label_cells,
    wants_multi_label,
)
from lttw.data.tables import encode_labels, select_columns
from lttw.errors import DataError
from lttw.settings import DataSettings

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class Dataset:
    """All usable rows of a dataset, pooled over its files (arrays of shape (n_rows,); the
    labels of multi-label data an (n_rows, p) uint8 indicator matrix).

    source_rows: row index in the concatenation of the source files (manifest split order),
    before any row was dropped.
    """

    name: str
    texts: np.ndarray  # object array of str
    labels: np.ndarray  # int64, 0..p-1; multi_label: (n_rows, p) uint8 indicator matrix
    splits: np.ndarray  # object array: split name of each row
    source_rows: np.ndarray  # int64
    classes: list[str]
    label_values: list
    source: str
    dropped_empty: int = 0
    dropped_unlabelled: int = 0
    duplicate_texts: int = 0  # rows whose text repeats an earlier row's text (kept)
    conflicting_texts: int = 0  # distinct texts that occur with more than one label
    language: str | None = None  # the manifest's language (words.splitter=auto reads it)
    word_vectors: str | None = None  # the manifest's word-vectors file (model.word_vectors)
    multi_label: bool = False  # a set of classes per text (lttw.data.label_sets)

    def rows_of(self, split: str | None) -> np.ndarray:
        """Indices of the rows of one split (several: "train+dev"; all rows for None)."""
        if split is None:
            return np.arange(len(self.texts))
        if "+" in split:
            return np.flatnonzero(np.isin(self.splits, split.split("+")))
        return np.flatnonzero(self.splits == split)


def _pool(
    resolved: Resolved, text_cols: tuple[str, ...], label_col: str, settings: DataSettings
) -> tuple[pd.DataFrame, bool]:
    """All files' rows in one frame (text, label, split), indexed by source row, and whether
    the data is multi-label (then each label is a tuple of labels, None where missing)."""
    parts = [
        (split, select_columns(frame, where, text_cols, label_col), where)
        for split, frame, where in resolved.tables
    ]
    multi_label = wants_multi_label(
        settings.multi_label,
        resolved.multi_label,
        any(is_list_valued(part["label"]) for _, part, _ in parts),
        settings.label_delimiter,
        resolved.source,
    )
    frames, offset = [], 0
    for split, part, where in parts:
        if multi_label:
            cells = split_label_cells(
                part["label"],
                f"{where}, column {label_col}",
                settings.label_delimiter,
                resolved.classes,
            )
            part = part.assign(label=cells)
        part.index = pd.RangeIndex(offset, offset + len(part))
        frames.append(part.assign(split=split))
        offset += len(part)
    pooled = pd.concat(frames) if frames else pd.DataFrame(columns=["text", "label", "split"])
    if pooled.empty:
        raise DataError(f"{resolved.source}: the dataset has no rows")
    return pooled, multi_label


def _usable(
    pooled: pd.DataFrame, source: str, text_cols: tuple[str, ...], label_col: str
) -> tuple[pd.Series, pd.Series]:
    """Masks of rows with a blank text and of rows without a label (counts logged)."""
    blank = _blank(pooled["text"])
    if blank.all():
        raise DataError(
            f"{source}: all {len(pooled)} texts (column {', '.join(text_cols)}) "
            "are missing, empty or whitespace-only"
        )
    unlabelled = pooled["label"].isna() & ~blank
    if unlabelled.sum() == (~blank).sum():
        raise DataError(f"{source}: every label (column {label_col}) is missing")
    if blank.any():
        log.warning(
            "%s: dropped %d rows whose text is missing, empty or whitespace-only",
            source,
            int(blank.sum()),
        )
    if unlabelled.any():
        log.warning("%s: dropped %d rows without a label", source, int(unlabelled.sum()))
    return blank, unlabelled


def _blank(texts: pd.Series, rows: int = 50_000) -> pd.Series:
    """Which texts are missing, empty or whitespace-only, ``rows`` at a time (stripping
    makes a copy of the texts: of a slice, not of the column)."""
    blank = texts.isna().to_numpy(dtype=bool, copy=True)
    for start in range(0, len(texts), rows):
        part = texts.iloc[start : start + rows].astype("str").str.strip().eq("")
        blank[start : start + rows] |= part.to_numpy(dtype=bool)
    return pd.Series(blank, index=texts.index)


def load_dataset(settings: DataSettings) -> Dataset:
    """Resolve, read and validate ``data.dataset``; pooled rows with labels encoded 0..p-1."""
    resolved = resolve(settings)
    source = resolved.source
    text_cols = (settings.text_column,) if settings.text_column else resolved.text_columns
    label_col = settings.label_column or resolved.label_column
    pooled, multi_label = _pool(resolved, text_cols, label_col, settings)
    blank, unlabelled = _usable(pooled, source, text_cols, label_col)
    kept = pooled[~blank & ~unlabelled]
    dropped_empty, dropped_unlabelled = int(blank.sum()), int(unlabelled.sum())
    del pooled, blank, unlabelled  # held once, as ``kept``
    texts = kept["text"].astype("str").to_numpy(dtype=object)  # the str objects, once
    duplicates, conflicting = _duplicates(texts, kept["label"], source)
    if multi_label:
        ids, class_names, label_values = encode_label_lists(kept["label"], resolved.classes)
    else:
        ids, class_names, label_values = encode_labels(
            kept["label"], resolved.classes, f"{source}, column {label_col}"
        )
    if len(class_names) < 2:
        raise DataError(f"{source}: only one class ({class_names[0]!r}) in column {label_col}")
    return Dataset(
        name=settings.dataset,
        texts=texts,
        labels=ids if multi_label else ids.astype(np.int64),
        splits=kept["split"].to_numpy(dtype=object),
        source_rows=kept.index.to_numpy(dtype=np.int64),
        classes=class_names,
        label_values=label_values,
        source=source,
        dropped_empty=dropped_empty,
        dropped_unlabelled=dropped_unlabelled,
        duplicate_texts=duplicates,
        conflicting_texts=conflicting,
        language=resolved.language,
        word_vectors=resolved.word_vectors,
        multi_label=multi_label,
    )


def _duplicates(texts: np.ndarray, labels: pd.Series, source: str) -> tuple[int, int]:
    """Rows repeating an earlier row's text, and texts seen with several labels (logged)."""
    repeated = int(pd.Series(texts, dtype=object).duplicated().sum())
    conflicting = 0
    if repeated:
        labels_per_text = labels.astype("str").groupby(texts).nunique()
        conflicting = int((labels_per_text > 1).sum())
        log.warning(
            "%s: %d rows repeat the text of an earlier row (kept; counted in "
            "labels.json as duplicate_texts)%s",
            source,
            repeated,
            f", and {conflicting} texts occur with different labels" if conflicting else "",
        )
    return repeated, conflicting
