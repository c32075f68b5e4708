"""Runs for the report: the workspace's run folder (``metrics/``), DVC experiments' runs and
other run folders (read by ``experiments.cell_folder``), merged per (dataset, variant), named
apart where two differ (``report`` renders them).
"""

from __future__ import annotations

from pathlib import Path

from lttw.errors import UserError
from lttw.experiments.cell_folder import Run, read_cell, with_machines


def merge_runs(runs: list[Run]) -> dict[tuple[str, str], Run]:
    """One run per (dataset, variant); a fold seen twice keeps its first occurrence."""
    merged: dict[tuple[str, str], Run] = {}
    for run in runs:
        into = merged.setdefault((run.dataset, run.variant), Run(run.dataset, run.variant))
        for fold, metrics in run.folds.items():
            into.folds.setdefault(fold, metrics)
        into.sources += run.sources
        into.held_out = into.held_out or run.held_out
        into.final = into.final or run.final
        into.planned = into.planned or run.planned
        into.partial = into.partial or run.partial
        into.trained = {**run.trained, **into.trained}
    return merged


def collect_runs(
    workspace: str | Path,
    params: str | Path | None,
    extra: list[Path],
    experiments: list[Run] | None = None,
) -> list[Run]:
    """The workspace's run (when its summary exists), then the DVC experiments' runs
    (``lttw.experiments.dvc_experiments``), then the extra run folders; a run seen twice (the
    workspace holds the last experiment applied) counts once, see ``distinct_runs``."""
    runs = []
    if (Path(workspace) / "summary.json").is_file():
        run = read_cell(workspace, params)
        run.folds = with_machines(run.folds, Path(workspace).parent / "models")  # beside it
        runs.append(run)
    runs += list(experiments or [])
    runs += [read_cell(folder) for folder in extra]
    if not runs:
        raise UserError(
            f"{Path(workspace) / 'summary.json'}: no metrics yet; run `dvc repro` "
            "or pass --runs DIR (a folder with summary.json and folds/fold_*.json)"
        )
    return distinct_runs(runs)


def distinct_runs(runs: list[Run]) -> list[Run]:
    """Drop a run whose per-fold metrics repeat an earlier one's, and name a run after its
    source (``LTTW [exp k32]``) where it shares dataset, variant and a fold with an earlier,
    different run (e.g. two values of model.k); runs of one variant on other folds (e.g.
    one queued experiment per fold) keep the name and are merged."""
    out: list[Run] = []
    for run in runs:
        if any(run.dataset == o.dataset and run.folds == o.folds for o in out):
            continue
        if any(
            (run.dataset, run.variant) == (o.dataset, o.variant) and set(run.folds) & set(o.folds)
            for o in out
        ):
            run = Run(run.dataset, f"{run.variant} [{run.sources[0]}]", run.folds, run.sources)
        out.append(run)
    return out
