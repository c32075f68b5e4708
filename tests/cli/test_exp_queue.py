"""`lttw exp run` through DVC's queue is one library call (``experiments.dvc_queue.run_grid``):
the command reads the grid and data.root, the library queues the cells not run yet, runs the
queue and collects. dvc itself is stood in for (its commands recorded, nothing run)."""

from __future__ import annotations

import shutil
from pathlib import Path

import yaml
from support.cli_runner import invoke
from support.tiny_project import REPO

from lttw.experiments import dvc_queue
from lttw.experiments.grids import find_grid


def _stand_in_for_dvc(monkeypatch, known: set[str]) -> tuple[list[list[str]], list]:
    commands: list[list[str]] = []
    collected: list = []
    monkeypatch.setattr(dvc_queue, "run_commands", lambda batch: commands.extend(batch))
    monkeypatch.setattr(dvc_queue, "queued_or_done", lambda: set(known))

    def collect(grids, runs_dir):
        collected.append(([g.name for g in grids], runs_dir))
        return ["table7-k5s5"]

    monkeypatch.setattr(dvc_queue, "collect_grids", collect)
    return commands, collected


def _project(tmp_path, monkeypatch) -> None:
    (tmp_path / "data" / "ag_news").mkdir(parents=True)
    shutil.copytree(REPO / "experiments", tmp_path / "experiments")
    (tmp_path / "params.yaml").write_text(yaml.safe_dump({"data": {"root": "data"}}))
    monkeypatch.chdir(tmp_path)


def test_exp_run_queues_runs_and_collects(tmp_path, monkeypatch):
    _project(tmp_path, monkeypatch)
    commands, collected = _stand_in_for_dvc(monkeypatch, known={"table7-k10s10"})
    result = invoke("exp", "run", "table7", "--only", "k5s5", "--only", "k10s10")
    assert result.exit_code == 0, result.output
    queued, run_all = commands
    assert queued[queued.index("-n") + 1] == "table7-k5s5"
    assert f"data.root={Path.cwd() / 'data'}" in queued  # made absolute
    assert run_all[-3:] == ["exp", "run", "--run-all"]
    assert collected == [(["table7"], Path("evidence/runs"))]
    assert "skipped (collected, queued or run before): table7-k10s10" in result.output
    assert "ran 1 cell(s); collected table7-k5s5" in result.output


def test_run_grid_only_queues_with_queue_only(tmp_path, monkeypatch):
    _project(tmp_path, monkeypatch)
    commands, collected = _stand_in_for_dvc(monkeypatch, known=set())
    grid = find_grid("table7", tmp_path / "experiments")
    said: list[str] = []
    dvc_queue.run_grid(grid, ["k5s5"], [], tmp_path / "runs", "data", True, said.append)
    assert len(commands) == 1 and "--queue" in commands[0] and not collected
    assert said == ["queued 1 cell(s); run them with `dvc queue start`"]


def test_known_experiments_are_the_finished_queued_and_running_ones(tmp_path, monkeypatch):
    """``queued_or_done`` reads ``dvc exp show``'s rows (DVC's Python API): a failed
    experiment is queued again; outside a DVC repository nothing is known."""
    import dvc.api

    rows = [
        {"Experiment": None, "rev": "workspace", "State": None},
        {"Experiment": None, "rev": "main", "State": None},
        {"Experiment": "done", "rev": "a1", "State": None},  # finished: dvc leaves it blank
        {"Experiment": "waiting", "rev": "b2", "State": "Queued"},
        {"Experiment": "busy", "rev": "c3", "State": "Running"},
        {"Experiment": "broken", "rev": "d4", "State": "Failed"},
    ]
    asked = []
    monkeypatch.setattr(dvc.api, "exp_show", lambda repo: asked.append(repo) or rows)
    assert dvc_queue.queued_or_done(tmp_path) == {"done", "waiting", "busy"}
    assert asked == [str(tmp_path)]
    monkeypatch.undo()
    assert dvc_queue.queued_or_done(tmp_path) == set()  # no DVC repository here
