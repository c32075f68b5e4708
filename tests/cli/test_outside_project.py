"""Commands run outside a project (no params.yaml, no models/final) say what to do instead
of "params.yaml: parameters file not found": the model commands name --model and `lttw
init`; `lttw data check FILE` checks the file as `lttw init` would use it."""

from __future__ import annotations

import pandas as pd
import pytest
from support.cli_runner import assert_user_error, invoke


@pytest.fixture
def outside(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    rows = [("good fun movie", "pos"), ("boring bad film", "neg")] * 30
    pd.DataFrame(rows, columns=["text", "label"]).to_csv(tmp_path / "reviews.csv", index=False)
    return tmp_path


@pytest.mark.parametrize(
    "args",
    [
        ["predict", "a text"],
        ["explain", "a text"],
        ["evaluate", "reviews.csv"],
        ["export", "--out", "exported"],
    ],
)
def test_model_commands_name_what_to_do(outside, args):
    result = invoke(*args)
    line = assert_user_error(result, "not an lttw project", "--model DIR", "lttw init")
    assert "parameters file not found" not in line
    assert sorted(p.name for p in outside.iterdir()) == ["reviews.csv"]  # nothing written


def test_data_check_of_a_file_outside_a_project(outside):
    result = invoke("data", "check", "reviews.csv")
    assert result.exit_code == 0, result.output
    assert "no params.yaml here" in result.stderr and "lttw init" in result.stderr
    missing = invoke("data", "check", "nothing.csv")
    assert_user_error(missing, "nothing.csv", "no such file", "run this in a project")
