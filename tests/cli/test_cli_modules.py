"""The command line's shape: one module per command group, each a thin layer; the shared
names in ``lttw.cli.app`` are public (no private name imported across the CLI's modules);
exit codes are chosen in ``lttw.cli.app`` alone; the library takes ``one_line`` from
``lttw.errors``, not from the stages' runner ``lttw.stages``."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

import lttw.cli

CLI = Path(lttw.cli.__file__).parent
LIB = CLI.parent
#: the most lines a command module holds (the DEVELOPERS guide's bound, with some room)
MAX_LINES = 330


def _modules(folder: Path) -> list[Path]:
    return sorted(folder.rglob("*.py"))


def _tree(path: Path) -> ast.Module:
    return ast.parse(path.read_text(encoding="utf-8"))


@pytest.mark.parametrize("path", _modules(CLI), ids=lambda p: p.name)
def test_no_private_name_crosses_cli_modules(path):
    crossing = [
        f"{node.module}.{alias.name}"
        for node in ast.walk(_tree(path))
        if isinstance(node, ast.ImportFrom) and (node.module or "").startswith("lttw.cli")
        for alias in node.names
        if alias.name.startswith("_")
    ]
    assert not crossing, f"{path.name} imports private names: {crossing}"


@pytest.mark.parametrize("path", _modules(CLI), ids=lambda p: p.name)
def test_a_command_module_stays_small(path):
    lines = len(path.read_text(encoding="utf-8").splitlines())
    assert lines <= MAX_LINES, f"{path.name}: {lines} lines"


def test_exit_codes_are_chosen_in_one_place():
    """Only ``app.py`` names the exit codes of user errors; a command raises the package's
    errors (``BadInputError``, ``InputProblems``, ``UserError``) and ``app`` turns them into
    one line each and the code."""
    naming = [
        path.name
        for path in _modules(CLI)
        if path.name not in ("app.py", "__init__.py")
        for node in ast.walk(_tree(path))
        if isinstance(node, ast.Name | ast.alias)
        and (getattr(node, "id", None) or getattr(node, "name", "")).startswith("EXIT_")
    ]
    assert not naming, f"exit codes named outside cli/app.py: {sorted(set(naming))}"
    assert not hasattr(lttw.cli, "EXIT_USER_ERROR")


def test_the_library_takes_one_line_from_errors():
    importing = [
        str(path.relative_to(LIB))
        for path in _modules(LIB)
        if path.parent.name != "stages"
        for node in ast.walk(_tree(path))
        if isinstance(node, ast.ImportFrom) and node.module == "lttw.stages"
    ]
    assert not importing, f"modules importing lttw.stages: {importing}"


def test_verify_says_every_problem_on_its_own_line(monkeypatch, tmp_path):
    """``lttw verify``'s problems (``InputProblems``): one ``error:`` line each on stderr, exit
    code 3 (bad input), turned so by ``lttw.cli.app`` as every other user error."""
    from types import SimpleNamespace

    from support.cli_runner import invoke

    import lttw.models.model_folder as model_folder

    found = SimpleNamespace(problems=["a.bin: changed", "b.bin: missing"])
    monkeypatch.setattr(model_folder, "verify_folder", lambda folder, record=False: found)
    result = invoke("verify", tmp_path)
    assert result.exit_code == 3, result.output
    assert result.stderr.splitlines() == ["error: a.bin: changed", "error: b.bin: missing"]
