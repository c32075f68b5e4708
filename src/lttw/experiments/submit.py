"""One cell per job: a grid's cells submitted through ``submitit`` (``lttw exp submit``), each
job the direct runner on exactly one cell (``lttw exp run GRID --cell NAME``), resumable,
into a runs folder the jobs share. ``local`` runs the jobs as processes of this machine
(submitit's local executor), ``slurm`` submits them to Slurm (one job each, or one array).

A job that is stopped (cancelled, timed out, preempted) stops its running stage and leaves
its finished folds in ``<runs>/.partial/``; submitting the grid again resubmits the cells not
written yet, which resume from there. A cell's folder is written whole or not at all.
submitit is an optional dependency: ``pip install 'lttw[cluster]'``.
"""

from __future__ import annotations

import contextlib
import importlib.util
import signal
import threading
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from lttw.errors import UserError

EXECUTORS = ("local", "slurm")
MAX_TIMEOUT_MIN = 7 * 24 * 60


@dataclass(frozen=True)
class CellJob:
    """What one job runs: ``run_window`` of one cell (picklable: submitit sends it)."""

    repo: str
    grid: str
    cell: str
    extra: tuple[str, ...] = ()
    frozen: bool = False
    runs_dir: str | None = None
    work_dir: str | None = None

    def __call__(self) -> dict:
        from lttw.experiments.direct_runner import run_window

        outcome = run_window(
            self.grid,
            jobs=1,
            only=[self.cell],
            extra=self.extra,
            frozen=self.frozen,
            repo=Path(self.repo),
            runs_dir=Path(self.runs_dir) if self.runs_dir else None,
            work_dir=Path(self.work_dir) if self.work_dir else None,
            log=lambda line: print(line, flush=True),
        )
        return {
            "cell": self.cell,
            "state": "done"
            if self.cell in outcome.done or self.cell in outcome.skipped
            else "failed"
            if outcome.failed
            else "left",
            "trained": outcome.trained.get(self.cell, []),
            "restored": outcome.restored.get(self.cell, []),
        }


def one_cell(grid, cell: str | None, index: int | None, only: list[str] | None) -> str:
    """The one cell ``--cell`` (a key or name) or ``--index`` (from 0, ``exp cells``) names."""
    if cell is not None and index is not None:
        raise UserError("--cell and --index: give one of them")
    if only:
        raise UserError("--only and --cell/--index: give one of them")
    if index is not None:
        if not 0 <= index < len(grid.cells):
            raise UserError(
                f"--index {index}: {grid.name} has cells 0..{len(grid.cells) - 1} (lttw exp cells)"
            )
        return grid.cells[index].name
    return grid.select([str(cell)])[0].name


def make_executor(kind: str, folder: Path, timeout_min: int, slurm: dict[str, Any]):
    """A submitit executor writing its logs to ``folder``; ``slurm``: Slurm's parameters
    (``partition``, ``gpus_per_node``, ...) where ``kind`` is slurm."""
    if kind not in EXECUTORS:
        raise UserError(f"--executor {kind!r}: one of {', '.join(EXECUTORS)}")
    if not 1 <= timeout_min <= MAX_TIMEOUT_MIN:
        raise UserError(f"--timeout-min {timeout_min}: must be 1..{MAX_TIMEOUT_MIN}")
    if importlib.util.find_spec("submitit") is None:
        raise UserError("lttw exp submit needs submitit: pip install 'lttw[cluster]'")
    import submitit

    if kind == "local":
        local = submitit.LocalExecutor(folder=str(folder))
        local.update_parameters(timeout_min=timeout_min)
        return local
    try:
        executor = submitit.AutoExecutor(folder=str(folder), cluster="slurm")
    except RuntimeError as err:  # no srun / sbatch here
        raise UserError(f"--executor slurm: {err}") from None
    params = {f"slurm_{key}": value for key, value in slurm.items() if value is not None}
    executor.update_parameters(timeout_min=timeout_min, name="lttw-cell", **params)
    return executor


def grid_jobs(
    grid, only: list[str] | None, extra: tuple[str, ...], runs_dir: Path, work_dir: Path | None
) -> tuple[list[CellJob], int]:
    """One job per cell of ``grid`` (``only`` these, where given) not written into
    ``runs_dir`` yet, run from here; and the number of those cells written already."""
    chosen = grid.select(only)
    todo = [c for c in chosen if not (runs_dir / c.name / "summary.json").is_file()]
    jobs = [
        CellJob(
            str(Path.cwd()),
            str(grid.path.resolve()),
            c.name,
            extra,
            runs_dir=str(runs_dir.resolve()),
            work_dir=str(work_dir.resolve()) if work_dir else None,
        )
        for c in todo
    ]
    return jobs, len(chosen) - len(todo)


@contextlib.contextmanager
def _sigint_for_children() -> Iterator[None]:
    """Meanwhile SIGINT is not ignored here, so that the processes started meanwhile (the
    local executor's job controllers) do not inherit it as ignored: a job is cancelled with
    SIGINT (``kill -INT JOB_ID``, submitit's ``cancel``), and a command started with SIGINT
    ignored (``lttw exp submit ... &`` in a script) would leave jobs that nothing cancels.
    Only in the main thread (signals are set there)."""
    main = threading.current_thread() is threading.main_thread()
    if not main or signal.getsignal(signal.SIGINT) is not signal.SIG_IGN:
        yield
        return
    signal.signal(signal.SIGINT, signal.default_int_handler)  # the children: the default
    try:
        yield
    finally:
        signal.signal(signal.SIGINT, signal.SIG_IGN)


def submit_cells(executor, jobs: list[CellJob]) -> list:
    """One submitit job per cell (Slurm: one array), in the order given."""
    if not jobs:
        return []
    with _sigint_for_children(), executor.batch():
        futures = [executor.submit(job) for job in jobs]
    return futures


def cancel_hint(kind: str) -> str:
    """How to cancel a submitted job by hand (its id is printed at submission)."""
    if kind == "local":  # the job id is its controller's process id; SIGINT stops its stage
        return "kill -INT JOB_ID"
    return "scancel JOB_ID"


@contextlib.contextmanager
def cancelled_when_stopped(futures: list) -> Iterator[None]:
    """While waiting on ``futures``: SIGTERM (``timeout``, a batch system) or Ctrl-C cancels
    every job (each stops its running stage), rather than leaving them running unwatched."""
    from lttw.experiments.stage_process import sigterm_stops

    try:
        with sigterm_stops():
            yield
    except KeyboardInterrupt:
        for future in futures:
            with contextlib.suppress(Exception):  # a job finished meanwhile
                future.cancel(check=False)
        raise


def wait_for(jobs: list[CellJob], futures: list, say: Callable[[str], None] = print) -> int:
    """Wait for every job, saying each cell's state (done, or why not); the number of jobs
    that did not end done. SIGTERM or Ctrl-C meanwhile cancels them
    (``cancelled_when_stopped``)."""
    failed = 0
    with cancelled_when_stopped(futures):
        for job, future in zip(jobs, futures):
            try:
                result = future.result()
            except Exception as err:  # a job's own failure, reported by submitit
                result = {"state": f"failed ({str(err).strip().splitlines()[-1][:200]})"}
            failed += result["state"] != "done"
            say(f"{job.cell}: {result['state']}")
    return failed
