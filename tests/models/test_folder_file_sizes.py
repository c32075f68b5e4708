"""Every file a model folder's loader reads is held to the size limit of its kind
(``lttw.models.folder_files``) before it is read, before any checksum: an oversized
tokenizer.json or lttw.json is one error line naming the file, read by neither `lttw predict`
nor `lttw verify`. The files are sparse: their size costs neither disk nor memory."""

from __future__ import annotations

import shutil

import pytest
from support.cli_runner import invoke
from support.model_folders import build_model_folder

from lttw.models.folder_files import SMALL_MAX, VOCABULARY_MAX


@pytest.fixture(scope="module")
def folder(tmp_path_factory, tiny_encoder_dir):
    """The tiny encoder folder, its checksums recorded."""
    return build_model_folder(tmp_path_factory.mktemp("sizes") / "model", tiny_encoder_dir)


def _grown(folder, tmp_path, name: str, size: int):
    copy = shutil.copytree(folder, tmp_path / "copy")
    with open(copy / name, "r+b") as handle:
        handle.truncate(size)  # sparse beyond the real content
    return copy


def _error(result, *needles: str) -> str:
    assert result.exit_code == 3, result.output
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("error: "), result.stderr
    for needle in needles:
        assert needle in lines[0], lines[0]
    return lines[0]


def test_an_oversized_tokenizer_file_is_refused_before_it_is_read(folder, tmp_path):
    copy = _grown(folder, tmp_path, "tokenizer/tokenizer.json", VOCABULARY_MAX + 1)
    for args in (["predict", "--model", copy, "some text"], ["verify", copy]):
        _error(
            invoke(*args),
            "tokenizer/tokenizer.json: 268,435,457 bytes, more than a model folder's "
            "vocabulary or tokenizer file may have",
        )


def test_an_oversized_lttw_json_is_refused_before_it_is_read(folder, tmp_path):
    copy = _grown(folder, tmp_path, "lttw.json", SMALL_MAX + 1)
    _error(invoke("predict", "--model", copy, "some text"), "lttw.json: 16,777,217 bytes")
