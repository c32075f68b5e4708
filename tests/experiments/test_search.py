"""`lttw tune` on the tiny profile: two worker processes share one study in one SQLite file
(each trial a direct-runner cell up to fold 0's training, objective its validation macro
F1); a rerun continues the study up to --trials, counting the trials other workers run, a
pruned trial's training is stopped, and the best trial's parameters go into params.yaml
with one command."""

from __future__ import annotations

import re
import subprocess
from pathlib import Path

import pytest
import yaml
from support.tiny_project import env, lttw, make_tiny_project

optuna = pytest.importorskip("optuna")

SPACE = {
    "fold": 0,
    "set": {"train.epochs": 1, "train.max_epochs": 1},
    "space": {
        "train.lr": {"low": 1e-4, "high": 1e-2, "log": True},
        "train.batch_size": {"choices": [8, 16]},
    },
}
WORKER_TIMEOUT_S = 420


@pytest.fixture
def project(tiny_encoder_dir, tmp_path) -> Path:
    """The tiny profile's project, not run: a trial runs the stages in its own work folder
    (the direct runner's), never the project's DVC outputs."""
    root = make_tiny_project(tmp_path / "project", tiny_encoder_dir)
    (root / "experiments").mkdir(exist_ok=True)
    (root / "experiments" / "search-tiny.yaml").write_text(yaml.safe_dump(SPACE))
    return root


def _study(root: Path):
    url = f"sqlite:///{root / 'data' / 'tune' / 'studies.db'}"
    return optuna.load_study(study_name="tiny", storage=url)


@pytest.mark.slow  # two workers, two trials of the real stages
def test_two_workers_share_a_study_that_resumes_prunes_and_applies(project):
    workers = [
        subprocess.Popen(
            ["lttw", "tune", "tiny", "--trials", "2"],
            cwd=project,
            env=env(),
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            text=True,
        )
        for _ in range(2)
    ]
    outputs = [worker.communicate(timeout=WORKER_TIMEOUT_S)[0] for worker in workers]
    assert [worker.returncode for worker in workers] == [0, 0], outputs
    study = _study(project)
    numbers = [trial.number for trial in study.trials]
    assert len(numbers) >= 2 and len(set(numbers)) == len(numbers)
    assert all(trial.state.name == "COMPLETE" for trial in study.trials)
    assert all(0.0 <= trial.value <= 1.0 for trial in study.trials)
    ran = [set(map(int, re.findall(r"^trial (\d+):", out, re.M))) for out in outputs]
    assert not ran[0] & ran[1] and ran[0] | ran[1] == set(numbers)  # one study, no trial twice
    # a trial ends at its fold's training: no cell is evaluated, no work folder is left
    assert not list((project / "data" / "tune" / "work" / "cells").iterdir())

    from lttw.experiments.search import tune

    # a rerun continues the study, counting a trial another worker runs now (one asked for
    # here and left running): one trial takes it to --trials; pruned, its training stopped
    elsewhere = study.ask()
    always = optuna.pruners.ThresholdPruner(lower=2.0)  # no F1 reaches it: pruned at epoch 0
    again = tune("tiny", len(numbers) + 2, repo=project, pruner=always, log=lambda _: None)
    last = again.trials[-1]
    assert (len(again.trials), last.number, last.state.name) == (
        len(numbers) + 2,
        elsewhere.number + 1,
        "PRUNED",
    )
    assert 0 in last.intermediate_values

    best = study.best_trial
    result = lttw(["tune", "tiny", "--apply"], project)
    assert "wrote params.yaml" in result.stdout
    train = yaml.safe_load((project / "params.yaml").read_text())["train"]
    assert (train["lr"], train["batch_size"], train["epochs"]) == (
        best.params["train.lr"],
        best.params["train.batch_size"],
        1,
    )
