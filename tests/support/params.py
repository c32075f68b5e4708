"""The repository's params.yaml as a dict, and a copy with one value changed."""

from __future__ import annotations

import json

import yaml

from support.stage_graph import REPO


def base_params() -> dict:
    return yaml.safe_load((REPO / "params.yaml").read_text(encoding="utf-8"))


def with_value(params: dict, dotted: str, value) -> dict:
    params = json.loads(json.dumps(params))  # deep copy
    *groups, name = dotted.split(".")
    target = params
    for group in groups:
        target = target.setdefault(group, {})
    target[name] = value
    return params
