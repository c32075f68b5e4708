"""``lttw tune``: a hyperparameter search with Optuna over a search space
(``search_space``), each trial a cell of the direct runner (``direct_runner.DirectRunner``:
the stage scripts of ``dvc.yaml``, the shared stages built once for every trial).

The objective is the validation macro F1 of the space's fold (``best_val_f1_macro`` of the
train stage's metrics): a trial stops once its train stage is done, so no trial evaluates on
the test parts. While a trial trains, its epoch scores (the dvclive epoch plot) are reported
to Optuna, and a trial the pruner stops is ended there. The study lives in an Optuna storage:
an SQLite file by default (``data/tune/studies.db``), or any RDB URL that several machines
reach; a rerun continues it, and several workers (processes or machines) share it, each
running trials until the study holds ``trials`` of them. Work folders: ``data/tune/work``.
"""

from __future__ import annotations

import contextlib
import fcntl
import json
import threading
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from lttw.errors import DataError, UserError, one_line
from lttw.experiments.direct_runner import DirectRunner
from lttw.experiments.grids import GridCell, check_cell_name, full_params
from lttw.experiments.search_space import SearchSpace, load_space
from lttw.experiments.stage_process import Clock, sigterm_stops
from lttw.io import read_json, remove_inside

TUNE_DIR = Path("data/tune")
STUDIES_DB = TUNE_DIR / "studies.db"
MAX_TRIALS = 10_000
POLL_S = 0.5


def _optuna():
    try:
        import optuna
    except ImportError:
        raise UserError("lttw tune needs optuna: pip install 'lttw[tune]'") from None
    return optuna


def default_storage(repo: Path) -> str:
    return f"sqlite:///{(repo / STUDIES_DB).resolve()}"


def _storage(url: str, create: bool = True):
    """The Optuna storage at ``url``. ``create``: an SQLite file (and its folder) is made
    where missing; otherwise a missing file is an error. A storage that cannot be opened is
    one line, and leaves no file or folder it made behind."""
    import warnings

    optuna = _optuna()

    optuna.logging.set_verbosity(optuna.logging.WARNING)  # the trials are reported here
    warnings.filterwarnings("ignore", category=optuna.exceptions.ExperimentalWarning)
    kwargs: dict[str, Any] = {}
    guard: contextlib.AbstractContextManager = contextlib.nullcontext()
    made: list[Path] = []  # the lock and folders this call creates, removed where it fails
    db: Path | None = None
    existed = True
    if url.startswith("sqlite:///"):  # several workers on one file: wait for its lock
        db = Path(url.removeprefix("sqlite:///"))
        if not db.name or db.is_dir():
            raise DataError(f"--storage {url}: names no database file (sqlite:///PATH/FILE.db)")
        if not create and not db.is_file():
            raise DataError(f"--storage {url}: no such database file")
        kwargs["engine_kwargs"] = {"connect_args": {"timeout": 60}}
        if create:
            lock = db.with_name(db.name + ".lock")
            made = [p for p in (lock, *db.parents) if not p.exists()]
            existed = db.exists()
            db.parent.mkdir(parents=True, exist_ok=True)
            # workers that start together would each create the new file's tables: in turn
            guard = _locked(lock)
    try:  # a trial whose worker died is marked failed after the grace period
        with guard:
            fresh = db is not None and not db.exists()  # under the lock: no one else's file
            try:
                return optuna.storages.RDBStorage(
                    url, heartbeat_interval=30, grace_period=120, **kwargs
                )
            except Exception:
                if fresh and db is not None:
                    db.unlink(missing_ok=True)
                raise
    except Exception as err:  # SQLAlchemy's own errors: a bad URL or an unreachable server
        # the lock, then the folders (only empty ones); not where a worker beside this one
        # has made the database meanwhile
        if db is None or existed or not db.exists():
            for path in made:
                with contextlib.suppress(OSError):
                    path.rmdir() if path.is_dir() else path.unlink()
        raise DataError(f"--storage {url}: {one_line(err, lines=1)}") from None


def open_study(space: SearchSpace, storage: str, name: str | None = None, pruner=None):
    """The study of ``space`` (named ``name``, default the space's name) in ``storage``,
    created where new, continued where it exists."""
    optuna = _optuna()

    if pruner is None:
        pruner = (
            optuna.pruners.MedianPruner(n_startup_trials=3)
            if space.pruner == "median"
            else optuna.pruners.NopPruner()
        )
    return optuna.create_study(
        study_name=name or space.name,
        storage=_storage(storage),
        direction="maximize",
        load_if_exists=True,
        pruner=pruner,
    )


@dataclass
class _TrialClock(Clock):
    """No deadline; up once the objective's metrics are written (the train stage of the
    fold is done) or the trial is pruned: the cell's later stages never start."""

    metrics: Path = field(default_factory=Path)
    pruned: bool = False

    def up(self) -> bool:
        return self.pruned or self.metrics.is_file() or super().up()


class _EpochReports:
    """Reports a training's epoch scores (its dvclive epoch plot) to an Optuna trial, and
    stops the running stage of ``runner`` where the trial is to be pruned."""

    def __init__(self, trial, plot: Path, runner: DirectRunner, clock: _TrialClock):
        self.trial, self.plot, self.runner, self.clock = trial, plot, runner, clock
        self.reported = 0
        self.done = threading.Event()
        self.thread = threading.Thread(target=self._watch, daemon=True)

    def poll(self) -> None:
        try:
            rows = json.loads(self.plot.read_text(encoding="utf-8"))
        except (OSError, ValueError):  # not written yet, or being written
            return
        for row in rows[self.reported :]:
            self.trial.report(float(row["val_f1_macro"]), int(row["epoch"]))
            self.reported += 1
            if not self.clock.pruned and self.trial.should_prune():
                self.clock.pruned = True
                self.runner.stop_stages()  # the train stage

    def _watch(self) -> None:
        while not self.done.wait(POLL_S) and not self.clock.pruned:
            self.poll()

    def __enter__(self) -> _EpochReports:
        self.thread.start()
        return self

    def __exit__(self, *exc) -> None:
        self.done.set()
        self.thread.join()
        self.poll()  # the epochs written since the last look


@contextlib.contextmanager
def _locked(path: Path):
    """One worker at a time (an advisory lock on ``path``): the shared stages are built
    once, by the first worker that needs them."""
    path.parent.mkdir(parents=True, exist_ok=True)
    with open(path, "a") as handle:
        fcntl.flock(handle, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(handle, fcntl.LOCK_UN)


def run_trial(trial, space: SearchSpace, runner: DirectRunner, study: str) -> float:
    """One trial: its cell through the direct runner up to the fold's train stage; the
    fold's validation macro F1 (``optuna.TrialPruned`` where the pruner stopped it)."""
    optuna = _optuna()

    values = {dim.name: dim.suggest(trial) for dim in space.dimensions}
    params = space.trial_params(values)
    name = check_cell_name(f"tune-{study}-{trial.number}", "--study")
    cell = GridCell(name=name, key=str(trial.number), label=name, params=params)
    trial.set_user_attr("params", {k: v for k, v in params.items() if k != "folds.run"})
    plan = runner.plan(cell, [])
    with _locked(runner.work / "shared.lock"):
        runner.build_shared([(cell, *plan)], Clock(None))
    folder = runner.work / "cells" / name
    fold = f"fold_{space.fold}"
    clock = _TrialClock(None, folder / "metrics" / "train" / f"{fold}.json")
    reports = _EpochReports(
        trial, folder / "dvclive/train" / fold / "plots/custom/epochs.json", runner, clock
    )
    said = runner.log  # a pruned trial's stopped stage is no failure to report
    runner.log = lambda line: None if clock.pruned else said(line)
    try:
        with reports:
            state = runner.run_cell(cell, *plan, clock)
    finally:
        runner.log = said
    if clock.pruned:
        remove_inside(folder, runner.work)
        raise optuna.TrialPruned()
    if not clock.metrics.is_file():
        raise UserError(f"trial {trial.number}: {state}; its log: {folder / 'log.txt'}")
    value = float(read_json(clock.metrics)["best_val_f1_macro"])
    remove_inside(folder, runner.work)
    return value


def tune(
    name: str,
    trials: int,
    storage: str | None = None,
    study_name: str | None = None,
    timeout: float | None = None,
    repo: Path = Path("."),
    spaces: Path = Path("experiments"),
    log: Callable[[str], None] = print,
    pruner=None,
):
    """Run trials of the search space ``name`` until its study holds ``trials`` trials (or
    ``timeout`` seconds have passed); returns the study."""
    optuna = _optuna()
    from optuna.study import MaxTrialsCallback
    from optuna.trial import TrialState

    from lttw.experiments.search_space import find_space

    if not 1 <= trials <= MAX_TRIALS:
        raise UserError(f"--trials {trials}: must be 1..{MAX_TRIALS}")
    if timeout is not None and timeout <= 0:
        raise UserError(f"--budget {timeout}: must be > 0 seconds")
    repo = repo.resolve()
    space = load_space(find_space(name, repo / spaces), full_params(repo / "params.yaml"))
    # the study's name is a folder's (its trials' cells): the grids' one check
    check_cell_name(study_name or space.name, "--study")
    study = open_study(space, storage or default_storage(repo), study_name, pruner)
    runner = DirectRunner(repo, repo / TUNE_DIR / "runs", repo / TUNE_DIR / "work", 1, log)
    # the study's trials, those other workers run now included
    held = (TrialState.COMPLETE, TrialState.PRUNED, TrialState.FAIL, TrialState.RUNNING)

    def report(study, trial) -> None:
        if trial.state == TrialState.COMPLETE:
            outcome = f"validation macro F1 {trial.value:.4f}"
        elif trial.state == TrialState.PRUNED:
            outcome = f"pruned after epoch {trial.last_step}"
        else:
            outcome = f"failed: {trial.user_attrs.get('error', trial.state.name.lower())}"
        log(f"trial {trial.number}: {trial.params} -> {outcome}")

    def objective(trial) -> float:
        try:
            return run_trial(trial, space, runner, study.study_name)
        except UserError as err:  # reported in one line by ``report``, the search goes on
            trial.set_user_attr("error", one_line(err))
            raise

    optuna.logging.set_verbosity(optuna.logging.ERROR)  # no traceback of a failed trial
    try:  # SIGTERM (``timeout``, a batch system) as Ctrl-C: the trial's stage is stopped
        with sigterm_stops():
            study.optimize(
                objective,
                n_trials=trials,
                timeout=timeout,
                catch=(UserError,),
                callbacks=[MaxTrialsCallback(trials, states=held), report],
            )
    except KeyboardInterrupt:
        runner.stop_stages()
        raise
    finally:
        runner.close()
    return study


def best_params(storage: str, study_name: str) -> tuple[dict[str, Any], float]:
    """The best trial's parameters (the fixed and sampled ones) and its value."""
    optuna = _optuna()

    try:
        study = optuna.load_study(study_name=study_name, storage=_storage(storage, create=False))
    except KeyError:
        raise UserError(f"no study {study_name!r} in {storage}") from None
    try:
        best = study.best_trial
    except ValueError:
        raise UserError(f"study {study_name!r} has no completed trial yet") from None
    return dict(best.user_attrs.get("params") or best.params), float(best.value or 0.0)
