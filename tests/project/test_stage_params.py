"""Each stage's ``params:`` in dvc.yaml are exactly the parameters it reads, so that
``dvc exp run -S group.name=...`` reruns the stages that read it and no other.

- declared but never read (static, over every code path): a declared parameter's field name
  appears nowhere in the code the stage runs (its script and its library closure, the
  settings' properties it uses expanded to the fields they read);
- read but not declared (dynamic): ``tests/e2e/test_pipeline.py`` runs the real ``dvc repro``
  with ``tests/support/param_trace/sitecustomize.py`` recording every settings field each stage's
  ``main`` reads, and checks them with ``undeclared_reads`` below.
"""

from __future__ import annotations

import ast
import json
from pathlib import Path

import pytest
from support.stage_graph import LIB, REPO, _stages, closure, declared, leaves, undeclared_reads  # noqa: F401

from lttw.settings import Settings


def _attribute_names(path: Path) -> set[str]:
    tree = ast.parse(path.read_text(encoding="utf-8"))
    return {n.attr for n in ast.walk(tree) if isinstance(n, ast.Attribute)}


def _properties() -> dict[str, set[str]]:
    """Settings properties -> the fields they read (``self.x``)."""
    trees = [ast.parse(f.read_text(encoding="utf-8")) for f in (LIB / "settings").glob("*.py")]
    found = {}
    for fn in (node for tree in trees for node in ast.walk(tree)):
        if isinstance(fn, ast.FunctionDef) and any(
            isinstance(d, ast.Name) and d.id == "property" for d in fn.decorator_list
        ):
            found[fn.name] = {
                n.attr
                for n in ast.walk(fn)
                if isinstance(n, ast.Attribute)
                and isinstance(n.value, ast.Name)
                and n.value.id == "self"
            }
    return found


def names_read(script: Path) -> set[str]:
    """Attribute names in the code a stage runs, properties expanded to what they read."""
    files = [script] + [p for p in closure(script) if p.is_file() and p.parent != LIB / "settings"]
    files += [
        f for p in closure(script) if p.is_dir() and p != LIB / "settings" for f in p.glob("*.py")
    ]
    names = set().union(*(_attribute_names(f) for f in files))
    for prop, fields in _properties().items():
        if prop in names:
            names |= fields
    return names


@pytest.mark.parametrize("name", sorted(_stages()))
def test_stage_declares_no_parameter_it_never_reads(name):
    script = REPO / _stages()[name]["cmd"].split()[1]
    read = names_read(script)
    unread = sorted(p for p in declared(name) if p.rsplit(".", 1)[-1] not in read)
    assert not unread, f"stage {name} declares {unread} in dvc.yaml but its code never reads them"


def test_leaves_expand_groups_and_keep_single_fields():
    assert leaves("seed") == {"seed"}
    assert leaves("nmf.rank") == {"nmf.rank"}
    assert leaves("nmf") == {
        f"nmf.{f}" for f in Settings.model_fields["nmf"].annotation.model_fields
    }


def test_the_static_check_sees_a_declared_parameter_nobody_reads(monkeypatch):
    import support.stage_graph as graph

    stages = {name: dict(spec) for name, spec in _stages().items()}
    stages["folds"]["params"] = list(stages["folds"]["params"]) + ["train.grad_clip"]
    monkeypatch.setattr(graph, "_stages", lambda: stages)
    with pytest.raises(AssertionError, match="train.grad_clip"):
        test_stage_declares_no_parameter_it_never_reads("folds")


def test_the_trace_check_sees_an_undeclared_read(tmp_path):
    (tmp_path / "nmf@0.json").write_text(json.dumps(["nmf.rank", "seed", "model.k"]))
    (tmp_path / "summary.json").write_text(json.dumps(["folds.run"]))
    assert undeclared_reads(tmp_path) == {"nmf@0": ["model.k"]}
