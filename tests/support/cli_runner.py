"""Run the lttw command line in-process (typer's CliRunner) and check its one-line user errors."""

from __future__ import annotations

from typer.testing import CliRunner

from lttw import cli


def invoke(*args: str):
    return CliRunner().invoke(cli.app, [str(a) for a in args])


def assert_user_error(result, *needles: str) -> str:
    """Exit code 2 and exactly one line on stderr, 'error: ...', containing the needles."""
    lines = result.stderr.strip().splitlines()
    assert result.exit_code == 2, result.output
    assert len(lines) == 1 and lines[0].startswith("error: "), result.stderr
    assert "Traceback" not in result.output
    for needle in needles:
        assert needle in lines[0], lines[0]
    return lines[0]
