"""`lttw evaluate` and `lttw explain` on an ONNX export in the slim install: in processes
where torch, scikit-learn, matplotlib, pyarrow and the rest of the slim install's left-outs
cannot be imported (``support.torch_free``), evaluate writes its metrics, predictions and
page (the pictures named as the plots extra's), and explain answers."""

from __future__ import annotations

import json
from pathlib import Path

import pandas as pd
import pytest
from support.cli_runner import invoke
from support.serving_models import CLASSES, labelled_texts, shared_lttw_folder
from support.torch_free import run_without

COMMAND = """
import sys
from typer.testing import CliRunner
from lttw.cli import app
result = CliRunner().invoke(app, sys.argv[1:])
print(result.output)
if result.exit_code == 1 and result.exception is not None:
    import traceback
    traceback.print_exception(result.exception)
sys.exit(result.exit_code)
"""


@pytest.fixture(scope="module")
def onnx(tmp_path_factory, tiny_encoder_dir) -> Path:
    model = shared_lttw_folder(tmp_path_factory, tiny_encoder_dir)
    out = tmp_path_factory.mktemp("slim_evaluate") / "onnx"
    result = invoke("export", "--model", model, "--out", out, "--onnx")
    assert result.exit_code == 0, result.output
    return out


def test_evaluate_without_torch_sklearn_or_matplotlib(onnx, tmp_path):
    texts, labels = labelled_texts(3)
    data = tmp_path / "labelled.csv"
    pd.DataFrame({"text": texts, "label": [CLASSES[i] for i in labels]}).to_csv(data, index=False)
    out = tmp_path / "eval"
    args = ("evaluate", str(data), "--model", str(onnx), "--out", str(out), "--bootstrap", "20")
    done = run_without(COMMAND, *args)
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    report = json.loads((out / "metrics.json").read_text())
    assert report["n"] == len(texts) and "f1_macro" in report["metrics"]
    page = (out / "report.html").read_text()
    assert "lttw[plots]" in page and "Most confident mistakes" in page


def test_explain_without_torch(onnx):
    args = ("explain", "the team won the match", "--model", str(onnx), "--json")
    done = run_without(COMMAND, *args)
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    doc = json.loads(done.stdout)
    assert doc["classes"] == CLASSES and doc["prediction"]
    assert doc["attention"]["kind"] == "unavailable" and "ONNX" in doc["attention"]["note"]
