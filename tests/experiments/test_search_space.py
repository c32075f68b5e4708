"""Search spaces (experiments/search-NAME.yaml): every value a trial can take is checked
against the settings before any trial, with a one-line error; the grids leave them out;
the best trial's parameters go into params.yaml with its comments kept."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from lttw.errors import UserError
from lttw.experiments.grids import full_params, grid_paths
from lttw.experiments.search_space import find_space, load_space, space_paths
from lttw.experiments.tuned_params import apply_params

REPO = Path(__file__).resolve().parents[2]
BASE = full_params(REPO / "params.yaml")


def write(tmp_path: Path, doc: dict, name: str = "search-t.yaml") -> Path:
    path = tmp_path / name
    path.write_text(yaml.safe_dump(doc))
    return path


def test_the_repositorys_spaces_load_and_are_no_grids():
    paths = space_paths(REPO / "experiments")
    assert paths
    for path in paths:
        space = load_space(path, BASE)
        assert space.dimensions
    assert not set(paths) & set(grid_paths(REPO / "experiments"))


def test_a_space_samples_ranges_ints_and_choices(tmp_path):
    optuna = pytest.importorskip("optuna")
    path = write(
        tmp_path,
        {
            "set": {"train.epochs": 3},
            "fold": 1,
            "space": {
                "train.lr": {"low": 1e-5, "high": 1e-3, "log": True},
                "model.depth": {"low": 1, "high": 3},
                "train.batch_size": {"choices": [16, 32]},
            },
        },
    )
    space = load_space(path, BASE)
    trial = optuna.create_study().ask()
    values = {dim.name: dim.suggest(trial) for dim in space.dimensions}
    assert 1e-5 <= values["train.lr"] <= 1e-3
    assert isinstance(values["model.depth"], int) and 1 <= values["model.depth"] <= 3
    assert values["train.batch_size"] in (16, 32)
    assert space.trial_params(values)["folds.run"] == [1]
    assert space.trial_params(values)["train.epochs"] == 3


@pytest.mark.parametrize(
    ("doc", "message"),
    [
        ({"space": {"train.nope": {"low": 1, "high": 2}}}, "unknown parameter 'train.nope'"),
        ({"space": {"train.lr": {"low": 1e-3, "high": 1e-5}}}, "low < high"),
        ({"space": {"train.lr": {"low": 0.0, "high": 1.0, "log": True}}}, "low > 0"),
        ({"space": {"model.dropout": {"low": 0.0, "high": 2.0}}}, "model.dropout"),
        ({"space": {"train.batch_size": {"choices": [16, 0]}}}, "train.batch_size"),
        ({"space": {"train.lr": {"choices": []}}}, "choices"),
        ({"space": {"train.lr": {"low": 1e-4, "high": 1e-3}}, "fold": 10}, "must be in 0..9"),
        ({"space": {"train.lr": {"low": 1e-4, "high": 1e-3}}, "pruner": "x"}, "pruner"),
        ({"space": {}}, "non-empty `space:`"),
        ({"space": {"train.lr": 0.1}}, "a mapping expected"),
        ({"spaces": {}}, "`space:`"),
    ],
)
def test_a_bad_space_is_one_line_before_any_trial(tmp_path, doc, message):
    with pytest.raises(UserError, match=message) as err:
        load_space(write(tmp_path, doc), BASE)
    assert "\n" not in str(err.value)


def test_an_unknown_space_names_the_known_ones(tmp_path):
    write(tmp_path, {"space": {}}, "search-lr.yaml")
    with pytest.raises(UserError, match="unknown search space 'x'; in .*: lr"):
        find_space("x", tmp_path)


def test_the_best_parameters_are_applied_with_the_files_comments(tmp_path):
    params = tmp_path / "params.yaml"
    params.write_text("seed: 42  # the seed\ntrain:\n  lr: 0.1  # encoder\n  epochs: 2\n")
    apply_params(params, {"train.lr": 0.002, "train.epochs": 3})
    text = params.read_text()
    assert "# the seed" in text and "# encoder" in text
    assert yaml.safe_load(text) == {"seed": 42, "train": {"lr": 0.002, "epochs": 3}}
    with pytest.raises(UserError, match="unknown parameter 'train.nope'"):
        apply_params(params, {"train.nope": 1})
    assert yaml.safe_load(params.read_text())["train"]["lr"] == 0.002
