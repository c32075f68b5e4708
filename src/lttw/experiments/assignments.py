"""``-S key=value`` assignments into a parameters mapping, as ``dvc exp run -S`` takes them:
``apply_assignment`` parses one (the value as YAML), ``set_param`` sets a known parameter,
``param_value`` writes a value back in the form ``-S`` reads."""

from __future__ import annotations

import json
import math
from typing import Any

import yaml

from lttw.errors import UserError
from lttw.io import load_yaml


def set_param(params: dict, key: str, value: Any, where: str = "-S:") -> None:
    """``params[a][b] = value`` for ``key`` ``a.b``; an unknown parameter is an error."""
    node = params
    *parents, leaf = key.split(".")
    for part in parents:
        if not isinstance(node.get(part), dict):
            raise UserError(f"{where} {part!r} in {key!r} is not a parameter group")
        node = node[part]
    if leaf not in node:
        raise UserError(f"{where} unknown parameter {key!r} (not in params.yaml)")
    node[leaf] = value


def apply_assignment(params: dict, assignment: str) -> None:
    """``a.b=value`` (value parsed as YAML, as ``dvc exp run -S`` does) into ``params``."""
    key, sep, raw = assignment.partition("=")
    if not sep or not key:
        raise UserError(f"-S {assignment!r}: expected key=value, e.g. -S model.k=20")
    try:
        value = load_yaml(raw)
    except yaml.YAMLError:
        raise UserError(f"-S {assignment!r}: the value is not YAML") from None
    set_param(params, key, value)


def param_value(value: Any) -> str:
    """A value as ``-S`` takes it (floats in a YAML 1.1 form, which every reader parses)."""
    if isinstance(value, bool):
        return str(value).lower()
    if value is None:
        return "null"
    if isinstance(value, list):
        return "[" + ",".join(param_value(v) for v in value) + "]"
    if isinstance(value, float):
        if value and math.log10(abs(value)) < -3:
            mantissa, exponent = f"{value:e}".split("e")
            return f"{float(mantissa)}e{int(exponent)}"
        return repr(value)
    text = str(value)
    if isinstance(value, str) and _reads_back_as_other(text):
        return json.dumps(text)  # "yes", "1e3", "null", "": quoted, read back as the string
    return text


def _reads_back_as_other(text: str) -> bool:
    try:
        return load_yaml(text) != text
    except yaml.YAMLError:
        return True
