"""The runs of DVC experiments, for ``lttw report``: every ``dvc exp run`` (queued or not) of
the current commit, read from ``dvc exp show --json``, whose metrics include the summary
stage's ``metrics/summary.json`` and the evaluate stage's ``metrics/folds/fold_<i>.json``;
``params.yaml``'s ``model`` section of each names LTTW's ablations.

``dvc exp show --json`` gives a list of rows: the workspace, then each baseline commit with
its ``experiments``, groups of ``revs`` (rev, name, data). A row's ``data`` holds
``metrics`` and ``params`` as ``{path: {"data": {...}}}`` (or ``{"error": ...}``).
"""

from __future__ import annotations

import json
import logging
import re
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

from lttw import layout
from lttw.errors import UserError
from lttw.experiments.cell_folder import PART, Run, machine_of, make_run

log = logging.getLogger(__name__)

SUMMARY = layout.SUMMARY_METRICS.as_posix()
FOLD_FILE = re.compile(r"(?:^|/)folds/(fold_\d+)\.json$")


def require_dvc(what: str, instead: str) -> None:
    """A clear error where ``what`` needs dvc and it is not installed."""
    import importlib.util

    if importlib.util.find_spec("dvc") is None:
        raise UserError(
            f"{what} needs dvc, which is not installed (pip install 'lttw[train]'); {instead}"
        )


def exp_show_json(repo: str | Path = ".", all_commits: bool = False) -> list | None:
    """``dvc exp show --json`` run in ``repo``; None (and a note in the log) where there is
    no DVC repository, no Git commit, or dvc fails."""
    command = [
        sys.executable,
        "-m",
        "dvc",
        "exp",
        "show",
        "--json",
        *(["-A"] if all_commits else []),
    ]
    try:
        proc = subprocess.run(command, cwd=repo, capture_output=True, text=True, timeout=600)
    except (OSError, subprocess.TimeoutExpired) as err:
        log.warning("no DVC experiments read: %s", err)
        return None
    if proc.returncode != 0:
        reason = (proc.stderr.strip().splitlines() or ["dvc failed"])[-1]
        log.warning("no DVC experiments read: %s", reason)
        return None
    try:
        doc = json.loads(proc.stdout)
    except json.JSONDecodeError:
        log.warning("no DVC experiments read: dvc exp show --json printed no JSON")
        return None
    return doc if isinstance(doc, list) else None


def exp_rows(doc: list) -> Iterator[tuple[str, dict, dict]]:
    """(kind, row, data) of every row: the workspace, the baseline commits ("commit") and
    their experiments ("exp")."""
    for row in doc:
        if not isinstance(row, dict):
            continue
        yield "commit", row, row.get("data") or {}
        for group in row.get("experiments") or []:
            state = ((group or {}).get("executor") or {}).get("state")
            if state not in (None, "success"):  # queued, running or failed: no results yet
                continue
            for rev in (group or {}).get("revs") or []:
                yield "exp", rev or {}, (rev or {}).get("data") or {}


def experiment_name(row: dict) -> str:
    rev = str(row.get("rev") or "?")
    return str(row.get("name") or (rev if rev == "workspace" else rev[:7]))


def file_data(section: dict | None, path: str) -> dict | None:
    entry = (section or {}).get(path)
    data = entry.get("data") if isinstance(entry, dict) else None
    return data if isinstance(data, dict) else None


def runs_from_exp_show(doc: list, skip_workspace: bool = True) -> list[Run]:
    """A run per row of a ``dvc exp show --json`` document that has summary and per-fold
    metrics, named ``dvc exp NAME`` (or ``dvc commit NAME``). The workspace row is skipped
    by default: ``lttw report`` reads the workspace's files itself."""
    runs = []
    for kind, row, data in exp_rows(doc):
        name = experiment_name(row)
        if name == "workspace" and skip_workspace:
            continue
        metrics = data.get("metrics") if isinstance(data, dict) else None
        summary = file_data(metrics, SUMMARY)
        if summary is None:
            continue
        assert metrics is not None  # file_data found the summary in it
        folds = [
            (match.group(1), fold_data)
            for path in metrics
            if (match := FOLD_FILE.search(path))
            and (fold_data := file_data(metrics, path)) is not None
        ]
        params = file_data(data.get("params"), "params.yaml") or {}
        run = make_run(summary, folds, params, f"dvc {kind} {name}")
        if run is not None:
            run.name, run.rev, run.params = name, str(row.get("rev") or "") or None, params
            runs.append(run)
    return runs


def experiment_runs(repo: str | Path = ".", all_commits: bool = False) -> list[Run]:
    """The runs of the DVC experiments in ``repo`` (none where dvc cannot tell)."""
    doc = exp_show_json(repo, all_commits)
    return runs_from_exp_show(doc) if doc else []


def dvc_predictions(run: Run, fold: int):
    """The evaluate stage's test-part labels and predictions of ``run`` (an experiment) from
    DVC's cache at its revision; None where they cannot be read."""
    if not run.rev:
        return None
    try:
        import dvc.api
        import pandas as pd

        path = f"data/eval/fold_{fold}/predictions.parquet"
        with dvc.api.open(path, rev=run.rev, mode="rb") as f:
            frame = pd.read_parquet(f)
    except Exception as err:  # noqa: BLE001  (dvc raises many kinds; the test is then n/a)
        log.warning("%s: predictions of fold %d not readable: %s", run.name, fold, err)
        return None
    test = frame[frame["part"] == PART]
    return test["label"].to_numpy(), test["pred"].to_numpy()


def dvc_machine(rev: str, fold: int) -> dict:
    """The device and card fold ``fold``'s model trained on (its lttw.json ``trained_on``)
    from DVC's cache at revision ``rev``; {} where it cannot be read."""
    try:
        import dvc.api

        with dvc.api.open(f"models/fold_{fold}/lttw.json", rev=rev) as f:
            meta = json.load(f)
    except Exception as err:  # noqa: BLE001  (dvc raises many kinds; the device is then "?")
        log.warning("%s: the model folder of fold %d not readable: %s", rev[:7], fold, err)
        return {}
    return machine_of(meta)
