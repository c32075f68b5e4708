"""Samples of multi-label data: which rows train / test / predict take from each pool when a
text has a set of classes (``lttw.data.label_sets``).

A class quota per sample cannot be met when rows carry several classes, so:

* ``stratified``: each sample takes its size in rows, the label proportions of its pool kept by
  iterative stratification (Sechidis et al. 2011, the ``iterative-stratification`` package's
  ``IterativeStratification``, the algorithm behind its ``MultilabelStratifiedKFold``), then
  made exact by moving random surplus rows to the unused rest and drawing any shortfall from it;
* ``all``: every row of the pool, divided among the samples drawn from it in the ratio of their
  sizes by the same stratification;
* ``balanced`` is refused (``refuse_balanced``).
"""

from __future__ import annotations

import numpy as np

from lttw.data.datasets import Dataset
from lttw.data.sample_sizes import Pool, apportion
from lttw.errors import DataError


def refuse_balanced(dataset: Dataset, sampling: str) -> None:
    """``data.sampling=balanced`` on multi-label data: one clear ``DataError``."""
    if dataset.multi_label and sampling == "balanced":
        raise DataError(
            f"{dataset.source}: data.sampling=balanced cannot balance multi-label data (a text "
            "has several classes); set data.sampling to stratified (label proportions kept) "
            "or all"
        )


def pool_sizes(pool: Pool, sizes: dict[str, int], sampling: str) -> dict[str, int]:
    """Rows each sample of ``pool`` takes: its size (``stratified``), or the pool's rows in
    the ratio of the sizes (``all``)."""
    if sampling == "stratified":
        return {s: sizes[s] for s in pool.splits}
    ratio = np.array([sizes[s] for s in pool.splits], dtype=np.float64)
    if not ratio.any():
        ratio[0] = 1.0
    shares = apportion(pool.rows, ratio, np.full(ratio.size, pool.rows))
    return {s: int(n) for s, n in zip(pool.splits, shares)}


def stratified_parts(
    indicator: np.ndarray, sizes: list[int], rng: np.random.Generator
) -> list[np.ndarray]:
    """Positions (rows of ``indicator``, shuffled) of disjoint parts of exactly ``sizes[j]``
    rows (their sum at most the rows), each in the label proportions of the whole."""
    from iterstrat.ml_stratifiers import IterativeStratification

    n = indicator.shape[0]
    if sum(sizes) > n:
        raise ValueError(f"sizes {sizes} need {sum(sizes)} rows of {n}")
    wanted = [j for j, size in enumerate(sizes) if size > 0]
    targets = [sizes[j] for j in wanted] + ([n - sum(sizes)] if sum(sizes) < n else [])
    if not wanted:
        return [np.zeros(0, np.int64) for _ in sizes]
    if len(targets) == 1:  # one part takes every row: nothing to stratify
        out = [np.zeros(0, np.int64) for _ in sizes]
        out[wanted[0]] = rng.permutation(n).astype(np.int64)
        return out
    seed = int(rng.integers(2**31 - 1))
    fold_of = IterativeStratification(
        labels=indicator.astype(bool),  # a mask: the package indexes with it
        r=np.asarray(targets, dtype=np.float64) / n,
        random_state=np.random.RandomState(seed),
    )
    parts = [np.flatnonzero(fold_of == k) for k in range(len(wanted))]
    spare = [np.flatnonzero(fold_of == len(wanted))]
    for k, size in enumerate(sizes[j] for j in wanted):  # exact sizes: surplus to the rest
        if parts[k].size > size:
            shuffled = rng.permutation(parts[k])
            parts[k], surplus = np.sort(shuffled[:size]), shuffled[size:]
            spare.append(surplus)
    rest = rng.permutation(np.concatenate(spare))
    for k, size in enumerate(sizes[j] for j in wanted):  # ... and shortfalls from it
        short = size - parts[k].size
        if short > 0:
            parts[k], rest = np.concatenate([parts[k], rest[:short]]), rest[short:]
    out = [np.zeros(0, np.int64) for _ in sizes]
    for k, j in enumerate(wanted):
        out[j] = rng.permutation(parts[k]).astype(np.int64)
    return out


def multi_label_indices(
    dataset: Dataset,
    pools: list[Pool],
    sizes: dict[str, int],
    sampling: str,
    rng: np.random.Generator,
) -> dict[str, np.ndarray]:
    """Row indices into ``dataset`` of each sample (disjoint, shuffled) for multi-label data;
    the sizes must fit their pools (``sample_sizes.size_problem``)."""
    refuse_balanced(dataset, sampling)
    out: dict[str, np.ndarray] = {}
    for pool in pools:
        rows = dataset.rows_of(pool.source)
        wanted = pool_sizes(pool, sizes, sampling)
        parts = stratified_parts(dataset.labels[rows], list(wanted.values()), rng)
        out.update({split: rows[part] for split, part in zip(wanted, parts)})
    return out
