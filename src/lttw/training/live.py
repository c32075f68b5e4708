"""Training curves through dvclive: per-step metrics on the optimiser-step axis, per-epoch
metrics on the epoch axis, and one continuous history across a kill and resume.

* ``train/loss``, ``train/lr``: ``plots/metrics/train/*.tsv``, ``step`` = the optimiser step
  (the checkpoint's step after a resume, so steps strictly increase);
* per epoch (``val_f1_macro``, ``epoch_time_s``, ``samples_per_s``, ``resumed``):
  ``plots/custom/epochs.json`` with an ``epoch`` column (``Live.log_plot``), rewritten from the
  loop's history (stored in the checkpoint) every epoch; their latest values also go to the
  summary (``metrics.json``: ``val/f1_macro``, ``epoch_time_s``, ``samples_per_s``).

``live`` may be a real ``dvclive.Live``, a stand-in with ``log_metric`` / ``next_step`` (tests,
benchmarks: per-epoch values are then passed to ``log_metric``), or None.
"""

from __future__ import annotations

import csv
import logging
from pathlib import Path

from lttw.io import atomic_path

log = logging.getLogger(__name__)

EPOCH_PLOT = "epochs"  # plots/custom/epochs.json
EPOCH_COLUMNS = ("epoch", "val_f1_macro", "epoch_time_s", "samples_per_s", "step", "resumed")
#: summary name of each per-epoch value
EPOCH_SUMMARY = {
    "val_f1_macro": "val/f1_macro",
    "epoch_time_s": "epoch_time_s",
    "samples_per_s": "samples_per_s",
}


def open_live(folder: str | Path, params: dict, resume: bool):
    """dvclive logger for the training curves (None where dvclive is not installed).
    ``resume``: continue the history in ``folder`` (a checkpoint of this run exists)."""
    try:
        from dvclive import Live
    except ImportError:
        log.info("dvclive not installed: training curves are not logged")
        return None
    live = Live(dir=str(folder), dvcyaml=False, save_dvc_exp=False, resume=resume)
    live.log_params(params)
    return live


def log_steps(live, step: int, metrics: dict[str, float]) -> None:
    """Per-step metrics at optimiser step ``step``."""
    if live is None:
        return
    live.step = step
    for name, value in metrics.items():
        live.log_metric(name, value)
    live.next_step()


def _epoch_rows(history: list[dict]) -> list[dict]:
    return [{key: row.get(key, False) for key in EPOCH_COLUMNS} for row in history]


def log_epoch(live, history: list[dict]) -> None:
    """The per-epoch history (the last row is the epoch just ended)."""
    if live is None or not history:
        return
    last = history[-1]
    if not hasattr(live, "log_plot"):  # a stand-in
        for key, name in EPOCH_SUMMARY.items():
            live.log_metric(name, last[key])
        return
    live.log_plot(EPOCH_PLOT, _epoch_rows(history), x="epoch", y="val_f1_macro")
    for key, name in EPOCH_SUMMARY.items():
        live.log_metric(name, last[key], plot=False)
    live.make_summary()


def trim_history(live, step: int, history: list[dict]) -> None:
    """Make the logged history that of the checkpoint the loop starts from: per-step rows
    after optimiser step ``step`` (logged before a kill, after the last checkpoint) are
    dropped, so the resumed run logs each step once; the epoch plot is rewritten."""
    plots = getattr(live, "plots_dir", None)
    if plots is None:  # a stand-in
        return
    for path in sorted((Path(plots) / "metrics").rglob("*.tsv")):
        with path.open(encoding="utf-8", newline="") as f:
            rows = list(csv.DictReader(f, delimiter="\t"))
        kept = [r for r in rows if int(r["step"]) <= step]
        if len(kept) == len(rows):
            continue
        with atomic_path(path) as tmp, open(tmp, "w", encoding="utf-8", newline="") as f:
            writer = csv.DictWriter(
                f, fieldnames=list(rows[0]), delimiter="\t", lineterminator="\n"
            )
            writer.writeheader()
            writer.writerows(kept)
    epochs = Path(plots) / "custom" / f"{EPOCH_PLOT}.json"
    if history:
        live.log_plot(EPOCH_PLOT, _epoch_rows(history), x="epoch", y="val_f1_macro")
    else:
        epochs.unlink(missing_ok=True)
