"""Per-label decision thresholds of a multi-label classifier, tuned on the validation part
or, with ``train.threshold_cv``, by cross-validation of the rows it trains on.

Each class's threshold maximises that class's F1 on sigmoid probabilities over the grid
0.05, 0.10, ..., 0.95 (ties: the threshold nearest 0.5), as scikit-learn's
``TunedThresholdClassifierCV`` does per binary problem: the validation part's probabilities
(``tune_thresholds``), or out-of-fold ones (``cross_validated_thresholds``). One global
threshold, tuned the same way on the micro F1 of every class at once, is the fallback: a
class without positives keeps it (its F1 is 0 at every threshold), and so does the
``Calibration``'s ``threshold`` for a class without one of its own. Saved in the model
folder as ``calibration.json`` (``models.calibration``).
"""

from __future__ import annotations

import numpy as np

from lttw.models.calibration import Calibration

#: the candidate thresholds: 0.05 to 0.95 in steps of 0.05
GRID = np.round(np.arange(1, 20) * 0.05, 2)


def _best(f1: np.ndarray, grid: np.ndarray) -> float:
    """The grid threshold of the highest F1 (ties: the one nearest 0.5)."""
    best = np.flatnonzero(f1 >= f1.max() - 1e-12)
    return float(grid[best[np.argmin(np.abs(grid[best] - 0.5))]])


def _f1(tp: np.ndarray, pred: np.ndarray, true: np.ndarray) -> np.ndarray:
    denominator = (true + pred).astype(np.float64)
    return np.divide(2.0 * tp, denominator, out=np.zeros_like(denominator), where=denominator > 0)


def tune_thresholds(
    val_probs: np.ndarray, val_targets: np.ndarray, grid: np.ndarray = GRID
) -> Calibration:
    """The multi-label ``Calibration`` (sigmoid, per-class thresholds, a global fallback) of
    the validation part's ``(n, C)`` probabilities and ``(n, C)`` 0/1 targets; an empty part
    gives the defaults (0.5 for every class)."""
    probs = np.asarray(val_probs, np.float64)
    targets = np.asarray(val_targets, np.int64)
    if probs.shape != targets.shape or probs.ndim != 2:
        raise ValueError(f"probabilities {probs.shape} and targets {targets.shape} differ")
    if not len(probs):
        return Calibration(multi_label=True)
    grid = np.asarray(grid, np.float64)
    positive = targets == 1
    tp = np.empty((len(grid), probs.shape[1]), np.int64)  # (grid, C), one (n, C) at a time
    pred = np.empty_like(tp)
    for g, t in enumerate(grid):
        chosen = probs >= t
        tp[g], pred[g] = (chosen & positive).sum(axis=0), chosen.sum(axis=0)
    true = targets.sum(axis=0)  # (C,)
    per_class = _f1(tp, pred, np.broadcast_to(true, tp.shape))
    micro = _f1(tp.sum(axis=1), pred.sum(axis=1), np.full(len(grid), true.sum()))
    fallback = _best(micro, grid)
    thresholds = [
        _best(per_class[:, c], grid) if true[c] > 0 else fallback for c in range(probs.shape[1])
    ]
    return Calibration(multi_label=True, thresholds=tuple(thresholds), threshold=fallback)


def validation_calibration(targets) -> Calibration | None:
    """What turns a classifier's scores into validation probabilities: the sigmoid for
    multi-label ``targets`` (2-D), None (the model's own softmax) for class ids."""
    return Calibration(multi_label=True) if np.ndim(targets) == 2 else None


def cross_validated_thresholds(
    fit, texts: list[str], targets: np.ndarray, n_splits: int, random_state: int, n_jobs: int
) -> Calibration:
    """``tune_thresholds`` on out-of-fold probabilities: the rows split into ``n_splits``
    folds by iterative stratification (``lttw.data.folds.assign_folds``), each fold's
    ``(n_fold, C)`` probabilities from ``fit(texts, targets)`` (a model with ``predict_proba``)
    on the other folds, ``n_jobs`` fits at a time (threads: scikit-learn's solvers and sparse
    products release the GIL for most of a fit; 0 or less: one per core). Each class's
    threshold is then chosen on every row, not only a validation part's: scikit-learn's
    ``TunedThresholdClassifierCV`` with ``refit=True``, per class."""
    import os
    from concurrent.futures import ThreadPoolExecutor

    from lttw.data.folds import assign_folds

    targets = np.asarray(targets, np.int64)
    fold_ids = assign_folds(
        targets,
        n_splits,
        random_state,
        setting="train.threshold_cv",
        advice="lower train.threshold_cv (it splits the rows the model trains on), or set "
        "it to 0 (thresholds tuned on the validation part)",
    )
    workers = min(n_splits, n_jobs if n_jobs > 0 else os.cpu_count() or 1)
    with ThreadPoolExecutor(max_workers=workers) as pool:
        done = list(
            pool.map(lambda k: _held_out_probs(fit, texts, targets, fold_ids, k), range(n_splits))
        )
    probs = np.zeros(targets.shape, np.float64)  # (n, C)
    for k, fold_probs in enumerate(done):
        probs[fold_ids == k] = fold_probs
    return tune_thresholds(probs, targets)


def _held_out_probs(fit, texts, targets, fold_ids, k) -> np.ndarray:
    rest, held = np.flatnonzero(fold_ids != k), np.flatnonzero(fold_ids == k)
    model = fit([texts[i] for i in rest], targets[rest])
    return model.predict_proba([texts[i] for i in held])
