"""The direct grid runner (no dvc) on a project of ``lttw init``: a tiny grid, two cells at a
time, a time limit that stops it mid-grid, then a resume on another machine (the cells' work
folders gone) that completes it; no cell is ever half-written, no fold is trained twice, the
shared inputs are built once, and `lttw report` renders the cells."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pandas as pd
import pytest
import yaml

from lttw.experiments.direct_runner import WORK_DIR, run_window
from lttw.experiments.run_account import Outcome, account
from lttw.experiments.stage_process import Clock

GRID = """\
description: A tiny grid for the tests.
reference: lttw
folds: [0]
cells:
  lttw: {}
  tfidf: {set: {model.variant: tfidf_linear, folds.run: [0, 1]}}
"""
CELLS = ["tiny-lttw", "tiny-tfidf"]
CELL_FILES = {"summary.json", "cell.json", "params.yaml", "test_predictions.parquet", "folds"}


class AfterFold(Clock):
    """No limit until ``mark`` exists (a fold saved), then no time left: the run stops at
    the next stage's start."""

    def __init__(self, mark: Path):
        super().__init__(deadline=None)
        self.mark = mark

    def up(self) -> bool:
        return self.mark.exists()

    def left(self) -> float | None:
        return 0.0 if self.up() else None


def written_cells(runs: Path) -> list[str]:
    """The cell folders, each checked whole (nothing half-written, no temporaries)."""
    assert not [p.name for p in runs.iterdir() if p.name.endswith(".tmp")]
    names = sorted(p.name for p in runs.iterdir() if not p.name.startswith("."))
    for name in names:
        assert {p.name for p in (runs / name).iterdir()} == CELL_FILES, name
    return names


def user_project(root: Path, encoder_dir: Path) -> Path:
    """The tiny profile as a project of ``lttw init``: no stages/ or src/ folder (lttw is
    installed), its dvc.yaml runs the installed lttw's stages (``python -m
    lttw.stages.NAME``), which check the project's lttw-version.json."""
    from support.tiny_project import make_tiny_project

    from lttw.project.create import write_pipeline

    project = make_tiny_project(root, encoder_dir)
    for folder in ("stages", "src"):  # a user's project has neither: lttw is installed
        shutil.rmtree(project / folder, ignore_errors=True)
    write_pipeline(project)
    assert "python -m lttw.stages.sample" in (project / "dvc.yaml").read_text()
    return project


def is_train(argv: list[str]) -> bool:
    return any(a.endswith(("stages/train.py", "lttw.stages.train")) for a in argv)


@pytest.fixture(scope="module")
def two_runs(tmp_path_factory, tiny_encoder_dir):
    """The tiny profile as a user's project (``user_project``), its grid run twice: the
    first, one cell at a time, stopped once the second cell's first fold is saved (the first
    cell written whole), the second, two cells at a time on "another machine" (the cells'
    work folders removed; the shared stages' outputs, keyed by what they read, as a job on
    another machine finds them in a shared work folder), resumed to the end. Every train
    stage started is counted (the cell and fold it trains)."""
    from unittest import mock

    from lttw.experiments import direct_runner
    from lttw.project.stamp import STAMP

    project = user_project(tmp_path_factory.mktemp("grid") / "p", tiny_encoder_dir)
    (project / "experiments").mkdir()
    (project / "experiments" / "tiny.yaml").write_text(GRID)
    runs = project / "evidence" / "runs"
    trains: list[tuple[str, str]] = []
    run_stage = direct_runner.run_stage

    def counted(argv, cwd, *args, **kwargs):
        if is_train(argv):
            trains.append((Path(cwd).name, argv[argv.index("--fold") + 1]))
        return run_stage(argv, cwd, *args, **kwargs)

    stop = AfterFold(runs / ".partial" / "tiny-tfidf" / "fold_0" / "complete")
    with mock.patch.object(direct_runner, "run_stage", side_effect=counted):
        first = run_window("tiny", jobs=1, repo=project, clock=stop, log=lambda s: None)
        state = {
            "written": written_cells(runs) if runs.is_dir() else [],
            "shared": sorted(p.name for p in (project / WORK_DIR / "shared").iterdir()),
            # the work folders carry the project's stamp, which the stages check
            "stamped": sorted(
                p.parent.name
                for p in (project / WORK_DIR / "shared").glob(f"*/{STAMP}")
                if p.is_symlink()
            ),
            "trains": list(trains),
        }
        shutil.rmtree(project / WORK_DIR / "cells")
        lines: list[str] = []
        second = run_window("tiny", jobs=2, repo=project, log=lines.append)
    state["trains_after"] = trains[len(state["trains"]) :]
    state["built_after"] = [line for line in lines if line.startswith("shared ")]
    return project, first, state, second


@pytest.mark.slow
def test_a_budget_stops_mid_grid_and_a_resume_completes_it(two_runs):
    project, first, state, second = two_runs
    runs = project / "evidence" / "runs"
    assert first.done == ["tiny-lttw"] and first.left and not first.failed
    assert state["written"] == sorted(first.done)  # whole cells only
    # no fold trained twice: the resume restores fold 0 (the first, whose model the final
    # stage reads: its metadata was kept) and trains fold 1 only
    assert state["trains"] == [("tiny-lttw", "0"), ("tiny-tfidf", "0")]
    assert state["trains_after"] == [("tiny-tfidf", "1")]
    assert first.trained == {"tiny-lttw": [0], "tiny-tfidf": [0]}
    assert second.trained == {"tiny-tfidf": [1]} and second.restored == {"tiny-tfidf": [0]}
    bases = [name.split("-")[0] for name in state["shared"]]
    assert bases.count("sample") == bases.count("tokens") == 1  # built once for both cells
    assert not [name for name in state["shared"] if name.startswith(".")]
    assert state["stamped"] == state["shared"]
    assert not state["built_after"]  # the resume found them
    assert sorted(p.name for p in (project / WORK_DIR / "shared").iterdir()) == state["shared"]

    assert sorted(second.done + second.skipped) == CELLS and not second.left
    assert sorted(second.skipped) == sorted(first.done) and not second.failed
    assert written_cells(runs) == CELLS
    assert not list((runs / ".partial").glob("*/fold_*"))  # folds moved into their cells
    assert not (project / WORK_DIR / "cells" / "tiny-lttw").exists()  # work removed

    cell = runs / "tiny-tfidf"
    params = yaml.safe_load((cell / "params.yaml").read_text())
    assert params["model"]["variant"] == "tfidf_linear" and params["folds"]["run"] == [0, 1]
    assert params["data"]["root"].startswith("/")  # absolute: stages run elsewhere
    predictions = pd.read_parquet(cell / "test_predictions.parquet")
    assert list(predictions.columns) == ["fold", "row", "label", "pred"]
    assert len(predictions) == 2 * params["data"]["test_size"]
    record = json.loads((cell / "cell.json").read_text())["folds_trained"]
    assert record == {  # no card on this CPU; fold 0 in the first run, fold 1 alone
        "0": {"card": None, "cells_at_once": 1, "jobs": 1},
        "1": {"card": None, "cells_at_once": 1, "jobs": 2},
    }
    last = json.loads((project / WORK_DIR / "last_run.json").read_text())  # the second run's
    assert last["jobs"] == 2 and last["card"] is None and last["utilisation"] is None
    assert last["done"] == ["tiny-tfidf"] and last["folds_trained"] == 1
    assert last["folds_per_gpu_minute"] is None  # no card
    assert last["cells"]["tiny-tfidf"]["trained"] == [1]
    assert last["cells"]["tiny-tfidf"]["epochs"]["1"]["first_epoch_s"] > 0


def test_folds_of_a_stopped_cell_are_restored_on_a_fresh_machine(tmp_path):
    """A fold saved under .partial comes back into a new work folder with its stages marked
    done, so only the other folds run; the first fold of folds.run with its model folder's
    metadata and calibration (what the final stage reads), never its weights, and not at
    all where they were not kept."""
    from lttw.experiments.cells import FOLD_FILES, restore_folds, save_fold

    runs, old = tmp_path / "runs", tmp_path / "old"
    for fold in (0, 1, 2):
        for pattern in FOLD_FILES:
            (old / pattern.format(fold=fold)).parent.mkdir(parents=True, exist_ok=True)
            (old / pattern.format(fold=fold)).write_text(f"fold {fold}")
        model = old / f"models/fold_{fold}"
        for name in ("lttw.json", "calibration.json", "model.safetensors", "part/lttw.json"):
            (model / name).parent.mkdir(parents=True, exist_ok=True)
            (model / name).write_text(name)
        save_fold(runs, "g-a", old, fold, {"model": {"variant": "lttw"}})
    new = tmp_path / "new"
    (new / ".done").mkdir(parents=True)
    assert restore_folds(runs, "g-a", new, [0, 1]) == [0, 1]
    assert sorted(p.name for p in (new / ".done").iterdir()) == sorted(
        f"{s}@{f}" for s in ("counts", "nmf", "features", "train", "evaluate") for f in (0, 1)
    )
    assert (new / "metrics/folds/fold_1.json").read_text() == "fold 1"
    model = new / "models/fold_0"
    assert sorted(p.relative_to(model).as_posix() for p in model.rglob("*") if p.is_file()) == [
        "calibration.json",
        "lttw.json",
        "part/lttw.json",
    ]
    assert restore_folds(runs, "g-a", new, [0, 1]) == []  # marked: not again
    assert (runs / ".partial/g-a/params.yaml").is_file()  # the report's dataset and variant
    # a first fold saved without its model's metadata trains again
    (runs / ".partial/g-a/fold_2/models/fold_2/lttw.json").unlink()
    assert restore_folds(runs, "g-a", tmp_path / "newer", [2, 1]) == [1]


def test_budget_and_jobs_are_checked():
    from lttw.errors import UserError

    with pytest.raises(UserError, match="--jobs 0"):
        run_window("tiny", jobs=0)
    with pytest.raises(UserError, match="--budget -1"):
        run_window("tiny", budget=-1)
    with pytest.raises(UserError, match="unknown grid 'no-such-grid'"):
        run_window("no-such-grid")


@pytest.mark.slow
def test_the_report_renders_the_cells_the_runner_wrote(two_runs, monkeypatch):
    """No workspace metrics, no experiments: `lttw report` renders the grid from its cells."""
    from typer.testing import CliRunner

    from lttw.cli import app

    project = two_runs[0]
    monkeypatch.chdir(project)
    result = CliRunner().invoke(app, ["report", "--no-experiments", "--out", "report.md"])
    assert result.exit_code == 0, result.output
    text = (project / "report.md").read_text()
    grid = text.split("## Grid `tiny` (2 of 2 cells)")[1]
    assert "### AG News" in grid
    assert "| LTTW | 1 |" in grid and "| tfidf_linear | 2 |" in grid
    assert "| tfidf_linear | 1 | n/a (needs >= 2 common folds) |" in grid  # the paired test


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


def test_gpu_sh_grid_is_the_command_line_and_needs_no_dvc(tmp_path, tiny_encoder_dir):
    """`bench/gpu.sh grid NAME ...` (a GPU machine without dvc) is `lttw exp run NAME --runner
    direct ...` with the command line's options (--cell here): on the CPU with dvc hidden (as
    absent), a budget of 0 plans and checks the cell, starts no stage, and says what is left."""
    from support.tiny_project import make_tiny_project

    project = make_tiny_project(tmp_path / "p", tiny_encoder_dir)
    (project / "experiments").mkdir()
    (project / "experiments" / "tiny.yaml").write_text(GRID)
    (project / "bench").mkdir()
    repo = Path(__file__).resolve().parents[2]
    shutil.copy2(repo / "bench" / "gpu.sh", project / "bench" / "gpu.sh")
    hide = tmp_path / "hide"
    hide.mkdir()  # imported at start-up: dvc and dvclive as on a machine without them
    (hide / "sitecustomize.py").write_text(
        "import sys\nsys.modules.update(dvc=None, dvclive=None)\n"
    )
    env = {
        **os.environ,
        "PYTHON": sys.executable,
        "PYTHONPATH": os.pathsep.join([str(hide), str(project / "src")]),
    }
    run = subprocess.run(
        [
            "bash",
            str(project / "bench" / "gpu.sh"),
            "grid",
            "tiny",
            "--cell",
            "tfidf",
            "--budget",
            "0",
        ],
        capture_output=True,
        text=True,
        env=env,
        timeout=300,
    )
    assert run.returncode == 0, run.stdout[-2000:] + run.stderr[-2000:]
    assert "1 left (tiny-tfidf: rerun to resume)" in run.stdout
    assert json.loads((project / WORK_DIR / "last_run.json").read_text())["left"] == ["tiny-tfidf"]
    assert not (project / "evidence" / "runs" / "tiny-tfidf").exists()


def test_the_stage_plan_is_dvc_yaml_in_its_order_with_the_folds_expanded():
    """The direct runner's stages are the repository's dvc.yaml, in file order, the per-fold
    ones once per fold of folds.run, a cell's own stages run fold by fold."""
    from lttw.experiments.stage_plan import expand_stages, fold_major

    repo = Path(__file__).resolve().parents[2]
    params = yaml.safe_load((repo / "params.yaml").read_text())
    params["folds"]["run"] = [1, 3]
    stages = expand_stages(yaml.safe_load((repo / "dvc.yaml").read_text()), params)
    per_fold = ["counts", "nmf", "features", "train", "evaluate"]
    assert [s.name for s in stages] == [
        "sample",
        "folds",
        "tokens",
        "encode",
        *[f"{name}@{fold}" for name in per_fold for fold in (1, 3)],
        "final",
        "summary",
    ]
    assert all(s.cmd.endswith("--fold 3") for s in stages if s.name.endswith("@3"))
    own = fold_major([s for s in stages if s.base not in ("sample", "folds", "tokens", "encode")])
    assert [s.name for s in own][:5] == [f"{name}@1" for name in per_fold]
    assert [s.name for s in own][-2:] == ["final", "summary"]


def test_account_counts_folds_per_gpu_minute_of_the_cells_time():
    """The figure that compares --jobs: folds trained per minute the cells ran on a card."""
    outcome = Outcome(done=["a"], trained={"a": [0, 1, 2], "b": [4]})
    record = account("paper", outcome, 4, "NVIDIA H200", None, wall_s=150.0, cells_s=120.0)
    assert record["folds_trained"] == 4 and record["folds_per_gpu_minute"] == 2.0
    assert record["versions"]["torch"] and record["versions"]["python"].count(".") == 2
    assert account("paper", outcome, 4, None, None, 150.0, 120.0)["folds_per_gpu_minute"] is None
