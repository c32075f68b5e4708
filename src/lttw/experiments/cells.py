"""A finished cell's folder, ``evidence/runs/<cell>/``, the one format every backend writes
(``lttw exp collect`` from DVC's experiments, the direct runner from its work folders) and
``lttw report`` reads: ``summary.json``, ``folds/fold_<i>.json``, ``params.yaml``, the
held-out test predictions (``test_predictions.parquet``: fold, row, label, pred) for
McNemar's test, and ``cell.json`` (the experiment's name, revision, time, training seconds
summed over folds; the direct runner's cells also, per fold, the card it trained on and how
many cells trained on it at once, ``folds_trained``). A folder is written whole or not at
all.

A cell the direct runner stopped keeps its finished folds in ``.partial/<cell>/fold_<i>/``
(``FOLD_FILES``, the model folder's ``MODEL_FILES`` and a ``complete`` mark), from which a
later run on another machine resumes it without training any of them again; they go when
the cell is written. ``.partial/<cell>/params.yaml`` keeps the parameters the saved folds ran
with; ``lttw report`` shows a stopped cell's finished folds (``read_grid_cell``).
"""

from __future__ import annotations

import os
import shutil
from pathlib import Path

import pandas as pd

from lttw.experiments.cell_folder import (
    PREDICTIONS,
    Run,
    make_run,
    read_cell,
    read_params,
    test_predictions,
    with_machines,
)
from lttw.io import atomic_dir, atomic_path, read_json, remove_inside, write_json, write_parquet

RUNS_DIR = Path("evidence/runs")
#: what a finished fold leaves in a work folder (format with fold=), all a resume needs;
#: ``grid/fold_<i>.json``: the runner's record of where and beside how many cells it trained
FOLD_FILES = (
    "metrics/folds/fold_{fold}.json",
    "metrics/train/fold_{fold}.json",
    "data/eval/fold_{fold}/predictions.parquet",
    "grid/fold_{fold}.json",
)
MODEL_DIR = "models/fold_{fold}"
#: the per-fold stages a saved fold stands for
FOLD_STAGES = ("counts", "nmf", "features", "train", "evaluate")
#: the model folder's small files, kept without its weights (a model is too big to carry
#: between runs): what the final stage reads from the first fold's folder, its metadata
#: (a copy with ``final.enabled: false``) and its calibration (a trained final model borrows
#: it; an ensemble's parts keep theirs one folder down)
MODEL_FILES = ("lttw.json", "labels.json", "calibration.json", "ensemble.json")
PARTIAL_PARAMS = "params.yaml"


def fold_record(work: Path, fold: int) -> Path:
    """Where the runner writes a fold's record (``FOLD_FILES``' last) in a work folder."""
    return work / FOLD_FILES[-1].format(fold=fold)


def _model_files(model: Path) -> list[str]:
    """``MODEL_FILES`` of a model folder and of its subfolders (an ensemble's parts), as
    paths relative to it."""
    if not model.is_dir():
        return []
    folders = [model, *sorted(p for p in model.iterdir() if p.is_dir() and not p.is_symlink())]
    return [
        (folder / name).relative_to(model).as_posix()
        for folder in folders
        for name in MODEL_FILES
        if (folder / name).is_file()
    ]


def partial_dir(runs_dir: Path, cell: str, fold: int) -> Path:
    return runs_dir / ".partial" / cell / f"fold_{fold}"


def save_fold(runs_dir: Path, cell: str, work: Path, fold: int, params: dict) -> None:
    """Keep a finished fold's files from a cell's work folder, atomically (``params``: the
    cell's, kept beside its folds for the report)."""
    import yaml

    saved = partial_dir(runs_dir, cell, fold)
    tmp = saved.with_name(f".{saved.name}.tmp")
    remove_inside(tmp, runs_dir)
    model = MODEL_DIR.format(fold=fold)
    files = [p.format(fold=fold) for p in FOLD_FILES if (work / p.format(fold=fold)).is_file()]
    files += [f"{model}/{rel}" for rel in _model_files(work / model)]
    for rel in files:
        (tmp / rel).parent.mkdir(parents=True, exist_ok=True)
        shutil.copy2(work / rel, tmp / rel)
    (tmp / "complete").touch()
    remove_inside(saved, runs_dir)
    os.replace(tmp, saved)
    with atomic_path(saved.parent / PARTIAL_PARAMS) as path:
        path.write_text(yaml.safe_dump(params, sort_keys=False), encoding="utf-8")


def restore_fold(runs_dir: Path, cell: str, work: Path, fold: int) -> bool:
    """Copy a saved fold back into a work folder (its model folder: ``MODEL_FILES`` only,
    no weights); False where none was saved whole."""
    saved = partial_dir(runs_dir, cell, fold)
    if not (saved / "complete").is_file():
        return False
    for path in sorted(saved.rglob("*")):
        if path.is_file() and path.name != "complete":
            rel = path.relative_to(saved)
            (work / rel).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(path, work / rel)
    return True


def restore_folds(runs_dir: Path, cell: str, work: Path, folds: list[int]) -> list[int]:
    """The ``folds`` (``folds.run``, in order) that earlier runs saved, back into a cell's
    work folder ``work`` with their stages marked done (``.done/<stage>@<fold>``); the folds
    restored. The first only where its model folder's metadata is there (the final stage
    reads it): a fold saved without it reruns."""
    done, restored = work / ".done", []
    for i, fold in enumerate(folds):
        if (done / f"evaluate@{fold}").exists():
            continue
        model = partial_dir(runs_dir, cell, fold) / MODEL_DIR.format(fold=fold)
        if i == 0 and not (model / "lttw.json").is_file():
            continue
        if restore_fold(runs_dir, cell, work, fold):
            done.mkdir(parents=True, exist_ok=True)
            for stage in FOLD_STAGES:
                (done / f"{stage}@{fold}").touch()
            restored.append(fold)
    return restored


def read_grid_cell(runs_dir: Path, name: str) -> Run | None:
    """A grid cell's run: its folder where it is written (with ``cell.json``'s per-fold
    records), else the folds a stopped run saved (``partial``), else None."""
    folder = runs_dir / name
    if (folder / "summary.json").is_file():
        run = read_cell(folder)
        meta = read_json(folder / "cell.json") if (folder / "cell.json").is_file() else {}
        run.trained = {int(f): r for f, r in (meta.get("folds_trained") or {}).items()}
        return run
    saved = sorted((runs_dir / ".partial" / name).glob("fold_*/complete"))
    folds, trained = [], {}
    for mark in saved:
        fold = int(mark.parent.name.removeprefix("fold_"))
        metrics = mark.parent / f"metrics/folds/fold_{fold}.json"
        if not metrics.is_file():  # not a fold the runner saved: nothing to report
            continue
        folds.append((f"fold_{fold}", read_json(metrics)))
        if fold_record(mark.parent, fold).is_file():
            trained[fold] = read_json(fold_record(mark.parent, fold))
    if not folds:
        return None
    # the saved folds' parameters name the dataset, variant and ablation
    params = read_params(runs_dir / ".partial" / name / PARTIAL_PARAMS) or {}
    partial = make_run({}, folds, params, str(runs_dir / ".partial" / name))
    if partial is not None:
        partial.partial, partial.trained = True, trained
    return partial


def progress(cells: list, runs_dir: Path) -> dict[str, str]:
    """cell name -> "done", "n/m folds" (a stopped cell's saved folds) or "not run", for
    grid cells (``grids.GridCell``)."""
    out = {}
    for cell in cells:
        if (runs_dir / cell.name / "summary.json").is_file():
            out[cell.name] = "done"
            continue
        partial = runs_dir / ".partial" / cell.name
        saved = len(list(partial.glob("fold_*/complete"))) if partial.is_dir() else 0
        folds = cell.params.get("folds.run")
        out[cell.name] = f"{saved}/{len(folds) if folds else '?'} folds" if saved else "not run"
    return out


def train_seconds(folds: dict[int, dict]) -> float:
    """Training time summed over folds (time per epoch x epochs run)."""
    return round(
        sum(m.get("time_per_epoch_s", 0) * m.get("epochs_run", 0) for m in folds.values()), 1
    )


def write_cell_folder(
    folder: Path,
    summary: dict,
    folds: dict[int, dict],
    params: dict,
    predictions: pd.DataFrame,
    meta: dict,
) -> None:
    """Write one cell's folder atomically (``meta``: cell.json's experiment, rev, finished;
    train_s is added)."""
    import yaml

    with atomic_dir(folder) as tmp:
        write_json(tmp / "summary.json", summary)
        for fold, fold_metrics in sorted(folds.items()):
            write_json(tmp / "folds" / f"fold_{fold}.json", fold_metrics)
        (tmp / "params.yaml").write_text(yaml.safe_dump(params, sort_keys=False), encoding="utf-8")
        write_parquet(tmp / PREDICTIONS, predictions)
        write_json(tmp / "cell.json", {**meta, "train_s": train_seconds(folds)})


def write_cell_from_work(target: Path, work: Path, params: dict, meta: dict) -> None:
    """The cell folder ``target`` from a finished pipeline's work folder (the direct runner's
    ``cells/<cell>/``): its summary, the summary's folds' metrics and held-out predictions."""
    summary = read_json(work / "metrics" / "summary.json")
    folds = {f: read_json(work / f"metrics/folds/fold_{f}.json") for f in summary["folds"]}
    # the cell's fold files also name the device each fold trained on (its model folder's)
    folds = with_machines(folds, work / "models")
    predictions = pd.concat(
        [
            test_predictions(f, pd.read_parquet(work / f"data/eval/fold_{f}/predictions.parquet"))
            for f in sorted(folds)
        ],
        ignore_index=True,
    )
    records = {
        str(f): read_json(fold_record(work, f))
        for f in sorted(folds)
        if fold_record(work, f).is_file()
    }
    meta = {**meta, "folds_trained": records} if records else meta
    write_cell_folder(target, summary, folds, params, predictions, meta)
