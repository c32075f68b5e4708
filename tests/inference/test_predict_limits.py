"""`lttw predict --file` against inputs that must not take it down or fool it (issue 41,
items 1 and 10): a line of megabytes is read in bounded pieces and refused (naming its line)
or cut with --truncate, with no temporary file left behind; CSV and parquet rows are held to
the same cap; a folder or FIFO given to --file is reported as what it is; a UTF-8 error
names the line it is on. Through the real command (typer's CliRunner) on the tiny model."""

from __future__ import annotations

import io
import os
from pathlib import Path

import pandas as pd
import pytest
from support.serving_models import shared_lttw_folder
from typer.testing import CliRunner

from lttw import cli
from lttw.errors import DataError
from lttw.inference.text_lines import _SKIP_BLOCK as SKIP_BLOCK
from lttw.inference.text_lines import LineCap, bounded_lines

LONG = 3 * 1024 * 1024  # a few MB on one line: the 1 GB case, scaled down


@pytest.fixture(scope="module")
def model(tmp_path_factory, tiny_encoder_dir) -> Path:
    return shared_lttw_folder(tmp_path_factory, tiny_encoder_dir)


def predict(model: Path, *args: str):
    return CliRunner().invoke(cli.app, ["predict", *map(str, args), "--model", str(model)])


def error_line(result, *needles: str) -> str:
    """Exit code 2, no traceback, the last stderr line 'error: ...' holding the needles."""
    assert result.exit_code == 2, result.output
    assert "Traceback" not in result.output
    line = result.stderr.strip().splitlines()[-1]
    assert line.startswith("error: "), result.stderr
    for needle in needles:
        assert needle in line, line
    return line


def long_line_file(folder: Path, name: str = "texts.txt") -> Path:
    path = folder / name
    with open(path, "wb") as handle:
        handle.write(b"stocks rally as oil prices fall\n")
        handle.write(b"x" * LONG + b"\n")
        handle.write(b"late goal wins the match\n")
    return path


class RecordingReader(io.BufferedReader):
    """A binary file that records the largest piece one read handed back."""

    largest = 0

    def readline(self, size=-1):
        piece = super().readline(size)
        self.largest = max(self.largest, len(piece))
        return piece


@pytest.mark.parametrize("max_chars", [10, 1000, 10_000])
def test_a_long_line_is_read_in_bounded_pieces_and_cut_to_the_cap(tmp_path, max_chars):
    path = long_line_file(tmp_path)
    cap = LineCap(max_chars, truncate=True)
    with RecordingReader(io.FileIO(path)) as handle:
        texts = list(bounded_lines(handle, path, cap))
        largest = handle.largest
    assert [len(t) for t in texts] == [
        min(31, max_chars),
        max_chars,
        min(24, max_chars),
    ]
    # never the whole line: one read returns at most the cap's bytes (or a skipped block)
    assert largest <= max(4 * max_chars + 3, SKIP_BLOCK) < LONG
    assert cap.cut == 1 + (max_chars < 31) + (max_chars < 24)


def test_a_long_line_is_refused_naming_it_before_it_is_read_whole(tmp_path):
    path = long_line_file(tmp_path)
    with RecordingReader(io.FileIO(path)) as handle:
        with pytest.raises(DataError, match=r"texts.txt line 2: longer than --max-chars 1,000"):
            list(bounded_lines(handle, path, LineCap(1000)))
        assert handle.largest <= 4 * 1000 + 3  # refused at the first piece past the cap


def test_a_character_cut_by_the_byte_bound_is_not_a_utf8_error(tmp_path):
    path = tmp_path / "wide.txt"
    path.write_bytes(("é" * 50).encode() + "中".encode() * 2000 + b"\n")
    (text,) = bounded_lines(open(path, "rb"), path, LineCap(100, truncate=True))
    assert text == "é" * 50 + "中" * 50


def test_predict_refuses_a_long_line_and_leaves_nothing_behind(model, tmp_path):
    path = long_line_file(tmp_path)
    before = sorted(os.listdir(tmp_path))
    line = error_line(
        predict(model, "--file", path, "--out", tmp_path / "out.csv"),
        f"{path} line 2",
        "--max-chars 10,000",
        "--truncate",
    )
    assert "x" * 100 not in line
    assert sorted(os.listdir(tmp_path)) == before  # no output, no temporary file


def test_predict_truncate_cuts_the_long_line_and_predicts_every_line(model, tmp_path):
    path = long_line_file(tmp_path)
    out = tmp_path / "out.csv"
    result = predict(model, "--file", path, "--out", out, "--truncate", "--max-chars", "500")
    assert result.exit_code == 0, result.output
    assert "cut 1 texts to --max-chars 500" in result.stderr
    frame = pd.read_csv(out, keep_default_na=False)
    assert frame["text"].str.len().tolist() == [31, 500, 24]
    assert sorted(os.listdir(tmp_path)) == ["out.csv", "texts.txt"]


def test_a_text_argument_over_the_cap_is_refused(model):
    error_line(predict(model, "ok", "y" * 101, "--max-chars", "100"), "TEXT 2", "--max-chars 100")


def test_csv_and_parquet_rows_are_held_to_the_cap(model, tmp_path):
    frame = pd.DataFrame({"text": ["short", "z" * 200, "also short"]})
    frame.to_csv(tmp_path / "in.csv", index=False)
    frame.to_parquet(tmp_path / "in.parquet", index=False)
    for name in ("in.csv", "in.parquet"):
        out = tmp_path / f"out-{name}.csv"
        args = ("--file", tmp_path / name, "--out", out, "--max-chars", "100")
        error_line(predict(model, *args), f"{name} row 2", "--max-chars 100")
        result = predict(model, *args, "--truncate")
        assert result.exit_code == 0, result.output
        assert pd.read_csv(out)["text"].str.len().tolist() == [5, 100, 10]


def test_a_csv_line_past_the_byte_bound_is_refused_before_pandas_reads_it(model, tmp_path):
    path = tmp_path / "in.csv"
    path.write_bytes(b"text\nfine\n" + b"q" * (4 * 10 + (1 << 20) + 10) + b"\n")
    error_line(
        predict(model, "--file", path, "--out", tmp_path / "o.csv", "--max-chars", "10"),
        f"{path} line 3",
        "bytes",
    )


def test_the_line_of_a_utf8_error_is_its_own(model, tmp_path):
    path = tmp_path / "bad.txt"
    path.write_bytes(b"first line\n\xff second\nthird\n")
    error_line(
        predict(model, "--file", path, "--out", tmp_path / "o.csv"),
        f"{path}: line 2 is not valid UTF-8",
    )
    assert not (tmp_path / "o.csv").exists()


def test_a_folder_or_fifo_is_reported_as_what_it_is(model, tmp_path):
    folder = tmp_path / "texts.txt"
    folder.mkdir()
    error_line(predict(model, "--file", folder, "--out", tmp_path / "o.csv"), "is a folder")
    fifo = tmp_path / "pipe.txt"
    os.mkfifo(fifo)
    error_line(
        predict(model, "--file", fifo, "--out", tmp_path / "o.csv"), "is a named pipe (FIFO)"
    )
    missing = tmp_path / "missing.txt"
    error_line(predict(model, "--file", missing, "--out", tmp_path / "o.csv"), "file not found")
