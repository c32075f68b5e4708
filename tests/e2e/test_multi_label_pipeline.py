"""Multi-label data end to end (issue 42): a CSV whose label cells join several labels with
``|`` (``data.label_delimiter``) runs through every stage of the tiny project's pipeline, in
this process (``in_process_pipeline``: what the stages compute, not DVC, is the subject): the
sample keeps label lists, the model folder holds per-label thresholds, the metrics are the
multi-label ones, and ``lttw predict`` answers a list of labels."""

from __future__ import annotations

import json
from pathlib import Path

import pandas as pd
import pytest
from support.in_process_pipeline import run_pipeline
from support.multi_label_data import CLASSES, write_multi_label_folder
from support.tiny_project import lttw, make_tiny_project, set_params

from lttw import layout

pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def multi_label_run(tmp_path_factory, tiny_encoder_dir) -> tuple[Path, set[str]]:
    base = tmp_path_factory.mktemp("multi_label")
    project = make_tiny_project(base / "project", tiny_encoder_dir)
    write_multi_label_folder(base / "datasets", "tags", n_train=200, n_test=60, fmt="csv")
    set_params(
        project,
        data={
            "dataset": "tags",
            "root": str(base / "datasets"),
            "label_delimiter": "|",
            "sampling": "all",
            "predict_size": 0,
        },
        final={"enabled": True},
    )
    return project, set(run_pipeline(project).ran)


def test_delimited_csv_labels_train_a_multi_label_model(multi_label_run):
    project, ran = multi_label_run
    assert {"sample", "folds", "counts@0", "train@0", "evaluate@0", "summary"} <= ran
    labels = json.loads((project / layout.LABELS_JSON).read_text())
    assert labels["multi_label"] is True and sorted(labels["classes"]) == sorted(CLASSES)
    sample = pd.read_parquet(project / layout.sample_parquet("train"))
    assert any(len(row) > 1 for row in sample["label"])  # label sets, not joined strings

    folder = project / layout.model_dir(0)
    meta = json.loads((folder / "lttw.json").read_text())
    assert meta["multi_label"] is True
    calibration = json.loads((folder / "calibration.json").read_text())
    assert calibration["multi_label"] is True
    assert len(calibration["thresholds"]) == len(CLASSES)

    fold = json.loads((project / layout.fold_metrics(0)).read_text())
    test = fold["test"]
    for key in ("f1_micro", "f1_macro", "subset_accuracy"):
        assert 0.0 <= test[key] <= 1.0, key
    assert test["n"] == 60


def test_predict_answers_a_list_of_labels(multi_label_run):
    project, _ = multi_label_run
    folder = project / layout.model_dir(0)
    result = lttw(["predict", "--model", folder, "--json", "it is wjoy wlove"], project)
    record = json.loads(result.stdout.strip().splitlines()[-1])
    assert isinstance(record["labels"], list) and record["labels"]
    chosen = {answer["label"] for answer in record["labels"]}
    assert chosen <= set(CLASSES)
    assert all(record["probs"][a["label"]] == a["prob"] for a in record["labels"])
    assert set(record["probs"]) == set(CLASSES)


def test_final_model_keeps_the_folds_thresholds_and_is_measured_on_the_test_split(
    multi_label_run,
):
    project, ran = multi_label_run
    assert "final" in ran
    fold = json.loads((project / layout.model_dir(0) / "calibration.json").read_text())
    final = json.loads((project / layout.FINAL_MODEL_DIR / "calibration.json").read_text())
    assert final == fold  # tuned on fold 0's val part, not the default 0.5 for every label
    record = json.loads((project / layout.FINAL_METRICS).read_text())
    assert record["enabled"] == 1 and record["test"]["n"] == 60
    assert 0.0 <= record["test"]["f1_micro"] <= 1.0 and "subset_accuracy" in record["test"]
    estimate = record["estimate"]  # its own on the official test split, with an interval
    assert estimate["from_folds"] == 0 and estimate["n"] == 60 and "ece" not in estimate
    assert estimate["f1_macro_low"] <= estimate["f1_macro"] <= estimate["f1_macro_high"]
