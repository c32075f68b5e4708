"""Command-line conventions (issue 39.6) and the Python API (39.5) on a tiny model folder:
``--version`` / ``-V``, ``-h``, exit code 2 for bad usage and 3 for bad input, ``predict
--json`` (JSON Lines), texts from stdin (``-``), ``--device`` defaulting to auto, and
``lttw.load_model(...).predict / predict_proba``."""

from __future__ import annotations

import json
import subprocess
import sys

import numpy as np
import pytest
from support.model_folders import build_model_folder
from typer.testing import CliRunner

import lttw
from lttw.cli import EXIT_BAD_INPUT, EXIT_USAGE, app, exit_code
from lttw.errors import DataError, UserError
from lttw.io import UnreadableFileError


@pytest.fixture(scope="module")
def folder(tmp_path_factory, tiny_encoder_dir):
    return build_model_folder(tmp_path_factory.mktemp("model") / "m", tiny_encoder_dir)


def invoke(*args, stdin: str | None = None):
    return CliRunner().invoke(app, [str(a) for a in args], input=stdin)


def test_version_and_short_help():
    for flag in ("--version", "-V"):
        result = invoke(flag)
        assert result.exit_code == 0 and result.stdout.strip() == f"lttw {lttw.__version__}"
    assert invoke("-h").exit_code == 0 and "predict" in invoke("-h").stdout
    shown = invoke("predict", "-h")
    assert shown.exit_code == 0 and "--json" in shown.stdout
    assert "auto" in shown.stdout.split("--device", 1)[1][:300]  # --device [default: auto]
    assert invoke("data", "check", "-h").exit_code == 0


def test_exit_codes_tell_usage_from_bad_input(tmp_path):
    assert (EXIT_USAGE, EXIT_BAD_INPUT) == (2, 3)
    assert invoke("predict", "--no-such-option").exit_code == 2  # click's usage error
    assert invoke("predict").exit_code == 2  # neither TEXT nor --file
    assert invoke("predict", "hi", "--model", tmp_path).exit_code == 3  # not a model folder
    assert invoke("predict", "--file", tmp_path / "no.txt", "--out", "x.csv").exit_code == 3
    assert exit_code(DataError("x")) == exit_code(UnreadableFileError("x")) == 3
    assert exit_code(FileNotFoundError(2, "no", "f")) == 3
    assert exit_code(UserError("x")) == 2


def test_predict_json_lines_from_arguments_and_stdin(folder):
    texts = ["a good movie", "a bad film, really"]
    from_args = invoke("predict", *texts, "--json", "--model", folder)
    assert from_args.exit_code == 0, from_args.output
    records = [json.loads(line) for line in from_args.stdout.splitlines()]
    assert [r["text"] for r in records] == texts
    for r in records:
        assert set(r) == {"text", "label", "prob", "probs"}
        assert r["probs"][r["label"]] == r["prob"] == max(r["probs"].values())
        assert abs(sum(r["probs"].values()) - 1) < 1e-4
    from_stdin = invoke("predict", "-", "--json", "--model", folder, stdin="\n".join(texts) + "\n")
    assert from_stdin.exit_code == 0 and from_stdin.stdout == from_args.stdout
    empty = invoke("predict", "-", "--model", folder, stdin="\n \n")
    assert empty.exit_code == 3 and "stdin" in empty.stderr
    mixed = invoke("predict", "hi", "--json", "--out", "x.csv", "--model", folder)
    assert mixed.exit_code == 2 and "--json" in mixed.stderr


def test_python_api(folder):
    model = lttw.load_model(folder, device="cpu")
    assert isinstance(model, lttw.Predictor)
    texts = ["a good movie", "a bad film"]
    probs = model.predict_proba(texts)
    assert probs.shape == (2, len(model.classes)) and np.allclose(probs.sum(axis=1), 1, atol=1e-4)
    assert model.predict(texts) == [model.classes[i] for i in probs.argmax(axis=1)]
    with pytest.raises(UserError, match="not a trained model folder"):
        lttw.load_model(folder.parent / "nothing")


def test_import_lttw_loads_no_torch():
    code = "import sys, lttw; print(sorted(m for m in ('torch', 'numpy', 'pandas') if m in sys.modules))"
    out = subprocess.run([sys.executable, "-c", code], check=True, capture_output=True, text=True)
    assert out.stdout.strip() == "[]"
    assert "load_model" in lttw.__all__ and lttw.load_model.__doc__
