"""Run a grid's cells without dvc (a GPU machine with torch but no dvc): the stage scripts
of ``dvc.yaml`` in order, several cells at a time (``jobs``), within a time budget, resumable.

Layout under the work folder (``data/grid/``, git-ignored):

- ``shared/<stage>-<key>/``: the outputs of a stage that cells share (sample, folds,
  tokens, encode, counts, nmf), built once per key (``stage_plan.stage_keys``: its
  parameters and upstream stages) in a temporary folder renamed when the stage finished;
- ``cells/<cell>/``: a cell's own folder, where its stages run: links to the shared
  outputs, its ``params.yaml``, a ``.done/<stage>`` mark per finished stage and ``log.txt``.

Each fold a cell finishes is also saved under ``<runs>/.partial/<cell>/fold_<i>/`` (its
metrics and held-out predictions), so that a later window on a fresh machine (no work
folder) resumes the cell from its finished folds. A finished cell is written whole to
``<runs>/<cell>/`` (``experiments.cells``) and its work folder removed. At the budget, the
running stages are stopped (a stopped training resumes from its checkpoint) and nothing
else starts; cells already in ``<runs>/`` are skipped, so rerunning the same command resumes.
"""

from __future__ import annotations

import copy
import os
import subprocess
import time
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path

import yaml

from lttw.errors import UserError
from lttw.experiments.cells import RUNS_DIR, restore_fold, save_fold, write_cell_from_work
from lttw.experiments.grids import GRIDS_DIR, GridCell, apply_assignment, cell_params, find_grid
from lttw.experiments.stage_plan import Stage, expand_stages, stage_keys
from lttw.experiments.stage_process import Clock, run_stage, stage_argv, stage_env, stop_stage
from lttw.io import read_yaml, remove_inside, write_json
from lttw.pipeline_files import STAMP

SHARED = frozenset({"sample", "folds", "tokens", "encode", "counts", "nmf"})
WORK_DIR = Path("data/grid")
FOLD_STAGES = ("counts", "nmf", "features", "train", "evaluate")
MAX_JOBS = 16


@dataclass
class Outcome:
    """What a window did: cells written, skipped (written before), failed, left to do."""

    done: list[str] = field(default_factory=list)
    skipped: list[str] = field(default_factory=list)
    failed: list[str] = field(default_factory=list)
    left: list[str] = field(default_factory=list)


def write_window(path: Path, outcome: Outcome, seconds: float) -> None:
    """A window's account (JSON): what it wrote, skipped, failed and left."""
    write_json(path, {**outcome.__dict__, "wall_s": round(seconds, 1)})


def _read_checkout_yaml(path: Path) -> dict:
    """The checkout's params.yaml or dvc.yaml, a mapping, or a ``UserError`` saying why not."""
    try:
        raw = read_yaml(path)
    except OSError as err:
        raise UserError(f"{path}: not readable ({err.strerror})") from None
    except yaml.YAMLError as err:
        raise UserError(f"{path}: not YAML ({str(err).splitlines()[0]})") from None
    if not isinstance(raw, dict):
        raise UserError(f"{path}: a mapping expected")
    return raw


def _absolute_paths(params: dict, repo: Path) -> None:
    """data.root, model.encoder and model.word_vectors relative to the checkout, made
    absolute (the stages run in other folders); names like ``org/model`` stay."""
    for group, key in (("data", "root"), ("model", "encoder"), ("model", "word_vectors")):
        value = params.get(group, {}).get(key)
        if isinstance(value, str) and value and not os.path.isabs(value):
            if (repo / value).exists():
                params[group][key] = os.path.abspath(repo / value)


class DirectRunner:
    """Runs cells of one checkout (``repo``) into ``runs_dir``; see the module docstring."""

    def __init__(self, repo: Path, runs_dir: Path, work_dir: Path, jobs: int = 1, log=print):
        self.repo, self.runs_dir, self.work = repo.resolve(), runs_dir.resolve(), work_dir.resolve()
        self.jobs, self.log = max(1, jobs), log
        self.base = _read_checkout_yaml(self.repo / "params.yaml")
        self.dvc_yaml = _read_checkout_yaml(self.repo / "dvc.yaml")
        self.env = stage_env(self.repo, self.jobs)
        self.rev = self._rev()
        self._running: set[subprocess.Popen] = set()
        self._interrupted = False  # Ctrl-C: stop what runs, start nothing

    def _rev(self) -> str | None:
        try:
            proc = subprocess.run(
                ["git", "rev-parse", "HEAD"], cwd=self.repo, capture_output=True, text=True
            )
        except OSError:
            return None
        return proc.stdout.strip() or None if proc.returncode == 0 else None

    def plan(self, cell: GridCell, extra: list[str]) -> tuple[dict, list[Stage], dict[str, str]]:
        params = cell_params(self.base, cell, extra)
        _absolute_paths(params, self.repo)
        from lttw.settings import settings_from_dict

        settings_from_dict(copy.deepcopy(params), source=f"cell {cell.name}")
        stages = expand_stages(self.dvc_yaml, params)
        return params, stages, stage_keys(stages, params)

    # --- running one stage -------------------------------------------------------------

    def _run(self, stage: Stage, cwd: Path, params_file: Path, clock: Clock) -> str:
        """Run one stage in ``cwd``: "ok", "failed" or "stopped" (the budget ran out)."""
        if clock.up() or self._interrupted:
            return "stopped"
        with open(cwd / "log.txt", "ab") as log:
            log.write(f"# {stage.name}: {stage.cmd}\n".encode())
            log.flush()
            argv = stage_argv(stage.cmd, params_file)
            rc = run_stage(argv, cwd, self.env, clock, log, self._running)
            if rc is None:
                log.write(f"# {stage.name}: stopped at the budget\n".encode())
                return "stopped"
        if self._interrupted:
            return "stopped"
        return "ok" if rc == 0 else "failed"

    def run_here(self, stages: list[Stage], params_file: Path, log=print) -> list[dict]:
        """``stages`` in the checkout itself, in order, no cell folder and nothing cached
        (``tools/run_stages.py``), until one fails: each one's seconds and exit code."""
        rows: list[dict] = []
        for stage in stages:
            log(f"# {stage.name}: {stage.cmd}")
            start = time.perf_counter()
            argv = stage_argv(stage.cmd, params_file)
            rc = run_stage(argv, self.repo, self.env, Clock(None))
            rows.append(
                {
                    "stage": stage.name,
                    "seconds": round(time.perf_counter() - start, 2),
                    "exit_code": rc,
                }
            )
            log(f"# {stage.name}: {rows[-1]['seconds']} s (exit {rc})")
            if rc:
                break
        return rows

    def _link_project_files(self, folder: Path) -> None:
        """What a stage reads from the checkout besides its parameters and inputs: this
        repository's ``stages/``, or a project's ``lttw-version.json`` (``lttw init``: its
        stages are the installed lttw's and check that stamp)."""
        for name in ("stages", STAMP):
            link = folder / name
            if (self.repo / name).exists() and not link.is_symlink():
                link.symlink_to(self.repo / name)

    # --- shared stages -----------------------------------------------------------------

    def _shared_dir(self, stage: Stage, key: str) -> Path:
        return self.work / "shared" / f"{stage.name.replace('@', '-')}-{key}"

    def _link_outputs(self, folder: Path, stage: Stage, key: str) -> None:
        source = self._shared_dir(stage, key)
        for out in stage.outs:
            target, origin = folder / out, source / out
            if target.is_symlink() or not origin.exists():
                continue
            target.parent.mkdir(parents=True, exist_ok=True)
            target.symlink_to(origin.resolve())

    def build_shared(self, plans: list[tuple], clock: Clock) -> bool:
        """Build every shared stage the cells need, once each, in pipeline order; False
        where the budget ran out (or a stage failed: the error is raised)."""
        for _, params, stages, keys in plans:
            for stage in stages:
                if stage.base not in SHARED or self._shared_dir(stage, keys[stage.name]).is_dir():
                    continue
                target = self._shared_dir(stage, keys[stage.name])
                tmp = target.with_name(f".{target.name}.tmp")
                remove_inside(tmp, self.work)
                tmp.mkdir(parents=True)
                self._link_project_files(tmp)
                for before in stages[: stages.index(stage)]:
                    if before.base in SHARED:
                        self._link_outputs(tmp, before, keys[before.name])
                params_file = tmp / "params.yaml"
                params_file.write_text(yaml.safe_dump(params, sort_keys=False), encoding="utf-8")
                self.log(f"shared {stage.name} ({keys[stage.name][:7]})")
                state = self._run(stage, tmp, params_file, clock)
                if state == "stopped":
                    remove_inside(tmp, self.work)
                    return False
                if state == "failed":
                    raise UserError(f"shared stage {stage.name} failed; its log: {tmp / 'log.txt'}")
                os.replace(tmp, target)
        return True

    # --- one cell ----------------------------------------------------------------------

    def _restore_folds(self, cell: GridCell, folder: Path, stages: list[Stage]) -> list[int]:
        """Folds a previous window finished (``.partial``): their files back into ``folder``,
        their stages marked done; the folds restored. Not the first fold of ``folds.run``:
        the final stage reads its model folder, which ``.partial`` does not keep (a model
        is too big to carry between windows), so that fold reruns."""
        done, restored = folder / ".done", []
        evaluate = [stage for stage in stages if stage.base == "evaluate"]  # folds.run order
        for stage in evaluate[1:]:
            if (done / stage.name).exists():
                continue
            fold = int(stage.name.split("@")[1])
            if restore_fold(self.runs_dir, cell.name, folder, fold):
                for base in FOLD_STAGES:
                    (done / f"{base}@{fold}").touch()
                restored.append(fold)
        return restored

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
        self._link_project_files(folder)
        for stage in stages:
            if stage.base in SHARED:
                self._link_outputs(folder, stage, keys[stage.name])
        restored = self._restore_folds(cell, folder, stages)
        if restored:
            self.log(f"{cell.name}: fold(s) {', '.join(map(str, restored))} from a previous window")
        for stage in _fold_major([s for s in stages if s.base not in SHARED]):
            if (folder / ".done" / stage.name).exists():
                continue
            state = self._run(stage, folder, params_file, clock)
            if state != "ok":
                if state == "failed":
                    self.log(f"{cell.name}: {stage.name} failed; its log: {folder / 'log.txt'}")
                return state
            (folder / ".done" / stage.name).touch()
            if stage.base == "evaluate":
                save_fold(self.runs_dir, cell.name, folder, int(stage.name.split("@")[1]))
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

    # --- a grid ------------------------------------------------------------------------

    def run(self, cells: list[GridCell], extra: list[str], clock: Clock) -> Outcome:
        """Run ``cells`` (those not written yet) until they are done or ``clock`` is up."""
        out = Outcome()
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
            for proc in list(self._running):
                stop_stage(proc)
            raise
        finally:
            pool.shutdown(wait=True, cancel_futures=True)
        return out


def _fold_major(stages: list[Stage]) -> list[Stage]:
    """A cell's own stages fold by fold (features, train, evaluate of fold 0, then of fold
    1, ...), the rest (summary) last: a stopped cell leaves whole folds behind."""

    def order(stage: Stage) -> tuple[float, int]:
        fold = stage.name.partition("@")[2]
        return (int(fold) if fold else float("inf"), stages.index(stage))

    return sorted(stages, key=order)


def run_window(
    name: str,
    jobs: int = 1,
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
    """Run grid ``name``'s cells (``only``: these) in ``repo``, ``jobs`` at a time, until done
    or ``budget`` seconds have passed; the cells go to ``runs_dir`` (evidence/runs)."""
    if not 1 <= jobs <= MAX_JOBS:
        raise UserError(f"--jobs {jobs}: must be 1..{MAX_JOBS}")
    if budget is not None and budget < 0:
        raise UserError(f"--budget {budget}: must be >= 0 seconds")
    repo = repo.resolve()
    base = _read_checkout_yaml(repo / "params.yaml")
    n_folds = int((base.get("folds") or {}).get("n_folds", 10))
    grid = find_grid(name, repo / GRIDS_DIR, n_folds)
    grid = grid.frozen() if frozen else grid
    cells = grid.select(only)
    for assignment in extra:  # checked even where every cell is written already
        apply_assignment(copy.deepcopy(base), assignment)
    runner = DirectRunner(repo, runs_dir or repo / RUNS_DIR, work_dir or repo / WORK_DIR, jobs, log)
    clock = clock or Clock(None if budget is None else time.monotonic() + budget)
    start = time.monotonic()
    outcome = runner.run(cells, list(extra), clock)
    write_window(runner.work / "last_window.json", outcome, time.monotonic() - start)
    return outcome


def describe(outcome: Outcome) -> str:
    parts = [
        f"{len(outcome.done)} cell(s) written",
        f"{len(outcome.skipped)} written before",
        f"{len(outcome.failed)} failed"
        + (f" ({', '.join(outcome.failed)})" if outcome.failed else ""),
        f"{len(outcome.left)} left"
        + (f" ({', '.join(outcome.left)}: rerun to resume)" if outcome.left else ""),
    ]
    return "; ".join(parts)
