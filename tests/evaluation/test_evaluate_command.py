"""`lttw evaluate FILE` through the real command on a tiny LTTW model folder: the file's own
columns (options, or the project's params.yaml), single- and multi-label, metrics.json with
bootstrap intervals that hold the point estimate, the pictures, and the HTML page as a
person sees it (a headless Chromium screenshot shows the confusion matrix and the curves)."""

from __future__ import annotations

import json

import numpy as np
import pandas as pd
import pytest
import yaml
from support.calibrated_models import calibrated_copy
from support.cli_runner import assert_user_error, invoke
from support.screenshots import screenshot, share_near
from support.serving_models import CLASSES, labelled_texts, shared_lttw_folder

from lttw.evaluation.evaluate import bootstrap_intervals, evaluation_report

#: the confusion matrix's darkest cell (matplotlib's "Blues" at its top)
DARK_BLUE = (8, 48, 107)


@pytest.fixture(scope="module")
def model(tmp_path_factory, tiny_encoder_dir):
    return shared_lttw_folder(tmp_path_factory, tiny_encoder_dir)


def labelled_frame(flip_every: int = 5) -> pd.DataFrame:
    """Topic texts with an id column; every ``flip_every``-th label is wrong on purpose."""
    texts, labels = labelled_texts(10)
    labels = labels.copy()
    labels[::flip_every] = (labels[::flip_every] + 1) % len(CLASSES)
    return pd.DataFrame(
        {"id": np.arange(len(texts)) + 100, "body": texts, "topic": [CLASSES[i] for i in labels]}
    )


def test_evaluate_writes_metrics_pictures_and_a_page(model, tmp_path):
    data = tmp_path / "labelled.csv"
    labelled_frame().to_csv(data, index=False)
    out = tmp_path / "eval"
    result = invoke(
        "evaluate", data, "--model", model, "--out", out,
        "--text-column", "body", "--label-column", "topic", "--bootstrap", "200",
    )  # fmt: skip
    assert result.exit_code == 0, result.output
    assert "f1_macro" in result.stdout and "[" in result.stdout
    files = {p.name for p in out.iterdir()}
    assert {"metrics.json", "predictions.parquet", "confusion.png", "reliability.png"} <= files
    assert {"precision_recall.png", "report.html"} <= files
    report = json.loads((out / "metrics.json").read_text())
    assert report["n"] == 40 and not report["multi_label"]
    for key in ("f1_macro", "accuracy", "precision_macro", "recall_macro"):
        low, high = report["intervals"][key]
        assert low <= report["metrics"][key] <= high and low < high
    assert np.array(report["confusion"]).sum() == 40
    assert report["metrics"]["accuracy"] < 1.0  # the flipped labels count as errors
    predictions = pd.read_parquet(out / "predictions.parquet")
    assert list(predictions.columns) == ["row", "text", "label", "pred", "prob"]
    page = (out / "report.html").read_text()
    assert "<script" not in page and "http" not in page.split("<body>")[1]  # self-contained
    pixels = screenshot(out / "report.html", tmp_path / "page.png")
    assert share_near(pixels, DARK_BLUE) > 0.002  # the confusion matrix's diagonal is drawn
    assert share_near(pixels, (255, 255, 255)) < 0.97  # more than a blank page


def test_evaluate_reads_the_projects_columns(model, tmp_path, monkeypatch):
    labelled_frame().to_parquet(tmp_path / "held_out.parquet")
    params = {"data": {"text_column": "body", "label_column": "topic"}}
    (tmp_path / "params.yaml").write_text(yaml.safe_dump(params))
    monkeypatch.chdir(tmp_path)
    result = invoke("evaluate", "held_out.parquet", "--model", model, "--bootstrap", "0")
    assert result.exit_code == 0, result.output
    report = json.loads((tmp_path / "evaluation" / "held_out" / "metrics.json").read_text())
    assert report["n"] == 40 and report["intervals"]["resamples"] == 0
    again = invoke("evaluate", "held_out.parquet", "--model", model)
    assert_user_error(again, "exists", "--force")


def test_evaluate_multi_label(model, tmp_path):
    multi = calibrated_copy(model, tmp_path / "multi", multi_label=True, threshold=0.3)
    texts, labels = labelled_texts(5)
    sets = [f"{CLASSES[i]}|{CLASSES[(i + 1) % 4]}" if n % 3 == 0 else CLASSES[i]
            for n, i in enumerate(labels)]  # fmt: skip
    pd.DataFrame({"text": texts, "label": sets}).to_csv(tmp_path / "multi.csv", index=False)
    out = tmp_path / "eval"
    result = invoke("evaluate", tmp_path / "multi.csv", "--model", multi, "--out", out)
    assert result.exit_code == 0, result.output
    report = json.loads((out / "metrics.json").read_text())
    assert report["multi_label"] and "f1_micro" in report["metrics"]
    assert "confusion" not in report and not (out / "confusion.png").exists()
    assert set(report["per_class"]) == set(CLASSES)


def test_unknown_labels_and_missing_columns_are_one_line_errors(model, tmp_path):
    bad = tmp_path / "bad.csv"
    pd.DataFrame({"text": ["a news story"], "label": ["Weather"]}).to_csv(bad, index=False)
    result = invoke("evaluate", bad, "--model", model, "--out", tmp_path / "o1")
    assert_user_error(result, "Weather", "not the model's classes", code=3)
    result = invoke(
        "evaluate", bad, "--model", model, "--label-column", "topic", "--out", tmp_path / "o2"
    )
    assert_user_error(result, "no column 'topic'", "--label-column", code=3)
    assert not (tmp_path / "o1").exists()


def test_bootstrap_intervals_are_seeded_and_narrow_with_more_rows():
    rng = np.random.default_rng(0)
    y = rng.integers(0, 3, 2000)
    pred = np.where(rng.random(2000) < 0.8, y, (y + 1) % 3)
    small = bootstrap_intervals(y[:100], pred[:100], 3, 300, seed=1)
    assert small == bootstrap_intervals(y[:100], pred[:100], 3, 300, seed=1)
    large = bootstrap_intervals(y, pred, 3, 300, seed=1)
    width = lambda iv: iv["f1_macro"][1] - iv["f1_macro"][0]
    assert width(large) < width(small)
    probs = np.eye(3)[pred] * 0.8 + 0.2 / 3
    report = evaluation_report(y, probs, pred, ["a", "b", "c"], n_boot=100)
    assert report["intervals"]["accuracy"][0] <= report["metrics"]["accuracy"]
