"""``lttw report``'s sweep sections: each sweep grid (``experiments/table*.yaml``, a grid with a
``column``) that has cells or DVC experiments, as the paper's table: macro P / R / F1 on the held-out test sample per setting
(mean ± sample std over the folds that ran), the paper's row beside it, and a paired test of
each setting against the paper's chosen one.

The paired test: over the common folds' held-out test F1 where there are >= 2 (Wilcoxon
signed-rank with >= 6, else the paired t-test, as for the variants); with one fold, McNemar's
exact test on the held-out test texts (the same texts for every setting), from each
cell's ``test_predictions.parquet``, or an experiment's ``data/eval/fold_<i>/predictions.parquet``
read from DVC's cache at its revision. Fine-tuned and frozen-encoder (``train.freeze_encoder``) runs get
separate tables: a frozen encoder is not the paper's model.
"""

from __future__ import annotations

import logging
from collections.abc import Callable

import numpy as np

from lttw.experiments.cell_folder import PART, Run, read_predictions
from lttw.experiments.dvc_experiments import dvc_predictions
from lttw.experiments.grids import Grid
from lttw.reporting.report import DATASET_NAMES
from lttw.reporting.stats import mcnemar, paired_test, pct

log = logging.getLogger(__name__)

#: (run, fold) -> the held-out test sample's (labels, predictions), or None
Predictions = Callable[[Run, int], "tuple[np.ndarray, np.ndarray] | None"]


def cell_predictions(run: Run, fold: int):
    """A cell's (``experiments.cells``) held-out labels and predictions of ``fold`` where the
    run was read from a cell folder, else ``dvc_predictions``."""
    return read_predictions(run, fold) or dvc_predictions(run, fold)


def compare(reference: Run, other: Run, predictions: Predictions) -> dict:
    """``paired_test`` over common folds, or McNemar on the one common fold's test texts."""
    common = sorted(set(reference.folds) & set(other.folds))
    if len(common) != 1:
        return paired_test(other, reference)  # delta: other minus reference
    fold = common[0]
    delta = other.folds[fold][PART]["f1_macro"] - reference.folds[fold][PART]["f1_macro"]
    ref, oth = predictions(reference, fold), predictions(other, fold)
    if ref is None or oth is None:
        return {
            "n": 1,
            "delta": delta,
            "test": None,
            "p": None,
            "why": "n/a (one fold; predictions not readable)",
        }
    return {"n": 1, "delta": delta, **mcnemar(ref, oth)}


def _datasets(rows: dict[str, Run | None]) -> str:
    names = sorted(
        {DATASET_NAMES.get(run.dataset, run.dataset) for run in rows.values() if run is not None}
    )
    return ", ".join(names)


def _paper(values: tuple[float, float, float] | None) -> str:
    return " / ".join(f"{v:.2f}" for v in values) if values else "–"


def sweep_table(
    grid: Grid, frozen: bool, rows: dict[str, Run | None], predictions: Predictions
) -> list[str]:
    mode = (
        "frozen encoder (`train.freeze_encoder`: only the new layers trained; not the "
        "paper's model)"
        if frozen
        else "fine-tuned encoder"
    )
    chosen = grid.cell(str(grid.reference))
    reference = rows.get(chosen.key)
    pattern = f"{chosen.name.removesuffix(chosen.key)}KEY" + ("-frozen" if frozen else "")
    lines = [
        "",
        f"### {grid.title or grid.name}: {mode}",
        "",
        f"Cells `{pattern}` on {_datasets(rows)}; paired test "
        f"against {grid.column} = {chosen.label} (the paper's choice), two-sided.",
        "",
        f"| {grid.column} | folds | P | R | F1 | paper P / R / F1 | ΔF1 (points) | test | p-value |",
        "| --- | --- | --- | --- | --- | --- | --- | --- | --- |",
    ]
    for cell in grid.cells:
        run = rows.get(cell.key)
        paper = _paper(cell.paper)
        if run is None:
            lines.append(f"| {cell.label} | not run | | | | {paper} | | | |")
            continue
        cells = [
            str(len(run.folds)),
            pct(run.values("precision_macro")),
            pct(run.values("recall_macro")),
            pct(run.values("f1_macro")),
            paper,
        ]
        if cell.key == chosen.key:
            cells += ["", "reference", ""]
        elif reference is None:
            cells += ["", f"n/a ({chosen.label} not run)", ""]
        else:
            t = compare(reference, run, predictions)
            cells += [
                f"{100 * t['delta']:+.2f}" if "delta" in t else "",
                t["test"] or t["why"],
                f"{t['p']:.3g}" if t["p"] is not None else "",
            ]
        lines.append(f"| {cell.label} | " + " | ".join(cells) + " |")
    return lines


def sweep_sections(
    grids: list[Grid], runs: list[Run], predictions: Predictions = cell_predictions
) -> list[str]:
    """Markdown lines of every sweep grid with at least one run (``runs``: cells and
    experiments, matched by name; none: no lines)."""
    by_name: dict[str, Run] = {}
    for run in runs:
        if run.name:
            by_name.setdefault(run.name, run)
    lines: list[str] = []
    for grid in (g for g in grids if g.is_sweep):
        for frozen, view in ((False, grid), (True, grid.frozen())):
            rows = {c.key: by_name.get(c.name) for c in view.cells}
            if any(rows.values()):
                lines += sweep_table(grid, frozen, rows, predictions)
    if lines:
        lines = [
            "",
            "## Sweeps (paper section 4.3)",
            "",
            "Macro P / R / F1 in % on the held-out test sample, mean ± sample std over "
            "the folds that ran (one fold: no ±), from the sweep grids' cells "
            "(`lttw exp run table7`). The paired test with one fold is McNemar's exact test "
            "on the held-out test texts; its discordant counts are the texts only the "
            "reference / only the setting classifies right.",
        ] + lines
    return lines
