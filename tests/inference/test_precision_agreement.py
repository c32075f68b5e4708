"""One model, one answer (issue 41, item 9): the evaluate stage's predictions on the
held-out test sample and `lttw predict --file` on the same texts give every text the same
label, because both run at the precision the model folder states (lttw.json ``precision``:
fp32), and the train stage records the folder's checksums (`lttw verify` passes). On the
tiny profile's pipeline run (``tiny_repro``), through the real command."""

from __future__ import annotations

import json

import pandas as pd
from typer.testing import CliRunner

from lttw import cli


def test_the_pipeline_and_lttw_predict_give_the_same_labels(tiny_repro, tmp_path):
    root = tiny_repro.root
    folder = root / "models" / "fold_0"
    meta = json.loads((folder / "lttw.json").read_text())
    assert meta["precision"] == "fp32" and "model.safetensors" in meta["sha256"]
    result = CliRunner().invoke(cli.app, ["verify", str(folder)])
    assert result.exit_code == 0, result.output
    # a fold's folder is evaluated after it is written: verify says what its card would say
    assert "a fold's model, evaluated after it was written: macro F1" in result.output
    assert "own predictions on the held-out test sample" in result.output

    evaluated = pd.read_parquet(root / "data" / "eval" / "fold_0" / "predictions.parquet")
    test = evaluated[evaluated["part"] == "test"]
    classes = json.loads((folder / "labels.json").read_text())["classes"]
    out = tmp_path / "predicted.csv"
    result = CliRunner().invoke(
        cli.app,
        [
            "predict",
            "--file",
            str(root / "data" / "sample" / "test.parquet"),
            "--out",
            str(out),
            "--no-text",
            "--model",
            str(folder),
        ],
    )
    assert result.exit_code == 0, result.output
    predicted = pd.read_csv(out, keep_default_na=False)["label"].tolist()
    assert len(predicted) == len(test) > 0
    assert predicted == [classes[i] for i in test["pred"]]
