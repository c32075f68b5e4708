"""The paper's reported numbers per dataset and model (Tables 4 and 5), as a grid file holds
them in its ``paper`` block (``experiments/paper.yaml``)::

    paper:
      ag_news:
        LTTW: [93.73, 93.71, 93.70, 109.87]   # P / R / F1 in %, then seconds per epoch
        BERT: [92.60, 92.58, 92.58]           # no time reported

``lttw report`` shows each row beside the run of the same model (``report.VARIANTS`` maps a
variant to the paper's name for it).
"""

from __future__ import annotations

from typing import Any

from lttw.errors import UserError

#: the paper's P / R / F1 (%) and time per epoch (s; None where it reports none)
PaperRow = tuple[float, float, float, float | None]
#: dataset -> the paper's model name -> its row; datasets in the paper's order
PaperTables = dict[str, dict[str, PaperRow]]


def _row(value: Any, where: str) -> PaperRow:
    if not (
        isinstance(value, list)
        and len(value) in (3, 4)
        and all(isinstance(v, (int, float)) and not isinstance(v, bool) for v in value)
        and all(0 <= v <= 100 for v in value[:3])
        and (len(value) == 3 or value[3] > 0)
    ):
        raise UserError(
            f"{where} must be [P, R, F1] in % or [P, R, F1, seconds per epoch], got {value!r}"
        )
    seconds = float(value[3]) if len(value) == 4 else None
    return (float(value[0]), float(value[1]), float(value[2]), seconds)


def paper_tables(value: Any, where: str) -> PaperTables:
    """A grid file's ``paper`` block, checked: dataset -> model name -> row (``_row``)."""
    if value is None:
        return {}
    if not isinstance(value, dict):
        raise UserError(f"{where} must map datasets to models, got {type(value).__name__}")
    tables: PaperTables = {}
    for dataset, models in value.items():
        if not isinstance(models, dict) or not models:
            raise UserError(f"{where}.{dataset} must map model names to [P, R, F1(, s)]")
        tables[str(dataset)] = {
            str(model): _row(row, f"{where}.{dataset}.{model}") for model, row in models.items()
        }
    return tables


def merge_tables(tables: list[PaperTables]) -> PaperTables:
    """One table per dataset from several grids' blocks; a row seen twice keeps its first."""
    merged: PaperTables = {}
    for table in tables:
        for dataset, rows in table.items():
            into = merged.setdefault(dataset, {})
            for model, row in rows.items():
                into.setdefault(model, row)
    return merged
