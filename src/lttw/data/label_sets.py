"""Labels as the pipeline carries them, single-label or multi-label.

A single-label dataset has one class id per text: a ``(n,)`` int64 array (the sample's
``label`` column). A multi-label dataset has a set of class ids per text: the sample's
``label`` column holds a list of ids (sorted, unique, non-empty), and arrays carry it as an
indicator matrix ``Y`` of shape ``(n, C)``, uint8, ``Y[i, c] = 1`` where text ``i`` has class
``c``. ``labels.json`` says which with ``"multi_label": true`` (absent: single-label, so a
single-label sample's files stay as they were).
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence

import numpy as np

#: the key of labels.json (and of a model folder's lttw.json) that marks multi-label data
MULTI_LABEL_KEY = "multi_label"


def is_multi_label(info: dict) -> bool:
    """Whether ``info`` (labels.json or a model folder's lttw.json) is multi-label."""
    return bool(info.get(MULTI_LABEL_KEY, False))


def indicator_matrix(label_lists: Iterable[Sequence[int]], n_labels: int) -> np.ndarray:
    """``(n, n_labels)`` uint8 indicator matrix of per-text class-id lists."""
    lists = [np.asarray(ids, dtype=np.int64) for ids in label_lists]
    matrix = np.zeros((len(lists), n_labels), np.uint8)
    for i, ids in enumerate(lists):
        if ids.size and (ids.min() < 0 or ids.max() >= n_labels):
            raise ValueError(f"row {i}: class id out of range 0..{n_labels - 1}: {ids.tolist()}")
        matrix[i, ids] = 1
    return matrix


def label_lists(matrix: np.ndarray) -> list[list[int]]:
    """The sorted class ids of each row of an indicator matrix (the inverse of
    ``indicator_matrix``)."""
    return [np.flatnonzero(row).tolist() for row in np.asarray(matrix)]


def label_targets(column: Iterable, n_labels: int, multi_label: bool) -> np.ndarray:
    """A sample's ``label`` column as arrays carry it: ``(n,)`` int64 class ids, or with
    ``multi_label`` the ``(n, n_labels)`` uint8 indicator matrix of its id lists. A fresh,
    writable array (pandas' copy-on-write arrays are read-only; torch warns about those)."""
    if multi_label:
        return indicator_matrix(column, n_labels)
    return np.array(list(column) if not isinstance(column, np.ndarray) else column, np.int64)


def label_counts(targets: np.ndarray, n_labels: int) -> np.ndarray:
    """Texts per class, ``(n_labels,)`` int64, for either form of ``targets``."""
    if targets.ndim == 2:
        return targets.sum(axis=0, dtype=np.int64)
    return np.bincount(targets, minlength=n_labels).astype(np.int64)
