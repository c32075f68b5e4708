"""What the installed environment gives the pipeline's tools: DVC reads dvc.yaml, dvc.lock and
params.yaml (once per stage it checks) through ruamel.yaml, which since 0.19 no longer brings
its C loader along; pyproject.toml names it (``ruamel.yaml.clib``), since without it every dvc
command spends about twice its own CPU time (``bench/suite_cpu.py``: the ``dvc`` row)."""

from __future__ import annotations

import platform

import pytest


@pytest.mark.skipif(platform.python_implementation() != "CPython", reason="a CPython extension")
def test_dvc_parses_yaml_with_the_c_loader():
    from ruamel.yaml import YAML

    yaml = YAML(typ="safe")  # what dvc.utils.serialize asks for
    assert yaml.Parser.__name__ == "CParser", "pip install ruamel.yaml.clib"
    assert yaml.load("a: [1, 2]\n") == {"a": [1, 2]}
