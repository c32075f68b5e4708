"""Model folders a user brings or damaged (issue 13.2): `lttw predict` / `explain` / `export`
print one line naming the damaged file and what is wrong, exit 3, no traceback, and never run
code shipped in the folder; the tokens stage's saved tokenizer does not depend on
HF_HUB_OFFLINE (13.4). Through the real CLI (typer's CliRunner) on a tiny model folder with
its checksums: each damage is recorded again after it is made (as if the folder had been
written so), so that the check it targets fires, not the checksum; one damage is left
unrecorded, caught by its checksum."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from support.cli_runner import assert_user_error
from support.model_folders import WEIGHTS, build_model_folder  # noqa: F401
from typer.testing import CliRunner

from lttw import cli
from lttw.models.folder_files import record_checksums


@pytest.fixture(scope="module")
def model_dir(tmp_path_factory, tiny_encoder_dir) -> Path:
    return build_model_folder(tmp_path_factory.mktemp("model") / "model", tiny_encoder_dir)


def edit_json(path: Path, change) -> None:
    doc = json.loads(path.read_text())
    change(doc)
    path.write_text(json.dumps(doc))


def truncate(path: Path, size: int) -> None:
    path.write_bytes(path.read_bytes()[:size])


EVIL = "import pathlib; pathlib.Path(__file__).with_name('RAN').write_text('remote code ran')\n"


def auto_map_in_config(folder: Path) -> None:
    (folder / "evil.py").write_text(EVIL)
    edit_json(
        folder / "config.json",
        lambda c: c["config"]["encoder_config"].update(auto_map={"AutoModel": "evil.M"}),
    )


def auto_map_in_tokenizer(folder: Path) -> None:
    (folder / "tokenizer" / "evil.py").write_text(EVIL)
    edit_json(
        folder / "tokenizer" / "tokenizer_config.json",
        lambda c: c.update(auto_map={"AutoTokenizer": ["evil.T", None]}),
    )


#: damage -> (the file the error names, what it says)
DAMAGES = {
    "weights truncated to 1000 bytes": (
        lambda f: truncate(f / WEIGHTS, 1000),
        WEIGHTS,
        "truncated or damaged",
    ),
    "weights cut in the tensor data": (
        lambda f: truncate(f / WEIGHTS, 20000),
        WEIGHTS,
        "truncated or damaged",
    ),
    "weights missing": (lambda f: (f / WEIGHTS).unlink(), WEIGHTS, "no model weights"),
    "lttw.json not JSON": (
        lambda f: (f / "lttw.json").write_text('{"variant": '),
        "lttw.json",
        "not valid JSON",
    ),
    "lttw.json binary": (
        lambda f: (f / "lttw.json").write_bytes(b"\xff\xfe\x00garbage"),
        "lttw.json",
        "not valid UTF-8",
    ),
    "lttw.json without max_len": (
        lambda f: edit_json(f / "lttw.json", lambda m: m.pop("max_len")),
        "lttw.json",
        "'max_len' is missing",
    ),
    "labels.json not JSON": (
        lambda f: (f / "labels.json").write_text("[1"),
        "labels.json",
        "not valid JSON",
    ),
    "labels.json without classes": (
        lambda f: (f / "labels.json").write_text('{"x": 1}'),
        "labels.json",
        "two or more distinct class names",
    ),
    "config.json not JSON": (
        lambda f: (f / "config.json").write_text("{bad"),
        "config.json",
        "not valid JSON",
    ),
    "config.json unknown key": (
        lambda f: edit_json(f / "config.json", lambda c: c["config"].update(nope=1)),
        "config.json",
        "not a valid encoder config",
    ),
    "config.json unknown variant": (
        lambda f: edit_json(f / "config.json", lambda c: c.update(variant="gpt9")),
        "config.json",
        "unknown model variant 'gpt9'",
    ),
    "config.json wider than the weights": (
        lambda f: edit_json(
            f / "config.json", lambda c: c["config"]["encoder_config"].update(hidden_size=48)
        ),
        WEIGHTS,
        "do not fit",
    ),
    "auto_map in config.json": (auto_map_in_config, "config.json", "auto_map"),
    "auto_map in the tokenizer config": (
        auto_map_in_tokenizer,
        "tokenizer_config.json",
        "auto_map",
    ),
    "tokenizer.json not JSON": (
        lambda f: (f / "tokenizer" / "tokenizer.json").write_text("{"),
        "tokenizer.json",
        "not valid JSON",
    ),
    "tokenizer.json empty object": (
        lambda f: (f / "tokenizer" / "tokenizer.json").write_text("{}"),
        "tokenizer",
        "not a readable tokenizer",
    ),
}

COMMANDS = {
    "predict": ["predict", "a good movie"],
    "explain": ["explain", "a good movie"],
    "export": ["export", "--out", "{tmp}/exported"],
}


def damaged_copy(model_dir: Path, tmp_path: Path, damage: str, record: bool = True) -> Path:
    """A copy of ``model_dir`` with ``damage``; ``record``: its checksums recorded again
    after it (a damaged lttw.json is read before any checksum: left as it is)."""
    folder = tmp_path / "damaged"
    shutil.copytree(model_dir, folder)
    DAMAGES[damage][0](folder)
    if record and DAMAGES[damage][1] != "lttw.json":
        record_checksums(folder)
    return folder


def run_cli(command: str, folder: Path, tmp_path: Path):
    args = [a.format(tmp=tmp_path) for a in COMMANDS[command]]
    return CliRunner().invoke(cli.app, [*args, "--model", str(folder)])


def test_the_intact_folder_predicts(model_dir, tmp_path):
    result = run_cli("predict", model_dir, tmp_path)
    assert result.exit_code == 0, result.output
    assert "a good movie" in result.stdout


@pytest.mark.parametrize("damage", list(DAMAGES))
def test_predict_names_the_damaged_file(model_dir, tmp_path, damage):
    folder = damaged_copy(model_dir, tmp_path, damage)
    _, file_name, what = DAMAGES[damage]
    line = assert_user_error(run_cli("predict", folder, tmp_path), file_name, what, code=3)
    assert str(folder) in line
    assert not list(folder.rglob("RAN"))  # code shipped in the folder never ran


def test_a_changed_file_is_caught_by_its_checksum(model_dir, tmp_path):
    """The weights truncated after the checksums were recorded: refused by their sha256,
    before their bytes are parsed."""
    folder = damaged_copy(model_dir, tmp_path, "weights truncated to 1000 bytes", record=False)
    result = run_cli("predict", folder, tmp_path)
    assert_user_error(result, WEIGHTS, "changed since the model folder was written", code=3)


@pytest.mark.parametrize("command", ["explain", "export"])
@pytest.mark.parametrize(
    "damage",
    [
        "weights truncated to 1000 bytes",
        "lttw.json not JSON",
        "auto_map in config.json",
        "auto_map in the tokenizer config",
    ],
)
def test_explain_and_export_name_the_damaged_file(model_dir, tmp_path, command, damage):
    folder = damaged_copy(model_dir, tmp_path, damage)
    _, file_name, what = DAMAGES[damage]
    assert_user_error(run_cli(command, folder, tmp_path), file_name, what, code=3)
    assert not (tmp_path / "exported").exists() and not list(folder.rglob("RAN"))


def test_a_damaged_folder_through_the_installed_command(model_dir, tmp_path):
    """The `lttw` script itself: exit code 3 (bad input), one line on stderr, nothing on stdout."""
    folder = damaged_copy(model_dir, tmp_path, "weights truncated to 1000 bytes")
    script = Path(sys.executable).parent / "lttw"
    command = [str(script)] if script.is_file() else [sys.executable, "-m", "lttw.cli"]
    proc = subprocess.run(
        [*command, "predict", "hi", "--model", str(folder)],
        capture_output=True,
        text=True,
        env={**os.environ, "COLUMNS": "200"},
    )
    assert proc.returncode == 3 and proc.stdout == ""
    assert proc.stderr.strip().splitlines() == [
        f"error: {folder / WEIGHTS}: not a readable safetensors file, truncated or damaged "
        "(Error while deserializing: invalid header length)"
    ]


SAVE_TOKENIZER = """
import sys
from lttw.encoder.tokenizer import load_tokenizer, save_tokenizer
save_tokenizer(load_tokenizer(sys.argv[1]), sys.argv[2])
"""


def test_saved_tokenizer_is_identical_with_or_without_hf_hub_offline(tiny_encoder_dir, tmp_path):
    """What the tokens stage saves (and model folders copy) has the same bytes whatever
    HF_HUB_OFFLINE says: transformers records `local_files_only` unless it is left out.
    The flag is read when huggingface_hub is imported: this process's setting is saved here,
    the other one in a process of its own."""
    from huggingface_hub import constants

    from lttw.encoder.tokenizer import load_tokenizer, save_tokenizer

    here = "1" if constants.HF_HUB_OFFLINE else "0"
    other = "0" if here == "1" else "1"
    save_tokenizer(load_tokenizer(tiny_encoder_dir), tmp_path / f"offline_{here}")
    env = {**os.environ, "HF_HUB_OFFLINE": other, "TRANSFORMERS_OFFLINE": other}
    subprocess.run(
        [
            sys.executable,
            "-c",
            SAVE_TOKENIZER,
            str(tiny_encoder_dir),
            tmp_path / f"offline_{other}",
        ],
        check=True,
        env=env,
        capture_output=True,
    )
    saved = {
        flag: {p.name: p.read_bytes() for p in sorted((tmp_path / f"offline_{flag}").iterdir())}
        for flag in ("1", "0")
    }
    assert saved["1"] == saved["0"] and "tokenizer_config.json" in saved["1"]
    assert b"local_files_only" not in saved["1"]["tokenizer_config.json"]
