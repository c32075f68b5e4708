"""Multi-label label columns: whether a dataset is multi-label, each row's list of labels, and
their encoding as an indicator matrix (``lttw.data.label_sets``).

A label cell is a list of labels where the column holds lists (a parquet list column, a JSON
Lines array) or where ``data.label_delimiter`` splits a text cell (a CSV's ``joy|love``). A
label is a class name or an integer id. Every bad row is a one-line ``DataError`` naming the
file, the column and the row.
"""

from __future__ import annotations

import math
import re
from collections.abc import Sequence

import numpy as np
import pandas as pd

from lttw.data.label_sets import indicator_matrix
from lttw.errors import DataError

#: the most labels one text may carry (a guard against a wrong delimiter on long cells)
MAX_LABELS_PER_TEXT = 1000

_INTEGER = re.compile(r"[+-]?\d+")

Label = str | int


def is_list_cell(value) -> bool:
    """Whether one cell holds a list of labels (a parquet / JSON list)."""
    return isinstance(value, (list, tuple, np.ndarray))


def is_list_valued(values: pd.Series) -> bool:
    """Whether a label column holds lists (any non-missing cell is a list)."""
    return bool(values.map(is_list_cell).any()) if values.dtype == object else False


def wants_multi_label(
    setting: str | bool,
    manifest_says: bool,
    list_valued: bool,
    delimiter: str | None,
    where: str,
) -> bool:
    """``data.multi_label`` resolved: ``auto`` is multi-label where the manifest says so, the
    column holds lists or ``data.label_delimiter`` is set; ``false`` with lists or a delimiter
    is a contradiction, a ``DataError``."""
    if setting is True:
        return True
    if setting is False:
        if list_valued:
            raise DataError(
                f"{where}: the label column holds lists but data.multi_label is false; set "
                "data.multi_label: auto (or true) to read it as multi-label"
            )
        if delimiter is not None:
            raise DataError(
                f"data.label_delimiter is {delimiter!r} but data.multi_label is false; set "
                "data.label_delimiter: null or data.multi_label: auto"
            )
        return False
    return bool(manifest_says or list_valued or delimiter is not None)


def _one_label(value, where: str, row) -> Label:
    if isinstance(value, (bytes, bytearray)):
        value = bytes(value).decode("utf-8", errors="replace")
    if isinstance(value, str):
        return value.strip()
    if isinstance(value, (bool, np.bool_)):
        return int(value)
    if isinstance(value, (int, np.integer)):
        return int(value)
    if isinstance(value, (float, np.floating)) and math.isfinite(value) and value == round(value):
        return int(value)
    raise DataError(
        f"{where}: row {row} has the label {value!r}; a label must be a class name or an integer id"
    )


def _cell_labels(cell, delimiter: str | None, where: str, row) -> tuple[Label, ...] | None:
    """The labels of one cell, without repeats, in a canonical order (so that the same set
    written in another order is the same label set; None: no label)."""
    if not is_list_cell(cell):
        if cell is None or (isinstance(cell, float) and math.isnan(cell)):
            return None
        if isinstance(cell, str) and delimiter is not None:
            cell = cell.split(delimiter)
        else:
            cell = [cell]
    labels = [_one_label(v, where, row) for v in cell]
    out = tuple(sorted(dict.fromkeys(v for v in labels if v != ""), key=str))
    if out and "" in labels:
        shown = delimiter.join(map(str, labels)) if delimiter is not None else labels
        raise DataError(
            f"{where}: row {row} has an empty label in {_clip(shown)!r} (two delimiters in a "
            "row, or one at an end); remove it, or give the missing label"
        )
    if not out:
        raise DataError(
            f"{where}: row {row} has an empty label list; give every text at least one label "
            "(or drop the row)"
        )
    if len(out) > MAX_LABELS_PER_TEXT:
        raise DataError(
            f"{where}: row {row} has {len(out)} labels (at most {MAX_LABELS_PER_TEXT}); is "
            "data.label_delimiter right?"
        )
    return out


def _clip(value, limit: int = 80):
    """A cell as shown in an error: its first ``limit`` characters."""
    text = str(value)
    return text if len(text) <= limit else text[:limit] + "..."


def _as_int(label: Label) -> int | None:
    if isinstance(label, int):
        return label
    return int(label) if _INTEGER.fullmatch(label) else None


def split_label_cells(
    values: pd.Series, where: str, delimiter: str | None, known_classes: Sequence[str] | None
) -> pd.Series:
    """Each cell of a label column as a tuple of labels (None where the label is missing), in
    the same index. With ``known_classes`` (the manifest's) every label must be one of them or
    an id in 0..len-1."""
    index = {name: i for i, name in enumerate(known_classes or ())}
    out = []
    for row, cell in values.items():
        labels = _cell_labels(cell, delimiter, where, row)
        if labels is not None and index:
            for label in labels:
                as_int = _as_int(label)
                if label not in index and not (as_int is not None and 0 <= as_int < len(index)):
                    raise DataError(
                        f"{where}: row {row} has the label {label!r}, which is not one of the "
                        f"manifest's {len(index)} classes (nor an id 0..{len(index) - 1})"
                    )
        out.append(labels)
    return pd.Series(out, index=values.index, dtype=object)


def encode_label_lists(
    cells: pd.Series, known_classes: Sequence[str] | None
) -> tuple[np.ndarray, list[str], list]:
    """Label tuples as an ``(n, p)`` uint8 indicator matrix, with the class names and the
    original value of each class id. With ``known_classes`` (checked by
    ``split_label_cells``) the ids are their positions; otherwise the classes are the union of
    the labels, sorted (numerically where every label is an integer)."""
    lists = cells.tolist()
    if known_classes:
        index = {name: i for i, name in enumerate(known_classes)}

        def to_id(label: Label) -> int:
            return index[label] if label in index else int(label)

        ids = [[to_id(v) for v in labels] for labels in lists]
        n = len(known_classes)
        return indicator_matrix(ids, n), list(known_classes), list(range(n))
    union = {v for labels in lists for v in labels}
    as_ints = {v: _as_int(v) for v in union}
    ints = {v: i for v, i in as_ints.items() if i is not None}
    if len(ints) == len(as_ints):
        distinct = sorted(set(ints.values()))
        position = {d: i for i, d in enumerate(distinct)}
        ids = [[position[ints[v]] for v in labels] for labels in lists]
        matrix = indicator_matrix(ids, len(distinct))
        return matrix, [str(d) for d in distinct], [int(d) for d in distinct]
    names = sorted(str(v) for v in union)
    by_name = {name: i for i, name in enumerate(names)}
    ids = [[by_name[str(v)] for v in labels] for labels in lists]
    return indicator_matrix(ids, len(names)), names, list(names)
