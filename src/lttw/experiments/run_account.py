"""What one run of the direct runner did (``Outcome``) and its account, written to
``<work>/last_run.json``: the cells written, skipped, failed and left; its ``jobs`` (cells at a
time), the card (``gpu_watch``: None on a CPU) and its utilisation; per cell, the folds it
trained and those it restored from an earlier run, with each trained fold's epoch times; its
wall time and the time its cells ran (the shared stages' time left out), and from it the folds
trained per GPU-minute; the versions of Python, torch and transformers it ran with.
"""

from __future__ import annotations

import platform
import time
from dataclasses import dataclass, field
from pathlib import Path

from lttw.io import write_json

ACCOUNT = "last_run.json"  # in the work folder


@dataclass
class Outcome:
    """What a run did: cells written, skipped (written before), failed, left to do; per
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
    card: str | None,
    utilisation: dict | None,
    wall_s: float,
    cells_s: float,
) -> dict:
    """A run's account (see the module docstring). ``folds_per_gpu_minute``: folds trained per
    minute of the cells' time on a card (None on a CPU), the figure that compares ``--jobs``."""
    folds = sum(len(f) for f in outcome.trained.values())
    per_minute = round(60 * folds / cells_s, 2) if card and cells_s > 0 else None
    return {
        "grid": grid,
        "finished": time.strftime("%Y-%m-%dT%H:%M:%S"),
        "jobs": jobs,
        "card": card,
        "utilisation": utilisation,
        "done": outcome.done,
        "skipped": outcome.skipped,
        "failed": outcome.failed,
        "left": outcome.left,
        "folds_trained": folds,
        "wall_s": round(wall_s, 1),
        "cells_s": round(cells_s, 1),
        "folds_per_gpu_minute": per_minute,
        "versions": _versions(),
        "cells": {
            cell: {
                "trained": outcome.trained.get(cell, []),
                "restored": outcome.restored.get(cell, []),
                "epochs": {str(f): t for f, t in sorted(outcome.epochs.get(cell, {}).items())},
            }
            for cell in sorted(set(outcome.trained) | set(outcome.restored))
        },
    }


def _versions() -> dict[str, str | None]:
    from importlib.metadata import PackageNotFoundError, version

    found: dict[str, str | None] = {"python": platform.python_version()}
    for package in ("torch", "transformers"):
        try:
            found[package] = version(package)
        except PackageNotFoundError:
            found[package] = None
    return found


def write_account(work_dir: Path, record: dict) -> Path:
    """``record`` to the work folder's ``last_run.json``; its path."""
    path = work_dir / ACCOUNT
    write_json(path, record)
    return path


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
    parts.append(f"{trained} fold(s) trained, {restored} restored from earlier runs")
    return "; ".join(parts)
