"""One project that has run DVC's experiment queue, shared by the tests of the queued grids
(tests/experiments/test_study.py, test_sweeps.py): the session fixture ``queued_grids``.

A copy of ``tiny_repro`` with this repository's grid files and a two-cell paired study
(``experiments/study.yaml``) runs, in order: the study's cells queued (``lttw exp run study
--queue``, twice, and ``lttw exp status``); Table 7's reference setting on a frozen encoder
run (``lttw exp run table7 --frozen --only k10s10``: its cell queued, then one ``dvc exp run
--run-all`` of the whole queue, the study's cells first, then the cell collected); the
study's cells collected (``lttw exp collect study``); the reports; Table 7's cell queued once
more (skipped). The study's cells are lttw, the committed setting, and ``frozen``, Table 7's
k10s10 frozen setting: the lttw cell's every stage is DVC's cached one (the commit's), and of
the two experiments of the frozen setting the first runs its stages and the second has every
stage restored from DVC's run cache: a setting run in one experiment restored in another.
Each command's output is kept for the tests, which only read the project (with pytest-xdist
the fixture is in conftest's ``SHARED_RUNS``).
"""

from __future__ import annotations

import re
import shutil
from dataclasses import dataclass
from pathlib import Path

import pytest

from support.tiny_project import REPO, lttw, ran, run_queue

STUDY = (
    "folds: [0]\ndatasets: {ag_news: {}}\n"
    "variants: {lttw: {}, frozen: {model.k: 10, model.s: 10, train.freeze_encoder: true}}\n"
    "reference: frozen\n"
)
SWEEP = ["table7", "--frozen", "--only", "k10s10"]


@dataclass(frozen=True)
class QueuedGrids:
    """The project (``root``) and what each step printed, in the order they ran."""

    root: Path
    study_queued: str  # lttw exp run study --queue
    study_queued_again: str  # the same again: nothing queued twice
    study_status_queued: str  # lttw exp status study, before the queue ran
    queue_run: str  # lttw exp run table7 --frozen --only k10s10: the queue, the 3 cells
    study_collected: str  # lttw exp collect study
    study_status_collected: str  # lttw exp status study, after collecting
    sweep_queued_again: str  # lttw exp run table7 --frozen --only k10s10 --queue
    report: Path  # lttw report (the workspace, the DVC experiments and the cells)
    cells_report: Path  # lttw report --no-experiments (from the cells)


def ran_and_restored(logs: dict[str, str], *names: str) -> tuple[str, str]:
    """Of the experiments ``names`` (the same setting), the one whose stages ran and the one
    that ran none (every stage restored from the run cache); fails unless there is one of
    each."""
    computed = [name for name in names if ran(logs[name])]
    restored = [name for name in names if not ran(logs[name])]
    assert len(computed) == len(restored) == 1, {name: ran(logs[name]) for name in names}
    return computed[0], restored[0]


def experiment_logs(output: str) -> dict[str, str]:
    """Experiment name -> what ``dvc exp run --run-all`` printed while reproducing it (the
    lines after its ``Reproducing experiment 'NAME'``; joined where it started twice)."""
    parts = re.split(r"Reproducing experiment '([^']+)'", output)
    logs: dict[str, str] = {}
    for name, text in zip(parts[1::2], parts[2::2], strict=True):
        logs[name] = logs.get(name, "") + text
    return logs


def run_queued_grids(project: Path) -> QueuedGrids:
    """The steps of the module docstring in ``project`` (a copy of ``tiny_repro``)."""
    shutil.copytree(REPO / "experiments", project / "experiments", dirs_exist_ok=True)
    (project / "experiments" / "study.yaml").write_text(STUDY)
    study_queued = lttw(["exp", "run", "study", "--queue"], project).output
    study_queued_again = lttw(["exp", "run", "study", "--queue"], project).output
    study_status_queued = lttw(["exp", "status", "study"], project).output
    queue_run = run_queue(["lttw", "exp", "run", *SWEEP], project)
    study_collected = lttw(["exp", "collect", "study"], project).output
    study_status_collected = lttw(["exp", "status", "study"], project).output
    lttw(["report", "--out", "report.md"], project)
    lttw(["report", "--out", "cells-report.md", "--no-experiments"], project)
    again = ["exp", "run", "table7", "--frozen", "--only", "k10s10", "--queue"]
    sweep_queued_again = lttw(again, project).output
    return QueuedGrids(
        project,
        study_queued,
        study_queued_again,
        study_status_queued,
        queue_run,
        study_collected,
        study_status_collected,
        sweep_queued_again,
        project / "report.md",
        project / "cells-report.md",
    )


@pytest.fixture(scope="session")
def queued_grids(tmp_path_factory, tiny_repro) -> QueuedGrids:
    """The study's and Table 7's cells through DVC's queue, once per session (see the module
    docstring); tests read it and never change it."""
    base = tmp_path_factory.mktemp("queued_grids")
    return run_queued_grids(tiny_repro.copy(base / "project"))
