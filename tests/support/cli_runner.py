"""Run the lttw command line in-process (typer's CliRunner) and check its one-line user errors."""

from __future__ import annotations

from typer.testing import CliRunner

from lttw import cli


def invoke(*args: str):
    return CliRunner().invoke(cli.app, [str(a) for a in args])


def assert_user_error(result, *needles: str, code: int = 2) -> str:
    """Exit ``code`` (2: bad usage, 3: bad input, see lttw.cli) and exactly one line on
    stderr, 'error: ...', containing the needles."""
    lines = result.stderr.strip().splitlines()
    assert result.exit_code == code, result.output
    assert len(lines) == 1 and lines[0].startswith("error: "), result.stderr
    assert "Traceback" not in result.output
    for needle in needles:
        assert needle in lines[0], lines[0]
    return lines[0]
