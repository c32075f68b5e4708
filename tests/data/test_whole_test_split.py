"""data.predict_size: 0 means no predict sample: with data.sampling: all the held-out test
sample is the dataset's whole test split (comparable with published figures), and the
summary says so; the paper's profile keeps its predict sample. `lttw data check NAME`
resolves NAME under data.root as the pipeline does, from any folder."""

from __future__ import annotations

import json
import os
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
import yaml
from support.tiny_project import lttw

from lttw.data.datasets import load_dataset
from lttw.data.sampling import draw_samples
from lttw.evaluation.metrics import held_out_samples, held_out_source
from lttw.settings import DataSettings

CLASSES = ["red", "green", "blue"]
TRAIN, TEST = [30, 20, 10], [7, 5, 4]  # unbalanced: every row counts, none is left out


@pytest.fixture(scope="module")
def root(tmp_path_factory) -> Path:
    """data.root holding ``colours/``: manifest + train / test parquet files."""
    root = tmp_path_factory.mktemp("root")
    folder = root / "colours"
    folder.mkdir()
    for split, counts in (("train", TRAIN), ("test", TEST)):
        labels = np.repeat(CLASSES, counts)
        texts = [f"{split} row {i} is {label}" for i, label in enumerate(labels)]
        pd.DataFrame({"text": texts, "label": labels}).to_parquet(folder / f"{split}.parquet")
    splits = {"train": "train.parquet", "test": "test.parquet"}
    (folder / "manifest.json").write_text(
        json.dumps({"text_column": "text", "label_column": "label", "splits": splits})
    )
    return root


def draw(root: Path, **sizes):
    data = DataSettings(dataset="colours", root=str(root), **sizes)
    return draw_samples(load_dataset(data), data, seed=3)


def test_predict_size_0_under_all_makes_the_test_sample_the_whole_test_split(root):
    frames, info = draw(root, sampling="all", predict_size=0)
    assert len(frames["test"]) == sum(TEST) and len(frames["predict"]) == 0
    assert len(frames["train"]) == sum(TRAIN)
    test_rows = pd.read_parquet(root / "colours" / "test.parquet")
    assert sorted(frames["test"]["text"]) == sorted(test_rows["text"])
    assert info["sizes"] == {"train": sum(TRAIN), "test": sum(TEST), "predict": 0}
    held = held_out_samples(info)
    assert held == {"test_rows": sum(TEST), "from_test_split": True, "whole_test_split": True}
    assert held_out_source(held) == "the whole test split"


def test_a_predict_sample_halves_the_test_split_and_is_stated(root):
    """Without predict_size 0 (the paper's profile keeps one) the test split is shared."""
    frames, info = draw(root, sampling="all", test_size=1, predict_size=1)
    assert len(frames["test"]) + len(frames["predict"]) == sum(TEST)
    assert 0 < len(frames["predict"]) < sum(TEST)
    held = held_out_samples(info)
    assert held["whole_test_split"] is False and held["from_test_split"] is True
    assert held_out_source(held) == "a sample of the test split"
    assert held["test_rows"] == len(frames["test"]) and held["predict_rows"] == len(
        frames["predict"]
    )


def test_balanced_with_predict_size_0_has_no_predict_sample(root):
    frames, info = draw(root, train_size=30, test_size=12, predict_size=0)
    assert len(frames["predict"]) == 0 and len(frames["test"]) == 12
    assert "predict_rows" not in held_out_samples(info)


def test_data_check_resolves_a_name_under_data_root_from_any_folder(root, tmp_path):
    """The name is looked up under the --params file's data.root, relative to that file's
    folder (the project), as the sample stage does, not under the current folder."""
    project, elsewhere = tmp_path / "project", tmp_path / "elsewhere"
    project.mkdir()
    (elsewhere / "colours").mkdir(parents=True)  # a same-named folder here must not win
    relative = Path(os.path.relpath(root, project))
    (project / "params.yaml").write_text(
        yaml.safe_dump({"data": {"dataset": "colours", "root": str(relative), "sampling": "all"}})
    )
    assert (project / relative / "colours" / "manifest.json").is_file()
    result = lttw(["data", "check", "colours", "--params", project / "params.yaml"], elsewhere)
    assert "ok: the sample stage can use this dataset" in result.output


def test_data_check_still_takes_a_path(root, tmp_path):
    (tmp_path / "params.yaml").write_text(yaml.safe_dump({"data": {"sampling": "all"}}))
    result = lttw(["data", "check", root / "colours"], tmp_path)
    assert "ok: the sample stage can use this dataset" in result.output


@pytest.fixture(scope="module")
def with_dev(tmp_path_factory) -> Path:
    """data.root holding ``colours/`` with a dev split beside train and test."""
    root = tmp_path_factory.mktemp("with_dev")
    folder = root / "colours"
    folder.mkdir()
    splits = {}
    for split, counts in (("train", TRAIN), ("dev", [4, 4, 4]), ("test", TEST)):
        labels = np.repeat(CLASSES, counts)
        texts = [f"{split} row {i} is {label}" for i, label in enumerate(labels)]
        pd.DataFrame({"text": texts, "label": labels}).to_parquet(folder / f"{split}.parquet")
        splits[split] = f"{split}.parquet"
    (folder / "manifest.json").write_text(
        json.dumps({"text_column": "text", "label_column": "label", "splits": splits})
    )
    return root


def test_a_dev_split_is_left_out_unless_train_splits_names_it(with_dev, caplog):
    """data.train_splits [train] (the default) draws nothing from dev and says how to use
    it; [train, dev] draws the train sample from both, the test sample from test alone."""
    with caplog.at_level("WARNING", logger="lttw"):
        frames, info = draw(with_dev, sampling="all", predict_size=0)
    assert len(frames["train"]) == sum(TRAIN) and info["pools"]["train"] == "train"
    assert "dev (12 rows)" in caplog.text and "data.train_splits=[train, dev]" in caplog.text
    frames, info = draw(with_dev, sampling="all", predict_size=0, train_splits=["train", "dev"])
    assert len(frames["train"]) == sum(TRAIN) + 12 and info["pools"]["train"] == "train+dev"
    assert sum(t.startswith("dev row") for t in frames["train"]["text"]) == 12
    assert sorted(frames["test"]["text"]) == sorted(
        pd.read_parquet(with_dev / "colours" / "test.parquet")["text"]
    )


@pytest.mark.parametrize("splits", [["train", "test"], ["train", "validation"]])
def test_train_splits_must_name_splits_to_train_on(with_dev, splits):
    from lttw.errors import DataError

    with pytest.raises(DataError, match=r"data\.train_splits names (test|validation).*dev"):
        draw(with_dev, sampling="all", predict_size=0, train_splits=splits)
