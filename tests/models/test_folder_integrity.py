"""Model folder integrity (issue 41, items 2, 7, 8's export, 9's folder side): the sha256
of every file recorded in lttw.json, checked on load and by `lttw verify`; a file changed in
place with its size and time kept is caught, naming it; a missing file is an error, never a
silently wrong answer; `lttw export` copies only what the loader reads; a folder states its
precision; a folder without checksums is refused until `lttw verify --record` records them.
Through the real command (typer's CliRunner) on the tiny model folder."""

from __future__ import annotations

import json
import os
import shutil
from pathlib import Path

import pytest
from support.serving_models import shared_lttw_folder
from typer.testing import CliRunner

from lttw import cli

WEIGHTS = "model.safetensors"
STRAY = ["model.pt", "pytorch_model.bin", "tokenizer/pytorch_model.bin", "notes/readme.md"]


def invoke(*args) -> object:
    return CliRunner().invoke(cli.app, [str(a) for a in args])


def error_line(result, *needles: str) -> str:
    assert result.exit_code == 3, result.output  # bad input (lttw.cli.EXIT_BAD_INPUT)
    assert "Traceback" not in result.output
    lines = result.stderr.strip().splitlines()
    assert lines and lines[-1].startswith("error: "), result.stderr
    for needle in needles:
        assert needle in lines[-1], lines[-1]
    return lines[-1]


@pytest.fixture(scope="module")
def stray_folder(tmp_path_factory, tiny_encoder_dir) -> Path:
    """The tiny model folder (its checksums recorded), with stray files the loader does not
    read."""
    source = shared_lttw_folder(tmp_path_factory, tiny_encoder_dir)
    folder = tmp_path_factory.mktemp("stray") / "model"
    shutil.copytree(source, folder)
    for name in STRAY:
        (folder / name).parent.mkdir(exist_ok=True)
        (folder / name).write_bytes(b"not read by the loader")
    return folder


@pytest.fixture(scope="module")
def exported(stray_folder, tmp_path_factory) -> Path:
    out = tmp_path_factory.mktemp("export") / "model"
    result = invoke("export", "--model", stray_folder, "--out", out)
    assert result.exit_code == 0, result.output
    assert "left out 4 files the loader does not read" in result.stderr
    return out


def copy_of(folder: Path, tmp_path: Path) -> Path:
    dest = tmp_path / "model"
    shutil.copytree(folder, dest)
    return dest


def test_export_copies_only_what_the_loader_reads_and_records_every_file(exported):
    files = sorted(p.relative_to(exported).as_posix() for p in exported.rglob("*") if p.is_file())
    assert not set(STRAY) & set(files)
    meta = json.loads((exported / "lttw.json").read_text())
    assert sorted(meta["sha256"]) == files  # lttw.json: the digest of its settings
    assert meta["precision"] == "fp32"
    result = invoke("verify", exported)
    assert result.exit_code == 0, result.output
    assert f"{len(files)} files match their recorded sha256" in result.stdout


def test_a_file_changed_in_place_with_size_and_time_kept_is_caught(exported, tmp_path):
    folder = copy_of(exported, tmp_path)
    before = invoke("predict", "stocks rally as oil prices fall", "--model", folder)
    assert before.exit_code == 0, before.output
    factors = folder / "factors" / "latent_factors.safetensors"
    stat = factors.stat()
    data = bytearray(factors.read_bytes())
    data[-5] ^= 0x01  # one bit of one factor
    factors.write_bytes(bytes(data))
    os.utime(factors, ns=(stat.st_atime_ns, stat.st_mtime_ns))
    assert factors.stat().st_size == stat.st_size
    for command in (["predict", "hi"], ["explain", "hi"]):
        error_line(invoke(*command, "--model", folder), str(factors), "changed since")
    error_line(invoke("verify", folder), str(factors), "sha256")


def test_a_recorded_file_missing_or_an_unrecorded_one_added_is_an_error(exported, tmp_path):
    folder = copy_of(exported, tmp_path)
    (folder / "tokenizer" / "tokenizer.json").unlink()
    error_line(
        invoke("explain", "stocks rally", "--model", folder),
        str(folder / "tokenizer" / "tokenizer.json"),
        "missing",
    )
    folder = copy_of(exported, tmp_path / "2")
    (folder / "tokenizer" / "vocab.txt").write_text("[PAD]\n[UNK]\n")
    error_line(
        invoke("predict", "hi", "--model", folder),
        str(folder / "tokenizer" / "vocab.txt"),
        "not among the checksums",
    )
    error_line(invoke("verify", folder), "vocab.txt")


def test_a_folder_without_checksums_is_refused_until_verify_records_them(stray_folder, tmp_path):
    """No sha256 in lttw.json (a folder assembled by hand): every load and `lttw verify`
    refuse it in one line naming lttw.json; `lttw verify --record` records them (never over
    recorded ones), after which it loads."""
    folder = copy_of(stray_folder, tmp_path)
    meta_path = folder / "lttw.json"
    meta = json.loads(meta_path.read_text())
    del meta["sha256"]
    meta_path.write_text(json.dumps(meta))
    out = tmp_path / "exported"
    for command in (["predict", "hi", "--model"], ["export", "--out", out, "--model"], ["verify"]):
        error_line(invoke(*command, folder), str(meta_path), "no checksums recorded", "--record")
    assert not out.exists()
    result = invoke("verify", "--record", folder)
    assert result.exit_code == 0, result.output
    assert "files match their recorded sha256" in result.stdout
    assert "pytorch_model.bin" in result.stdout  # listed as not read, not checked
    assert invoke("predict", "stocks rally", "--model", folder).exit_code == 0
    error_line(invoke("verify", "--record", folder), str(meta_path), "already recorded")


@pytest.mark.parametrize(
    "missing",
    [
        "tokenizer/tokenizer.json",
        "tokenizer/tokenizer_config.json",
        "factors/latent_factors.safetensors",
        "factors/vocabulary.json",
        "labels.json",
        WEIGHTS,
    ],
)
def test_a_needed_file_missing_is_an_error_whatever_is_recorded(stray_folder, tmp_path, missing):
    """The issue's reproduction: without tokenizer/tokenizer.json every word became [UNK]
    and the command exited 0. The checksums are recorded again without the file, so that
    what fires is the check of the files a load needs."""
    from lttw.models.folder_files import record_checksums

    folder = copy_of(stray_folder, tmp_path)
    (folder / missing).unlink()
    record_checksums(folder)
    for command in (["explain", "stocks rally as oil prices fall"], ["predict", "hi"]):
        error_line(invoke(*command, "--model", folder), str(folder / missing), "missing (no ")


def test_a_precision_this_lttw_does_not_run_is_refused(exported, tmp_path):
    folder = copy_of(exported, tmp_path)
    meta_path = folder / "lttw.json"
    meta = json.loads(meta_path.read_text())
    meta["precision"] = "bf16"
    meta_path.write_text(json.dumps(meta))
    error_line(invoke("predict", "hi", "--model", folder), "lttw.json", "precision 'bf16'")


def test_inference_runs_fp32_where_training_had_bf16(exported, monkeypatch):
    """The one precision rule: no bf16 autocast at inference, even where the CPU has bf16
    and the settings ask for it (as the evaluate stage's train.bf16 did)."""
    import lttw.device
    from lttw.inference.predict import Predictor, inference_runtime

    monkeypatch.setattr(lttw.device, "cpu_supports_bf16", lambda: True)
    assert not inference_runtime("cpu").bf16
    assert not Predictor.load(exported).runtime.bf16


@pytest.mark.parametrize(
    "key, value, needle",
    [
        ("max_len", 10**9, "max_len = 1000000000"),
        ("max_len", -1, "max_len = -1"),
        ("k", -5, "k = -5"),
        ("s", 100000, "s = 100000"),
        ("variant", "nope", "variant = 'nope'"),
    ],
)
def test_model_settings_out_of_range_are_refused_before_any_allocation(
    exported, tmp_path, key, value, needle
):
    """lttw.json's model settings are checked against the pipeline's typed settings on
    load (lttw predict, lttw serve, the Python API): one line naming the file and the key."""
    from lttw.errors import UserError
    from lttw.inference.predict import Predictor

    folder = copy_of(exported, tmp_path)
    meta_path = folder / "lttw.json"
    meta_path.write_text(json.dumps({**json.loads(meta_path.read_text()), key: value}))
    error_line(invoke("predict", "hi", "--model", folder), "lttw.json", needle)
    with pytest.raises(UserError, match="damaged or edited"):
        Predictor.load(folder, "cpu")
