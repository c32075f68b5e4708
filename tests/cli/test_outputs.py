"""Files the pipeline and the CLI write (issue 13.3, 13.6): modes follow the umask like any
other tool; `lttw predict --out` refuses to overwrite without --force, does not create
folders, and names the user's path (never the hidden temporary file) when writing fails."""

from __future__ import annotations

import errno
import os
import stat

import numpy as np
import pandas as pd
import pytest
from support.cli_runner import assert_user_error
from typer.testing import CliRunner

from lttw import cli, io
from lttw.inference import batch_predict


@pytest.fixture
def umask():
    """Set a umask for one test; the old one is restored after."""
    old = os.umask(0o022)
    yield lambda mask: os.umask(mask)
    os.umask(old)


def mode(path) -> int:
    return stat.S_IMODE(os.stat(path).st_mode)


@pytest.mark.parametrize(
    "mask,file_mode,dir_mode", [(0o022, 0o644, 0o755), (0o002, 0o664, 0o775), (0o077, 0o600, 0o700)]
)
def test_atomic_writers_follow_the_umask(tmp_path, umask, mask, file_mode, dir_mode):
    umask(mask)
    io.write_json(tmp_path / "a.json", {"x": 1})
    io.write_parquet(tmp_path / "a.parquet", pd.DataFrame({"x": [1]}))
    io.write_arrays(tmp_path / "a.safetensors", x=np.zeros(2))
    with io.atomic_dir(tmp_path / "folder") as tmp:
        (tmp / "inside.txt").write_text("x")
    for name in ("a.json", "a.parquet", "a.safetensors"):
        assert mode(tmp_path / name) == file_mode, name
    assert mode(tmp_path / "folder") == dir_mode
    assert mode(tmp_path / "folder" / "inside.txt") == file_mode


class FakePredictor:
    classes = ["neg", "pos"]

    def predict_proba(self, texts, batch_size=64):
        return np.tile(np.array([[0.25, 0.75]], np.float32), (len(texts), 1))


@pytest.fixture
def predict(monkeypatch):
    monkeypatch.setattr(cli.predict, "open_model", lambda *a, **k: FakePredictor())

    def invoke(*args):
        return CliRunner().invoke(cli.app, ["predict", *map(str, args)])

    return invoke


def test_predict_out_refuses_to_overwrite_without_force(predict, tmp_path):
    out = tmp_path / "p.csv"
    out.write_text("precious\n")
    line = assert_user_error(predict("good", "--out", out))
    assert str(out) in line and "--force" in line
    assert out.read_text() == "precious\n"
    file_in = tmp_path / "in.txt"
    file_in.write_text("good\nbad\n")
    assert "--force" in assert_user_error(predict("--file", file_in, "--out", out))
    result = predict("--file", file_in, "--out", out, "--force")
    assert result.exit_code == 0, result.output
    assert pd.read_csv(out)["label"].tolist() == ["pos", "pos"]
    # never over the input itself, --force or not
    table = tmp_path / "in.csv"
    table.write_text("text\ngood\nbad\n")
    line = assert_user_error(predict("--file", table, "--out", table, "--force"))
    assert "is the input file" in line and table.read_text() == "text\ngood\nbad\n"


def test_predict_out_does_not_create_folders(predict, tmp_path):
    out = tmp_path / "missing" / "deeper" / "p.parquet"
    line = assert_user_error(predict("good", "--out", out))
    assert f"the folder {out.parent} does not exist" in line
    assert not (tmp_path / "missing").exists()
    (tmp_path / "x.csv").mkdir()
    assert "is a folder" in assert_user_error(
        predict("good", "--out", tmp_path / "x.csv", "--force")
    )


@pytest.mark.parametrize("filename", ["temporary", None])
def test_write_errors_name_the_users_path(predict, tmp_path, monkeypatch, filename):
    """A failing write (disk full, permissions) names --out, not `.p.csv.XXXX.tmp`."""

    def failing(frames, handle, sep):
        name = handle.name if filename == "temporary" else None
        raise OSError(errno.ENOSPC, "No space left on device", name)

    monkeypatch.setattr(batch_predict, "_write_csv", failing)
    out = tmp_path / "p.csv"
    line = assert_user_error(predict("good", "--out", out))
    assert line == f"error: {out}: cannot write (No space left on device)"
    assert list(tmp_path.iterdir()) == []  # no temporary left behind
