"""The helpers the end-to-end tests run commands and pipelines with: a stuck command is
stopped, with what it started, and reported, never waited on forever (``tiny_project``); the
in-process pipeline (``in_process_pipeline``) runs every stage of dvc.yaml, each as its
command names it, and stops at a failing stage with its error."""

import pkgutil
import subprocess
import time

import pytest
import yaml
from support.in_process_pipeline import StageFailed, plan, run_pipeline, stage_command
from support.tiny_project import REPO, run

import lttw.stages


def test_a_command_past_its_timeout_is_stopped_with_its_children(tmp_path):
    marker = tmp_path / "child.pid"
    start = time.monotonic()
    with pytest.raises(subprocess.TimeoutExpired) as err:
        run(f"echo started; sleep 60 & echo $! > {marker}; wait", tmp_path, timeout=2)
    assert time.monotonic() - start < 30
    assert "started" in err.value.stdout  # the output so far
    child = int(marker.read_text())
    for _ in range(50):  # the killed group's child is gone (or a zombie being reaped)
        try:
            state = open(f"/proc/{child}/stat").read().split()[2]
        except FileNotFoundError:
            break
        if state == "Z":
            break
        time.sleep(0.1)
    else:
        pytest.fail(f"child {child} still runs")


def test_a_finished_command_returns_its_output(tmp_path):
    assert run(["echo", "done"], tmp_path, timeout=30) == "done\n"


def test_the_in_process_plan_runs_every_stage_of_this_repositorys_pipeline():
    stages = plan(REPO)
    dvc_yaml = yaml.safe_load((REPO / "dvc.yaml").read_text())
    assert [planned.stage.base for planned in stages if "@" not in planned.stage.name] == [
        base for base, spec in dvc_yaml["stages"].items() if "foreach" not in spec
    ]
    assert {planned.stage.base for planned in stages} == set(dvc_yaml["stages"])
    assert {planned.module for planned in stages} == {
        module.name for module in pkgutil.iter_modules(lttw.stages.__path__)
    }
    train = next(planned for planned in stages if planned.stage.base == "train")
    assert train.module == "train" and train.args == ("--fold", train.stage.name[-1])


@pytest.mark.parametrize(
    ("cmd", "expected"),
    [
        ("python stages/counts.py --fold 2", ("counts", ("--fold", "2"))),
        ("python -m lttw.stages.summary --params p.yaml", ("summary", ("--params", "p.yaml"))),
        ("torchrun --nproc-per-node 2 -m lttw.stages.train --fold 0", ("train", ("--fold", "0"))),
    ],
)
def test_a_stage_command_names_its_module(cmd, expected):
    assert stage_command("x", cmd) == expected


@pytest.mark.parametrize("cmd", ["make all", "python -m lttw.stages.nothing", "python stages/x.py"])
def test_a_command_that_runs_no_stage_is_one_error_before_anything_runs(tmp_path, cmd):
    (tmp_path / "params.yaml").write_text("folds: {run: [0]}\n")
    stages = {"summary": {"cmd": "python -m lttw.stages.summary"}, "odd": {"cmd": cmd}}
    (tmp_path / "dvc.yaml").write_text(yaml.safe_dump({"stages": stages}))
    with pytest.raises(ValueError, match="^stage odd: .* runs no lttw stage") as err:
        run_pipeline(tmp_path)
    assert "\n" not in str(err.value)


def test_a_failing_stage_raises_with_its_error_line_and_stops_the_run(tmp_path):
    stages = {
        "summary": {"cmd": "python -m lttw.stages.summary", "metrics": ["metrics/summary.json"]},
        "final": {"cmd": "python stages/final.py"},
    }
    (tmp_path / "dvc.yaml").write_text(yaml.safe_dump({"stages": stages}, sort_keys=False))
    (tmp_path / "params.yaml").write_text("folds: {run: [0]}\n")
    (tmp_path / "metrics").mkdir()
    (tmp_path / "metrics/summary.json").write_text("{}")  # removed first, as dvc repro does
    with pytest.raises(ValueError, match="no stage nothing in dvc.yaml"):
        run_pipeline(tmp_path, "nothing")
    with pytest.raises(StageFailed) as err:
        run_pipeline(tmp_path)
    assert err.value.stage == "summary" and err.value.ran.returncode == 2
    assert "error: " in err.value.ran.stderr and "Traceback" not in err.value.ran.stderr
    assert not (tmp_path / "metrics/summary.json").exists()
