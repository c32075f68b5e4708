"""Label data that the pipeline cannot use, refused where it is first seen and with the
right parameter named: an empty label inside a delimited list, one row per class (refused by
`lttw init`, and the folds stage's advice fits `data.sampling: all`), more cross-validation
folds than rows (`train.threshold_cv`), and `nmf.rank: auto` capped for many classes."""

from __future__ import annotations

import json

import numpy as np
import pandas as pd
import pytest
import scipy.sparse as sp
from support.cli_runner import assert_user_error, invoke
from support.stage_cases import write_params
from support.stage_scripts import run_stage_script

from lttw import layout
from lttw.errors import DataError


def test_init_refuses_an_empty_label_inside_a_list_naming_the_row(tmp_path):
    data = tmp_path / "t.csv"
    rows = [f"text {i} words,{'a|b' if i % 2 else 'b'}" for i in range(40)]
    rows[7] = "the bad row,a||b"
    data.write_text("text,label\n" + "\n".join(rows) + "\n")
    result = invoke("init", tmp_path / "p", "--data", data, "--label-delimiter", "|")
    assert_user_error(result, "t.csv, column label: row 7 has an empty label in 'a||b'", code=3)
    assert not (tmp_path / "p").exists()


def test_init_refuses_one_row_per_class_and_names_what_helps(tmp_path):
    """`sampling: all` (what init writes) ignores data.train_size: the advice is to add rows
    (here lowering folds.n_folds cannot help either: it is at least 3)."""
    data = tmp_path / "t.csv"
    data.write_text("text,label\nhello world,a\nbye world,b\nhi there,c\n")
    result = invoke("init", tmp_path / "p", "--data", data)
    line = assert_user_error(result, "folds.n_folds=10 needs at least 10", code=3)
    assert "add rows of class a" in line and "data.train_size" not in line
    assert not (tmp_path / "p").exists()


def test_the_folds_stage_advice_does_not_rest_on_data_train_size_alone(tmp_path):
    (tmp_path / "data" / "sample").mkdir(parents=True)
    pd.DataFrame({"label": np.array([0, 0, 0, 1], np.int64)}).to_parquet(
        tmp_path / layout.sample_parquet("train")
    )
    layout_labels = tmp_path / layout.LABELS_JSON
    layout_labels.write_text(json.dumps({"classes": ["a", "b"]}))
    write_params(tmp_path, {"folds": {"n_folds": 3, "run": [0]}})
    ran = run_stage_script("folds", tmp_path, "--params", "params.yaml")
    assert ran.returncode == 2, ran.stderr
    line = ran.stderr.strip().splitlines()[-1]
    assert "folds.n_folds=3 needs at least 3 training rows per class" in line
    assert "add labelled rows, or lower folds.n_folds" in line


def test_threshold_cv_names_its_own_parameter():
    from lttw.training.thresholds import cross_validated_thresholds

    targets = np.eye(3, dtype=np.int64)[[0, 1, 2, 0, 1, 2]]
    with pytest.raises(DataError, match=r"^train\.threshold_cv=1000 needs .*lower train\.thresh"):
        cross_validated_thresholds(None, ["t"] * 6, targets, 1000, 0, 1)


def test_nmf_rank_auto_is_capped_with_a_warning(tmp_path):
    """40 classes: auto gives rank 32 (AUTO_RANK_MAX), and the nmf stage's log says so."""
    from lttw.factors.counts import save_counts
    from lttw.factors.nmf import AUTO_RANK_MAX

    rng = np.random.default_rng(0)
    counts = sp.csr_matrix(rng.integers(0, 3, (200, 40)))
    directory = tmp_path / layout.counts_dir(0)
    directory.mkdir(parents=True)
    save_counts(directory, counts, [f"w{i}" for i in range(200)])
    write_params(tmp_path, {"folds": {"n_folds": 4, "run": [0]}, "nmf": {"max_iter": 5}})
    ran = run_stage_script("nmf", tmp_path, "--params", "params.yaml", "--fold", "0")
    assert ran.returncode == 0, ran.stderr
    metrics = json.loads((tmp_path / "metrics" / "nmf" / "fold_0.json").read_text())
    assert metrics["rank"] == AUTO_RANK_MAX == 32
    assert "nmf.rank=auto: 40 classes -> rank 32 (auto stops at 32" in ran.stderr
    assert "is below the number of classes" not in ran.stderr  # one warning, not two


def test_the_data_check_plans_samples_without_copying_the_texts(tmp_path, monkeypatch):
    """`lttw data check` / `init` plan the samples as the sample stage does but build no
    sample frames (a copy of every text: bench/large_data.py init measures the memory)."""
    from lttw.data import sampling

    def no_frames(*args, **kwargs):
        raise AssertionError("the data check built a sample frame")

    monkeypatch.setattr(sampling, "sample_frame", no_frames)
    data = tmp_path / "t.csv"
    data.write_text("text,label\n" + "".join(f"text {i},c{i % 2}\n" for i in range(60)))
    (tmp_path / "params.yaml").write_text(
        "data:\n  sampling: all\n  predict_size: 0\nfolds:\n  n_folds: 3\n  run: [0]\n"
    )
    result = invoke("data", "check", data, "--params", tmp_path / "params.yaml")
    assert result.exit_code == 0, result.output
    assert "ok: the sample stage can use this dataset" in result.stdout
