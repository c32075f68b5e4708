"""``model.variant: lttw_tfidf`` through the tiny pipeline: the train stage writes both part
folders and ensemble.json, the evaluate stage scores the combination, ``lttw predict``
answers from the folder, and every parameter the stages read is declared. The tiny project's
pipeline runs in this process (``in_process_pipeline``, traced): what the stages compute is
the subject, not DVC."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from support.in_process_pipeline import run_pipeline
from support.stage_graph import undeclared_reads
from support.tiny_project import lttw, make_tiny_project, set_params

from lttw import layout

pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def ensemble_run(tmp_path_factory, tiny_encoder_dir) -> tuple[Path, tuple[str, ...]]:
    base = tmp_path_factory.mktemp("ensemble_run")
    project = make_tiny_project(base / "project", tiny_encoder_dir)
    set_params(project, model={"variant": "lttw_tfidf"})
    return project, run_pipeline(project, trace=base / "trace").ran


def test_ensemble_trains_evaluates_and_predicts(ensemble_run):
    project, ran = ensemble_run
    assert {"train@0", "evaluate@0"} <= set(ran)
    traced = {trace.stem for trace in (project.parent / "trace").glob("*.json")}
    assert traced == set(ran), "every stage that ran was traced"
    train_reads = json.loads((project.parent / "trace" / "train@0.json").read_text())
    assert {"model.variant", "train.epochs"} <= set(train_reads)  # the trace records reads
    assert undeclared_reads(project.parent / "trace") == {}
    model = project / layout.model_dir(0)
    weights = json.loads((model / "ensemble.json").read_text())
    assert weights["parts"] == ["lttw", "tfidf_linear"] and weights["selected_on"] == "val"
    assert sum(weights["weights"]) == pytest.approx(1.0)
    for part in weights["parts"]:
        assert (model / part / "lttw.json").is_file()
        assert (model / part / "calibration.json").is_file()
    meta = json.loads((model / "lttw.json").read_text())
    assert meta["variant"] == "lttw_tfidf" and "ensemble.json" in meta["sha256"]
    assert meta["trained_on"]["device"] == "cpu"  # the metrics files hold numbers only
    metrics = json.loads((project / layout.fold_metrics(0)).read_text())
    assert 0 <= metrics["test"]["f1_macro"] <= 1
    train = json.loads((project / layout.train_metrics(0)).read_text())
    assert set(train["weights"]) == {"lttw", "tfidf_linear"}
    answer = lttw(["predict", "--model", model, "--json", "oil prices fall"], project)
    assert "label" in answer.stdout
