"""`lttw export` of an ensemble (lttw_tfidf) folder: every part folder is copied with the
ensemble's own files, the copy verifies (`lttw verify`) and predicts as the source does
(`lttw predict`); with `--onnx` the neural part gets its model.onnx (checked against torch)
and the tf-idf part is copied as it is, and `lttw predict` runs the ONNX part. The ensemble
here: the tiny random BERT encoder folder as its first part, a small tf-idf model as its
second (the parts' training is the train stage's, tested elsewhere)."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import numpy as np
import pytest
from support.cli_runner import assert_user_error, invoke
from support.model_folders import build_model_folder

from lttw.models.bundle import write_model_folder
from lttw.models.ensemble import EnsembleWeights
from lttw.models.folder_files import record_checksums
from lttw.models.tfidf import fit_tfidf_linear
from lttw.settings import ModelSettings, Settings

CLASSES = ["neg", "pos"]
TEXTS = ["bad awful poor", "good great fine", "poor bad", "great good", "awful", "fine"] * 5
PROBE = ["good and great", "an awful bad day"]


@pytest.fixture(scope="module")
def ensemble_dir(tmp_path_factory, tiny_encoder_dir) -> Path:
    root = tmp_path_factory.mktemp("ensemble_export") / "model"
    root.mkdir()
    settings = Settings(model=ModelSettings(variant="lttw_tfidf"))
    write_model_folder(root, CLASSES, settings.model, 0, counts=settings.counts, seed=0)
    EnsembleWeights(("lttw", "tfidf_linear"), (0.4, 0.6)).save(root)
    build_model_folder(root / "lttw", tiny_encoder_dir)
    tfidf = root / "tfidf_linear"
    tfidf.mkdir()
    labels = [0 if "bad" in t or "awful" in t or "poor" in t else 1 for t in TEXTS]
    fit_tfidf_linear(TEXTS, labels, 2).save(tfidf)
    linear = Settings(model=ModelSettings(variant="tfidf_linear"))
    write_model_folder(tfidf, CLASSES, linear.model, 0, counts=linear.counts, seed=0)
    (tfidf / "notes.md").write_text("not a file of the model\n")
    record_checksums(root)
    return root


def _probs(folder: Path) -> np.ndarray:
    result = invoke("predict", "--model", folder, "--json", *PROBE)
    assert result.exit_code == 0, result.output
    rows = [json.loads(line) for line in result.stdout.splitlines() if line.strip()]
    rows = rows[0] if len(rows) == 1 and isinstance(rows[0], list) else rows
    return np.array([[row["probs"][c] for c in CLASSES] for row in rows])


def test_an_ensemble_exports_with_its_parts(ensemble_dir, tmp_path):
    out = tmp_path / "exported"
    result = invoke("export", "--model", ensemble_dir, "--out", out)
    assert result.exit_code == 0, result.output
    assert "left out 1 files the loader does not read: tfidf_linear/notes.md" in result.stderr
    for part in ("lttw", "tfidf_linear"):
        assert (out / part / "lttw.json").is_file() and (out / part / "config.json").is_file()
    assert not (out / "tfidf_linear" / "notes.md").exists()
    verified = invoke("verify", out)
    assert verified.exit_code == 0, verified.output
    assert "not checked" not in verified.stdout
    assert np.allclose(_probs(out), _probs(ensemble_dir), atol=1e-6)


def test_an_ensemble_exports_its_neural_part_as_onnx(ensemble_dir, tmp_path):
    out = tmp_path / "onnx"
    result = invoke("export", "--model", ensemble_dir, "--out", out, "--onnx")
    assert result.exit_code == 0, result.output
    assert "the tfidf_linear part reads raw texts: copied as it is" in result.stderr
    assert (out / "lttw" / "model.onnx").is_file() and (out / "lttw" / "onnx.json").is_file()
    assert not (out / "tfidf_linear" / "model.onnx").exists()
    verified = invoke("verify", out)
    assert verified.exit_code == 0, verified.output
    from lttw.inference.loading import backend_name, load_predictor

    predictor = load_predictor(out)
    assert backend_name(predictor) == "onnx-fp32+texts"
    assert np.allclose(_probs(out), _probs(ensemble_dir), atol=1e-4)


def test_a_stray_file_in_a_part_fails_verify(ensemble_dir):
    """tfidf_linear/notes.md: not a file its loader reads (loading skips it)."""
    assert_user_error(invoke("verify", ensemble_dir), "tfidf_linear/notes.md", code=3)


def test_an_edited_part_lttw_json_fails_verify(ensemble_dir, tmp_path):
    folder = tmp_path / "model"
    shutil.copytree(ensemble_dir, folder)
    (folder / "tfidf_linear" / "notes.md").unlink()
    assert invoke("verify", folder).exit_code == 0
    part_meta = folder / "lttw" / "lttw.json"
    meta = json.loads(part_meta.read_text())
    part_meta.write_text(json.dumps({**meta, "seed": 7}))  # a key outside the part's settings
    assert_user_error(invoke("verify", folder), "lttw/lttw.json", "changed since", code=3)
