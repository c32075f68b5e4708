"""The held-out labelled sample that ``lttw export --onnx`` checks an export on
(``lttw.serving.onnx_export``): texts and labels read from a CSV / parquet file."""

from __future__ import annotations

from pathlib import Path

import numpy as np

from lttw.errors import UserError


def read_labelled(
    path: Path, classes: list[str], rows: int, multi_label: bool = False
) -> tuple[list[str], np.ndarray]:
    """The first ``rows`` texts of a CSV / parquet file with columns ``text`` and ``label``
    (label ids 0..p-1 as the sample stage writes them, or class names); ``multi_label``: a
    list of them per text (CSV: joined by "|"), returned as an (n, p) indicator matrix."""
    import pandas as pd

    if path.suffix.lower() in (".parquet", ".pq"):
        frame = pd.read_parquet(path, columns=["text", "label"])
    elif path.suffix.lower() in (".csv", ".tsv"):
        frame = pd.read_csv(
            path,
            sep="\t" if path.suffix.lower() == ".tsv" else ",",
            usecols=["text", "label"],
            keep_default_na=False,
        )
    else:
        raise UserError(
            f"{path}: the check sample must be .parquet or .csv with columns text and label"
        )
    frame = frame.head(rows)
    if multi_label:
        return frame["text"].astype(str).tolist(), _label_sets(frame["label"], classes, path)
    labels = frame["label"]
    if labels.map(lambda v: isinstance(v, str)).all():
        unknown = sorted(set(labels) - set(classes))
        if unknown:
            raise UserError(f"{path}: labels {unknown[:5]} are not the model's classes")
        ids = labels.map({c: i for i, c in enumerate(classes)}).to_numpy()
    else:
        ids = labels.to_numpy().astype(np.int64)
        if len(ids) and (ids.min() < 0 or ids.max() >= len(classes)):
            raise UserError(f"{path}: label ids outside 0..{len(classes) - 1}")
    return frame["text"].astype(str).tolist(), ids


def _label_sets(column, classes: list[str], path: Path) -> np.ndarray:
    """An (n, p) indicator matrix of a multi-label check sample's label column."""
    from lttw.data.label_sets import indicator_matrix

    index = {c: i for i, c in enumerate(classes)}
    lists = []
    for value in column:
        if not isinstance(value, str) and np.ndim(value) == 0:
            raise UserError(
                f"{path}: one label per text, but the model is multi-label: the check sample's "
                "label column must hold a list of labels per text (CSV: joined by '|')"
            )
        items = value.split("|") if isinstance(value, str) else list(value)
        try:
            lists.append([index[v] if isinstance(v, str) else int(v) for v in items if v != ""])
        except KeyError as err:
            raise UserError(
                f"{path}: label {err.args[0]!r} is not one of the model's classes"
            ) from None
    try:
        return indicator_matrix(lists, len(classes))
    except ValueError as err:
        raise UserError(f"{path}: {err}") from None
