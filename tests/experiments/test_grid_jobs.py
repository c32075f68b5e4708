"""One cell per job: `lttw exp cells` lists a grid's cells by index, and `lttw exp submit
--executor local` runs them as submitit jobs into one runs folder: two jobs at once, the
second using the shared stages the first built; the first killed while its cell's final
stage runs (its finished fold kept, no half-written cell) and submitted again, which resumes
it; then `lttw report` over the folder."""

from __future__ import annotations

import json
import os
import time

import pytest
from support.held_jobs import TESTS, HeldCellJob
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
def test_a_grid_runs_one_cell_per_submitit_job(tmp_path, tiny_encoder_dir, monkeypatch):
    from lttw.experiments.submit import CellJob, make_executor, submit_cells

    project = make_tiny_project(tmp_path / "p", tiny_encoder_dir)
    (project / "experiments").mkdir()
    (project / "experiments" / "jobs.yaml").write_text(GRID)
    runs, work = project / "evidence" / "runs", project / "data" / "grid"
    listed = lttw(["exp", "cells", "jobs"], project).stdout.splitlines()
    assert listed == ["0\tjobs-svm\tnot run", "1\tjobs-logistic\tnot run"]

    # the held job (support.held_jobs) is imported in its own process
    path = os.pathsep.join(filter(None, [str(TESTS), os.environ.get("PYTHONPATH")]))
    monkeypatch.setenv("PYTHONPATH", path)
    executor = make_executor("local", tmp_path / "logs", 10, {})
    mark = tmp_path / "final-started"
    (first,) = submit_cells(
        executor, [HeldCellJob(str(project), "jobs", CELLS[0], runs_dir=str(runs), mark=str(mark))]
    )
    _until((work / "cells" / CELLS[0]).is_dir, 240)  # the shared stages are built
    (second,) = submit_cells(
        executor, [CellJob(str(project), "jobs", CELLS[1], runs_dir=str(runs))]
    )
    # the first job is killed while its cell's final stage runs: its fold is evaluated and
    # saved, and the job goes no further than that stage (HeldCellJob) until the kill
    _until(mark.is_file, 240)
    first.cancel()
    assert second.result()["state"] == "done"
    _until(first.done, 60)
    # killed: no result (``first.result()`` would say so after submitit's 15 s wait for a
    # slow shared filesystem)
    assert first.state == "INTERRUPTED" and not first.paths.result_pickle.exists()
    written = [p.name for p in runs.iterdir() if not p.name.startswith(".")]
    assert written == ["jobs-logistic"]  # the killed job's cell: not half-written
    assert (runs / ".partial" / CELLS[0] / "fold_0" / "complete").is_file()  # its fold kept
    # the second job built no shared stage: it used the first one's
    assert "shared " not in second.stdout() and "shared sample" in first.stdout()

    out = lttw(
        ["exp", "submit", "jobs", "--executor", "local", "--logs", tmp_path / "logs", "--wait"],
        project,
    ).stdout
    assert "submitted 1 job(s); 1 cell(s) written already" in out and "jobs-svm: done" in out
    last = json.loads((work / "last_run.json").read_text())  # the resubmitted job's run
    assert last["done"] == [CELLS[0]] and last["folds_trained"] == 0  # resumed, not retrained
    for cell in CELLS:
        assert {p.name for p in (runs / cell).iterdir()} == {
            "summary.json",
            "cell.json",
            "params.yaml",
            "test_predictions.parquet",
            "folds",
        }
    assert not [p for p in runs.rglob("*") if p.name.endswith(".tmp")]
    assert not (runs / ".partial" / CELLS[0]).exists()

    again = lttw(["exp", "run", "jobs", "--index", "0"], project).stdout  # written: at once
    assert "0 cell(s) written; 1 written before" in again
    wrong = lttw(["exp", "run", "jobs", "--index", "2"], project, check=False)
    assert wrong.exit_code == 2 and "--index 2: jobs has cells 0..1" in wrong.output

    lttw(["report", "--no-experiments", "--out", "report.md"], project)
    grid = (project / "report.md").read_text().split("## Grid `jobs` (2 of 2 cells)")[1]
    assert "| tfidf_linear | 1 |" in grid and "tfidf_linear [logistic]" in grid
