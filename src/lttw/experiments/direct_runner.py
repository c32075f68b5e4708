"""Run a grid's cells without dvc (a machine without dvc, or one cell per batch job): the stage
commands of ``dvc.yaml`` (``stage_plan``) in order, several cells at a time (``jobs``), within
an optional time limit (``budget``, as a batch job's), resumable.

Layout under the work folder (``data/grid/``, git-ignored):

- ``shared/<stage>-<key>/``: the outputs of a stage that cells share (sample, folds,
  tokens, encode, counts, nmf), built once per key (``stage_plan.stage_keys``: its
  parameters and upstream stages) in a temporary folder renamed when the stage finished;
- ``cells/<cell>/``: a cell's own folder, where its stages run: links to the shared
  outputs, its ``params.yaml``, a ``.done/<stage>`` mark per finished stage and ``log.txt``.

Each fold a cell finishes is also saved under ``<runs>/.partial/<cell>/fold_<i>/`` (its
metrics, held-out predictions, the model folder's metadata and calibration without the
weights, and the runner's record of the card and of how many cells trained on it at once),
so that a later run on another machine (no work folder) restores every finished fold and
trains none twice: the final stage reads only the first fold's metadata and calibration. A
finished cell is written whole to ``<runs>/<cell>/`` (``experiments.cells``) and its work
folder removed. At the time limit (or on SIGTERM, Ctrl-C) the running stages are stopped (a
stopped training resumes from its checkpoint) and nothing else starts; cells already in
``<runs>/`` are skipped, so rerunning the same command resumes. Each run's account
(``run_account``) goes to ``<work>/last_run.json``.
"""

from __future__ import annotations

import copy
import subprocess
import threading
import time
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import yaml

from lttw.errors import UserError
from lttw.experiments.assignments import apply_assignment
from lttw.experiments.cells import (
    RUNS_DIR,
    fold_record,
    restore_folds,
    save_fold,
    write_cell_from_work,
)
from lttw.experiments.gpu_watch import Utilisation, card_name
from lttw.experiments.grids import GRIDS_DIR, GridCell, cell_params, find_grid
from lttw.experiments.run_account import Outcome, account, epoch_times, write_account
from lttw.experiments.run_account import describe as describe  # run_window's callers print it
from lttw.experiments.stage_plan import (
    Stage,
    absolute_paths,
    expand_stages,
    fold_major,
    read_checkout_yaml,
    stage_keys,
)
from lttw.experiments.stage_process import (
    Clock,
    StageHosts,
    WarmStage,
    run_stage,
    sigterm_stops,
    stage_argv,
    stage_env,
    stop_stage,
)
from lttw.experiments.work_folders import (
    SHARED,
    checkout_rev,
    link_outputs,
    link_project_files,
    publish,
    shared_dir,
    shared_tmp,
)
from lttw.io import read_json, remove_inside, write_json

WORK_DIR = Path("data/grid")
MAX_JOBS = 16


class DirectRunner:
    """Runs cells of one checkout (``repo``) into ``runs_dir``; see the module docstring."""

    def __init__(self, repo: Path, runs_dir: Path, work_dir: Path, jobs: int = 1, log=print):
        self.repo, self.runs_dir, self.work = repo.resolve(), runs_dir.resolve(), work_dir.resolve()
        self.jobs, self.log = max(1, jobs), log
        self.base = read_checkout_yaml(self.repo / "params.yaml")
        self.dvc_yaml = read_checkout_yaml(self.repo / "dvc.yaml")
        self.env = stage_env(self.repo, self.jobs)
        self.rev = checkout_rev(self.repo)
        self._running: set[subprocess.Popen | WarmStage] = set()
        self.hosts = StageHosts(self.env, self.repo)  # the stages' warm processes
        self._interrupted = False  # Ctrl-C: stop what runs, start nothing
        self.card = card_name()
        self.outcome = Outcome()
        self._lock = threading.Lock()
        self._training: dict[str, int] = {}  # cell -> most cells training at once meanwhile
        self.cells_started: float | None = None  # when the cells (not shared stages) began

    def plan(self, cell: GridCell, extra: list[str]) -> tuple[dict, list[Stage], dict[str, str]]:
        params = cell_params(self.base, cell, extra)
        absolute_paths(params, self.repo)
        from lttw.settings import settings_from_dict

        settings_from_dict(copy.deepcopy(params), source=f"cell {cell.name}")
        stages = expand_stages(self.dvc_yaml, params)
        return params, stages, stage_keys(stages, params)

    # --- running one stage -------------------------------------------------------------

    def close(self) -> None:
        """End the stages' warm processes (``stage_process.StageHosts``)."""
        self.hosts.close()

    def stop_stages(self) -> None:
        """Stop the stages running now (each in its own process group: Ctrl-C and SIGTERM
        reach only this process; a pruned trial of ``lttw tune``)."""
        for proc in list(self._running):
            stop_stage(proc)

    def _run(self, stage: Stage, cwd: Path, params_file: Path, clock: Clock) -> str:
        """Run one stage in ``cwd``: "ok", "failed" or "stopped" (the budget ran out)."""
        if clock.up() or self._interrupted:
            return "stopped"
        with open(cwd / "log.txt", "ab") as log:
            log.write(f"# {stage.name}: {stage.cmd}\n".encode())
            log.flush()
            argv = stage_argv(stage.cmd, params_file)
            rc = run_stage(argv, cwd, self.env, clock, log, self._running, hosts=self.hosts)
            if rc is None:
                log.write(f"# {stage.name}: stopped at the budget\n".encode())
                return "stopped"
        if self._interrupted:
            return "stopped"
        return "ok" if rc == 0 else "failed"

    def build_shared(self, plans: list[tuple], clock: Clock) -> bool:
        """Build every shared stage the cells need, once each, in pipeline order; False
        where the budget ran out (or a stage failed: the error is raised)."""
        for _, params, stages, keys in plans:
            for stage in stages:
                target = shared_dir(self.work, stage, keys[stage.name])
                if stage.base not in SHARED or target.is_dir():
                    continue
                tmp = shared_tmp(self.work, target)
                link_project_files(self.repo, tmp)
                for before in stages[: stages.index(stage)]:
                    if before.base in SHARED:
                        link_outputs(self.work, tmp, before, keys[before.name])
                params_file = tmp / "params.yaml"
                params_file.write_text(yaml.safe_dump(params, sort_keys=False), encoding="utf-8")
                self.log(f"shared {stage.name} ({keys[stage.name][:7]})")
                state = self._run(stage, tmp, params_file, clock)
                if state == "stopped":
                    remove_inside(tmp, self.work)
                    return False
                if state == "failed":
                    raise UserError(f"shared stage {stage.name} failed; its log: {tmp / 'log.txt'}")
                publish(self.work, tmp, target)
        return True

    # --- one cell ----------------------------------------------------------------------

    def _train(self, cell: GridCell, stage: Stage, folder: Path, params_file: Path, clock) -> str:
        """The train stage of one fold, counting the cells that train at the same time
        (sharing the card); a finished one leaves its record (``cells.fold_record``)."""
        with self._lock:
            self._training[cell.name] = 0
            for name in self._training:
                self._training[name] = max(self._training[name], len(self._training))
        try:
            state = self._run(stage, folder, params_file, clock)
        finally:
            with self._lock:
                at_once = self._training.pop(cell.name)
        if state == "ok":
            fold = int(stage.name.split("@")[1])
            record = {"card": self.card, "cells_at_once": at_once, "jobs": self.jobs}
            write_json(fold_record(folder, fold), record)
            with self._lock:
                self.outcome.trained.setdefault(cell.name, []).append(fold)
        return state

    def run_cell(
        self, cell: GridCell, params: dict, stages: list[Stage], keys: dict, clock: Clock
    ) -> str:
        """Run a cell's own stages and write its folder: "done", "failed" or "stopped"."""
        folder = self.work / "cells" / cell.name
        params_file = folder / "params.yaml"
        text = yaml.safe_dump(params, sort_keys=False)
        if params_file.is_file() and params_file.read_text(encoding="utf-8") != text:
            remove_inside(folder, self.work)  # another setting ran here before: start afresh
        (folder / ".done").mkdir(parents=True, exist_ok=True)
        params_file.write_text(text, encoding="utf-8")
        link_project_files(self.repo, folder)
        for stage in stages:
            if stage.base in SHARED:
                link_outputs(self.work, folder, stage, keys[stage.name])
        folds = [int(s.name.split("@")[1]) for s in stages if s.base == "evaluate"]
        restored = restore_folds(self.runs_dir, cell.name, folder, folds)
        if restored:
            self.outcome.restored[cell.name] = restored
            self.log(f"{cell.name}: fold(s) {', '.join(map(str, restored))} from a previous run")
        for stage in fold_major([s for s in stages if s.base not in SHARED]):
            if (folder / ".done" / stage.name).exists():
                continue
            if stage.base == "train":
                state = self._train(cell, stage, folder, params_file, clock)
            else:
                state = self._run(stage, folder, params_file, clock)
            if state != "ok":
                if state == "failed":
                    self.log(f"{cell.name}: {stage.name} failed; its log: {folder / 'log.txt'}")
                return state
            (folder / ".done" / stage.name).touch()
            if stage.base == "evaluate":
                fold = int(stage.name.split("@")[1])
                save_fold(self.runs_dir, cell.name, folder, fold, params)
                self._note_epochs(cell, folder, fold)
        meta = {
            "experiment": cell.name,
            "rev": self.rev,
            "finished": time.strftime("%Y-%m-%dT%H:%M:%S"),
            "backend": "direct",
        }
        write_cell_from_work(self.runs_dir / cell.name, folder, params, meta)
        remove_inside(self.runs_dir / ".partial" / cell.name, self.runs_dir)
        remove_inside(folder, self.work)
        return "done"

    def _note_epochs(self, cell: GridCell, folder: Path, fold: int) -> None:
        """A fold trained in this run: its epoch times into the run's account."""
        metrics = folder / f"metrics/train/fold_{fold}.json"
        if fold in self.outcome.trained.get(cell.name, []) and metrics.is_file():
            times = epoch_times(read_json(metrics))
            with self._lock:
                self.outcome.epochs.setdefault(cell.name, {})[fold] = times
            self.log(
                f"{cell.name}: fold {fold}: {times['steady_epoch_s']} s/epoch after warm-up "
                f"(first epoch {times['first_epoch_s']} s)"
            )

    # --- a grid ------------------------------------------------------------------------

    def run(self, cells: list[GridCell], extra: list[str], clock: Clock) -> Outcome:
        """Run ``cells`` (those not written yet) until they are done or ``clock`` is up."""
        out = self.outcome
        plans: list[tuple[GridCell, dict, list[Stage], dict[str, str]]] = []
        for cell in cells:
            if (self.runs_dir / cell.name / "summary.json").is_file():
                out.skipped.append(cell.name)
            else:
                params, stages, keys = self.plan(cell, extra)
                plans.append((cell, params, stages, keys))
        if not plans:
            return out
        if not self.build_shared(plans, clock):
            out.left = [p[0].name for p in plans]
            return out
        self.cells_started = time.monotonic()

        def one(plan) -> tuple[str, str]:
            cell = plan[0]
            if clock.up():
                return cell.name, "stopped"
            self.log(f"{cell.name}: started")
            state = self.run_cell(cell, plan[1], plan[2], plan[3], clock)
            self.log(f"{cell.name}: {state}")
            return cell.name, state

        pool = ThreadPoolExecutor(max_workers=self.jobs)
        try:
            for name, state in pool.map(one, plans):
                {"done": out.done, "failed": out.failed}.get(state, out.left).append(name)
        except KeyboardInterrupt:  # stop the running stages too, not only the main thread
            self._interrupted = True
            clock.stop()
            self.stop_stages()
            raise
        finally:
            pool.shutdown(wait=True, cancel_futures=True)
        return out


def run_window(
    name: str,
    jobs: int | None = None,
    budget: float | None = None,
    only: list[str] | None = None,
    extra: Sequence[str] = (),
    frozen: bool = False,
    repo: Path = Path("."),
    runs_dir: Path | None = None,
    work_dir: Path | None = None,
    clock: Clock | None = None,
    log=print,
) -> Outcome:
    """Run grid ``name``'s cells (``only``: these) in ``repo``, ``jobs`` at a time (None: 1),
    until done or ``budget`` seconds have passed; the cells go to ``runs_dir``
    (evidence/runs), the run's account to the work folder (``run_account``)."""
    jobs = 1 if jobs is None else jobs
    if not 1 <= jobs <= MAX_JOBS:
        raise UserError(f"--jobs {jobs}: must be 1..{MAX_JOBS}")
    if budget is not None and budget < 0:
        raise UserError(f"--budget {budget}: must be >= 0 seconds")
    repo = repo.resolve()
    base = read_checkout_yaml(repo / "params.yaml")
    n_folds = int((base.get("folds") or {}).get("n_folds", 10))
    grid = find_grid(name, repo / GRIDS_DIR, n_folds)
    grid = grid.frozen() if frozen else grid
    cells = grid.select(only)
    for assignment in extra:  # checked even where every cell is written already
        apply_assignment(copy.deepcopy(base), assignment)
    runs_dir = (runs_dir or repo / RUNS_DIR).resolve()
    runner = DirectRunner(repo, runs_dir, work_dir or repo / WORK_DIR, jobs, log)
    clock = clock or Clock(None if budget is None else time.monotonic() + budget)
    start = time.monotonic()
    watch = Utilisation().start()
    try:
        with sigterm_stops():
            outcome = runner.run(cells, list(extra), clock)
    finally:
        utilisation = watch.stop()
        runner.close()
    end = time.monotonic()
    cells_s = end - runner.cells_started if runner.cells_started is not None else 0.0
    record = account(grid.name, outcome, jobs, runner.card, utilisation, end - start, cells_s)
    write_account(runner.work, record)
    return outcome
