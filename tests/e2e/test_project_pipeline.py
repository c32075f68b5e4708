"""What ``lttw init`` writes, checked without running DVC: the project's dvc.yaml and
params.yaml are this repository's, rewritten by code (``lttw.project.files``), the stage
runner refuses code other than the project's stamp names, and init's errors are one line."""

from __future__ import annotations

import importlib.util
import json
import re
from pathlib import Path

import pytest
import yaml
from support.stage_scripts import run_stage_script
from typer.testing import CliRunner

from lttw.cli import app
from lttw.errors import UserError
from lttw.project.files import project_dvc_yaml, project_params
from lttw.project.stamp import STAMP, check_stamp, stamp
from lttw.settings import Settings

REPO = Path(__file__).resolve().parents[2]


def _stages(doc: dict) -> dict:
    return {name: s.get("do", s) for name, s in doc["stages"].items()}


def test_the_projects_dvc_yaml_is_the_repositorys_without_its_code_paths():
    repo = _stages(yaml.safe_load((REPO / "dvc.yaml").read_text()))
    derived_doc = yaml.safe_load(project_dvc_yaml())
    derived = _stages(derived_doc)
    assert list(derived) == list(repo)  # every stage, in order (a new one comes by itself)
    for name, stage in derived.items():
        original = repo[name]
        # python, or the train stage's launcher (python by default, torchrun with -m too)
        launcher, script = re.search(
            r"(python|\$\{train\.launcher\}) stages/(\w+)\.py", original["cmd"]
        ).groups()
        assert importlib.util.find_spec(f"lttw.stages.{script}") is not None
        assert stage["cmd"] == original["cmd"].replace(
            f"{launcher} stages/{script}.py", f"{launcher} -m lttw.stages.{script}"
        )
        kept = [d for d in original["deps"] if not d.startswith(("src/", "stages/"))]
        assert stage["deps"] == [STAMP, *kept], name
        for key in set(original) - {"cmd", "deps"}:
            assert stage[key] == original[key], (name, key)
    assert "${data.root}/${data.dataset}" in derived["sample"]["deps"]  # the dvc-added data
    assert derived_doc["artifacts"] == yaml.safe_load((REPO / "dvc.yaml").read_text())["artifacts"]
    assert "evidence/" not in project_dvc_yaml()


def test_the_projects_params_are_valid_with_the_users_data():
    params = yaml.safe_load(project_params("reviews.csv", "review", "stars"))
    settings = Settings(**params)
    data = settings.data
    assert (data.root, data.dataset) == ("data/raw", "reviews.csv")
    assert (data.text_column, data.label_column, data.sampling) == ("review", "stars", "all")
    assert data.predict_size == 0
    if "final" in params:  # the final stage (issue 39.3): on in a user's project
        assert params["final"]["enabled"] is True
    shipped = yaml.safe_load((REPO / "params.yaml").read_text())
    assert {k: v for k, v in params.items() if k != "data"} == {
        k: v for k, v in shipped.items() if k not in ("data", "final")
    } | ({"final": params["final"]} if "final" in params else {})
    text = project_params("r.csv")
    assert "text_column: null" in text and "# every labelled row" in text  # comments kept


def test_the_stage_runner_refuses_other_code_than_the_stamp(tmp_path):
    """A stage run in a folder with ``lttw-version.json`` (a user project) stops with one
    line where the stamp is not the installed lttw's; without one (this repository) it runs."""
    with pytest.raises(UserError, match="nothing readable.*lttw init --upgrade"):
        check_stamp(tmp_path)  # no stamp at all
    (tmp_path / STAMP).write_text(json.dumps({"lttw": "0.0.1", "code_sha256": "0" * 64}))
    ran = run_stage_script("summary", tmp_path)  # python -m lttw.stages.summary
    assert re.fullmatch(r"error: .*says lttw 0\.0\.1.*lttw init --upgrade.*\n", ran.stderr)
    assert ran.returncode == 2
    for right in (True, False):  # the installed lttw's stamp, or none: the stage itself runs
        if right:
            (tmp_path / STAMP).write_text(json.dumps(stamp()))
            check_stamp(tmp_path)
        else:
            (tmp_path / STAMP).unlink()
        ran = run_stage_script("summary", tmp_path)
        assert ran.returncode == 2 and "params.yaml" in ran.stderr, ran.stderr
        assert "lttw init --upgrade" not in ran.stderr


def _init(*args) -> tuple[int, str]:
    result = CliRunner().invoke(app, ["init", *map(str, args)])
    return result.exit_code, result.output


def test_init_errors_are_one_line_and_write_nothing(tmp_path):
    code, out = _init(tmp_path / "p", "--data", tmp_path / "none.csv")
    assert code == 3 and out.startswith("error: ") and "none.csv" in out
    assert not (tmp_path / "p").exists()
    (tmp_path / "full").mkdir()
    (tmp_path / "full" / "x").write_text("x")
    (tmp_path / "d.csv").write_text("text,label\n" + "a,x\nb,y\n" * 20)
    code, out = _init(tmp_path / "full", "--data", tmp_path / "d.csv")
    assert code == 2 and "not an empty folder" in out
    code, out = _init(tmp_path / "p")
    assert code == 2 and "--data" in out
    code, out = _init(tmp_path / "p", "--upgrade")
    assert code == 2 and "not a project made by `lttw init`" in out
    (tmp_path / "bad.csv").write_text("review,stars\n" + "a,x\n" * 20)  # no text column
    code, out = _init(tmp_path / "p", "--data", tmp_path / "bad.csv")
    assert code == 3 and "no text column 'text'" in out and not (tmp_path / "p").exists()


def test_init_upgrade_rewrites_the_pipeline_and_the_stamp(tmp_path):
    (tmp_path / "dvc.yaml").write_text("stages: {}\n")
    (tmp_path / STAMP).write_text(json.dumps({"lttw": "0.0.1", "code_sha256": "0" * 64}))
    (tmp_path / "params.yaml").write_text("seed: 7\n")
    code, out = _init(tmp_path, "--upgrade")
    assert code == 0, out
    check_stamp(tmp_path)  # the stamp is the installed lttw's
    assert (tmp_path / "dvc.yaml").read_text() == project_dvc_yaml()
    assert (tmp_path / "params.yaml").read_text() == "seed: 7\n"  # the user's values stay


def test_init_example_ships_what_this_repository_has(tmp_path):
    """`lttw init DIR --example` (issue 67.3): the packaged CSV, the search spaces of
    `lttw tune`, data/tune/ ignored, metrics/ not; -S values validated and marked."""
    code, out = _init(tmp_path / "demo", "--example", "-S", "model.k=7")
    assert code == 0, out
    project = tmp_path / "demo"
    assert (project / "data/raw/news.csv.dvc").is_file()
    spaces = sorted(p.name for p in (project / "experiments").iterdir())
    assert spaces == sorted(p.name for p in REPO.glob("experiments/search-*.yaml"))
    assert "search-lr.yaml" in spaces
    ignored = (project / ".gitignore").read_text().splitlines()
    assert "/data/tune/" in ignored and not any(line.startswith("/metrics") for line in ignored)
    text = (project / "params.yaml").read_text()
    assert "k: 7" in text and "# lttw init -S / --params" in text
    assert "a small dataset" not in out  # 100 rows a class: lttw's defaults
    readme = (project / "README.md").read_text()
    assert "lttw exp compare" in readme and "dvc checkout" in readme


def test_init_set_params_and_params_file_are_validated(tmp_path):
    (tmp_path / "d.csv").write_text("text,label\n" + "a b,x\nc d,y\n" * 30)
    code, out = _init(tmp_path / "p", "--data", tmp_path / "d.csv", "-S", "model.nope=1")
    assert code == 2 and "unknown parameter 'model.nope'" in out
    assert out.startswith("error: ") and len(out.strip().splitlines()) == 1, out
    code, out = _init(tmp_path / "p", "--data", tmp_path / "d.csv", "-S", "model.k=-4")
    assert code == 2 and "model.k" in out and len(out.strip().splitlines()) == 1, out
    code, out = _init(tmp_path / "p", "--data", tmp_path / "d.csv", "-S", "data.root=x")
    assert code == 2 and "lttw init sets it from --data" in out
    (tmp_path / "p.yaml").write_text("train:\n  epochs: 0\n")
    code, out = _init(tmp_path / "p", "--data", tmp_path / "d.csv", "--params", tmp_path / "p.yaml")
    assert code == 2 and "train.epochs" in out
    assert not (tmp_path / "p").exists()


def test_a_small_dataset_gets_parameters_fitted_to_it(tmp_path):
    from lttw.profiles import fit_to_data

    assert fit_to_data([500, 400], test_split=False) == []
    assert fit_to_data([100, 100], test_split=False) == []  # SMALL_PER_CLASS: not small
    assert (
        dict((k, v) for k, v, _ in fit_to_data([64, 99], test_split=False))["folds.n_folds"] == 10
    )
    assert fit_to_data([2, 40], test_split=False) == []  # refused by init: too few to fold
    plan = {key: value for key, value, _ in fit_to_data([8, 8], test_split=False)}
    assert plan["folds.n_folds"] == 8 and plan["folds.run"] == list(range(8))
    assert plan["data.test_size"] == 0 and plan["model.variant"] == "encoder"
    assert plan["train.keep"] == "last"  # no epoch chosen by a validation row or two a class
    assert plan["train.freeze_encoder"] is True and plan["model.pooling"] == "mean"
    assert plan["train.min_steps"] <= plan["train.max_epochs"]  # an epoch takes a step at least
    assert 1 <= plan["train.batch_size"] <= 16 * 6 // 8  # within every fold's train part
    assert "data.test_size" not in dict((k, v) for k, v, _ in fit_to_data([8, 8], test_split=True))
    (tmp_path / "d.csv").write_text("text,label\n" + "a b,x\nc d,y\n" * 8)
    code, out = _init(tmp_path / "p", "--data", tmp_path / "d.csv", "-S", "folds.n_folds=4")
    assert code == 0, out
    assert "a small dataset (16 rows)" in out and "folds.run=[0, 1, 2, 3]" in out
    params = yaml.safe_load((tmp_path / "p/params.yaml").read_text())
    assert params["folds"]["n_folds"] == 4  # -S wins over the fitted value ...
    Settings(**params)  # ... and the whole file is valid
