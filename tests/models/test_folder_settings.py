"""One reading of a model folder (``ModelFolder.open``, issue 64 item 1, issue 66 defect 4):
lttw.json's settings edited inside their ranges (k + s against the fusion's factor rows, a
word pattern of exponential cost) fail `lttw verify` and `lttw predict` in one line, exit 3:
edited after the checksums were recorded (the settings' digest), and with the checksums
recorded again after the edit (checked against the weights);
a bug inside a backend is raised as itself, never called a damaged folder. Through the real
command on the tiny LTTW folder (k = 4, s = 4: 8 factor rows)."""

from __future__ import annotations

import json
import shutil
import time
from pathlib import Path

import pytest
from support.cli_runner import assert_user_error, invoke
from support.serving_models import shared_lttw_folder

from lttw.errors import UserError
from lttw.models.folder_files import record_checksums


@pytest.fixture(scope="module")
def lttw_dir(tmp_path_factory, tiny_encoder_dir) -> Path:
    return shared_lttw_folder(tmp_path_factory, tiny_encoder_dir)


def edited(source: Path, tmp_path: Path, record: bool, **changes) -> Path:
    """A copy of ``source`` with lttw.json edited; ``record``: its checksums recorded again
    after the edit (so that the checks after the checksums' are what fires)."""
    folder = tmp_path / "model"
    shutil.copytree(source, folder)
    meta = json.loads((folder / "lttw.json").read_text())
    for key, value in changes.items():
        target = meta
        *path, last = key.split(".")
        for part in path:
            target = target[part]
        target[last] = value
    (folder / "lttw.json").write_text(json.dumps(meta))
    if record:
        record_checksums(folder)
    return folder


@pytest.mark.parametrize("change", [{"k": 2}, {"s": 0}, {"k": 11}], ids=["k2", "s0", "k11"])
@pytest.mark.parametrize("record", [False, True], ids=["as-recorded", "recorded-again"])
def test_edited_k_or_s_fails_verify_and_predict(lttw_dir, tmp_path, change, record):
    folder = edited(lttw_dir, tmp_path, record, **change)
    why = "the weights fuse 8 factor rows" if record else "settings changed"
    assert_user_error(invoke("verify", folder), "lttw.json", why, code=3)
    assert_user_error(invoke("predict", "--model", folder, "oil prices"), "lttw.json", why, code=3)


def test_an_exponential_word_pattern_is_refused_quickly(lttw_dir, tmp_path):
    folder = edited(lttw_dir, tmp_path, True, **{"words.token_pattern": "(a|a)*b"})
    start = time.perf_counter()
    result = invoke("predict", "--model", folder, "a" * 20)  # 2**20 steps before: exit 0
    assert_user_error(result, "lttw.json: words.token_pattern", "(a|a)*b", code=3)
    assert time.perf_counter() - start < 5
    assert_user_error(invoke("verify", folder), "words.token_pattern", code=3)


def test_a_bug_inside_a_backend_is_not_a_damaged_folder(lttw_dir, monkeypatch):
    import lttw.inference.predict as predict

    def broken(folder, device="cpu"):
        raise ValueError("a bug in the backend")

    monkeypatch.setattr(predict, "folder_classifier", broken)
    with pytest.raises(ValueError, match="a bug in the backend"):
        predict.Predictor.load(lttw_dir)


def test_load_model_names_a_missing_folder(tmp_path):
    import lttw

    with pytest.raises(UserError, match="not a trained model folder"):
        lttw.load_model(tmp_path / "missing", revision=None)
