"""``model.variant: lttw_tfidf`` through the tiny pipeline: the train stage writes both part
folders and ensemble.json, the evaluate stage scores the combination, ``lttw predict``
answers from the folder, and every parameter the stages read is declared."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest
from support.stage_graph import undeclared_reads
from support.tiny_project import TRACER, lttw, ran, run, set_params

from lttw import layout

pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def ensemble_run(tmp_path_factory, tiny_repro) -> Path:
    base = tmp_path_factory.mktemp("ensemble_run")
    project = tiny_repro.copy(base / "project")
    set_params(project, model={"variant": "lttw_tfidf"})
    path = os.pathsep.join(filter(None, [str(TRACER), os.environ.get("PYTHONPATH")]))
    out = run(
        ["dvc", "repro"],
        project,
        extra_env={"PYTHONPATH": path, "LTTW_PARAM_TRACE": str(base / "trace")},
    )
    (base / "output.txt").write_text(out)
    return project


def test_ensemble_trains_evaluates_and_predicts(ensemble_run):
    out = (ensemble_run.parent / "output.txt").read_text()
    assert {"train@0", "evaluate@0"} <= ran(out)
    traced = {trace.stem for trace in (ensemble_run.parent / "trace").glob("*.json")}
    assert traced == ran(out), "every stage that ran was traced"
    assert undeclared_reads(ensemble_run.parent / "trace") == {}
    model = ensemble_run / layout.model_dir(0)
    weights = json.loads((model / "ensemble.json").read_text())
    assert weights["parts"] == ["lttw", "tfidf_linear"] and weights["selected_on"] == "val"
    assert sum(weights["weights"]) == pytest.approx(1.0)
    for part in weights["parts"]:
        assert (model / part / "lttw.json").is_file()
        assert (model / part / "calibration.json").is_file()
    meta = json.loads((model / "lttw.json").read_text())
    assert meta["variant"] == "lttw_tfidf" and "ensemble.json" in meta["sha256"]
    assert meta["trained_on"]["device"] == "cpu"  # the metrics files hold numbers only
    metrics = json.loads((ensemble_run / layout.fold_metrics(0)).read_text())
    assert 0 <= metrics["test"]["f1_macro"] <= 1
    train = json.loads((ensemble_run / layout.train_metrics(0)).read_text())
    assert set(train["weights"]) == {"lttw", "tfidf_linear"}
    answer = lttw(["predict", "--model", model, "--json", "oil prices fall"], ensemble_run)
    assert "label" in answer.stdout
