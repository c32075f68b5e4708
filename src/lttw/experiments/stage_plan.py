"""The pipeline's stages as ``dvc.yaml`` declares them, for running them without dvc (the
direct runner, ``direct_runner``; the one reader of ``dvc.yaml`` besides dvc): every stage in
file order, the per-fold
ones once per fold of ``folds.run``, each with its command, the parameters it reads, its
inputs and its outputs, and a key that changes exactly when what it reads changes (its
parameters' values and its upstream stages' keys), so that equal keys mean equal outputs.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from lttw.errors import UserError
from lttw.io import read_yaml_or_fail

_VAR = re.compile(r"\$\{([^}]+)\}")


@dataclass(frozen=True)
class Stage:
    """One stage (one fold of a per-fold stage)."""

    name: str  # "train@0"
    base: str  # "train"
    cmd: str
    params: tuple[str, ...]  # dotted params.yaml names (a group name: the whole group)
    deps: tuple[str, ...]  # paths (variables substituted)
    outs: tuple[str, ...]  # outs, metrics and plots paths


def lookup(params: dict, dotted: str) -> Any:
    """The value of ``a.b`` in nested ``params`` (None where absent)."""
    node: Any = params
    for part in dotted.split("."):
        node = node.get(part) if isinstance(node, dict) else None
    return node


def _substitute(text: str, params: dict, item: Any) -> str:
    def value(match: re.Match) -> str:
        name = match.group(1)
        return str(item) if name == "item" else str(lookup(params, name))

    return _VAR.sub(value, text)


def _paths(entries: list | None) -> list[str]:
    """Paths of an outs / metrics / plots list (strings or one-key mappings)."""
    out = []
    for entry in entries or []:
        out.extend([entry] if isinstance(entry, str) else list(entry))
    return out


def expand_stages(dvc_yaml: dict, params: dict) -> list[Stage]:
    """Every stage in file order; ``foreach: ${folds.run}`` expanded per fold."""
    stages = []
    for base, spec in (dvc_yaml.get("stages") or {}).items():
        if "foreach" in spec:
            if spec["foreach"] != "${folds.run}":
                raise UserError(f"stage {base}: foreach {spec['foreach']!r} is not supported")
            items: list = [(f"{base}@{i}", i) for i in lookup(params, "folds.run") or []]
            spec = spec["do"]
        else:
            items = [(base, None)]
        for name, item in items:
            stages.append(
                Stage(
                    name,
                    base,
                    _substitute(spec["cmd"], params, item),
                    tuple(str(p) for p in spec.get("params") or []),
                    tuple(_substitute(d, params, item) for d in spec.get("deps") or []),
                    tuple(
                        _substitute(p, params, item)
                        for key in ("outs", "metrics", "plots")
                        for p in _paths(spec.get(key))
                    ),
                )
            )
    return stages


def _inside(path: str, folder: str) -> bool:
    return path == folder or path.startswith(folder.rstrip("/") + "/")


def upstream(stage: Stage, stages: list[Stage]) -> list[Stage]:
    """The earlier stages whose outputs ``stage`` reads."""
    found = []
    for other in stages:
        if other is stage:
            break
        if any(_inside(d, o) or _inside(o, d) for d in stage.deps for o in other.outs):
            found.append(other)
    return found


def stage_keys(stages: list[Stage], params: dict) -> dict[str, str]:
    """name -> a key of what the stage reads: its parameters' values, the inputs that no
    stage writes (e.g. the dataset's folder) and its upstream stages' keys. Code is not in
    the key: one run of the runner uses one checkout."""
    keys: dict[str, str] = {}
    for stage in stages:
        ups = upstream(stage, stages)
        produced = {
            d for d in stage.deps for u in ups for o in u.outs if _inside(d, o) or _inside(o, d)
        }
        doc = {
            "stage": stage.name,
            "params": {p: lookup(params, p) for p in stage.params},
            "inputs": sorted(
                d for d in stage.deps if d not in produced and not d.startswith(("src/", "stages/"))
            ),
            "upstream": sorted(keys[u.name] for u in ups),
        }
        text = json.dumps(doc, sort_keys=True, default=str)
        keys[stage.name] = hashlib.sha256(text.encode()).hexdigest()[:16]
    return keys


def read_checkout_yaml(path: Path) -> dict:
    """The checkout's params.yaml or dvc.yaml, a mapping, or a ``UserError`` saying why not."""
    raw = read_yaml_or_fail(path)
    if not isinstance(raw, dict):
        raise UserError(f"{path}: a mapping expected")
    return raw


def absolute_paths(params: dict, repo: Path) -> None:
    """data.root, model.encoder and model.word_vectors relative to the checkout, made
    absolute (the stages run in other folders); names like ``org/model`` stay."""
    for group, key in (("data", "root"), ("model", "encoder"), ("model", "word_vectors")):
        value = params.get(group, {}).get(key)
        if isinstance(value, str) and value and not os.path.isabs(value):
            if (repo / value).exists():
                params[group][key] = os.path.abspath(repo / value)


def fold_major(stages: list[Stage]) -> list[Stage]:
    """A cell's own stages fold by fold (features, train, evaluate of fold 0, then of fold
    1, ...), the rest (summary) last: a stopped cell leaves whole folds behind."""

    def order(stage: Stage) -> tuple[float, int]:
        fold = stage.name.partition("@")[2]
        return (int(fold) if fold else float("inf"), stages.index(stage))

    return sorted(stages, key=order)
