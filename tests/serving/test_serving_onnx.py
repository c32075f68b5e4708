"""`lttw export --onnx [--int8]` on tiny models: the ONNX classifier (encoder, factor fusion,
Linformer, head) gives torch's probabilities, `lttw predict` runs it, the export checks itself
and writes nothing when the check fails; int8 is checked by macro F1 on labelled texts."""

from __future__ import annotations

import json
import re
import shutil
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from support.cli_runner import assert_user_error, invoke
from support.model_folders import build_model_folder
from support.serving_models import CLASSES, labelled_texts, shared_lttw_folder

from lttw.errors import UserError
from lttw.inference.loading import backend_name, load_predictor
from lttw.inference.predict import Predictor
from lttw.models.folder_files import record_checksums
from lttw.models.onnx_classifier import OnnxClassifier
from lttw.serving import onnx_export

#: texts of other lengths than the traced batch's (dynamic batch and sequence axes)
TEXTS = [
    "oil",
    "the team won the match in the last minute of the season",
    "stock market news",
    "",
    "computer internet " * 20,
]


@pytest.fixture(scope="module")
def lttw_dir(tmp_path_factory, tiny_encoder_dir) -> Path:
    return shared_lttw_folder(tmp_path_factory, tiny_encoder_dir)


@pytest.fixture(scope="module")
def check_file(tmp_path_factory) -> Path:
    texts, labels = labelled_texts()
    path = tmp_path_factory.mktemp("check") / "held_out.csv"
    pd.DataFrame({"text": texts, "label": [CLASSES[i] for i in labels]}).to_csv(path, index=False)
    return path


@pytest.fixture(scope="module")
def fp32_dir(lttw_dir, check_file, tmp_path_factory) -> tuple[Path, str]:
    out = tmp_path_factory.mktemp("onnx") / "fp32"
    result = invoke(
        "export", "--model", lttw_dir, "--out", out, "--onnx", "--check-file", check_file
    )
    assert result.exit_code == 0, result.output
    return out, result.stderr + result.stdout


def test_fp32_export_matches_torch(lttw_dir, fp32_dir):
    out, log = fp32_dir
    assert "ONNX fp32 vs torch on 24 held-out texts: same label on 100.00%" in log
    assert "passed" in log and "macro F1" in log
    record = json.loads((out / "onnx.json").read_text())
    assert record["precision"] == "fp32" and record["check"]["passed"]
    assert record["inputs"] == ["input_ids", "attention_mask", "factors"]
    onnx, torch_ = load_predictor(out), Predictor.load(lttw_dir)
    assert isinstance(onnx.model, OnnxClassifier) and backend_name(onnx) == "onnx-fp32"
    np.testing.assert_allclose(
        onnx.predict_proba(TEXTS, batch_size=2), torch_.predict_proba(TEXTS), atol=1e-5
    )


def test_an_onnx_export_holds_no_torch_weights_and_says_both_sizes(lttw_dir, fp32_dir):
    out, log = fp32_dir
    assert not (out / "model.safetensors").exists()  # it runs on model.onnx alone
    assert re.search(rf"exported {lttw_dir} \(\d+\.\d MB\) to {out} \(\d+\.\d MB;", log), log
    with pytest.raises(UserError, match="an ONNX export, without torch weights"):
        load_predictor(out, backend="torch")


def test_an_onnx_part_with_an_edited_max_len_is_one_line(fp32_dir, tmp_path):
    """max_len 32 -> 64 in an ONNX folder's lttw.json: verify and predict refuse it in one
    line (the settings' checksum; with the checksums recorded again after the edit, the
    classifier's own max_len)."""
    folder = tmp_path / "edited"
    shutil.copytree(fp32_dir[0], folder)
    meta = json.loads((folder / "lttw.json").read_text())
    (folder / "lttw.json").write_text(json.dumps({**meta, "max_len": 64}))
    assert_user_error(invoke("verify", folder), "lttw.json", "settings changed", code=3)
    assert_user_error(invoke("predict", "--model", folder, "hi"), "lttw.json", code=3)
    record_checksums(folder)
    for args in (("verify", folder), ("predict", "--model", folder, "hi")):
        assert_user_error(invoke(*args), "lttw.json", "max_len = 64", "built for 32", code=3)


def test_an_onnx_record_without_its_precision_is_one_line(fp32_dir, tmp_path):
    """onnx.json without "precision" (checksums recorded again after the edit): predict
    refuses the folder in one line naming onnx.json, never guessing fp32."""
    folder = tmp_path / "no-precision"
    shutil.copytree(fp32_dir[0], folder)
    record = json.loads((folder / "onnx.json").read_text())
    del record["precision"]
    (folder / "onnx.json").write_text(json.dumps(record))
    record_checksums(folder)
    assert_user_error(
        invoke("predict", "--model", folder, "hi"), "onnx.json", "no precision", code=3
    )


def test_predict_runs_the_onnx_folder(lttw_dir, fp32_dir, tmp_path):
    out, _ = fp32_dir
    frames = []
    for folder, name in ((lttw_dir, "torch.csv"), (out, "onnx.csv")):
        result = invoke("predict", "--model", folder, "--out", tmp_path / name, *TEXTS)
        assert result.exit_code == 0, result.output
        frames.append(pd.read_csv(tmp_path / name, keep_default_na=False))
    assert frames[0]["label"].tolist() == frames[1]["label"].tolist()
    np.testing.assert_allclose(frames[0]["prob"], frames[1]["prob"], atol=1e-5)


def test_int8_export_is_checked_by_macro_f1(lttw_dir, fp32_dir, check_file, tmp_path):
    out = tmp_path / "int8"
    # the tolerance is opened here: the tiny random encoder is no measure of int8's accuracy
    result = invoke(
        "export",
        "--model",
        lttw_dir,
        "--out",
        out,
        "--int8",
        "--check-file",
        check_file,
        "--max-f1-drop",
        "1",
    )
    assert result.exit_code == 0, result.output
    assert "ONNX int8 vs torch on 24 held-out texts" in result.stderr
    assert "int8: macro F1 within ±1.0 of torch's" in result.stderr
    assert not (out / "model.safetensors").exists()  # it runs on model.onnx alone
    explained = invoke("explain", "a text", "--model", out)  # on onnxruntime, as predict
    assert explained.exit_code == 0, explained.output
    record = json.loads((out / "onnx.json").read_text())
    assert record["precision"] == "int8" and record["check"]["f1_torch"] == 1.0
    assert backend_name(load_predictor(out)) == "onnx-int8"
    assert load_predictor(out).predict_proba(TEXTS).shape == (len(TEXTS), len(CLASSES))


def test_int8_needs_labelled_texts(lttw_dir, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)  # no data/sample/test.parquet here
    assert_user_error(
        invoke("export", "--model", lttw_dir, "--out", tmp_path / "x", "--int8"), "--check-file"
    )
    assert not (tmp_path / "x").exists()


def test_a_failed_check_writes_nothing(lttw_dir, check_file, tmp_path, monkeypatch):
    monkeypatch.setattr(onnx_export, "FP32_ATOL", -1.0)  # no export can pass
    result = invoke(
        "export", "--model", lttw_dir, "--out", tmp_path / "x", "--onnx", "--check-file", check_file
    )
    assert result.exit_code == 2 and "Traceback" not in result.output
    last = result.stderr.strip().splitlines()[-1]  # after the export's progress lines
    assert last.startswith("error: the ONNX fp32 export fails its check") and "FAILED" in last
    assert list(tmp_path.iterdir()) == []  # no folder, no temporary left


def test_compare_fails_int8_below_the_f1_tolerance():
    class Fixed:
        classes = ["a", "b"]

        def __init__(self, probs):
            self.probs = np.asarray(probs, np.float32)

        def predict_proba(self, texts):
            return self.probs

    right, one_wrong = Fixed([[0.9, 0.1], [0.2, 0.8]]), Fixed([[0.9, 0.1], [0.6, 0.4]])
    check = onnx_export.compare(right, one_wrong, ["x", "y"], np.array([0, 1]), int8=True)
    assert not check.passed and check.same_labels == 0.5 and check.f1_torch == 1.0
    assert onnx_export.compare(right, right, ["x", "y"], np.array([0, 1]), int8=True).passed
    # two-sided: an int8 model that scores higher than torch is a changed model too
    better = onnx_export.compare(one_wrong, right, ["x", "y"], np.array([0, 1]), int8=True)
    assert not better.passed and better.f1_onnx > better.f1_torch


@pytest.mark.parametrize("pooling", ["cls", "mean"])
def test_encoder_variant_without_factors(tmp_path, tiny_encoder_dir, monkeypatch, pooling):
    monkeypatch.chdir(tmp_path)  # no data/sample/test.parquet here, whatever the checkout holds
    folder = build_model_folder(tmp_path / "encoder", tiny_encoder_dir, pooling)
    result = invoke("export", "--model", folder, "--out", tmp_path / "onnx", "--onnx")
    assert result.exit_code == 0, result.output
    assert "on 4 probe texts" in result.stderr  # no labelled sample: label parity only
    onnx = load_predictor(tmp_path / "onnx")
    assert onnx.model.inputs == ["input_ids", "attention_mask"]
    np.testing.assert_allclose(
        onnx.predict_proba(TEXTS), Predictor.load(folder).predict_proba(TEXTS), atol=1e-5
    )


def test_a_damaged_onnx_file_is_one_line(fp32_dir, tmp_path):

    folder = tmp_path / "damaged"
    shutil.copytree(fp32_dir[0], folder)
    (folder / "model.onnx").write_bytes(b"not a protobuf")
    # the export recorded its sha256: the changed file is named before it is read
    assert_user_error(
        invoke("predict", "--model", folder, "hello"), "model.onnx", "changed since", code=3
    )
    record_checksums(folder)  # recorded again after the damage: the ONNX check fires
    assert_user_error(
        invoke("predict", "--model", folder, "hello"),
        "model.onnx",
        "not a loadable ONNX model",
        code=3,
    )


def test_a_single_label_check_sample_of_a_multi_label_model_is_one_clear_error(tmp_path):
    from lttw.errors import UserError
    from lttw.serving.check_sample import read_labelled

    path = tmp_path / "check.parquet"
    pd.DataFrame({"text": ["a", "b"], "label": [0, 1]}).to_parquet(path)
    with pytest.raises(UserError, match="one label per text, but the model is multi-label"):
        read_labelled(path, CLASSES, 10, True)
    lists = tmp_path / "lists.parquet"
    pd.DataFrame({"text": ["a", "b"], "label": [[0, 1], [1]]}).to_parquet(lists)
    texts, labels = read_labelled(lists, CLASSES, 10, True)
    assert texts == ["a", "b"] and labels[:, :2].tolist() == [[1, 1], [0, 1]]
