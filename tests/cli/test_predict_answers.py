"""`lttw predict --min-prob / --top-k` and a multi-label model folder through `predict`
(table, JSON Lines, --out CSV / parquet), `explain` and `export --onnx`: label lists with
their probabilities, abstention below P, the K most probable classes."""

from __future__ import annotations

import json

import numpy as np
import pandas as pd
import pytest
from support.calibrated_models import calibrated_copy
from support.cli_runner import invoke
from support.serving_models import CLASSES, shared_lttw_folder

from lttw.inference.predict import Predictor

TEXTS = ["stock market price oil", "team game match", "computer internet science"]
THRESHOLDS = (0.5, 0.45, 0.55, 0.5)


@pytest.fixture(scope="module")
def plain_dir(tmp_path_factory, tiny_encoder_dir):
    return shared_lttw_folder(tmp_path_factory, tiny_encoder_dir)


@pytest.fixture(scope="module")
def multi_dir(plain_dir, tmp_path_factory):
    dest = tmp_path_factory.mktemp("ml") / "model"
    return calibrated_copy(plain_dir, dest, multi_label=True, thresholds=THRESHOLDS)


def json_lines(result) -> list[dict]:
    assert result.exit_code == 0, result.output
    return [json.loads(line) for line in result.stdout.splitlines()]


def test_json_unchanged_without_the_new_options(plain_dir):
    docs = json_lines(invoke("predict", *TEXTS, "--model", plain_dir, "--json"))
    probs = Predictor.load(plain_dir).predict_proba(TEXTS)
    for doc, row in zip(docs, probs):  # the same texts in the same one batch: exact (issue 59)
        assert list(doc) == ["text", "label", "prob", "probs"]
        assert doc["label"] == CLASSES[row.argmax()] and doc["prob"] == float(row.max())


def test_min_prob_and_top_k_single_label(plain_dir):
    probs = Predictor.load(plain_dir).predict_proba(TEXTS)
    cut = float(np.sort(probs.max(axis=1))[1])  # the middle text's top probability
    docs = json_lines(
        invoke("predict", *TEXTS, "--model", plain_dir, "--json", "--min-prob", cut, "--top-k", 2)
    )
    for doc, row in zip(docs, probs):  # the same one batch as probs: exact at the cut
        assert (doc["label"] is None) == (row.max() < np.float32(cut))
        assert [t["label"] for t in doc["top"]] == [CLASSES[i] for i in np.argsort(-row)[:2]]
    table = invoke("predict", *TEXTS, "--model", plain_dir, "--min-prob", 1.0, "--top-k", 9)
    assert table.exit_code == 0 and "(none)" in table.stdout and "top" in table.stdout
    bad = invoke("predict", "a", "--model", plain_dir, "--min-prob", 2)
    assert bad.exit_code == 2 and "--min-prob" in bad.output


def test_out_files_single_label(plain_dir, tmp_path):
    out = tmp_path / "p.csv"
    result = invoke(
        "predict", *TEXTS, "--model", plain_dir, "--out", out, "--top-k", 2, "--min-prob", 1.0
    )
    assert result.exit_code == 0, result.output
    frame = pd.read_csv(out, keep_default_na=False)
    assert list(frame.columns[:7]) == [
        "text", "label", "prob", "top_1", "top_1_prob", "top_2", "top_2_prob"
    ]  # fmt: skip
    assert (frame["label"] == "").all() and frame["top_1"].isin(CLASSES).all()


def test_multi_label_predict(multi_dir, tmp_path):
    probs = Predictor.load(multi_dir).predict_proba(TEXTS)
    docs = json_lines(invoke("predict", *TEXTS, "--model", multi_dir, "--json"))
    for doc, row in zip(docs, probs):
        assert "label" not in doc and doc["labels"]
        chosen = [t["label"] for t in doc["labels"]]
        want = [c for c, p, t in zip(CLASSES, row, THRESHOLDS) if p >= t]
        assert sorted(chosen) == sorted(want or [CLASSES[row.argmax()]])
        assert doc["probs"] == pytest.approx(dict(zip(CLASSES, row.tolist())))
    floor = json_lines(
        invoke("predict", *TEXTS, "--model", multi_dir, "--json", "--min-prob", 0.999)
    )
    assert all(t["prob"] >= 0.999 for doc in floor for t in doc["labels"])
    csv_out, pq_out = tmp_path / "m.csv", tmp_path / "m.parquet"
    for out in (csv_out, pq_out):
        assert invoke("predict", *TEXTS, "--model", multi_dir, "--out", out).exit_code == 0
    from_csv = pd.read_csv(csv_out)["labels"].str.split("|").tolist()
    from_parquet = [list(v) for v in pd.read_parquet(pq_out)["labels"]]
    assert from_csv == from_parquet == [[t["label"] for t in d["labels"]] for d in docs]
    table = invoke("predict", *TEXTS, "--model", multi_dir)
    assert table.exit_code == 0 and docs[0]["labels"][0]["label"] in table.stdout


def test_multi_label_explain(multi_dir):
    result = invoke("explain", TEXTS[0], "--model", multi_dir, "--json")
    assert result.exit_code == 0, result.output
    prediction = json.loads(result.stdout)["prediction"]
    assert prediction["thresholds"] == pytest.approx(dict(zip(CLASSES, THRESHOLDS)))
    probs = prediction["probabilities"]
    assert all(probs[t["label"]] == t["prob"] for t in prediction["labels"])
    shown = invoke("explain", TEXTS[0], "--model", multi_dir)
    assert shown.exit_code == 0 and "threshold" in shown.stdout


def test_multi_label_onnx_export(multi_dir, tmp_path):
    from lttw.inference.loading import load_predictor

    out = tmp_path / "onnx"
    result = invoke("export", "--model", multi_dir, "--out", out, "--onnx")
    assert result.exit_code == 0, result.output
    assert (out / "calibration.json").is_file()
    onnx, torch_ = load_predictor(out), Predictor.load(multi_dir)
    assert onnx.multi_label and type(onnx.model).__name__ == "OnnxClassifier"
    np.testing.assert_allclose(onnx.predict_proba(TEXTS), torch_.predict_proba(TEXTS), atol=1e-5)
    assert onnx.predict(TEXTS) == torch_.predict(TEXTS)
