"""Stratified ten-fold cross-validation on the training sample (paper 3.1): in fold f the
rows of fold f are the test part, the rows of fold (f+1) % n_folds the validation part and the
rest the training part (8:1:1 with ten folds).

Single-label rows are stratified by scikit-learn's ``StratifiedKFold``; multi-label rows (an
``(n, p)`` indicator matrix, ``lttw.data.label_sets``) by iterative stratification (Sechidis
et al. 2011), the ``iterative-stratification`` package's ``MultilabelStratifiedKFold``, which
keeps every label's share of rows in each fold close to its share overall."""

from __future__ import annotations

import logging
from pathlib import Path

import numpy as np
import pandas as pd

from lttw.errors import DataError

log = logging.getLogger(__name__)

PARTS = ("train", "val", "test")


#: what an error about too few rows for the folds advises, by default (the folds stage's)
FOLDS_ADVICE = (
    "add labelled rows, or lower folds.n_folds (with data.sampling other than all, a "
    "larger data.train_size draws more)"
)


def assign_folds(
    labels: np.ndarray,
    n_folds: int,
    random_state: int | None,
    setting: str = "folds.n_folds",
    advice: str = FOLDS_ADVICE,
) -> np.ndarray:
    """Fold id (0..n_folds-1) of every row, stratified by label: shape (n_rows,), int64.
    ``labels``: ``(n,)`` class ids, or an ``(n, p)`` indicator matrix (multi-label).
    ``setting`` and ``advice``: the parameter that asked for ``n_folds`` and what to do when
    a class has fewer rows, as the error names them."""
    labels = np.asarray(labels)
    if labels.ndim == 2:
        return _multi_label_folds(labels, n_folds, random_state, setting, advice)
    classes, per_class = np.unique(labels, return_counts=True)
    if per_class.size and per_class.min() < n_folds:
        small = {int(c): int(n) for c, n in zip(classes, per_class) if n < n_folds}
        shown = dict(list(small.items())[:10])
        raise DataError(
            f"{setting}={n_folds} needs at least {n_folds} training rows per class; "
            f"{len(small)} classes have fewer (class id: rows): {shown}"
            f"{' ...' if len(small) > 10 else ''}; {advice}"
        )
    from sklearn.model_selection import StratifiedKFold  # here: readers of folds skip its import

    splitter = StratifiedKFold(n_splits=n_folds, shuffle=True, random_state=random_state)
    fold_ids = np.empty(labels.size, dtype=np.int64)
    for fold, (_, test) in enumerate(splitter.split(np.zeros(labels.size), labels)):
        fold_ids[test] = fold
    return fold_ids


def _multi_label_folds(
    indicator: np.ndarray, n_folds: int, random_state: int | None, setting: str, advice: str
) -> np.ndarray:
    """Iteratively stratified folds of multi-label rows; a class on fewer rows than folds is
    missing from some folds (logged, not refused: rare labels are common in such data)."""
    if indicator.shape[0] < n_folds:
        raise DataError(
            f"{setting}={n_folds} needs at least {n_folds} training rows; there are "
            f"{indicator.shape[0]}; {advice}"
        )
    per_class = indicator.sum(axis=0)
    rare = np.flatnonzero(per_class < n_folds)
    if rare.size:
        log.warning(
            "%d classes have fewer training rows than %s=%d (ids %s): some folds have none of them",
            rare.size,
            setting,
            n_folds,
            rare.tolist()[:10],
        )
    from iterstrat.ml_stratifiers import MultilabelStratifiedKFold

    splitter = MultilabelStratifiedKFold(n_splits=n_folds, shuffle=True, random_state=random_state)
    fold_ids = np.empty(indicator.shape[0], dtype=np.int64)
    for fold, (_, test) in enumerate(splitter.split(np.zeros(indicator.shape[0]), indicator)):
        fold_ids[test] = fold
    return fold_ids


def fold_parts(fold_ids: np.ndarray, fold: int, n_folds: int) -> dict[str, np.ndarray]:
    """Row indices (sorted, int64) of the train / val / test parts of ``fold``."""
    if not 0 <= fold < n_folds:
        raise DataError(f"fold {fold} is not in 0..{n_folds - 1}")
    fold_ids = np.asarray(fold_ids)
    val_fold = (fold + 1) % n_folds
    return {
        "train": np.flatnonzero((fold_ids != fold) & (fold_ids != val_fold)),
        "val": np.flatnonzero(fold_ids == val_fold),
        "test": np.flatnonzero(fold_ids == fold),
    }


def folds_frame(fold_ids: np.ndarray, n_folds: int) -> pd.DataFrame:
    """The folds table: ``row``, ``fold`` and ``part_<i>`` ("train"/"val"/"test") per fold."""
    fold_ids = np.asarray(fold_ids, dtype=np.int64)
    columns = {"row": np.arange(fold_ids.size, dtype=np.int64), "fold": fold_ids}
    for fold in range(n_folds):
        part = np.full(fold_ids.size, "train", dtype=object)
        parts = fold_parts(fold_ids, fold, n_folds)
        part[parts["val"]] = "val"
        part[parts["test"]] = "test"
        columns[f"part_{fold}"] = pd.array(part, dtype="str")
    return pd.DataFrame(columns)


def read_fold_parts(path: str | Path, fold: int) -> dict[str, np.ndarray]:
    """Row indices of the train / val / test parts of ``fold`` from a folds parquet file."""
    path = Path(path)
    if not path.is_file():
        raise DataError(f"{path}: not found (run the folds stage first)")
    column = f"part_{fold}"
    frame = pd.read_parquet(path)
    if column not in frame.columns:
        n_folds = sum(c.startswith("part_") for c in frame.columns)
        raise DataError(
            f"{path}: no column {column} (it records folds 0..{n_folds - 1}); rerun the folds stage"
        )
    rows = frame["row"].to_numpy(np.int64)
    part = frame[column].to_numpy(dtype=object)
    return {name: np.sort(rows[part == name]) for name in PARTS}
