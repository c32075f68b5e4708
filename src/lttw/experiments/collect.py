"""Copy a grid's finished DVC experiments into ``evidence/runs/<cell>/`` (``lttw exp collect``),
so that the results are committed with the code and ``lttw report`` rebuilds them on any
machine without training.

A cell's folder (``experiments.cells``) holds what the experiment wrote to Git (``summary.json``,
``folds/fold_<i>.json``, ``params.yaml``), its held-out test predictions per fold (read from
DVC's cache at the experiment's revision) and ``cell.json``. Where a cell ran more than once
(e.g. on two commits), the newest run is kept.
"""

from __future__ import annotations

import logging
from pathlib import Path

import numpy as np
import pandas as pd

from lttw.errors import UserError
from lttw.experiments.cell_folder import Run
from lttw.experiments.cells import write_cell_folder
from lttw.experiments.dvc_experiments import (
    FOLD_FILE,
    SUMMARY,
    dvc_machine,
    dvc_predictions,
    exp_rows,
    experiment_name,
    file_data,
)

log = logging.getLogger(__name__)


def finished_experiments(doc: list, names: set[str]) -> dict[str, tuple[str, dict]]:
    """name -> (revision, data) of the newest successful experiment of each name in
    ``names`` in a ``dvc exp show --json -A`` document."""
    found: dict[str, tuple[str, dict]] = {}
    for kind, row, data in exp_rows(doc):
        name = experiment_name(row)
        if kind != "exp" or name not in names or file_data(data.get("metrics"), SUMMARY) is None:
            continue
        if name not in found or str(data.get("timestamp", "")) > str(
            found[name][1].get("timestamp", "")
        ):
            found[name] = (str(row.get("rev")), data)
    return found


def _test_predictions(name: str, rev: str, folds: list[int]) -> pd.DataFrame:
    frames = []
    for fold in folds:
        read = dvc_predictions(Run("", "", name=name, rev=rev), fold)
        if read is None:
            raise UserError(
                f"experiment {name} ({rev[:7]}): the held-out predictions of fold "
                f"{fold} are not in DVC's cache (see the warning above)"
            )
        labels, preds = read
        frames.append(
            pd.DataFrame(
                {"fold": fold, "row": np.arange(len(labels)), "label": labels, "pred": preds}
            )
        )
    return pd.concat(frames, ignore_index=True)


def write_cell(folder: Path, name: str, rev: str, data: dict) -> None:
    """One cell's folder from its experiment (``data``: its ``dvc exp show`` data)."""
    metrics = data.get("metrics") or {}
    summary = file_data(metrics, SUMMARY) or {}
    folds = {
        int(m.group(1).removeprefix("fold_")): fold_data
        for path in metrics
        if (m := FOLD_FILE.search(path)) and (fold_data := file_data(metrics, path)) is not None
    }
    folds = {f: m for f, m in folds.items() if f in summary.get("folds", folds)}
    # the metrics hold numbers only: the device each fold trained on from its model folder
    folds = {f: {**m, **dvc_machine(rev, f)} for f, m in folds.items()}
    write_cell_folder(
        folder,
        summary,
        folds,
        file_data(data.get("params"), "params.yaml") or {},
        _test_predictions(name, rev, sorted(folds)),
        {"experiment": name, "rev": rev, "finished": data.get("timestamp")},
    )


def collect(doc: list, names: set[str], runs_dir: Path) -> list[str]:
    """Write a folder per finished cell; the names written."""
    written = []
    for name, (rev, data) in sorted(finished_experiments(doc, names).items()):
        existing = runs_dir / name / "cell.json"
        if existing.is_file() and f'"rev": "{rev}"' in existing.read_text(encoding="utf-8"):
            continue  # this run is collected already
        write_cell(runs_dir / name, name, rev, data)
        log.info("collected %s (%s)", name, rev[:7])
        written.append(name)
    return written
