"""Share and load a model folder by hub id (issue 64, item 3): `lttw push`, then
`lttw.load_model("org/name")` and `lttw predict --model org/name` through
``snapshot_download`` and its cache, against the stand-in hub (tests/support/stand_in_hub.py).
Offline with a warm cache works; everything else that fails is one line, exit 3."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import numpy as np
import pytest
from support.cli_runner import assert_user_error, invoke
from support.serving_models import shared_lttw_folder
from support.stand_in_hub import set_offline

import lttw
from lttw.errors import UserError

TEXTS = ["stocks rally as oil prices fall", "late goal wins the match"]


@pytest.fixture(scope="module")
def checked_folder(tmp_path_factory, tiny_encoder_dir) -> Path:
    """The tiny model folder (the sha256 of every file in its lttw.json) with a file the
    loader does not read."""
    from lttw.models.folder_files import record_checksums

    folder = tmp_path_factory.mktemp("shared") / "model"
    shutil.copytree(shared_lttw_folder(tmp_path_factory, tiny_encoder_dir), folder)
    (folder / "notes.txt").write_text("not read by the loader")
    record_checksums(folder)
    return folder


def push(folder: Path, *args: str):
    result = invoke("push", folder, "org/tiny", *args)
    assert result.exit_code == 0, result.output
    return result


def test_push_then_load_by_hub_id_gives_the_same_probabilities(stand_in_hub, checked_folder):
    push(checked_folder)
    push(checked_folder, "--revision", "v1")  # a second branch; the repo exists already
    stored = stand_in_hub.stored("org/tiny", branch="v1")
    assert "lttw.json" in stored and "notes.txt" not in stored  # only what the loader reads
    local = lttw.load_model(checked_folder, device="cpu").predict_proba(TEXTS)
    shared = lttw.load_model("org/tiny", device="cpu", revision="v1")
    np.testing.assert_allclose(shared.predict_proba(TEXTS), local, rtol=1e-6)
    result = invoke("predict", *TEXTS, "--model", "org/tiny", "--revision", "v1", "--json")
    assert result.exit_code == 0, result.output
    assert len(result.stdout.strip().splitlines()) == 2


def test_a_tampered_download_is_refused(stand_in_hub, checked_folder):
    push(checked_folder)
    labels = stand_in_hub.stored("org/tiny")["labels.json"]
    stand_in_hub.files("org/tiny", {"labels.json": labels.replace(b"[", b"[ ")})
    result = invoke("predict", TEXTS[0], "--model", "org/tiny")
    assert_user_error(result, "labels.json", "changed since", code=3)


def test_offline_a_warm_cache_serves_and_a_cold_one_is_one_line(
    stand_in_hub, checked_folder, monkeypatch
):
    push(checked_folder)
    online = invoke("predict", TEXTS[0], "--model", "org/tiny", "--json")
    assert online.exit_code == 0, online.output
    set_offline(monkeypatch, True)
    stand_in_hub.shutdown()  # nothing answers now
    warm = invoke("predict", TEXTS[0], "--model", "org/tiny", "--json")
    assert warm.exit_code == 0, warm.output
    assert warm.stdout == online.stdout
    cold = invoke("predict", TEXTS[0], "--model", "org/other")
    assert_user_error(cold, "org/other", "not in the local hub cache", "HF_HUB_OFFLINE", code=3)


def test_a_repo_or_revision_that_does_not_exist_is_one_line(stand_in_hub, checked_folder):
    assert_user_error(
        invoke("predict", "x", "--model", "org/nothing"), "org/nothing", "no such model", code=3
    )
    push(checked_folder)
    assert_user_error(
        invoke("predict", "x", "--model", "org/tiny", "--revision", "v9"),
        "revision v9",
        "no such revision",
        code=3,
    )
    with pytest.raises(UserError, match="no such revision"):
        lttw.load_model("org/tiny", revision="v9")


def test_a_folder_that_fails_verify_is_never_pushed(stand_in_hub, checked_folder, tmp_path):
    folder = tmp_path / "model"
    shutil.copytree(checked_folder, folder)
    (folder / "labels.json").write_text('["a", "b"]')
    assert_user_error(invoke("push", folder, "org/tiny"), "not pushed", "labels.json", code=3)
    unrecorded = tmp_path / "unrecorded"
    shutil.copytree(checked_folder, unrecorded)
    meta = json.loads((unrecorded / "lttw.json").read_text())
    del meta["sha256"]
    (unrecorded / "lttw.json").write_text(json.dumps(meta))
    result = invoke("push", unrecorded, "org/tiny")
    assert_user_error(result, "not pushed", "lttw.json: no checksums recorded", code=3)
    assert not stand_in_hub.repos and not [r for r in stand_in_hub.requests if "POST" in r]
