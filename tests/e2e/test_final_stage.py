"""The `final` stage end to end on the tiny profile: with `final.enabled: false` (this
repository's params) `models/final` is fold 0's model marked as such; with it true, the
variant retrained on every labelled row for the folds' chosen epochs. Both answer
`lttw predict`, carry a model card (README.md, metrics.json) that `lttw verify`, `lttw
export` and `GET /info` read, and lead metrics/summary.json and `lttw report` with their
numbers: rows, classes, the estimate with its interval and where it comes from (here their
own held-out test sample). The enabled run also uses
`data.sampling: all` with `data.predict_size: 0` on a small dataset with its own test split:
the held-out test sample is the whole test split, and no predict sample appears anywhere.
The disabled final stage is the shared tiny run's (``tiny_repro``: the real ``dvc repro``);
the enabled one's project runs its pipeline in this process (``in_process_pipeline``: what
the stages compute, with the parameters each reads traced, is the subject, not DVC)."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from support.in_process_pipeline import PipelineRun, run_pipeline
from support.stage_graph import undeclared_reads
from support.tiny_project import lttw, make_tiny_project, set_params

from lttw import layout

pytestmark = pytest.mark.slow

DEPLOYED = "## The deployed model (`models/final`)"
CLASSES = ["world", "sports", "business", "tech"]
#: a few words per class that the tiny encoder knows whole (conftest.TINY_WORDS)
WORDS = {
    "world": "war government president world news",
    "sports": "team game match player season",
    "business": "market stock shares profit bank",
    "tech": "computer internet science technology company",
}
TRAIN_PER_CLASS, TEST_PER_CLASS = 24, 7


def md5(path: Path) -> str:
    return hashlib.md5(path.read_bytes()).hexdigest()


def write_dataset(root: Path) -> None:
    """``root/mini``: train / test parquet files and a manifest, four classes."""
    rng = np.random.default_rng(0)
    folder = root / "mini"
    folder.mkdir(parents=True)
    for split, n in (("train", TRAIN_PER_CLASS), ("test", TEST_PER_CLASS)):
        rows = []
        for label in CLASSES:
            words = WORDS[label].split()
            for i in range(n):
                picked = rng.choice(words, size=4).tolist() + ["the", "says"]
                rows.append({"text": f"{split} {i} " + " ".join(picked), "label": label})
        pd.DataFrame(rows).to_parquet(folder / f"{split}.parquet")
    splits = {"train": "train.parquet", "test": "test.parquet"}
    (folder / "manifest.json").write_text(
        json.dumps({"text_column": "text", "label_column": "label", "splits": splits})
    )


def _numbers_only(doc) -> bool:
    """Whether a metrics document holds numbers (and true/false) only, no prose."""
    if isinstance(doc, dict):
        return all(_numbers_only(v) for v in doc.values())
    return isinstance(doc, (int, float))


def test_disabled_final_is_fold_0s_model_marked_so(tiny_repro, tmp_path):
    root = tiny_repro.root
    assert "Running stage 'final'" in tiny_repro.output
    final, fold = root / layout.FINAL_MODEL_DIR, root / layout.model_dir(0)
    assert md5(final / "model.safetensors") == md5(fold / "model.safetensors")
    record = json.loads((final / "lttw.json").read_text())["final"]
    assert record["enabled"] is False and record["copy_of"].startswith("models/fold_0")
    summary = json.loads((root / layout.SUMMARY_METRICS).read_text())
    assert next(iter(summary)) == "final"  # the deployed model leads
    assert summary["final"]["trained_on"] == summary["fold_test/n"]["mean"] * 2  # 4 folds: 2:1:1
    # fold 0's model, measured on the held-out test sample it never saw, with an interval
    estimate = summary["final"]["estimate"]
    assert estimate["from_folds"] == 0 and estimate["n"] == summary["test/n"]["mean"]
    assert estimate["f1_macro"] == summary["test/f1_macro"]["mean"]
    assert estimate["f1_macro_low"] <= estimate["f1_macro"] <= estimate["f1_macro_high"]
    assert estimate["ece"] == summary["test/ece"]["mean"]
    assert _numbers_only(json.loads((root / layout.FINAL_METRICS).read_text()))
    assert _numbers_only(summary["final"])
    assert summary["held_out"]["test_rows"] == summary["test/n"]["mean"]
    assert summary["held_out"]["from_test_split"] == 1  # a sample of the test split
    assert summary["held_out"]["whole_test_split"] == 0
    assert "predict_rows" in summary["held_out"]  # the paper profile keeps its predict sample
    assert "label" in lttw(["predict", "--model", final, "oil prices fall"], root).output
    # a fold's folder has no card of its own (written before its evaluation): its export
    # gets one from the project's files, the same figures as the copy's
    lttw(["export", "--model", fold, "--out", tmp_path / "fold_0"], root)
    card = json.loads((tmp_path / "fold_0" / "metrics.json").read_text())
    assert card["estimate"] == json.loads((final / "metrics.json").read_text())["estimate"]
    assert "fold 0's train part" in (tmp_path / "fold_0" / "README.md").read_text()


def test_exp_compare_prints_the_deployed_models_columns(tiny_repro, tmp_path):
    lines = lttw(["exp", "compare", "-p", "final.enabled"], tiny_repro.root).stdout.splitlines()
    assert lines[0].split() == [
        "experiment",
        "variant",
        "rows",
        "F1",
        "%",
        "95%",
        "interval",
        "from",
        "folds",
        "F1",
        "%",
        "ECE",
        "final.enabled",
    ]
    workspace = lines[1].split()
    assert workspace[0] == "workspace" and workspace[5] == "test" and workspace[-1] == "False"
    assert len(lines) >= 3 and all(len(line) <= 100 for line in lines)  # and the commit
    refused = lttw(["exp", "compare"], tmp_path, check=False)  # no DVC project here
    assert refused.exit_code == 2 and len(refused.output.strip().splitlines()) == 1


@pytest.fixture(scope="module")
def enabled_run(tmp_path_factory, tiny_encoder_dir) -> tuple[Path, PipelineRun]:
    """A tiny project switched to final.enabled, data.sampling: all and data.predict_size: 0
    on a small dataset with a test split, its pipeline run (traced: ``base/trace``)."""
    base = tmp_path_factory.mktemp("final")
    project = make_tiny_project(base / "project", tiny_encoder_dir)
    write_dataset(base / "datasets")
    set_params(
        project,
        data={"dataset": "mini", "root": str(base / "datasets"), "sampling": "all"},
        final={"enabled": True},
    )
    set_params(project, data={"predict_size": 0})
    return project, run_pipeline(project, trace=base / "trace")


@pytest.fixture
def enabled(enabled_run) -> Path:
    return enabled_run[0]


def test_enabled_final_trains_on_every_labelled_row(enabled_run):
    enabled, pipeline = enabled_run
    out = pipeline.output
    assert {"sample", "train@0", "evaluate@0", "final", "summary"} <= set(pipeline.ran)
    traced = {trace.stem for trace in (enabled.parent / "trace").glob("*.json")}
    assert traced == set(pipeline.ran), "every stage that ran was traced"
    assert undeclared_reads(enabled.parent / "trace") == {}
    n_train = TRAIN_PER_CLASS * len(CLASSES)
    record = json.loads((enabled / layout.FINAL_METRICS).read_text())
    fold_best = json.loads((enabled / layout.train_metrics(0)).read_text())["best_epoch"] + 1
    assert record["enabled"] == 1 and record["trained_on"] == n_train
    # measured on the held-out test sample (the whole test split), as `lttw predict` answers
    assert record["test"]["n"] == TEST_PER_CLASS * len(CLASSES)
    assert 0.0 <= record["test"]["f1_macro"] <= 1.0 and "accuracy" in record["test"]
    assert record["epochs"] == fold_best and record["fold_best_epochs"] == {"0": fold_best}
    meta = json.loads((enabled / layout.FINAL_MODEL_DIR / "lttw.json").read_text())
    assert meta["final"]["trained_on"] == n_train and meta["with_factors"] is True
    factors = enabled / layout.FINAL_MODEL_DIR / "factors"
    fold_factors = enabled / layout.model_dir(0) / "factors"
    # counts over every row: more words than fold 0's train part has
    words = json.loads((factors / "vocabulary.json").read_text())
    assert len(words) > len(json.loads((fold_factors / "vocabulary.json").read_text()))
    # no validation rows of its own: fold 0's temperature, not the default T = 1
    calibration = "calibration.json"
    fold_t = json.loads((enabled / layout.model_dir(0) / calibration).read_text())["temperature"]
    final_cal = json.loads((enabled / layout.FINAL_MODEL_DIR / calibration).read_text())
    assert (
        final_cal["temperature"] == fold_t != 1.0 and "first fold" in meta["final"]["calibration"]
    )
    summary = json.loads((enabled / layout.SUMMARY_METRICS).read_text())
    assert summary["final"]["trained_on"] == n_train and summary["final"]["epochs"] == fold_best
    assert summary["final"]["test"] == record["test"]  # what a grid's cell keeps of it
    # an official test split stays held out: the estimate is the final model's own there
    estimate = summary["final"]["estimate"]
    assert estimate["from_folds"] == 0 and estimate["n"] == record["test"]["n"]
    assert estimate["f1_macro"] == record["test"]["f1_macro"] and 0 <= estimate["ece"] <= 1
    assert _numbers_only(record) and _numbers_only(summary["final"])
    out_lines = [line for line in out.splitlines() if "lttw." in line]
    assert "deployed model models/final: 96 rows, 4 classes; macro F1" in out_lines[-1]
    result = lttw(["predict", "--model", layout.FINAL_MODEL_DIR, "the team won the match"], enabled)
    assert any(name in result.output for name in CLASSES)


def test_whole_test_split_is_the_held_out_sample_and_no_predict_sample_appears(enabled):
    n_test = TEST_PER_CLASS * len(CLASSES)
    summary = json.loads((enabled / layout.SUMMARY_METRICS).read_text())
    assert summary["held_out"] == {
        "test_rows": n_test,
        "from_test_split": True,
        "whole_test_split": True,
    }
    assert summary["test/n"]["mean"] == n_test
    assert not [key for key in summary if key.startswith("predict/")]
    fold = json.loads((enabled / layout.fold_metrics(0)).read_text())
    assert fold["test"]["n"] == n_test and "predict" not in fold
    predictions = pd.read_parquet(enabled / layout.eval_dir(0) / "predictions.parquet")
    assert set(predictions["part"]) == {"fold_test", "test"}
    lttw(["report", "--no-experiments", "--out", "report.md"], enabled)
    report = (enabled / "report.md").read_text()
    assert f"held-out test sample {n_test} texts (the whole test split); no predict sample" in (
        report
    )
    assert f"retrained on {TRAIN_PER_CLASS * len(CLASSES)} labelled rows" in report
    assert report.index(DEPLOYED) < report.index("| variant | folds |")  # first, then the study
    assert "on the held-out test sample (none of its rows in training)" in report


def test_the_model_card_is_written_verified_exported_and_served(enabled, tmp_path):
    folder = enabled / layout.FINAL_MODEL_DIR
    card = json.loads((folder / "metrics.json").read_text())
    n_train = TRAIN_PER_CLASS * len(CLASSES)
    assert card["rows"] == n_train and card["classes"] == len(CLASSES)
    assert card["label_counts"] == dict.fromkeys(CLASSES, TRAIN_PER_CLASS)
    assert card["estimate"]["f1_macro_low"] <= card["estimate"]["f1_macro_high"]
    assert "first fold" in card["calibration"]["how"] and card["code"]["code_sha256"]
    readme = (folder / "README.md").read_text()
    for heading in ("## Training data", "## Evaluation", "## Limitations", "## How to use"):
        assert heading in readme
    assert "cut at 32 tokens" in readme and "95% interval" in readme
    verified = lttw(["verify", folder], enabled).stdout
    assert "files match" in verified and f"model card: {n_train} training texts" in verified
    out = tmp_path / "exported"
    lttw(["export", "--model", folder, "--out", out], enabled)
    assert (out / "README.md").read_text() == readme
    assert json.loads((out / "metrics.json").read_text()) == card
    (out / "README.md").write_text(readme + "edited\n")  # the card is checksummed too
    assert "README.md: changed" in lttw(["verify", out], enabled, check=False).output

    from lttw.inference.predict import Predictor
    from lttw.serving.info import model_info

    info = model_info(Predictor.load(folder), "torch")
    assert info["metrics"]["estimate"] == card["estimate"]  # GET /info's metrics: the card
