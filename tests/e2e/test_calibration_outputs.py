"""The tiny pipeline's calibration outputs: the train stage's calibration.json (temperature
fitted on the validation part, a checksummed loader file) and the evaluate stage's ECE
before and after, with labels that are the plain argmax."""

import json
import math

import pandas as pd

from lttw.models.folder_reader import verify


def test_train_writes_temperature_and_evaluate_reports_ece(tiny_repro):
    model = tiny_repro.root / "models" / "fold_0"
    calibration = json.loads((model / "calibration.json").read_text())
    assert calibration["multi_label"] is False
    assert math.isfinite(calibration["temperature"]) and calibration["temperature"] > 0
    meta = json.loads((model / "lttw.json").read_text())
    assert "calibration.json" in meta["sha256"]
    assert not verify(model).problems
    train = json.loads((tiny_repro.root / "metrics/train/fold_0.json").read_text())
    assert train["temperature"] == calibration["temperature"]
    metrics = json.loads((tiny_repro.root / "metrics/folds/fold_0.json").read_text())
    for part in ("fold_test", "test"):
        got = metrics[part]
        for key in ("ece", "ece_uncalibrated", "nll", "nll_uncalibrated"):
            assert 0.0 <= got[key] < math.inf, (part, key)
    predictions = pd.read_parquet(tiny_repro.root / "data/eval/fold_0/predictions.parquet")
    report = json.loads((tiny_repro.root / "data/eval/fold_0/report.json").read_text())
    assert len(predictions) and report
