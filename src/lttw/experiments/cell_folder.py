"""Reading a run folder, the cells of ``evidence/runs/`` among them (``cells`` writes them):
``summary.json`` (the summary stage's output) and ``folds/fold_<i>.json`` (the evaluate
stage's per-fold metrics); ``metrics/`` of the workspace is one, and runs copied elsewhere
(e.g. from ``dvc exp``) are others. The parameters that produced a run (``params.yaml``
beside ``summary.json``, or the one passed) name its dataset, its variant and LTTW's
ablations (LTTW-M / -L / -Att): the pipeline's metrics files hold numbers only. A cell's ``test_predictions.parquet``
holds its held-out test predictions (fold, row, label, pred).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import pandas as pd

from lttw.errors import UserError
from lttw.io import read_json, read_yaml

PREDICTIONS = "test_predictions.parquet"

REFERENCE = "LTTW"


PART = "test"  # the held-out test sample


@dataclass
class Run:
    """Per-fold metrics of one (dataset, variant), possibly merged from several folders."""

    dataset: str
    variant: str
    folds: dict[int, dict] = field(default_factory=dict)
    sources: list[str] = field(default_factory=list)
    #: a DVC experiment's name, Git revision and parameters (``experiments.dvc_experiments``)
    name: str | None = None
    rev: str | None = None
    params: dict = field(default_factory=dict)
    #: the summary's ``held_out`` (sample sizes) and ``final`` (the final model's record)
    held_out: dict | None = None
    final: dict | None = None
    #: a grid cell's: the folds it plans (folds.run), whether it is still running (its
    #: finished folds only, ``.partial``), and per trained fold the direct runner's record
    #: (the card, how many cells trained on it at once)
    planned: int | None = None
    partial: bool = False
    trained: dict[int, dict] = field(default_factory=dict)

    def values(self, key: str, part: str | None = PART) -> np.ndarray:
        """One metric per fold (fold order); missing entries are skipped."""
        out = []
        for fold in sorted(self.folds):
            entry = self.folds[fold].get(part, {}) if part else self.folds[fold]
            if isinstance(entry.get(key), (int, float)):
                out.append(float(entry[key]))
        return np.asarray(out, dtype=float)


def variant_label(variant: str, model: dict | None) -> str:
    """The report's name of a run: LTTW's ablations by their paper names, as the fusion
    (``models.fusion``) and attention kind (``models.attention``) name themselves."""
    if variant != "lttw":
        return variant
    # here, not at the top: torch, only for LTTW runs (`lttw report` of baselines needs none)
    from lttw.models.attention import attention_ablation
    from lttw.models.fusion import FUSION_REGISTRY

    model = model or {}
    fusion = FUSION_REGISTRY.get(model.get("fusion") or "")  # None, "": no fusion registered
    return (
        (fusion.ablation if fusion else None)
        or attention_ablation(model.get("attention"))
        or REFERENCE
    )


def read_params(path: Path | None) -> dict:
    """The parameters file ``path`` as a dict ({} where there is none)."""
    if path is None or not path.is_file():
        return {}
    raw = read_yaml(path) or {}
    return raw if isinstance(raw, dict) else {}


def _section(params: dict | None, name: str) -> dict:
    block = (params or {}).get(name)
    return block if isinstance(block, dict) else {}


def run_identity(params: dict | None) -> tuple[str, str, dict]:
    """(dataset, variant, model parameters) of a run, from its parameters ("unknown" where
    they do not say)."""
    data, model = _section(params, "data"), _section(params, "model")
    dataset = data.get("dataset") or "unknown"
    variant = model.get("variant") or "unknown"
    return str(dataset), str(variant), model


def machine_of(model_meta: dict) -> dict:
    """The device and card a fold's model trained on (its lttw.json ``trained_on``), as the
    report's device column reads them from a fold's record."""
    block = model_meta.get("trained_on") if isinstance(model_meta, dict) else None
    if not isinstance(block, dict):
        return {}
    return {key: block[key] for key in ("device", "device_name") if key in block}


def with_machines(folds: dict[int, dict], models: Path) -> dict[int, dict]:
    """Each fold's metrics with the device and card it trained on (``machine_of``) from
    the model folders under ``models`` (``models/fold_<i>``) where they exist: the folds'
    metrics files hold numbers only."""
    out = {}
    for fold, metrics in folds.items():
        meta = models / f"fold_{fold}" / "lttw.json"
        out[fold] = {**metrics, **machine_of(read_json(meta))} if meta.is_file() else metrics
    return out


def read_cell(folder: str | Path, params: str | Path | None = None) -> Run:
    """Read one run folder (``summary.json`` + ``folds/fold_*.json``). ``params``: the
    parameters file that produced it (default: ``params.yaml`` in the folder, if any)."""
    folder = Path(folder)
    summary_path = folder / "summary.json"
    if not summary_path.is_file():
        raise UserError(
            f"{summary_path}: not found; a run folder holds summary.json and "
            "folds/fold_*.json (run `dvc repro` first)"
        )
    summary = read_json(summary_path)
    fold_files = sorted((folder / "folds").glob("fold_*.json"))
    params_path = Path(params) if params else folder / "params.yaml"
    run = make_run(
        summary,
        [(p.stem, read_json(p)) for p in fold_files],
        read_params(params_path),
        str(folder),
    )
    if run is None:
        raise UserError(
            f"{folder / 'folds'}: no fold_*.json metrics for folds {summary.get('folds')}"
        )
    return run


def make_run(
    summary: dict, fold_metrics: list[tuple[str, dict]], params: dict | None, source: str
) -> Run | None:
    """A run from the summary stage's output, the per-fold metrics (``(fold_<i>, metrics)``;
    only the folds the summary lists are kept) and the parameters that produced them
    (``run_identity``); None without any fold."""
    wanted = summary.get("folds")
    folds = {}
    for stem, metrics in fold_metrics:
        fold = int(metrics.get("fold", stem.removeprefix("fold_")))
        if wanted is None or fold in wanted:
            folds[fold] = metrics
    if not folds:
        return None
    dataset, variant, model = run_identity(params)
    run = Run(dataset, variant_label(variant, model), folds, [source])
    run.held_out, run.final = summary.get("held_out"), summary.get("final")
    return run


def test_predictions(fold: int, frame: pd.DataFrame) -> pd.DataFrame:
    """The evaluate stage's predictions of one fold (``data/eval/fold_<i>``) reduced to the
    held-out test sample's rows: fold, row, label, pred."""
    test = frame[frame["part"] == PART]
    return pd.DataFrame(
        {
            "fold": fold,
            "row": np.arange(len(test)),
            "label": test["label"].to_numpy(),
            "pred": test["pred"].to_numpy(),
        }
    )


def read_test_predictions(folder: str | Path) -> pd.DataFrame | None:
    """A cell's held-out test predictions (fold, row, label, pred); a stopped cell's folder
    (``.partial/<cell>``): those of the folds it saved; None where it has none."""
    folder = Path(folder)
    path = folder / PREDICTIONS
    if path.is_file():
        return pd.read_parquet(path)
    saved = []
    for mark in sorted(folder.glob("fold_*/complete")):
        fold = int(mark.parent.name.removeprefix("fold_"))
        fold_path = mark.parent / f"data/eval/fold_{fold}/predictions.parquet"
        if fold_path.is_file():
            saved.append(test_predictions(fold, pd.read_parquet(fold_path)))
    return pd.concat(saved, ignore_index=True) if saved else None


def read_predictions(run: Run, fold: int) -> tuple[np.ndarray, np.ndarray] | None:
    """The held-out labels and predictions of ``fold`` where ``run`` was read from a cell
    folder that holds them; None otherwise."""
    frame = read_test_predictions(run.sources[0]) if run.sources else None
    if frame is None:
        return None
    frame = frame[frame["fold"] == fold]
    return frame["label"].to_numpy(), frame["pred"].to_numpy()
