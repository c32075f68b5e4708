"""`lttw exp submit` through the command, its jobs stood in for (no cell runs): it counts the
cells written among those it was given, says how to cancel what it submitted, and SIGTERM
while it waits cancels its jobs rather than leaving them running unwatched; a job of the
local executor is cancelled even where the command started with SIGINT ignored."""

from __future__ import annotations

import functools
import os
import shutil
import signal
import threading
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


def test_a_local_job_is_cancelled_where_sigint_was_ignored(tmp_path):
    """A command run with ``&`` from a script starts with SIGINT ignored, which its children
    inherit; the local executor's cancel is SIGINT to the job's controller: a real job (a
    sleep) submitted from here still ends at its cancel."""
    from lttw.experiments.submit import make_executor, submit_cells

    if threading.current_thread() is not threading.main_thread():
        pytest.skip("signals are set in the main thread only")
    previous = signal.signal(signal.SIGINT, signal.SIG_IGN)
    try:
        executor = make_executor("local", tmp_path / "logs", 1, {})
        (job,) = submit_cells(executor, [functools.partial(time.sleep, 60)])
    finally:
        signal.signal(signal.SIGINT, previous)
    assert signal.getsignal(signal.SIGINT) is previous

    def until(check) -> bool:
        end = time.monotonic() + 20
        while not check() and time.monotonic() < end:
            time.sleep(0.2)
        return check()

    log = job.paths.stdout  # the job's own process has started (its log says so)
    assert until(lambda: log.is_file() and "Starting with" in log.read_text())
    job.cancel()
    until(job.done)
    if not job.done():
        job._process.kill()  # the controller, where the cancel did not reach it
    assert job.done(), "the job ignored its cancel"
