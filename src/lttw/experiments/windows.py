"""A grid window's account, and the number of cells at a time chosen from past accounts.

Every window of the direct runner writes one JSON account to ``<work>/last_window.json`` and
keeps a copy in ``<runs>/.windows/`` (the newest ``MAX_WINDOWS``), which travels with the
cells: what it wrote, skipped, failed and left; its ``jobs`` (cells at a time), the card
(``gpu_watch``: None on a CPU) and its utilisation; per cell, the folds it trained and those
it restored from an earlier window, with each trained fold's epoch times; and the folds it
finished per GPU-minute of the time the cells ran (the shared stages' time left out).

``choose_jobs`` reads those accounts: the ``jobs`` whose windows finished the most folds per
GPU-minute on a card (the grid's own windows where it has any), 1 where none was measured.
"""

from __future__ import annotations

import json
import os
import time
from dataclasses import dataclass, field
from pathlib import Path

from lttw.io import write_json

WINDOWS_DIR = ".windows"  # under the runs folder
MAX_WINDOWS = 200
DEFAULT_JOBS = 1


@dataclass
class Outcome:
    """What a window did: cells written, skipped (written before), failed, left to do; per
    cell, the folds it trained and those it restored (a resume trains no fold twice)."""

    done: list[str] = field(default_factory=list)
    skipped: list[str] = field(default_factory=list)
    failed: list[str] = field(default_factory=list)
    left: list[str] = field(default_factory=list)
    trained: dict[str, list[int]] = field(default_factory=dict)
    restored: dict[str, list[int]] = field(default_factory=dict)
    epochs: dict[str, dict[int, dict]] = field(default_factory=dict)  # cell -> fold -> times


def epoch_times(train_metrics: dict) -> dict:
    """A fold's epoch times from its train metrics: every epoch's, the first's, and the
    time per epoch after the first step's start-up (``steady_time_per_epoch_s``, where the
    train stage records it; else the epochs after the first, where there are several)."""
    times = [t for t in train_metrics.get("epoch_times_s") or [] if isinstance(t, (int, float))]
    per_epoch = train_metrics.get("time_per_epoch_s")
    if not times and isinstance(per_epoch, (int, float)):  # one fit (e.g. tfidf_linear)
        times = [per_epoch]
    steady = train_metrics.get("steady_time_per_epoch_s")
    if not isinstance(steady, (int, float)):
        steady = sum(times[1:]) / len(times[1:]) if len(times) > 1 else None
    return {
        "epoch_times_s": [round(t, 2) for t in times],
        "first_epoch_s": round(times[0], 2) if times else None,
        "steady_epoch_s": None if steady is None else round(steady, 2),
        "startup_s": train_metrics.get("startup_s"),
    }


def account(
    grid: str,
    outcome: Outcome,
    jobs: int,
    jobs_from: str,
    card: str | None,
    utilisation: dict | None,
    wall_s: float,
    cells_s: float,
) -> dict:
    """A window's account (see the module docstring)."""
    folds = sum(len(f) for f in outcome.trained.values())
    minutes = cells_s / 60 if card is not None else None
    return {
        "grid": grid,
        "finished": time.strftime("%Y-%m-%dT%H:%M:%S"),
        "jobs": jobs,
        "jobs_from": jobs_from,
        "card": card,
        "utilisation": utilisation,
        "done": outcome.done,
        "skipped": outcome.skipped,
        "failed": outcome.failed,
        "left": outcome.left,
        "folds_trained": folds,
        "wall_s": round(wall_s, 1),
        "cells_s": round(cells_s, 1),
        "folds_per_gpu_minute": round(folds / minutes, 3) if minutes else None,
        "cells": {
            cell: {
                "trained": outcome.trained.get(cell, []),
                "restored": outcome.restored.get(cell, []),
                "epochs": {str(f): t for f, t in sorted(outcome.epochs.get(cell, {}).items())},
            }
            for cell in sorted(set(outcome.trained) | set(outcome.restored))
        },
    }


def write_window(work_dir: Path, runs_dir: Path, record: dict) -> None:
    """``record`` to ``work_dir/last_window.json`` and to the runs folder's window log."""
    write_json(work_dir / "last_window.json", record)
    log = runs_dir / WINDOWS_DIR
    stamp = time.strftime("%Y%m%dT%H%M%S", time.gmtime())
    write_json(log / f"{stamp}-{record['jobs']}j-{os.getpid()}.json", record)
    for old in sorted(log.glob("*.json"))[:-MAX_WINDOWS]:
        old.unlink(missing_ok=True)


def read_windows(runs_dir: Path) -> list[dict]:
    """The window accounts kept in the runs folder, oldest first (unreadable ones skipped)."""
    out = []
    for path in sorted((runs_dir / WINDOWS_DIR).glob("*.json"))[-MAX_WINDOWS:]:
        try:
            record = json.loads(path.read_text(encoding="utf-8"))
        except (OSError, ValueError):
            continue
        if isinstance(record, dict):
            out.append(record)
    return out


def rates(windows: list[dict], grid: str | None = None) -> dict[int, float]:
    """jobs -> folds finished per GPU-minute, over the windows on a card that trained a
    fold (``grid``'s own where it has any)."""
    measured = [
        w
        for w in windows
        if w.get("card")
        and isinstance(w.get("jobs"), int)
        and w.get("folds_trained")
        and (w.get("cells_s") or 0) > 0
    ]
    own = [w for w in measured if w.get("grid") == grid]
    totals: dict[int, list[float]] = {}
    for w in own or measured:
        folds, minutes = totals.setdefault(w["jobs"], [0.0, 0.0])
        totals[w["jobs"]] = [folds + w["folds_trained"], minutes + w["cells_s"] / 60]
    return {jobs: folds / minutes for jobs, (folds, minutes) in sorted(totals.items())}


def choose_jobs(runs_dir: Path, grid: str | None = None) -> tuple[int, str]:
    """The ``jobs`` that finished the most folds per GPU-minute (fewer jobs on a tie), and
    how it was chosen; ``DEFAULT_JOBS`` where no window on a card was measured."""
    measured = rates(read_windows(runs_dir), grid)
    if not measured:
        return DEFAULT_JOBS, "default (no window measured on a card)"
    best = max(measured, key=lambda jobs: (measured[jobs], -jobs))
    said = ", ".join(f"{j} job(s) {r:.2f}" for j, r in measured.items())
    return best, f"measured: folds per GPU-minute with {said}"


def describe(outcome: Outcome) -> str:
    parts = [
        f"{len(outcome.done)} cell(s) written",
        f"{len(outcome.skipped)} written before",
        f"{len(outcome.failed)} failed"
        + (f" ({', '.join(outcome.failed)})" if outcome.failed else ""),
        f"{len(outcome.left)} left"
        + (f" ({', '.join(outcome.left)}: rerun to resume)" if outcome.left else ""),
    ]
    trained = sum(len(f) for f in outcome.trained.values())
    restored = sum(len(f) for f in outcome.restored.values())
    parts.append(f"{trained} fold(s) trained, {restored} restored from earlier windows")
    return "; ".join(parts)
