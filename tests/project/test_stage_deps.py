"""Every library module a stage imports, directly or through other modules (function-level
imports included), is a dependency of that stage in dvc.yaml, so that editing it reruns the
stage. Plumbing that cannot change a stage's outputs is exempt (errors, logging, paths, the
hub-offline check, progress bars, parameter validation: parameter values are tracked as params)."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest
from support.stage_graph import LIB, REPO, _imports, _module_file, _stages, closure, exempt  # noqa: F401


@pytest.mark.parametrize("name", sorted(_stages()))
def test_stage_declares_the_library_code_it_runs(name):
    spec = _stages()[name]
    script = REPO / spec["cmd"].split()[1]
    deps = {REPO / d for d in spec["deps"] if isinstance(d, str)}
    needed = {p for p in closure(script) if not exempt(p)}
    missing = sorted(
        str(p.relative_to(REPO))
        for p in needed
        if not any(p == d or p.is_relative_to(d) for d in deps)
    )
    assert not missing, f"stage {name}: add to its deps in dvc.yaml: {missing}"


def _modules_under(dep: Path) -> set[Path]:
    """The library modules a declared dependency stands for (a folder: all of its modules)."""
    files = sorted(dep.rglob("*.py")) if dep.is_dir() else [dep]
    return {f for f in files if not exempt(f)}


def _runs(needed: set[Path], module: Path) -> bool:
    return module in needed or module.parent in needed  # ``from lttw import pkg``: all of it


@pytest.mark.parametrize("name", sorted(_stages()))
def test_stage_declares_no_library_code_it_does_not_run(name):
    """Every library module under a stage's declared code dependencies is one the stage
    imports (directly or through others): editing code that a stage does not run (a report,
    a sweep, a data check) reruns nothing. Subpackage folders where the stage runs all of
    them, single modules otherwise."""
    spec = _stages()[name]
    needed = closure(REPO / spec["cmd"].split()[1])
    for dep in (REPO / d for d in spec["deps"] if isinstance(d, str) and d.startswith("src/")):
        assert dep.exists(), f"stage {name}: {dep.relative_to(REPO)} does not exist"
        unused = sorted(
            str(m.relative_to(REPO)) for m in _modules_under(dep) if not _runs(needed, m)
        )
        assert not unused, (
            f"stage {name}: {dep.relative_to(REPO)} holds code the stage does "
            f"not run: {unused}; list only the modules it runs"
        )


def test_the_check_sees_an_unused_module(tmp_path, monkeypatch):
    """The rule is live: a declared folder with a module the stage never imports fails."""
    import support.stage_graph as graph

    fake = tmp_path / "src" / "lttw"
    (fake / "pkg").mkdir(parents=True)
    (fake / "pkg" / "__init__.py").write_text("")
    (fake / "pkg" / "used.py").write_text("")
    (fake / "pkg" / "report.py").write_text("")
    (tmp_path / "stages").mkdir()
    (tmp_path / "stages" / "one.py").write_text("from lttw.pkg.used import f\n")
    for module in (__import__(__name__), graph):  # the check's names and the graph's
        monkeypatch.setattr(module, "REPO", tmp_path)
        monkeypatch.setattr(module, "LIB", fake)
    stages = {"one": {"cmd": "python stages/one.py", "deps": ["src/lttw/pkg"]}}
    monkeypatch.setattr(__import__(__name__), "_stages", lambda: stages)
    with pytest.raises(AssertionError, match="report.py"):
        test_stage_declares_no_library_code_it_does_not_run("one")
    stages["one"]["deps"] = ["src/lttw/pkg/used.py"]
    test_stage_declares_no_library_code_it_does_not_run("one")


def test_closure_follows_function_level_and_relative_imports():
    found = {p.name for p in closure(REPO / "stages" / "train.py")}
    assert {"loop.py", "models", "attention.py", "pretrained.py"} <= found


@pytest.mark.parametrize("name", sorted(_stages()))
def test_stage_script_only_calls_the_package(name):
    """The repository's ``stages/NAME.py`` is dvc.yaml's entry point and no more: it imports
    ``run`` of ``lttw.stages.NAME`` and calls it; the stage depends on both files."""
    spec = _stages()[name]
    script = REPO / f"stages/{name}.py"
    assert f"stages/{name}.py --" in f"{spec['cmd']} --", f"stage {name}: runs {spec['cmd']!r}"
    tree = ast.parse(script.read_text(encoding="utf-8"))
    imports = [n for n in ast.walk(tree) if isinstance(n, ast.Import | ast.ImportFrom)]
    assert [(getattr(n, "module", None), [a.name for a in n.names]) for n in imports] == [
        (f"lttw.stages.{name}", ["run"])
    ], f"{script.relative_to(REPO)}: imports more than lttw.stages.{name}'s run"
    assert {f"stages/{name}.py", f"src/lttw/stages/{name}.py"} <= set(spec["deps"])
