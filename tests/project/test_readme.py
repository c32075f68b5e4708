"""The examples of README.md and of the docs pages (docs/**/*.md) run as written.

Every fenced code block whose info string is exactly ``bash runnable`` is run line by line
(a line ending in ``\\`` continues on the next; blank lines and lines starting with ``#`` are
skipped), in order, from the root of a tiny project (a copy of ``tiny_repro``: the repository's
pipeline and README with the tiny profile, run once), with the venv's bin first on PATH. Each command
must exit 0. An ``lttw`` or ``dvc`` line without shell syntax runs in the test's process with
the same arguments, through the command's own entry point (``tiny_project.lttw``,
``dvc_runner.dvc``: no interpreter and import start-up per line); every other line runs in a
shell. Blocks with any other info string (``bash``, ``console``...) are documentation
only. A README without a runnable block fails: the examples would go untested. The README's
blocks run first, then each docs page's, pages in path order.
"""

from __future__ import annotations

import re
import shlex
from pathlib import Path

import pytest
from support.dvc_runner import dvc
from support.tiny_project import REPO, lttw, run

INFO = "bash runnable"


def runnable_commands(markdown: str) -> list[str]:
    """The commands of the ``bash runnable`` blocks, in order."""
    commands: list[str] = []
    inside, pending = False, ""
    for raw in markdown.splitlines():
        line = raw.strip()
        if line.startswith("```"):
            inside = not inside and line[3:].strip() == INFO
            pending = ""
            continue
        if not inside or (not pending and (not line or line.startswith("#"))):
            continue
        if line.endswith("\\"):
            pending += line[:-1].rstrip() + " "
            continue
        commands.append(pending + line)
        pending = ""
    return commands


def readme_commands(readme: Path = REPO / "README.md") -> list[str]:
    """The runnable commands of the README, then of every docs page."""
    if not readme.is_file():
        pytest.fail(
            f"{readme} does not exist: write it, with its examples in fenced blocks "
            f"opened by ```{INFO}"
        )
    commands = runnable_commands(readme.read_text(encoding="utf-8"))
    if not commands:
        pytest.fail(
            f"{readme} has no ```{INFO} block: put the commands users should run "
            "(after `dvc repro` on the tiny profile) in such blocks so they are tested"
        )
    for page in sorted((REPO / "docs").rglob("*.md")):
        commands += runnable_commands(page.read_text(encoding="utf-8"))
    return commands


def test_runnable_blocks_are_parsed():
    text = "\n".join(
        [
            "```bash",
            "not this",
            "```",
            "```bash runnable",
            "# a comment",
            "",
            "dvc repro",
            "lttw predict \\",
            '  "two lines"',
            "```",
            "```bash runnable extra",
            "nor this",
            "```",
            "  ```bash runnable",
            "  lttw report",
            "  ```",
        ]
    )
    assert runnable_commands(text) == ["dvc repro", 'lttw predict "two lines"', "lttw report"]


def test_readme_has_runnable_examples():
    commands = readme_commands()
    assert any(c.startswith("lttw predict") for c in commands)
    assert "lttw report" in commands and any(c.startswith("dvc exp show") for c in commands)


@pytest.mark.slow
def test_readme_commands_run(tmp_path, tiny_repro):
    """In a copy of the session's tiny pipeline run (its first ``dvc repro`` is
    ``tiny_repro``'s; here ``dvc repro`` finds it up to date)."""
    commands = readme_commands()
    project = tiny_repro.copy(tmp_path / "project")
    for command in commands:
        program, args = in_process(command)
        if program == "lttw":
            lttw(args, project)  # asserts exit code 0, showing the command and its output
        elif program == "dvc":
            dvc(args, project)  # the same
        else:
            run(command, project)  # the same


#: the commands whose plain lines run in the test's process
IN_PROCESS = ("lttw", "dvc")


def in_process(command: str) -> tuple[str | None, list[str]]:
    """The program (``lttw``, ``dvc``) and the arguments after it of a plain command line of
    one of them; (None, []) for any other line, or one with shell syntax (pipes,
    redirections, variables, several commands)."""
    unquoted = re.sub(r"'[^']*'", "", command)  # nothing in single quotes is shell syntax
    if any(char in unquoted for char in "|&;<>$`(){}*?~"):
        return None, []
    words = shlex.split(command)
    return (words[0], words[1:]) if words[:1] and words[0] in IN_PROCESS else (None, [])


def test_plain_lttw_and_dvc_lines_run_in_process_and_the_rest_in_a_shell():
    assert in_process('lttw predict "a b" c') == ("lttw", ["predict", "a b", "c"])
    assert in_process("dvc exp show --keep '^a$'") == ("dvc", ["exp", "show", "--keep", "^a$"])
    assert in_process("lttw predict --file texts.txt > out.txt") == (None, [])
    assert in_process('dvc exp show --keep "^a$"') == (None, [])  # the shell expands "$"
    assert in_process("lttwx report") == (None, []) and in_process("printf x") == (None, [])
