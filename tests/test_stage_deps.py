"""Every library module a stage imports, directly or through other modules (function-level
imports included), is a dependency of that stage in dvc.yaml, so that editing it reruns the
stage. Plumbing that cannot change a stage's outputs is exempt (errors, logging, paths, the
hub-offline check, progress bars, parameter validation: parameter values are tracked as params)."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest
import yaml

REPO = Path(__file__).resolve().parents[1]
LIB = REPO / "src" / "lttw"
EXEMPT = {"__init__.py", "errors.py", "stage.py", "layout.py", "settings.py", "hub.py",
          "progress.py"}


def _module_file(dotted: str, package_as_folder: bool = True) -> Path | None:
    """``lttw.a.b`` -> its file (a package -> its folder, or its ``__init__.py`` when it is
    only the ``from`` part of an import), None outside the library."""
    parts = dotted.split(".")
    if parts[0] != "lttw":
        return None
    base = LIB.joinpath(*parts[1:])
    if base.is_dir():
        return base if package_as_folder else base / "__init__.py"
    return base.with_suffix(".py") if base.with_suffix(".py").exists() else None


def _imports(path: Path) -> set[Path]:
    """Library files/packages that ``path`` imports anywhere in its body."""
    package = "lttw." + ".".join(path.relative_to(LIB).with_suffix("").parts[:-1]) \
        if path.is_relative_to(LIB) else ""
    package = package.rstrip(".")
    found = set()
    for node in ast.walk(ast.parse(path.read_text())):
        names, bases = [], []
        if isinstance(node, ast.Import):
            names = [a.name for a in node.names]
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                anchor = package.split(".")[: len(package.split(".")) - (node.level - 1)]
                base = ".".join(anchor + ([base] if base else []))
            bases, names = [base], [f"{base}.{a.name}" for a in node.names]
        for name, as_folder in [(b, False) for b in bases] + [(n, True) for n in names]:
            target = _module_file(name, as_folder)
            if target is not None:
                found.add(target)
    return found


def closure(path: Path) -> set[Path]:
    todo, seen = [path], set()
    while todo:
        current = todo.pop()
        files = sorted(current.glob("*.py")) if current.is_dir() else [current]
        for file in files:
            for target in _imports(file):
                if target not in seen:
                    seen.add(target)
                    todo.append(target)
    return seen


def _stages() -> dict[str, dict]:
    stages = yaml.safe_load((REPO / "dvc.yaml").read_text())["stages"]
    return {name: spec.get("do", spec) for name, spec in stages.items()}


@pytest.mark.parametrize("name", sorted(_stages()))
def test_stage_declares_the_library_code_it_runs(name):
    spec = _stages()[name]
    script = REPO / spec["cmd"].split()[1]
    deps = {REPO / d for d in spec["deps"] if isinstance(d, str)}
    needed = {p for p in closure(script) if p.name not in EXEMPT}
    missing = sorted(str(p.relative_to(REPO)) for p in needed
                     if not any(p == d or p.is_relative_to(d) for d in deps))
    assert not missing, f"stage {name}: add to its deps in dvc.yaml: {missing}"


@pytest.mark.parametrize("name", sorted(_stages()))
def test_stage_declares_library_code_by_subpackage_and_nothing_it_does_not_run(name):
    """Library deps are subpackage folders (or top-level modules), each one the stage runs:
    a module edit reruns exactly the stages that run its subpackage."""
    spec = _stages()[name]
    needed = closure(REPO / spec["cmd"].split()[1])
    for dep in (REPO / d for d in spec["deps"] if isinstance(d, str) and d.startswith("src/")):
        assert dep.parent == LIB, f"stage {name}: {dep.relative_to(REPO)}: list its subpackage"
        assert any(p == dep or p.is_relative_to(dep) for p in needed), \
            f"stage {name}: {dep.relative_to(REPO)} is not run by the stage; drop it from deps"


def test_closure_follows_function_level_and_relative_imports():
    found = {p.name for p in closure(REPO / "stages" / "train.py")}
    assert {"loop.py", "models", "attention.py", "pretrained.py"} <= found
