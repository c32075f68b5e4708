"""One description per parameter: written beside its typed setting (lttw.settings), rendered
into docs/reference/parameters.md by tools/params_doc.py; params.yaml keeps short comments."""

from __future__ import annotations

import inspect
import re
import sys
from pathlib import Path

import pytest
import yaml
from pydantic import BaseModel

from lttw.settings import Settings

REPO = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(REPO / "tools"))
import params_doc  # noqa: E402  (tools/params_doc.py)


def _groups() -> list[type[BaseModel]]:
    nested = [i.annotation for i in Settings.model_fields.values()]
    return [Settings, *(g for g in nested if isinstance(g, type) and issubclass(g, BaseModel))]


@pytest.mark.parametrize("group", _groups(), ids=lambda g: g.__name__)
def test_every_settings_class_and_field_is_described(group):
    assert inspect.getdoc(group), f"{group.__name__} has no docstring"
    missing = [name for name, info in group.model_fields.items() if not info.description]
    assert not missing, f"{group.__name__}: no Field(description=...) for {missing}"


def test_the_parameters_page_is_current():
    page = REPO / params_doc.PAGE
    assert page.read_text(encoding="utf-8") == params_doc.render(), (
        f"{params_doc.PAGE} is stale: run `{params_doc.COMMAND}`"
    )


def test_the_page_lists_every_parameter_of_params_yaml():
    params = yaml.safe_load((REPO / "params.yaml").read_text(encoding="utf-8"))
    page = params_doc.render()
    for group, values in params.items():
        names = [group] if not isinstance(values, dict) else [f"{group}.{k}" for k in values]
        for dotted in names:
            assert f"| `{dotted}` |" in page, f"{dotted} is not on the parameters page"


def test_check_mode_fails_on_a_stale_page(tmp_path, capsys):
    out = tmp_path / "parameters.md"
    assert params_doc.main(["--out", str(out), "--check"]) == 1  # missing
    assert params_doc.main(["--out", str(out)]) == 0
    assert out.read_text(encoding="utf-8") == params_doc.render()
    assert params_doc.main(["--out", str(out), "--check"]) == 0
    out.write_text(out.read_text(encoding="utf-8").replace("NMF", "nmf"), encoding="utf-8")
    assert params_doc.main(["--out", str(out), "--check"]) == 1
    assert "stale" in capsys.readouterr().err


def test_valid_values_come_from_the_types():
    page = params_doc.render()
    assert "| `nmf.rank` | `auto` | an integer, 1 <= nmf.rank <= 1000 or `auto` |" in page
    assert "| `folds.run` | `[0]` | a list of integers |" in page
    assert "| `train.head_lr` | `0.001` | a number, 0 < train.head_lr < 1 or `null` |" in page


def test_params_yaml_comments_stay_short():
    """The descriptions live in lttw.settings; params.yaml has at most one short comment a line."""
    for n, line in enumerate((REPO / "params.yaml").read_text(encoding="utf-8").splitlines(), 1):
        comment = re.search(r"(?:^|\s)#\s?(.*)$", line)
        if comment and line.startswith(" "):  # a parameter's comment (the header may be longer)
            assert len(comment.group(1)) <= 45, f"params.yaml:{n}: comment over 45 characters"
