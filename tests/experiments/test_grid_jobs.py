"""One cell per job: `lttw exp cells` lists a grid's cells by index, and `lttw exp submit
--executor local` runs them as submitit jobs into one runs folder: two jobs at once (sharing
the work folder's shared stages), one killed while its cell runs and submitted again, no
half-written cell, then `lttw report` over the folder."""

from __future__ import annotations

import time

import pytest
from support.tiny_project import lttw, make_tiny_project

GRID = """\
description: Two cells of a tiny grid, one job each.
reference: svm
folds: [0]
set: {model.variant: tfidf_linear}
cells:
  svm: {set: {model.linear_model: svm}}
  logistic: {set: {model.linear_model: logistic}}
"""
CELLS = ["jobs-svm", "jobs-logistic"]


def _until(check, seconds: float) -> None:
    end = time.monotonic() + seconds
    while not check():
        assert time.monotonic() < end, "timed out"
        time.sleep(0.5)


@pytest.mark.slow
def test_a_grid_runs_one_cell_per_submitit_job(tmp_path, tiny_encoder_dir):
    from lttw.experiments.submit import CellJob, make_executor, submit_cells

    project = make_tiny_project(tmp_path / "p", tiny_encoder_dir)
    (project / "experiments").mkdir()
    (project / "experiments" / "jobs.yaml").write_text(GRID)
    runs = project / "evidence" / "runs"
    listed = lttw(["exp", "cells", "jobs"], project).stdout.splitlines()
    assert listed == ["0\tjobs-svm\tnot run", "1\tjobs-logistic\tnot run"]

    executor = make_executor("local", tmp_path / "logs", 10, {})
    jobs = [CellJob(str(project), "jobs", cell, runs_dir=str(runs)) for cell in CELLS]
    first, second = submit_cells(executor, jobs)
    # the first job is killed once its cell's own stages run (the shared ones are built)
    _until(lambda: (project / "data/grid/cells/jobs-svm/log.txt").is_file(), 240)
    first.cancel()
    assert second.result()["state"] == "done"
    _until(first.done, 60)
    written = [p.name for p in runs.iterdir() if not p.name.startswith(".")]
    assert written == ["jobs-logistic"]  # the killed job's cell: not half-written

    out = lttw(
        ["exp", "submit", "jobs", "--executor", "local", "--logs", tmp_path / "logs", "--wait"],
        project,
    ).stdout
    assert "submitted 1 job(s); 1 cell(s) written already" in out and "jobs-svm: done" in out
    for cell in CELLS:
        assert {p.name for p in (runs / cell).iterdir()} == {
            "summary.json",
            "cell.json",
            "params.yaml",
            "test_predictions.parquet",
            "folds",
        }
    assert not [p for p in runs.rglob("*") if p.name.endswith(".tmp")]

    again = lttw(["exp", "run", "jobs", "--index", "0"], project).stdout  # written: at once
    assert "0 cell(s) written; 1 written before" in again
    wrong = lttw(["exp", "run", "jobs", "--index", "2"], project, check=False)
    assert wrong.exit_code == 2 and "--index 2: jobs has cells 0..1" in wrong.output

    lttw(["report", "--no-experiments", "--out", "report.md"], project)
    grid = (project / "report.md").read_text().split("## Grid `jobs` (2 of 2 cells)")[1]
    assert "| tfidf_linear | 1 |" in grid and "tfidf_linear [logistic]" in grid
