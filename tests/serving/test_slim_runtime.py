"""An ONNX export answers without torch: in processes where torch, transformers, dvc,
scikit-learn, scipy, jieba and the rest of the slim install's left-outs cannot be imported
(``support.torch_free``), ``lttw.load_model``, ``lttw predict`` and ``lttw serve`` give the
full install's ONNX labels and probabilities (to 1e-5), and a torch folder is one line saying
what to install. In-process: ``load_model`` on an export runs ONNX, as the CLI does."""

from __future__ import annotations

import json
import socket
from pathlib import Path

import numpy as np
import pytest
from support.cli_runner import invoke
from support.serving_models import CLASSES, shared_lttw_folder
from support.torch_free import CLI, run_without, start_without

from lttw import load_model
from lttw.errors import UserError
from lttw.inference.classifier import Classifier
from lttw.inference.loading import backend_name, load_predictor

TEXTS = ["oil", "the team won the match in the last minute of the season", "", "stock market"]


@pytest.fixture(scope="module")
def folders(tmp_path_factory, tiny_encoder_dir) -> tuple[Path, Path]:
    """(the tiny torch folder, its fp32 ONNX export)."""
    model = shared_lttw_folder(tmp_path_factory, tiny_encoder_dir)
    out = tmp_path_factory.mktemp("slim") / "onnx"
    result = invoke("export", "--model", model, "--out", out, "--onnx")
    assert result.exit_code == 0, result.output
    return model, out


def test_load_model_runs_an_export_on_onnx(folders):
    model, onnx = folders
    assert backend_name(load_model(onnx)) == "onnx-fp32"
    assert isinstance(load_model(onnx), Classifier) and isinstance(load_model(model), Classifier)
    with pytest.raises(UserError, match="an ONNX export, without torch weights"):
        load_model(onnx, backend="torch")  # the export holds model.onnx alone
    assert backend_name(load_model(model)) == "torch"
    np.testing.assert_allclose(
        load_model(onnx).predict_proba(TEXTS), load_model(model).predict_proba(TEXTS), atol=1e-5
    )
    with pytest.raises(UserError, match="runs on the CPU"):
        load_model(onnx, device="cuda")


def test_load_model_errors_name_no_cli_flag(tmp_path):
    with pytest.raises(UserError) as err:
        load_model(tmp_path)
    assert "not a trained model folder" in str(err.value) and "--model" not in str(err.value)


#: in the guarded process: load_model's and `lttw predict --json`'s answers, and the
#: refusal of the torch folder (exit code, stderr)
SLIM = """
import json, sys
from typer.testing import CliRunner
import lttw
from lttw.cli import app

onnx, torch_dir, texts = sys.argv[1], sys.argv[2], sys.argv[3:]
model = lttw.load_model(onnx)
predicted = CliRunner().invoke(app, ["predict", "--model", onnx, "--json", "--top-k", "4", *texts])
assert predicted.exit_code == 0, predicted.output
refused = CliRunner().invoke(app, ["predict", "--model", torch_dir, "a text"])
print(json.dumps({
    "labels": model.predict(texts),
    "probs": model.predict_proba(texts).tolist(),
    "cli": [json.loads(line) for line in predicted.stdout.splitlines()],
    "refused": [refused.exit_code, refused.stderr],
}))
"""


def _probs(records: list[dict]) -> np.ndarray:
    return np.array(
        [[{t["label"]: t["prob"] for t in r["top"]}[c] for c in CLASSES] for r in records]
    )


def test_predict_and_load_model_without_torch(folders):
    model, onnx = folders
    reference = load_predictor(onnx)
    labels, probs = reference.predict(TEXTS), reference.predict_proba(TEXTS)
    done = run_without(SLIM, str(onnx), str(model), *TEXTS)
    assert done.returncode == 0, done.stderr[-3000:]
    slim = json.loads(done.stdout.strip().splitlines()[-1])
    assert slim["labels"] == labels
    np.testing.assert_allclose(slim["probs"], probs, atol=1e-5)
    assert [r["label"] for r in slim["cli"]] == labels
    np.testing.assert_allclose(_probs(slim["cli"]), probs, atol=1e-5)
    code, stderr = slim["refused"]
    lines = stderr.strip().splitlines()
    assert code == 3 and len(lines) == 1, stderr
    assert "pip install 'lttw[train]'" in lines[0] and "lttw export" in lines[0]


def test_serve_without_torch(folders, tmp_path):
    """The real `lttw serve` (uvicorn, the CLI) in the guarded process."""
    import httpx
    from support.live_server import BOUND_S, until

    _, onnx = folders
    reference = load_predictor(onnx)
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    log = tmp_path / "serve.log"
    server = start_without(CLI, "serve", "--model", str(onnx), "--port", str(port), log=log)
    try:
        with httpx.Client(base_url=f"http://127.0.0.1:{port}", timeout=BOUND_S) as client:

            def up() -> bool:
                try:
                    return client.get("/health").status_code == 200
                except httpx.TransportError:
                    return server.poll() is not None

            until(up, "the slim server answered")
            assert server.poll() is None, log.read_text()
            served = [text for text in TEXTS if text.strip()]  # the server refuses "" (422)
            answer = client.post("/predict", json={"texts": served, "top_k": 4})
    finally:
        server.terminate()
        server.wait(BOUND_S)
    assert answer.status_code == 200, answer.text
    records = answer.json()["predictions"]
    assert [r["label"] for r in records] == reference.predict(served)
    np.testing.assert_allclose(_probs(records), reference.predict_proba(served), atol=1e-5)
    assert "onnx-fp32" in log.read_text()
