"""`lttw tune` given hostile input, through the command: a study name that would write
outside the work folder, a study whose best trial holds values the settings refuse or
parameters outside the space, storage URLs that name no database (one line, exit 3, no
file or folder left behind), and --apply's rewrite of params.yaml (nulls kept, a file that
cannot be written named as itself)."""

from __future__ import annotations

import contextlib
import shutil
from pathlib import Path

import pytest
import yaml
from support.cli_runner import assert_user_error
from support.tiny_project import lttw

from lttw.errors import UserError
from lttw.experiments.grids import full_params
from lttw.experiments.search_space import load_space
from lttw.experiments.tuned_params import apply_params

optuna = pytest.importorskip("optuna")

REPO = Path(__file__).resolve().parents[2]
SPACE = {
    "set": {"train.epochs": 1},
    "space": {"train.lr": {"low": 1e-4, "high": 1e-2, "log": True}},
}


@pytest.fixture
def project(tmp_path) -> Path:
    root = tmp_path / "project"
    (root / "experiments").mkdir(parents=True)
    shutil.copy(REPO / "params.yaml", root / "params.yaml")
    (root / "experiments" / "search-t.yaml").write_text(yaml.safe_dump(SPACE))
    return root


def _study_with_best(root: Path, params: dict) -> str:
    """An SQLite study ``t`` whose one (best) trial holds ``params``; its URL."""
    url = f"sqlite:///{root / 'studies.db'}"
    study = optuna.create_study(study_name="t", storage=url, direction="maximize")
    study.add_trial(
        optuna.trial.create_trial(
            value=0.5, params={}, distributions={}, user_attrs={"params": params}
        )
    )
    return url


def test_a_study_name_that_climbs_out_of_the_work_folder_is_refused(project, tmp_path):
    escaped = "x/../../../../../../outside/escaped"
    result = lttw(["tune", "t", "--study", escaped, "--trials", "1"], project, check=False)
    assert_user_error(result, "--study", escaped)
    assert not (tmp_path / "outside").exists() and not (project / "outside").exists()
    assert not (project / "data").exists()  # no storage, no work folder
    # a space's name is checked the same way: the space file search-<name>.yaml climbing up
    (project / "experiments" / "search-..").mkdir()
    (project / "x.yaml").write_text(yaml.safe_dump(SPACE))
    climbing = lttw(["tune", "../../../x", "--trials", "1"], project, check=False)
    assert_user_error(climbing, "search space", "'../../../x' must be one folder name")
    assert not (project / "data").exists()


@pytest.mark.parametrize(
    ("best", "needle"),
    [
        ({"train.lr": 0.001, "train.epochs": -5}, "train.epochs"),
        ({"train.lr": 0.001, "data.root": "/etc"}, "'data.root' is not a parameter"),
        ({"train.lr": "not a number", "train.epochs": 1}, "train.lr"),
    ],
)
def test_apply_writes_only_checked_parameters_of_the_space(project, best, needle):
    url = _study_with_best(project, best)
    before = (project / "params.yaml").read_bytes()
    result = lttw(["tune", "t", "--apply", "--storage", url], project, check=False)
    assert_user_error(result, needle, code=3)
    assert (project / "params.yaml").read_bytes() == before


def test_apply_writes_the_best_trial_with_the_files_nulls(project):
    url = _study_with_best(project, {"train.lr": 0.002, "train.epochs": 1})
    result = lttw(["tune", "t", "--apply", "--storage", url], project)
    assert "wrote params.yaml" in result.stdout
    text = (project / "params.yaml").read_text()
    assert "text_column: null" in text
    params = yaml.safe_load(text)
    assert (params["train"]["lr"], params["train"]["epochs"]) == (0.002, 1)


@pytest.mark.parametrize("apply", [True, False])
def test_a_storage_that_names_no_database_is_one_line_and_leaves_nothing(project, apply):
    flag = ["--apply"] if apply else ["--trials", "1"]
    empty = lttw(["tune", "t", *flag, "--storage", "sqlite:///"], project, check=False)
    assert_user_error(empty, "--storage sqlite:///", code=3)
    garbage = project / "old" / "bad.db"
    garbage.parent.mkdir()
    garbage.write_text("not a database\n" * 100)
    urls = [f"sqlite:///{garbage}"]
    if apply:  # --apply reads a study: a missing file is made by no one
        urls.append(f"sqlite:///{project / 'new' / 'deeper' / 's.db'}")
    for url in urls:
        result = lttw(["tune", "t", *flag, "--storage", url], project, check=False)
        assert_user_error(result, f"--storage {url}", code=3)
    assert not (project / "new").exists()
    assert sorted(p.name for p in garbage.parent.iterdir()) == ["bad.db"]
    assert not (project / "data").exists()


def test_a_params_file_that_cannot_be_replaced_is_named_as_itself(tmp_path, monkeypatch):
    params = tmp_path / "params.yaml"
    params.write_text("train:\n  lr: 0.1\n")

    def immutable(src, dst):
        raise PermissionError(1, "Operation not permitted", str(src), None, str(dst))

    monkeypatch.setattr("os.replace", immutable)
    with pytest.raises(UserError, match=r"params\.yaml: cannot be written") as err:
        apply_params(params, {"train.lr": 0.2})
    assert ".tmp" not in str(err.value)
    assert params.read_text() == "train:\n  lr: 0.1\n"
    assert [p.name for p in tmp_path.iterdir()] == ["params.yaml"]


def test_a_bound_read_as_text_says_how_to_write_it(tmp_path):
    path = tmp_path / "search-t.yaml"
    path.write_text("space:\n  train.lr: {low: 1e-5, high: 1.0e-3}\n")
    with pytest.raises(UserError, match=r"low: '1e-5' is text.*write 1\.0e-5"):
        load_space(path, full_params(REPO / "params.yaml"))


TRIAL_THAT_TRAINS = """
import os, sys
from pathlib import Path
from lttw.experiments import search
from lttw.experiments.stage_process import Clock, run_stage

CHILD = "import os, time; open('stage.pid', 'w').write(str(os.getpid())); time.sleep(120)"

def trial(trial, space, runner, study):  # a stage as a trial runs it: its own process group
    run_stage([sys.executable, "-c", CHILD], Path.cwd(), dict(os.environ), Clock(None),
              None, runner._running)
    return 0.0

search.run_trial = trial
search.tune("t", 1, repo=Path.cwd(), log=lambda line: None)
"""


def test_sigterm_stops_the_trials_stage_too(project):
    import os
    import signal
    import subprocess
    import sys
    import time

    from support.tiny_project import env

    shutil.copy(REPO / "dvc.yaml", project / "dvc.yaml")
    tune = subprocess.Popen(
        [sys.executable, "-c", TRIAL_THAT_TRAINS], cwd=project, env=env(), start_new_session=True
    )
    pid_file = project / "stage.pid"
    stage = None
    try:
        end = time.monotonic() + 60
        while not pid_file.is_file() or not pid_file.read_text():
            assert time.monotonic() < end and tune.poll() is None, "no stage started"
            time.sleep(0.1)
        stage = int(pid_file.read_text())
        tune.send_signal(signal.SIGTERM)  # to lttw tune alone, as `timeout` sends it
        tune.wait(timeout=30)
        time.sleep(0.2)
        with pytest.raises(ProcessLookupError):  # reaped by lttw tune: gone, not orphaned
            os.kill(stage, 0)
    finally:
        for pgid in (tune.pid, stage):
            if pgid is not None:
                with contextlib.suppress(ProcessLookupError):
                    os.killpg(pgid, signal.SIGKILL)
