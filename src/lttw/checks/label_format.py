"""``lttw data check`` on the form of the labels: a single-label reading whose classes look like
joined label sets (``joy|love``, ``joy, love``) or like lists written as text (``['joy']``),
with what to set; and for multi-label data the label cardinality."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from lttw.data.datasets import Dataset

#: delimiters tried on class names, most specific first
DELIMITERS = ("|", ";", ", ", ",", "+")
#: a delimiter is advised where at least this share of the rows' labels contain it ...
MIN_SHARE_JOINED = 0.02
#: ... and splitting leaves at most this share of the distinct classes
MAX_SHARE_CLASSES = 0.5
#: class names looked at (the most frequent), a bound on the work for a huge label column
MAX_CLASSES_LOOKED_AT = 100_000


@dataclass(frozen=True)
class Cardinality:
    """Labels per text of multi-label data."""

    mean: float  # labels per text
    share_several: float  # share of texts with more than one label
    most: int  # the most labels on one text


def cardinality(dataset: Dataset) -> Cardinality | None:
    """Labels per text (None for single-label data)."""
    if not dataset.multi_label or not len(dataset.labels):
        return None
    per_text = dataset.labels.sum(axis=1, dtype=np.int64)
    return Cardinality(float(per_text.mean()), float((per_text > 1).mean()), int(per_text.max()))


def _looks_like_list_text(name: str) -> bool:
    name = name.strip()
    return len(name) >= 2 and name[0] == "[" and name[-1] == "]"


def label_format_advice(dataset: Dataset, label_column: str, multi_label_setting) -> str | None:
    """What to set where a single-label reading's classes look like label sets (None where
    they do not, the data is multi-label, or ``data.multi_label`` is false on purpose)."""
    if dataset.multi_label or multi_label_setting is False or len(dataset.classes) < 3:
        return None
    rows_per_class = np.bincount(dataset.labels, minlength=len(dataset.classes))
    order = np.argsort(-rows_per_class, kind="stable")[:MAX_CLASSES_LOOKED_AT]
    names = [str(dataset.classes[i]) for i in order]
    rows = rows_per_class[order]
    total = max(int(rows.sum()), 1)
    listed = sum(int(n) for name, n in zip(names, rows) if _looks_like_list_text(name))
    if listed / total > 0.5:
        return (
            f"column {label_column}: the labels look like lists written as text (e.g. "
            f"{names[0]!r}); store the table as parquet or JSON Lines with a list column, or "
            "join each text's labels with a delimiter and set data.label_delimiter (it is "
            "then multi-label, data.multi_label: auto)"
        )
    for delimiter in DELIMITERS:
        joined = sum(int(n) for name, n in zip(names, rows) if delimiter in name)
        if joined / total < MIN_SHARE_JOINED:
            continue
        parts = {p.strip() for name in names for p in name.split(delimiter)} - {""}
        if len(parts) <= MAX_SHARE_CLASSES * len(names):
            example = next(name for name in names if delimiter in name)
            return (
                f"column {label_column}: {joined / total:.0%} of the labels look like several "
                f"labels joined by {delimiter!r} (e.g. {example!r}): read as "
                f"{len(dataset.classes)} combined classes, split they are {len(parts)}; set "
                f"data.label_delimiter: {delimiter!r} (multi-label, data.multi_label: auto), "
                "or data.multi_label: false to keep the combined classes"
            )
    return None


def render_cardinality(found: Cardinality, console) -> None:
    """One line: labels per text."""
    console.print(
        f"multi-label: {found.mean:.2f} labels per text on average, {found.share_several:.1%} "
        f"of the texts with more than one (at most {found.most})"
    )
