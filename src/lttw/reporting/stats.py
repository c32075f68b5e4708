"""The report's statistics: the paired test of two runs over their common folds' held-out test
F1 (Wilcoxon signed-rank with >= 6 pairs, else the paired t-test), McNemar's exact test of two
classifiers' predictions of the same texts (one fold's, or pooled over folds), and the
``mean ± std`` percentage the tables print."""

from __future__ import annotations

import math
from typing import Any

import numpy as np
import pandas as pd

from lttw.experiments.cell_folder import PART, Run

WILCOXON_MIN = 6


def paired_test(reference: Run, other: Run) -> dict:
    """LTTW vs ``other`` on held-out test F1 over their common folds: Wilcoxon signed-rank
    with >= 6 pairs, else the paired t-test."""
    common = sorted(set(reference.folds) & set(other.folds))
    if len(common) < 2:
        return {"n": len(common), "test": None, "p": None, "why": "n/a (needs >= 2 common folds)"}
    a = np.array([reference.folds[f][PART]["f1_macro"] for f in common])
    b = np.array([other.folds[f][PART]["f1_macro"] for f in common])
    out: dict[str, Any] = {"n": len(common), "delta": float(np.mean(a - b)), "why": None}
    if np.allclose(a, b):
        return {**out, "test": None, "p": None, "why": "n/a (identical per-fold F1)"}
    from scipy.stats import ttest_rel, wilcoxon

    if len(common) >= WILCOXON_MIN:
        out.update(test="Wilcoxon signed-rank", p=float(wilcoxon(a, b).pvalue))
    else:
        out.update(test="paired t-test", p=float(ttest_rel(a, b).pvalue))
    if math.isnan(out["p"]):
        out.update(test=None, p=None, why="n/a (zero variance of the differences)")
    return out


def mcnemar(reference: tuple[np.ndarray, np.ndarray], other: tuple[np.ndarray, np.ndarray]) -> dict:
    """McNemar's exact test (two-sided binomial on the discordant texts) of two classifiers'
    predictions of the same labelled texts."""
    (y, a), (y2, b) = reference, other
    if len(y) != len(y2) or not np.array_equal(y, y2):
        return {"test": None, "p": None, "why": "n/a (different test texts)"}
    only_ref = int(np.sum((a == y) & (b != y)))
    only_other = int(np.sum((a != y) & (b == y)))
    if only_ref + only_other == 0:
        return {"test": None, "p": None, "why": "n/a (the same texts right)"}
    from scipy.stats import binomtest

    p = binomtest(only_ref, only_ref + only_other, 0.5).pvalue
    return {
        "test": f"McNemar exact, discordant {only_ref} / {only_other}",
        "p": float(p),
        "why": None,
        "only_ref": only_ref,
        "only_other": only_other,
    }


def pooled_mcnemar(reference: pd.DataFrame, other: pd.DataFrame) -> dict:
    """McNemar's exact test (``mcnemar``) of two cells' held-out predictions,
    paired on (fold, row) and pooled over their common folds."""
    pairs = reference.merge(other, on=["fold", "row"], suffixes=("_ref", "_other"))
    if pairs.empty:
        return {"test": None, "p": None, "why": "n/a (no common held-out texts)"}
    y = pairs["label_ref"].to_numpy()
    return mcnemar(
        (y, pairs["pred_ref"].to_numpy()),
        (pairs["label_other"].to_numpy(), pairs["pred_other"].to_numpy()),
    )


def pct(values: np.ndarray) -> str:
    if not values.size:
        return "n/a"
    mean = 100 * values.mean()
    return f"{mean:.2f} ± {100 * values.std(ddof=1):.2f}" if values.size > 1 else f"{mean:.2f}"
