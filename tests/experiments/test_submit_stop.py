"""`lttw exp submit` through the command, its jobs stood in for (no cell runs): it counts the
cells written among those it was given, says how to cancel what it submitted, and SIGTERM
while it waits cancels its jobs rather than leaving them running unwatched."""

from __future__ import annotations

import os
import shutil
import signal
import time
from pathlib import Path

import pytest
from support.tiny_project import lttw

pytest.importorskip("submitit")

REPO = Path(__file__).resolve().parents[2]
GRID = """\
description: two cells
folds: [0]
cells:
  svm: {set: {model.linear_model: svm}}
  logistic: {set: {model.linear_model: logistic}}
"""


class _Job:
    """A submitted job as submitit returns it: an id, a result, a cancel."""

    def __init__(self, job_id: str, stopped: list[str]):
        self.job_id, self.stopped = job_id, stopped

    def result(self):
        if signal.getsignal(signal.SIGTERM) is signal.SIG_DFL:
            raise AssertionError("SIGTERM would end exp submit and leave its jobs running")
        os.kill(os.getpid(), signal.SIGTERM)  # as `timeout` or a batch system stops it
        time.sleep(2)  # the handler runs here
        raise AssertionError("SIGTERM did not stop the wait")

    def cancel(self, check: bool = True) -> None:
        self.stopped.append(self.job_id)


@pytest.fixture
def project(tmp_path, monkeypatch) -> tuple[Path, list[str]]:
    root = tmp_path / "project"
    (root / "experiments").mkdir(parents=True)
    shutil.copy(REPO / "params.yaml", root / "params.yaml")
    (root / "experiments" / "two.yaml").write_text(GRID)
    stopped: list[str] = []

    def submit(executor, jobs):
        return [_Job(str(1000 + i), stopped) for i, _ in enumerate(jobs)]

    monkeypatch.setattr("lttw.experiments.submit.submit_cells", submit)
    return root, stopped


def test_submit_counts_the_given_cells_and_says_how_to_cancel(project):
    root, _ = project
    result = lttw(["exp", "submit", "two", "--only", "svm"], root)
    assert "submitted 1 job(s); 0 cell(s) written already" in result.stdout
    assert "cancel a job: kill -INT JOB_ID" in result.stdout


def test_sigterm_while_waiting_cancels_the_jobs(project):
    root, stopped = project
    result = lttw(["exp", "submit", "two", "--wait"], root, check=False)
    assert result.exit_code == 130, result.output
    assert sorted(stopped) == ["1000", "1001"]
