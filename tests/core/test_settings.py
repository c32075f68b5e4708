"""Parameters (``lttw.settings``): every bad value rejected at load in one line naming the
parameter and its valid range (cases generated from the field constraints), and a bad
parameter stopping a stage before any work."""

from __future__ import annotations

import math
import re
import types
import typing
from pathlib import Path

import pytest
import yaml
from pydantic import BaseModel
from support.params import base_params, with_value  # noqa: F401

from lttw import layout
from lttw.settings import (
    Settings,
    SettingsError,
    check_batch_size,
    read_settings,
    settings_from_dict,
)

REPO = Path(__file__).resolve().parents[2]


# ------------------------------------------------------------------ bad parameters


def _groups() -> dict[str, type[BaseModel] | None]:
    """Top-level parameter name -> its group model (None: a plain top-level value)."""
    out = {}
    for name, info in Settings.model_fields.items():
        ann = info.annotation
        out[name] = ann if isinstance(ann, type) and issubclass(ann, BaseModel) else None
    return out


def _bounds(metadata) -> dict[str, float]:
    out = {}
    for item in metadata:
        for attr in ("ge", "gt", "le", "lt", "min_length"):
            if getattr(item, attr, None) is not None:
                out[attr] = getattr(item, attr)
    return out


def _is_float(annotation) -> bool:
    return annotation is float or float in typing.get_args(annotation)


def out_of_range_cases() -> list[tuple[str, object, str]]:
    """(dotted name, bad value, expected valid-range text), generated from the field
    constraints of ``Settings``: a new constrained parameter is covered automatically."""
    cases = []
    fields = [
        (None, name, info)
        for name, info in Settings.model_fields.items()
        if _groups()[name] is None
    ]
    fields += [
        (group, name, info)
        for group, model in _groups().items()
        if model
        for name, info in model.model_fields.items()
    ]
    for group, name, info in fields:
        dotted = f"{group}.{name}" if group else name
        union = typing.get_origin(info.annotation) in (typing.Union, types.UnionType)
        members = [
            c
            for a in typing.get_args(info.annotation)
            if union
            for m in getattr(a, "__metadata__", ())
            for c in getattr(m, "metadata", [m])
        ]
        bounds = _bounds(list(info.metadata) + members)  # nmf.rank: int in range | "auto"
        is_float = _is_float(info.annotation)
        step = 0.5 if is_float else 1
        if "ge" in bounds:
            cases.append((dotted, bounds["ge"] - step, f"{bounds['ge']} <= {dotted}"))
        if "gt" in bounds:
            cases.append((dotted, bounds["gt"], f"{bounds['gt']} < {dotted}"))
        if "le" in bounds:
            cases.append((dotted, bounds["le"] + step, f"{dotted} <= {bounds['le']}"))
        if "lt" in bounds:
            cases.append((dotted, bounds["lt"], f"{dotted} < {bounds['lt']}"))
        if bounds.get("min_length"):
            cases.append((dotted, [], "at least 1 item"))
        if is_float and bounds:
            cases += [(dotted, math.nan, "finite number"), (dotted, math.inf, "finite number")]
        for item in () if union else typing.get_args(info.annotation):  # list[Annotated[...]]
            item_bounds = _bounds(
                c for m in getattr(item, "__metadata__", ()) for c in getattr(m, "metadata", [m])
            )
            if "ge" in item_bounds:
                cases.append(
                    (dotted, [item_bounds["ge"] - 1], f"{item_bounds['ge']} <= {dotted}[0]")
                )
    return cases


def literal_cases() -> list[str]:
    """Every parameter whose value is one of a fixed set of names."""
    out = []
    for group, model in _groups().items():
        for name, info in model.model_fields.items() if model else []:
            if typing.get_origin(info.annotation) is typing.Literal:
                out.append(f"{group}.{name}")
    return out


def load_yaml(tmp_path: Path, params: dict):
    path = tmp_path / "params.yaml"
    path.write_text(yaml.safe_dump(params, sort_keys=False), encoding="utf-8")
    return read_settings(path)


def test_repo_params_are_valid():
    read_settings(REPO / "params.yaml")


def test_out_of_range_cases_cover_every_constrained_number():
    names = {dotted for dotted, _, _ in out_of_range_cases()}
    assert {
        "seed",
        "data.train_size",
        "nmf.rank",
        "model.max_len",
        "model.dropout",
        "train.lr",
        "train.head_lr",
        "train.batch_size",
        "folds.n_folds",
        "folds.run",
    } <= names
    assert len(names) >= 30


@pytest.mark.parametrize(
    "dotted,value,valid",
    out_of_range_cases(),
    ids=[f"{d}={v!r}" for d, v, _ in out_of_range_cases()],
)
def test_out_of_range_parameter_rejected_at_load(tmp_path, dotted, value, valid):
    with pytest.raises(SettingsError) as err:
        load_yaml(tmp_path, with_value(base_params(), dotted, value))
    message = str(err.value)
    assert message.count("\n") == 0, message  # one problem, one line
    assert f"params.yaml: {dotted}" in message, message
    assert valid in message, message


def inclusive_bounds() -> list[tuple[str, object]]:
    """(dotted name, value) of every inclusive bound (ge / le): the bound itself is valid."""
    out = []
    for dotted, value, valid in out_of_range_cases():
        if isinstance(value, list) or (isinstance(value, float) and not math.isfinite(value)):
            continue
        step = 0.5 if isinstance(value, float) else 1
        if valid.endswith(f"<= {dotted}"):
            out.append((dotted, value + step))
        elif valid.startswith(f"{dotted} <="):
            out.append((dotted, value - step))
    return out


@pytest.mark.parametrize(
    "dotted,value", inclusive_bounds(), ids=[f"{d}={v!r}" for d, v in inclusive_bounds()]
)
def test_inclusive_bounds_accepted(tmp_path, dotted, value):
    settings = load_yaml(tmp_path, with_value(base_params(), dotted, value))
    assert settings.model_dump()[dotted.split(".")[0]] is not None


@pytest.mark.parametrize("dotted", literal_cases())
def test_unknown_name_of_a_choice_rejected(tmp_path, dotted):
    with pytest.raises(
        SettingsError,
        match=rf"{re.escape(dotted)}: Input should be '.*' "
        r"\(got 'bogus'\)",
    ):
        load_yaml(tmp_path, with_value(base_params(), dotted, "bogus"))


@pytest.mark.parametrize("group", [g for g, model in _groups().items() if model] + [None])
def test_unknown_parameter_names_rejected(tmp_path, group):
    dotted = f"{group}.bogus_param" if group else "bogus_group"
    with pytest.raises(SettingsError) as err:
        load_yaml(tmp_path, with_value(base_params(), dotted, 1))
    message = str(err.value)
    assert f"{dotted}: unknown parameter; known names: " in message, message
    known = _groups()[group].model_fields if group else Settings.model_fields
    assert all(name in message for name in known)


@pytest.mark.parametrize(
    "changes,ok",
    [
        ({"model.k": 0, "model.s": 0}, False),
        ({"model.k": 0, "model.s": 0, "model.fusion": "none"}, True),
        ({"model.k": 0, "model.s": 0, "model.variant": "encoder"}, True),
        ({"model.k": 0, "model.s": 1}, True),
    ],
)
def test_no_factor_slots_with_concat_fusion(tmp_path, changes, ok):
    params = base_params()
    for dotted, value in changes.items():
        params = with_value(params, dotted, value)
    if ok:
        load_yaml(tmp_path, params)
    else:
        with pytest.raises(SettingsError, match=r"model\.k \+ model\.s must be >= 1"):
            load_yaml(tmp_path, params)


@pytest.mark.parametrize(
    "run,match",
    [
        ([10], r"folds\.run has \[10\]: each fold must be in 0\.\.9"),
        ([0, -1], r"folds\.run has \[-1\]"),
        ([1, 1], r"folds\.run \[1, 1\] repeats a fold"),
    ],
)
def test_folds_run_outside_n_folds(tmp_path, run, match):
    with pytest.raises(SettingsError, match=match):
        load_yaml(tmp_path, with_value(base_params(), "folds.run", run))


@pytest.mark.parametrize(
    "dotted,value,match",
    [
        ("train.epochs", "two", r"train\.epochs: Input should be a valid integer.*valid: 1 <= "),
        ("model.k", 2.5, r"model\.k: Input should be a valid integer"),
        ("model", None, r"model: Input should be a valid dictionary"),
    ],
)
def test_wrong_types_rejected(tmp_path, dotted, value, match):
    with pytest.raises(SettingsError, match=match):
        load_yaml(tmp_path, with_value(base_params(), dotted, value))


def test_unreadable_params_files(tmp_path):
    with pytest.raises(SettingsError, match="parameters file not found"):
        read_settings(tmp_path / "nope.yaml")
    (tmp_path / "bad.yaml").write_text("model: [unclosed\n")
    with pytest.raises(SettingsError, match="not valid YAML"):
        read_settings(tmp_path / "bad.yaml")
    (tmp_path / "list.yaml").write_text("- 1\n- 2\n")
    with pytest.raises(SettingsError, match="expected a mapping"):
        read_settings(tmp_path / "list.yaml")


def test_several_problems_are_all_named():
    with pytest.raises(SettingsError) as err:
        settings_from_dict({"model": {"depth": 0, "dropout": 2}, "nmf": {"rank": 0}})
    message = str(err.value)
    assert all(name in message for name in ("model.depth", "model.dropout", "nmf.rank"))


def test_check_batch_size():
    check_batch_size(80, 80)
    check_batch_size(80, 1)
    with pytest.raises(
        SettingsError,
        match=r"train\.batch_size=81 is larger than fold 0's train "
        r"part \(80 rows\); valid: 1 <= train\.batch_size "
        r"<= 80",
    ):
        check_batch_size(80, 81, fold=0)
    with pytest.raises(SettingsError, match="train part is empty"):
        check_batch_size(0, 1)


def test_bad_params_stop_a_stage_before_any_work(stage_runs):
    ran = stage_runs["bad params through a stage"]
    line = ran.error_line()
    assert (
        "model.depth: Input should be greater than or equal to 1 (got 0); valid: 1 <= "
        "model.depth <= 24" in line
    ), line
    assert "train.bogus: unknown parameter" in line, line
    assert not (ran.cwd / "data").exists()


def test_fold_outside_n_folds_stops_a_stage(stage_runs):
    line = stage_runs["--fold outside folds.n_folds"].error_line()
    assert line == "--fold 4: must be in 0..3", line


def test_nmf_rank_larger_than_vocabulary(stage_runs):
    ran = stage_runs["nmf.rank > vocabulary"]
    line = ran.error_line()
    assert line == "nmf.rank=5 exceeds the vocabulary size (3 words); use nmf.rank <= 3", line
    assert not (ran.cwd / layout.nmf_dir(0)).exists()
    assert not (ran.cwd / layout.nmf_metrics(0)).exists()


def test_max_len_beyond_encoder_positions(stage_runs, tiny_encoder_dir):
    from lttw.encoder.pretrained import check_max_len

    ran = stage_runs["model.max_len > encoder positions"]
    line = ran.error_line()
    assert "model.max_len is 129, but the encoder accepts at most 128 positions" in line, line
    assert not (ran.cwd / "data").exists()
    check_max_len(str(tiny_encoder_dir), 128)  # the limit itself is fine
