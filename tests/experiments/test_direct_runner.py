"""The direct grid runner (no dvc): a tiny grid, two cells at a time, a budget that stops it
mid-grid, then resumes (on the same machine, and on a fresh one) that complete it; no cell is
ever half-written, the shared inputs are built once, and `lttw report` renders the cells."""

from __future__ import annotations

import shutil
from pathlib import Path

import pandas as pd
import pytest
import yaml

from lttw.experiments.__main__ import main
from lttw.experiments.direct_runner import WORK_DIR, run_window
from lttw.experiments.stage_process import Clock

GRID = """\
description: A tiny grid for the tests.
reference: lttw
folds: [0]
cells:
  lttw: {}
  tfidf: {set: {model.variant: tfidf_linear}}
"""
CELLS = ["tiny-lttw", "tiny-tfidf"]
CELL_FILES = {"summary.json", "cell.json", "params.yaml", "test_predictions.parquet", "folds"}


class StageCount(Clock):
    """A budget of ``n`` stage starts: the n-th stage is stopped as soon as it starts (the
    budget runs out while it runs), and nothing starts after it."""

    def __init__(self, n: int):
        super().__init__(deadline=None)
        self.n, self.started = n, 0

    def starting(self) -> None:
        self.started += 1

    def up(self) -> bool:
        return self.started >= self.n

    def left(self) -> float | None:
        return 0.0 if self.started >= self.n else None


def written_cells(runs: Path) -> list[str]:
    """The cell folders, each checked whole (nothing half-written, no temporaries)."""
    assert not [p.name for p in runs.iterdir() if p.name.endswith(".tmp")]
    names = sorted(p.name for p in runs.iterdir() if not p.name.startswith("."))
    for name in names:
        assert {p.name for p in (runs / name).iterdir()} == CELL_FILES, name
    return names


@pytest.fixture(scope="module")
def windows(tmp_path_factory, tiny_encoder_dir):
    """The tiny project, its grid run in two windows: the first, one cell at a time, stopped
    by its budget (the 12th stage stopped as it starts: 6 shared stages, then the first
    cell's 5, then the second cell's first), the second, two cells at a time on a "fresh
    machine" (the work folder removed), resumed to the end."""
    from support.tiny_project import make_tiny_project

    project = make_tiny_project(tmp_path_factory.mktemp("grid") / "p", tiny_encoder_dir)
    (project / "experiments").mkdir()
    (project / "experiments" / "tiny.yaml").write_text(GRID)
    runs = project / "evidence" / "runs"
    first = run_window("tiny", jobs=1, repo=project, clock=StageCount(12), log=lambda s: None)
    state = {
        "written": written_cells(runs) if runs.is_dir() else [],
        "shared": sorted(p.name for p in (project / WORK_DIR / "shared").iterdir()),
    }
    shutil.rmtree(project / WORK_DIR)
    lines: list[str] = []
    second = run_window("tiny", jobs=2, repo=project, log=lines.append)
    return project, first, state, second


@pytest.mark.slow
def test_a_budget_stops_mid_grid_and_a_resume_completes_it(windows):
    project, first, state, second = windows
    runs = project / "evidence" / "runs"
    assert first.done == ["tiny-lttw"] and first.left and not first.failed
    assert state["written"] == sorted(first.done)  # whole cells only
    bases = [name.split("-")[0] for name in state["shared"]]
    assert bases.count("sample") == bases.count("tokens") == 1  # built once for both cells
    assert not [name for name in state["shared"] if name.startswith(".")]

    assert sorted(second.done + second.skipped) == CELLS and not second.left
    assert sorted(second.skipped) == sorted(first.done) and not second.failed
    assert written_cells(runs) == CELLS
    assert not list((runs / ".partial").glob("*/fold_*"))  # folds moved into their cells
    assert not (project / WORK_DIR / "cells" / "tiny-lttw").exists()  # work removed

    cell = runs / "tiny-tfidf"
    params = yaml.safe_load((cell / "params.yaml").read_text())
    assert params["model"]["variant"] == "tfidf_linear" and params["folds"]["run"] == [0]
    assert params["data"]["root"].startswith("/")  # absolute: stages run elsewhere
    predictions = pd.read_parquet(cell / "test_predictions.parquet")
    assert list(predictions.columns) == ["fold", "row", "label", "pred"]
    assert len(predictions) == params["data"]["test_size"]


def test_folds_of_a_stopped_cell_are_restored_on_a_fresh_machine(tmp_path):
    """A fold saved under .partial comes back into a new work folder with its stages marked
    done, so only the other folds run."""
    from lttw.experiments.cells import FOLD_FILES, save_fold
    from lttw.experiments.direct_runner import DirectRunner
    from lttw.experiments.grids import GridCell
    from lttw.experiments.stage_plan import expand_stages

    repo = Path(__file__).resolve().parents[2]
    runner = DirectRunner(repo, tmp_path / "runs", tmp_path / "work")
    cell = GridCell("g-a", "a", "a", {})
    params = {"folds": {"run": [0, 1]}}
    stages = expand_stages(yaml.safe_load((repo / "dvc.yaml").read_text()), params)
    old = tmp_path / "old"
    for fold in (0, 1):
        for pattern in FOLD_FILES:
            (old / pattern.format(fold=fold)).parent.mkdir(parents=True, exist_ok=True)
            (old / pattern.format(fold=fold)).write_text(f"fold {fold}")
        save_fold(tmp_path / "runs", cell.name, old, fold)
    new = tmp_path / "new"
    (new / ".done").mkdir(parents=True)
    # not fold 0, the first of folds.run: the final stage needs its model folder, not kept
    assert runner._restore_folds(cell, new, stages) == [1]
    assert sorted(p.name for p in (new / ".done").iterdir()) == [
        f"{s}@1" for s in sorted(("counts", "nmf", "features", "train", "evaluate"))
    ]
    assert (new / "metrics/folds/fold_1.json").read_text() == "fold 1"
    assert runner._restore_folds(cell, new, stages) == []  # marked: not again


def test_budget_and_jobs_are_checked():
    from lttw.errors import UserError

    with pytest.raises(UserError, match="--jobs 0"):
        run_window("tiny", jobs=0)
    with pytest.raises(UserError, match="--budget -1"):
        run_window("tiny", budget=-1)
    assert main(["no-such-grid"]) == 2


@pytest.mark.slow
def test_the_report_renders_the_cells_the_runner_wrote(windows, monkeypatch):
    """No workspace metrics, no experiments: `lttw report` renders the grid from its cells."""
    from typer.testing import CliRunner

    from lttw.cli import app

    project = windows[0]
    monkeypatch.chdir(project)
    result = CliRunner().invoke(app, ["report", "--no-experiments", "--out", "report.md"])
    assert result.exit_code == 0, result.output
    text = (project / "report.md").read_text()
    grid = text.split("## Grid `tiny` (2 of 2 cells)")[1]
    assert "### AG News" in grid
    assert "| LTTW | 1 |" in grid and "| tfidf_linear | 1 |" in grid
    assert "| tfidf_linear | 1 | n/a (needs >= 2 common folds) |" in grid  # the paired test


@pytest.mark.slow
def test_the_direct_runner_runs_a_project_made_by_lttw_init(tmp_path, tiny_encoder_dir):
    """A project of ``lttw init`` has no stages/ folder: its dvc.yaml runs the installed
    lttw's stages (``python -m lttw.pipeline_stage``), which check the project's
    lttw-version.json, so the runner's work folders carry that stamp too. The shared sample
    stage runs; the budget stops the window at the next stage."""
    from support.tiny_project import make_tiny_project

    from lttw.pipeline_files import STAMP
    from lttw.project import write_pipeline

    project = make_tiny_project(tmp_path / "p", tiny_encoder_dir)
    for folder in ("stages", "src"):  # a user's project has neither: lttw is installed
        shutil.rmtree(project / folder, ignore_errors=True)
    write_pipeline(project)
    assert "lttw.pipeline_stage" in (project / "dvc.yaml").read_text()
    (project / "experiments").mkdir()
    (project / "experiments" / "tiny.yaml").write_text(GRID)
    outcome = run_window("tiny", repo=project, clock=StageCount(2), log=lambda s: None)
    assert outcome.failed == [] and outcome.left == CELLS
    (sample,) = (project / WORK_DIR / "shared").glob("sample-*")
    assert (sample / STAMP).is_symlink() and (sample / "data").is_dir()


def test_a_bad_parameter_is_refused_even_where_every_cell_is_written(tmp_path):
    """-S names a real parameter, whether or not a cell is left to run."""
    from lttw.errors import UserError

    (tmp_path / "experiments").mkdir()
    (tmp_path / "experiments" / "tiny.yaml").write_text(GRID)
    repo = Path(__file__).resolve().parents[2]
    for name in ("params.yaml", "dvc.yaml"):
        (tmp_path / name).write_text((repo / name).read_text())
    for cell in CELLS:
        (tmp_path / "evidence" / "runs" / cell).mkdir(parents=True)
        (tmp_path / "evidence" / "runs" / cell / "summary.json").write_text("{}")
    with pytest.raises(UserError, match="unknown parameter 'model.kk'"):
        run_window("tiny", extra=["model.kk=1"], repo=tmp_path, log=lambda s: None)
    outcome = run_window("tiny", extra=["model.k=5"], repo=tmp_path, log=lambda s: None)
    assert outcome.skipped == CELLS and not outcome.done
