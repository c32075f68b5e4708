"""--help in an 80-column terminal (issue 67.7): no line past 80 columns, descriptions in a
wide column, types as words (TEXT, PATH, INTEGER; nothing for a flag), not `<str>`."""

from __future__ import annotations

import re

import pytest
from typer.testing import CliRunner

from lttw.cli import app

COMMANDS = [
    ["predict"],
    ["explain"],
    ["init"],
    ["serve"],
    ["data", "check"],
    ["data", "issues"],
    ["tune"],
]


@pytest.mark.parametrize("command", COMMANDS, ids=" ".join)
def test_help_fits_80_columns_with_types_as_words(command):
    result = CliRunner().invoke(app, [*command, "--help"], env={"COLUMNS": "80"}, terminal_width=80)
    assert result.exit_code == 0, result.output
    lines = result.output.splitlines()
    assert max(map(len, lines)) <= 80, max(lines, key=len)
    assert not re.search(r"<(str|bool|path|int|float)>", result.output), result.output
    # the descriptions start within the first 40 columns: 40 or more left for their words
    starts = [m.start(2) for m in map(re.compile(r"  (-\S.*?)\s{2,}(\S)").match, lines) if m]
    assert starts and max(starts) <= 40, starts


def test_a_flag_shows_no_type_and_a_path_says_path():
    result = CliRunner().invoke(app, ["init", "--help"], env={"COLUMNS": "80"}, terminal_width=80)
    lines = result.output.splitlines()
    upgrade = next(line for line in lines if "--upgrade" in line)
    assert upgrade.split()[:2] == ["--upgrade", "in"]
    assert "-d, --data PATH" in result.output
