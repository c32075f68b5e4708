"""Imports flow one way: the top-level plumbing (settings, layout, io, errors, device, ...)
imports no subpackage, and a subpackage imports only the top level, itself and the
subpackages before it in ``LAYERS``. Function-level imports count as well; a cycle between
modules fails too. The pipeline's stages (``lttw.stages``) are the library's top layer; only
the CLI sits above them."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest
from support.stage_graph import LIB, _imports

#: lowest first: a subpackage may import the ones before it, never the ones after it
LAYERS = [
    "project",
    "evaluation",
    "encoder",
    "text",
    "data",
    "models",
    "factors",
    "training",
    "inference",
    "checks",
    "experiments",
    "reporting",
    "serving",
    "stages",  # the pipeline's stages: the library's top layer
]
ENTRY_POINTS = {"cli"}  # the command line package: may import anything
#: top-level plumbing split into a package of modules: the top level, as a module there is
PLUMBING = {"settings"}


def _layer(path: Path) -> int:
    """-1 for top-level plumbing, the subpackage's index, len(LAYERS) for entry points."""
    rel = path.relative_to(LIB)
    if rel.parts[0] in ENTRY_POINTS:
        return len(LAYERS)
    if len(rel.parts) == 1:
        return -1
    if rel.parts[0] in PLUMBING:
        return -1
    return LAYERS.index(rel.parts[0])


def _package(path: Path) -> Path:
    """The folder a module belongs to; a plumbing package's modules belong to the top level."""
    parent = path.parent
    return LIB if parent.parent == LIB and parent.name in PLUMBING else parent


def _modules() -> list[Path]:
    return sorted(LIB.rglob("*.py"))


def test_every_subpackage_has_a_layer():
    folders = {p.name for p in LIB.iterdir() if p.is_dir() and (p / "__init__.py").exists()}
    assert folders == set(LAYERS) | ENTRY_POINTS | PLUMBING


@pytest.mark.parametrize("path", _modules(), ids=lambda p: str(p.relative_to(LIB)))
def test_imports_flow_one_way(path):
    own = _layer(path)
    upward = []
    for target in _imports(path):
        target_file = target / "__init__.py" if target.is_dir() else target
        other = _layer(target_file)
        same_package = _package(target_file) == _package(path)
        if other > own or (other == own and own == -1 and not same_package):
            upward.append(str(target_file.relative_to(LIB)))
    assert not upward, f"{path.relative_to(LIB)} imports upward: {sorted(upward)}"


def _names_own_package(path: Path) -> bool:
    """Whether ``path`` imports its own package by name (``from lttw.cli import x``)."""
    package = ".".join(("lttw", *path.relative_to(LIB).parts[:-1]))
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.ImportFrom) and node.module == package:
            return True
        if isinstance(node, ast.Import) and any(a.name == package for a in node.names):
            return True
    return False


def test_no_import_cycles():
    graph = {}
    for path in _modules():
        targets = {t / "__init__.py" if t.is_dir() else t for t in _imports(path)}
        # a module's own package __init__ runs before it, by Python's rule: unless the module
        # imports its package by name, a package that imports its modules (cli/) is no cycle
        implicit = set() if _names_own_package(path) else {path.parent / "__init__.py"}
        graph[path] = targets - {path} - implicit
    state: dict[Path, int] = {}  # 1 visiting, 2 done

    def visit(node: Path, trail: list[Path]) -> None:
        state[node] = 1
        for nxt in sorted(graph.get(node, ())):
            if state.get(nxt) == 1:
                cycle = trail[trail.index(nxt) :] + [nxt] if nxt in trail else [node, nxt]
                pytest.fail("import cycle: " + " -> ".join(str(p.relative_to(LIB)) for p in cycle))
            if state.get(nxt) is None:
                visit(nxt, trail + [nxt])
        state[node] = 2

    for path in _modules():
        if path not in state:
            visit(path, [path])


def test_the_check_sees_an_upward_import(tmp_path, monkeypatch):
    """The rule is live: a data module importing training is reported."""
    import support.stage_graph as graph

    fake = tmp_path / "lttw"
    (fake / "data").mkdir(parents=True)
    (fake / "training").mkdir()
    for folder in (fake, fake / "data", fake / "training"):
        (folder / "__init__.py").write_text("")
    (fake / "training" / "loop.py").write_text("")
    bad = fake / "data" / "bad.py"
    bad.write_text("def f():\n    from lttw.training.loop import x\n")
    monkeypatch.setattr(graph, "LIB", fake)
    monkeypatch.setattr(__import__(__name__), "LIB", fake)
    with pytest.raises(AssertionError, match="imports upward"):
        test_imports_flow_one_way(bad)


def test_one_list_of_variants():
    """lttw.settings names the variants; the registry (a fresh process that imports only the
    registry module) and the report's rows follow it."""
    import json
    import subprocess
    import sys

    from lttw.reporting.report import VARIANTS as REPORT_ROWS
    from lttw.settings import BASELINES, ENSEMBLE_VARIANTS, NON_NEURAL_VARIANTS, VARIANTS

    code = (
        "import json; from lttw.models.registry import MODEL_REGISTRY; "
        "print(json.dumps(sorted(MODEL_REGISTRY)))"
    )
    registered = json.loads(
        subprocess.run(
            [sys.executable, "-c", code], check=True, capture_output=True, text=True
        ).stdout
    )
    assert set(registered) | NON_NEURAL_VARIANTS | ENSEMBLE_VARIANTS == set(VARIANTS)
    assert [r for r in REPORT_ROWS if r in VARIANTS] == list(BASELINES)


def test_readme_architecture_names_real_code():
    """Every module and function that the docs' architecture page and paper-to-code map name
    exists, and every subpackage has its row: the maps cannot go stale silently."""
    import importlib
    import re

    docs = LIB.parents[1] / "docs"
    architecture = (docs / "explanation" / "architecture.md").read_text(encoding="utf-8")
    for pkg in LAYERS:
        assert f"| `{pkg}/` |" in architecture, (
            f"docs/explanation/architecture.md: no row for {pkg}/"
        )
    section = architecture + (docs / "explanation" / "paper-map.md").read_text(encoding="utf-8")
    names = set(re.findall(r"`((?:" + "|".join(LAYERS) + r")\.[\w.]+)`", section))
    assert len(names) > 10
    for dotted in sorted(names):
        parts = dotted.split(".")
        for cut in range(len(parts), 0, -1):  # longest importable module prefix
            try:
                obj = importlib.import_module("lttw." + ".".join(parts[:cut]))
                break
            except ModuleNotFoundError:
                continue
        for attr in parts[cut:]:
            assert hasattr(obj, attr), f"docs' architecture names {dotted}: no {attr}"
            obj = getattr(obj, attr)


def test_settings_defaults_are_params_yaml():
    """The typed settings' defaults are the shipped params.yaml, value for value: a parameter
    left out of a user's params file means what the default profile says."""
    import yaml

    from lttw.settings import Settings

    shipped = yaml.safe_load((LIB.parents[1] / "params.yaml").read_text(encoding="utf-8"))
    defaults = Settings().model_dump()
    differ = [
        f"{group}.{name}: settings {defaults[group][name]!r}, params.yaml {value!r}"
        for group, values in shipped.items()
        if isinstance(values, dict)
        for name, value in values.items()
        if defaults[group][name] != value
    ]
    differ += [
        f"{k}: settings {defaults[k]!r}, params.yaml {v!r}"
        for k, v in shipped.items()
        if not isinstance(v, dict) and defaults[k] != v
    ]
    assert not differ, differ
