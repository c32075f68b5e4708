"""The stages of dvc.yaml and the library code each one runs (its import closure), and the parameters each declares: read by the stage-dependency, stage-parameter and layering checks."""

from __future__ import annotations

import ast
import json
from pathlib import Path

import yaml
from pydantic import BaseModel

from lttw.settings import Settings

REPO = Path(__file__).resolve().parents[2]


LIB = REPO / "src" / "lttw"


EXEMPT = {
    "__init__.py",
    "errors.py",
    "layout.py",
    "choices.py",
    "hub.py",
    "progress.py",
}
#: packages exempt as a whole (parameter validation: the values are tracked as params)
EXEMPT_PACKAGES = {"settings"}


def exempt(path: Path) -> bool:
    """Plumbing that cannot change a stage's outputs: a name in ``EXEMPT`` or a file (or the
    folder) of a package in ``EXEMPT_PACKAGES``."""
    if path.name in EXEMPT:
        return True
    rel = path.relative_to(LIB).parts if path.is_relative_to(LIB) else ()
    return bool(rel) and rel[0] in EXEMPT_PACKAGES


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
    package = (
        "lttw." + ".".join(path.relative_to(LIB).with_suffix("").parts[:-1])
        if path.is_relative_to(LIB)
        else ""
    )
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
    if "pkgutil.iter_modules(" in path.read_text():  # imports all its package's modules
        found.add(path.parent)
    # importing lttw.a.b runs lttw/a/__init__.py first (from within lttw/a it has run already)
    found |= {
        t.parent / "__init__.py"
        for t in list(found)
        if t.is_file() and t.parent not in (LIB, path.parent) and t.name != "__init__.py"
    }
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


def leaves(entry: str, model: type[BaseModel] = Settings) -> set[str]:
    """A dvc.yaml params entry (``seed``, ``nmf``, ``model.k``) as the fields it covers."""
    head, _, rest = entry.partition(".")
    field = model.model_fields[head]
    ann = field.annotation
    if isinstance(ann, type) and issubclass(ann, BaseModel):
        inner = (
            leaves(rest, ann) if rest else set().union(*(leaves(n, ann) for n in ann.model_fields))
        )
        return {f"{head}.{x}" for x in inner}
    assert not rest, f"{entry}: {head} is not a group"
    return {head}


def declared(name: str) -> set[str]:
    entries = [p for p in _stages()[name].get("params", []) if isinstance(p, str)]
    return set().union(*(leaves(e) for e in entries)) if entries else set()


def undeclared_reads(trace_dir: Path) -> dict[str, list[str]]:
    """{stage: parameters its traced run read but dvc.yaml does not declare}."""
    found = {}
    for trace in sorted(trace_dir.glob("*.json")):
        stage = trace.stem.split("@")[0]
        missing = sorted(set(json.loads(trace.read_text())) - declared(stage))
        if missing:
            found[trace.stem] = missing
    return found
