"""A few labelled texts a class, no parameter touched: `lttw init` fits the folds, the
training and the variant to the data and says so, `dvc repro` trains, and the estimate is
out-of-fold over every row with its interval; `lttw predict` answers. Only the encoder is
the tiny one (`-S model.encoder=...`, which also checks `-S`), texts are cut short and
`train.min_steps=0` keeps each fold's training to `train.epochs` (2). Three texts a class
(the fewest the folds take: three folds' stages) keep the run short; the plan for eight a
class is ``fit_to_data``'s test in test_project_pipeline.py, the same code path. The lttw
commands and the project's pipeline (``in_process_pipeline``: every stage of its dvc.yaml, as
``dvc repro`` runs them the first time) run in this process: the subject is what the stages
compute on a project of one's own, not DVC; ``dvc repro`` of an init project:
test_init_project.py. A bad ``-S`` on init: test_project_pipeline.py."""

from __future__ import annotations

import json
from pathlib import Path

import pandas as pd
import pytest
import yaml
from support.in_process_pipeline import run_pipeline
from support.tiny_project import DATASETS, lttw

PER_CLASS = 3

pytestmark = pytest.mark.slow


def few_shot_csv(path: Path, per_class: int = PER_CLASS) -> Path:
    rows = pd.read_parquet(DATASETS / "ag_news" / "train.parquet")
    rows = rows[rows.label < 2].groupby("label", group_keys=False).head(per_class)
    rows.assign(label=rows.label.map({0: "World", 1: "Sports"})).to_csv(path, index=False)
    return path


def test_a_few_texts_a_class_at_defaults(tmp_path, tiny_encoder_dir, monkeypatch):
    monkeypatch.setenv("COLUMNS", "200")  # init's notes unwrapped
    data = few_shot_csv(tmp_path / "few.csv")
    project = tmp_path / "few"
    out = lttw(
        ["init", project, "--data", data]
        + ["-S", f"model.encoder={tiny_encoder_dir}", "-S", "model.max_len=32"]
        + ["-S", "train.min_steps=0"],
        tmp_path,
    ).output
    assert f"a small dataset ({2 * PER_CLASS} rows)" in out, out
    assert f"folds.n_folds={PER_CLASS}" in out and "train.freeze_encoder=true:" in out, out
    params = yaml.safe_load((project / "params.yaml").read_text())
    assert params["folds"] == {"n_folds": PER_CLASS, "run": list(range(PER_CLASS))}
    assert params["model"]["variant"] == "encoder" and params["data"]["test_size"] == 0
    assert params["train"]["freeze_encoder"] and params["train"]["keep"] == "last"
    assert params["model"]["encoder"] == str(tiny_encoder_dir)  # -S
    text = (project / "params.yaml").read_text()
    assert "# fitted: every fold" in text and "# lttw init -S / --params" in text

    ran = run_pipeline(project).ran
    last = PER_CLASS - 1
    assert {"encode", f"train@{last}", f"evaluate@{last}", "final", "summary"} <= set(ran), ran
    final = json.loads((project / "metrics/summary.json").read_text())["final"]
    estimate = final["estimate"]
    assert estimate["from_folds"] and estimate["n"] == 2 * PER_CLASS, estimate
    assert estimate["f1_macro_low"] <= estimate["f1_macro"] <= estimate["f1_macro_high"]

    answer = lttw(["predict", "--json", "Late goal wins the cup final"], project).stdout
    assert json.loads(answer.splitlines()[-1])["label"] in ("World", "Sports")

    # every row's out-of-fold probabilities, from the folds: lttw data issues checks all
    issues = lttw(["data", "issues"], project).output
    assert f"among {2 * PER_CLASS} of the {2 * PER_CLASS} training rows (100%" in issues, issues
    table = pd.read_csv(project / "label_issues.csv")
    assert list(table.columns) == ["row", "text", "label", "suggested", "score", "suggested_prob"]
