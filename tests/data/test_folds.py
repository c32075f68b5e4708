"""Stratified folds and each fold's 8:1:1 train / val / test parts."""

from __future__ import annotations

import numpy as np
import pytest

from lttw.data.folds import assign_folds, fold_parts, folds_frame, read_fold_parts
from lttw.errors import DataError


def test_assign_folds_stratified_and_seeded():
    labels = np.repeat([0, 1, 2], [100, 50, 30])
    ids = assign_folds(labels, 10, random_state=7)
    assert ids.dtype == np.int64 and set(ids) == set(range(10))
    for c, n in [(0, 100), (1, 50), (2, 30)]:
        assert (np.bincount(ids[labels == c], minlength=10) == n // 10).all()
    np.testing.assert_array_equal(ids, assign_folds(labels, 10, random_state=7))
    assert not np.array_equal(ids, assign_folds(labels, 10, random_state=8))


def test_fold_parts_8_1_1():
    labels = np.repeat([0, 1], 50)
    ids = assign_folds(labels, 10, 0)
    for fold in range(10):
        parts = fold_parts(ids, fold, 10)
        assert {k: len(v) for k, v in parts.items()} == {"train": 80, "val": 10, "test": 10}
        assert (ids[parts["test"]] == fold).all()
        assert (ids[parts["val"]] == (fold + 1) % 10).all()
        everything = np.concatenate(list(parts.values()))
        assert len(np.unique(everything)) == 100  # disjoint and complete
    assert (ids[fold_parts(ids, 9, 10)["val"]] == 0).all()
    with pytest.raises(DataError, match="fold 10"):
        fold_parts(ids, 10, 10)


def test_too_few_rows_per_class_names_the_classes():
    labels = np.array([0] * 20 + [1] * 4)
    with pytest.raises(DataError, match=r"folds.n_folds=5 .*\{1: 4\}"):
        assign_folds(labels, 5, 0)


def test_folds_frame_roundtrip(tmp_path):
    labels = np.repeat([0, 1, 2], 10)
    ids = assign_folds(labels, 5, 1)
    frame = folds_frame(ids, 5)
    assert list(frame.columns) == ["row", "fold"] + [f"part_{i}" for i in range(5)]
    assert set(frame["part_2"]) == {"train", "val", "test"}
    path = tmp_path / "folds.parquet"
    frame.to_parquet(path, index=False)
    for fold in range(5):
        expected = fold_parts(ids, fold, 5)
        got = read_fold_parts(path, fold)
        for part in ("train", "val", "test"):
            np.testing.assert_array_equal(got[part], expected[part])
    with pytest.raises(DataError, match="part_7"):
        read_fold_parts(path, 7)
    with pytest.raises(DataError, match="not found"):
        read_fold_parts(tmp_path / "nope.parquet", 0)
