"""Samples, folds, counts and fold inputs of multi-label data (issue 42): iterative
stratification keeps label proportions, data.sampling=all takes every row, balanced is
refused; the sample / folds / counts stages on a delimited CSV; single-label files unchanged."""

from __future__ import annotations

import importlib
import os
from pathlib import Path

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
import yaml
from support.multi_label_data import CLASSES, write_multi_label_folder

from lttw import layout
from lttw.data.datasets import load_dataset
from lttw.data.fold_inputs import load_fold_inputs
from lttw.data.folds import assign_folds, read_fold_parts
from lttw.data.label_sets import indicator_matrix
from lttw.data.sampling import draw_samples
from lttw.errors import DataError
from lttw.factors.counts import load_counts
from lttw.io import read_arrays, read_json
from lttw.settings import DataSettings, read_settings


@pytest.fixture(scope="module")
def root(tmp_path_factory) -> Path:
    root = tmp_path_factory.mktemp("ml")
    write_multi_label_folder(root, "emo", n_train=600, n_test=200)
    return root


def settings(root: Path, **update) -> DataSettings:
    sizes = {"train_size": 200, "test_size": 60, "predict_size": 40, "sampling": "stratified"}
    return DataSettings(dataset="emo", root=str(root), **{**sizes, **update})


def shares(matrix: np.ndarray) -> np.ndarray:
    return matrix.mean(axis=0)


def test_stratified_samples_keep_label_proportions_and_exact_sizes(root):
    data = settings(root)
    dataset = load_dataset(data)
    frames, info = draw_samples(dataset, data, seed=3)
    assert info["sizes"] == {"train": 200, "test": 60, "predict": 40}
    assert info["multi_label"] is True and info["sampling"] == "stratified"
    pool = {"train": dataset.rows_of("train"), "test": dataset.rows_of("test")}
    for split, source in (("train", "train"), ("test", "test"), ("predict", "test")):
        drawn = indicator_matrix(frames[split]["label"], len(CLASSES))
        assert info["per_class"][split] == drawn.sum(axis=0).tolist()
        whole = shares(dataset.labels[pool[source]])
        # iterative stratification: every label's share within 4 rows' worth of the pool's
        assert np.abs(shares(drawn) - whole).max() <= 4 / len(drawn), split
    rows = [set(frames[s]["source_row"]) for s in ("test", "predict")]
    assert not rows[0] & rows[1]


def test_the_same_seed_draws_the_same_rows(root):
    data = settings(root)
    first, _ = draw_samples(load_dataset(data), data, seed=5)
    again, _ = draw_samples(load_dataset(data), data, seed=5)
    pd.testing.assert_frame_equal(first["train"], again["train"])


def test_all_takes_every_row(root):
    data = settings(root, sampling="all")
    frames, info = draw_samples(load_dataset(data), data, seed=0)
    assert len(frames["train"]) == 600
    assert len(frames["test"]) + len(frames["predict"]) == 200
    assert len(frames["test"]) == 120  # the test split divided 60:40


def test_balanced_is_refused_in_one_line(root):
    data = settings(root, sampling="balanced")
    with pytest.raises(DataError) as err:
        draw_samples(load_dataset(data), data, seed=0)
    message = str(err.value)
    assert "\n" not in message
    assert "data.sampling=balanced cannot balance multi-label data" in message
    assert "stratified" in message and "all" in message


def test_a_size_beyond_the_pool_says_which_sizes_fit(root):
    data = settings(root, train_size=900)
    with pytest.raises(
        DataError,
        match=r"data.train_size=900 needs 900 rows from the train "
        r"split, which has 600.*data.train_size=600",
    ):
        draw_samples(load_dataset(data), data, seed=0)


def test_iterative_folds_keep_label_proportions():
    rng = np.random.default_rng(0)
    labels = (rng.random((500, 6)) < [0.5, 0.3, 0.2, 0.1, 0.05, 0.03]).astype(np.uint8)
    folds = assign_folds(labels, 5, random_state=0)
    assert np.bincount(folds).tolist() == [100] * 5
    whole = shares(labels)
    for fold in range(5):
        assert np.abs(shares(labels[folds == fold]) - whole).max() <= 2 / 100


def test_single_label_folds_are_unchanged():
    labels = np.repeat(np.arange(3), 20)
    from sklearn.model_selection import StratifiedKFold

    wanted = np.empty(60, np.int64)
    splits = StratifiedKFold(n_splits=4, shuffle=True, random_state=1).split(labels, labels)
    for fold, (_, test) in enumerate(splits):
        wanted[test] = fold
    np.testing.assert_array_equal(assign_folds(labels, 4, random_state=1), wanted)


# ---- the stages on a delimited CSV ----------------------------------------------------


def _stage(cwd: Path, stage: str, fold: int | None = None) -> None:
    """Run a stage's ``main`` in this process (``lttw.stages.<stage>``, its imports shared: a
    subprocess per stage costs seconds of imports each)."""
    main = importlib.import_module(f"lttw.stages.{stage}").main
    here = os.getcwd()
    os.chdir(cwd)
    try:
        settings = read_settings("params.yaml")
        main(settings) if fold is None else main(settings, fold)
    finally:
        os.chdir(here)


@pytest.fixture(scope="module")
def project(tmp_path_factory) -> Path:
    """sample, folds, counts, nmf and features (fold 0) of a |-delimited CSV dataset, run as
    stages."""
    folder = tmp_path_factory.mktemp("project")
    data_root = folder / "in"
    write_multi_label_folder(data_root, "emo", n_train=300, n_test=100, fmt="csv")
    params = {
        "seed": 0,
        "data": {
            "dataset": "emo",
            "root": str(data_root),
            "label_delimiter": "|",
            "sampling": "stratified",
            "train_size": 200,
            "test_size": 50,
            "predict_size": 30,
        },
        "folds": {"n_folds": 4, "run": [0]},
    }
    (folder / "params.yaml").write_text(yaml.safe_dump(params))
    for stage in ("sample", "folds", "counts", "nmf", "features"):
        _stage(folder, stage, None if stage in ("sample", "folds") else 0)
    return folder


def test_the_sample_parquet_holds_lists_of_class_ids(project):
    schema = pq.read_schema(project / layout.sample_parquet("train"))
    assert schema.field("label").type == pa.list_(pa.int64())
    info = read_json(project / layout.LABELS_JSON)
    assert info["multi_label"] is True and info["classes"] == sorted(CLASSES)
    labels = pd.read_parquet(project / layout.sample_parquet("train"))["label"]
    assert all(len(ids) and list(ids) == sorted(set(ids)) for ids in labels)


def test_fold_inputs_carry_the_indicator_matrix(project, monkeypatch):
    monkeypatch.chdir(project)
    inputs = load_fold_inputs(0)
    assert inputs.multi_label
    assert inputs.labels["train"].shape == (200, len(CLASSES))
    assert inputs.labels["train"].dtype == np.uint8
    assert inputs.labels["predict"].shape == (30, len(CLASSES))
    assert inputs.part_labels("val").shape[1] == len(CLASSES)


def test_the_counts_stage_counts_a_text_once_per_label(project):
    sample = pd.read_parquet(project / layout.sample_parquet("train"))
    rows = read_fold_parts(project / layout.FOLDS_PARQUET, 0)["train"]
    counts, vocabulary = load_counts(project / layout.counts_dir(0))
    # every text has the word "it" once: n(it, c) = the train part's texts with label c
    wanted = indicator_matrix(sample["label"].iloc[rows], len(CLASSES)).sum(axis=0)
    np.testing.assert_array_equal(counts[vocabulary.index("it")].toarray().ravel(), wanted)


def test_single_label_samples_have_no_multi_label_key(tmp_path):
    pd.DataFrame({"text": [f"t{i}" for i in range(40)], "label": ["x", "y"] * 20}).to_csv(
        tmp_path / "s.csv", index=False
    )
    data = DataSettings(
        dataset="s.csv", root=str(tmp_path), train_size=20, test_size=10, predict_size=10
    )
    frames, info = draw_samples(load_dataset(data), data, seed=0)
    assert "multi_label" not in info
    assert frames["train"]["label"].dtype == np.int64


def test_the_features_stage_cross_fits_multi_label_train_rows(project):
    arrays = read_arrays(project / layout.features_file(0))
    assert arrays["train"].shape[0] == 200 and arrays["predict"].shape[0] == 30
    assert np.isfinite(arrays["train"]).all() and arrays["train"].any()
