"""The table of ``lttw predict --out``: one row per text, the input's kept columns
(``with_kept``), its answer (``AnswerRule``) and every class's probability (columns: see
``prediction_frame``)."""

from __future__ import annotations

import numpy as np
import pandas as pd

from lttw.errors import DataError
from lttw.inference.answers import AnswerRule

#: a multi-label prediction's column of class-name lists, and how CSV joins a list
LIST_COLUMN, LIST_SEPARATOR = "labels", "|"
#: ``--keep``'s default: every column of the input but the text column
ALL_COLUMNS = None


def prediction_frame(
    texts: list[str],
    probs: np.ndarray,
    classes: list[str],
    with_text: bool = True,
    rule: AnswerRule | None = None,
) -> pd.DataFrame:
    """Columns [text], label, prob (single-label: the chosen class, empty where below
    ``rule.min_prob``, and the most probable class's probability) or labels (multi-label:
    a list of class names, most probable first), [top_i, top_i_prob for i in 1..top_k],
    prob_<class> for each text (probs: (n, p) float32)."""
    rule = rule or AnswerRule()
    probs = np.asarray(probs, dtype=np.float32).reshape(len(texts), len(classes))
    chosen = rule.chosen(probs)
    columns = {"text": pd.array(texts, dtype="str")} if with_text else {}
    if rule.multi_label:
        names = [[classes[i] for i in ids] for ids in chosen]
        columns[LIST_COLUMN] = pd.Series(names, dtype=object)
    else:
        labels = [classes[ids[0]] if ids else None for ids in chosen]
        columns["label"] = pd.array(labels, dtype="str")
        columns["prob"] = probs.max(axis=1) if len(texts) else np.zeros(0, np.float32)
    top = rule.top(probs)
    for k in range(rule.top_k or 0):
        ids = [row[k] if k < len(row) else None for row in top or []]
        columns[f"top_{k + 1}"] = pd.array(
            [None if i is None else classes[i] for i in ids], dtype="str"
        )
        columns[f"top_{k + 1}_prob"] = np.array(
            [np.nan if i is None else probs[r, i] for r, i in enumerate(ids)], np.float32
        )
    columns.update({f"prob_{c}": probs[:, i] for i, c in enumerate(classes)})
    return pd.DataFrame(columns)


def kept_columns(columns: list[str], text: str, keep: list[str] | None, where: str) -> list[str]:
    """The columns written beside the predictions: ``keep`` (each must exist), or with
    ``ALL_COLUMNS`` every column but ``text``."""
    if keep is ALL_COLUMNS:
        return [c for c in columns if c != text]
    missing = [c for c in keep if c not in columns]
    if missing:
        raise DataError(
            f"{where}: no column {', '.join(map(repr, missing))} to --keep (columns: "
            f"{', '.join(columns)})"
        )
    return [c for c in dict.fromkeys(keep) if c != text]


def with_kept(frame: pd.DataFrame, extra: pd.DataFrame | None) -> pd.DataFrame:
    """``extra`` (the input's kept columns) before the prediction ``frame``; a kept column
    named like a prediction column as ``input_<name>``."""
    if extra is None or not len(extra.columns):
        return frame
    taken = set(frame.columns)
    extra = extra.rename(columns=lambda c: f"input_{c}" if c in taken else c)
    return pd.concat([extra.reset_index(drop=True), frame], axis=1)
