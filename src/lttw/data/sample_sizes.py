"""How many rows of each class every sample takes (``data.sampling``), and whether the sizes fit
the dataset: every unmet size in one message, with a set of sizes that fits together.

* ``balanced`` (the paper): ``size // p`` rows of every class;
* ``stratified``: ``size`` rows in the pool's class proportions (largest-remainder rounding, at
  least one row of every class when the size allows);
* ``all``: every row. A pool that serves several samples (the test split: test and predict;
  all rows when pooled) is divided per class in the ratio of their sizes; the sizes' values are
  otherwise ignored.

A *pool* is the set of rows samples are drawn from: the dataset's train or test split (with
``data.use_splits``) or all rows. Samples from one pool never share a row.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass

import numpy as np

from lttw.data.datasets import Dataset
from lttw.data.label_sets import label_counts
from lttw.errors import DataError
from lttw.layout import SPLITS
from lttw.settings import DataSettings

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class Pool:
    # the dataset split the rows come from ("train+dev": several, ``Dataset.rows_of``; None:
    # all rows pooled)
    source: str | None
    splits: tuple[str, ...]  # the samples drawn from it, in drawing order
    counts: np.ndarray  # rows per class, shape (p,) (multi-label: rows having the class)
    n_rows: int = -1  # rows in the pool (-1: the sum of ``counts``, single-label)

    @property
    def rows(self) -> int:
        """Rows in the pool (below the sum of ``counts`` for multi-label data)."""
        return int(self.counts.sum()) if self.n_rows < 0 else self.n_rows

    @property
    def where(self) -> str:
        if not self.source:
            return "all rows (pooled)"
        return f"the {self.source} split{'s' if '+' in self.source else ''}"


def sample_pools(
    dataset: Dataset, use_splits: bool, train_splits: tuple[str, ...] = ("train",)
) -> dict[str, str | None]:
    """Which split each sample is drawn from (None: all rows pooled); the train sample from
    every split of ``train_splits`` (``data.train_splits``), named ``"train+dev"``."""
    present = set(dataset.splits.tolist())
    if use_splits and {"train", "test"} <= present:
        missing = [s for s in train_splits if s not in present or s == "test"]
        if missing:
            raise DataError(
                f"{dataset.source}: data.train_splits names {', '.join(missing)}, which "
                f"{'is' if len(missing) == 1 else 'are'} not a split to train on; the dataset's "
                f"splits: {', '.join(sorted(present))} (test is the held-out one)"
            )
        return {"train": "+".join(dict.fromkeys(train_splits)), "test": "test", "predict": "test"}
    if use_splits:
        log.info(
            "%s has no separate train and test splits (has %s): pooling all rows",
            dataset.source,
            ", ".join(sorted(present)),
        )
    return {split: None for split in SPLITS}


def unused_splits_note(dataset: Dataset, settings: DataSettings) -> str | None:
    """A note naming the splits no sample is drawn from (e.g. a dev split beside train and
    test), with their rows and how to train on them; None when every split is used."""
    pools = sample_pools(dataset, settings.use_splits, tuple(settings.train_splits))
    used = {s for source in pools.values() if source for s in source.split("+")}
    if not used:  # all rows pooled
        return None
    unused = sorted(set(dataset.splits.tolist()) - used)
    if not unused:
        return None
    rows = ", ".join(f"{s} ({dataset.rows_of(s).size} rows)" for s in unused)
    wanted = ", ".join([*settings.train_splits, *unused])
    return (
        f"no sample is drawn from the split{'s' if len(unused) > 1 else ''} {rows}; "
        f"data.train_splits=[{wanted}] trains on {'them' if len(unused) > 1 else 'it'} too"
    )


def pools_of(dataset: Dataset, settings: DataSettings) -> list[Pool]:
    """The pools in first-use order (the order rows are drawn in)."""
    assignment = sample_pools(dataset, settings.use_splits, tuple(settings.train_splits))
    p = len(dataset.classes)
    return [
        Pool(
            source,
            tuple(s for s in SPLITS if assignment[s] == source),
            label_counts(dataset.labels[dataset.rows_of(source)], p),
            dataset.rows_of(source).size,
        )
        for source in dict.fromkeys(assignment.values())
    ]


def sizes_of(settings: DataSettings) -> dict[str, int]:
    return {
        "train": settings.train_size,
        "test": settings.test_size,
        "predict": settings.predict_size,
    }


def apportion(total: int, weights, room, minimum: int = 0) -> np.ndarray:
    """Integers proportional to ``weights`` (largest remainder, ties to the lower index), each
    at most its ``room``, summing to ``min(total, sum(room))``; raised to ``minimum`` (taken
    from the largest) for every entry with a positive weight when ``total`` allows it."""
    weights = np.asarray(weights, dtype=np.float64)
    room = np.asarray(room, dtype=np.int64)
    out = np.zeros_like(room)
    left = min(int(total), int(room.sum()))
    while left > 0:
        open_ = (room > out) & (weights > 0)
        if not open_.any():
            break
        exact = np.where(open_, left * weights / weights[open_].sum(), 0.0)
        add = np.minimum(np.floor(exact).astype(np.int64), room - out)
        extra = [
            i
            for i in np.argsort(-(exact - np.floor(exact)), kind="stable")
            if open_[i] and room[i] > out[i] + add[i]
        ][: left - int(add.sum())]
        add[extra] += 1  # the largest remainders
        out = out + add
        left -= int(add.sum())
    floor = np.minimum(room, minimum) * (weights > 0)
    if floor.sum() <= out.sum():
        for i in np.flatnonzero(out < floor):
            while out[i] < floor[i]:
                out[int(np.argmax(out - floor))] -= 1
                out[i] += 1
    return out


def pool_quotas(pool: Pool, sizes: dict[str, int], sampling: str) -> dict[str, np.ndarray]:
    """Rows per class (shape (p,)) that each sample of ``pool`` takes; balanced quotas may
    exceed the pool (see ``shortfalls``), the others never do."""
    p = pool.counts.size
    if sampling == "balanced":
        return {s: np.full(p, sizes[s] // p, dtype=np.int64) for s in pool.splits}
    if sampling == "stratified":
        out, used = {}, np.zeros(p, dtype=np.int64)
        for s in pool.splits:
            out[s] = apportion(sizes[s], pool.counts, pool.counts - used, minimum=1)
            used += out[s]
        return out
    ratio = np.array([sizes[s] for s in pool.splits], dtype=np.float64)
    if not ratio.any():
        ratio[0] = 1.0
    per_class = [apportion(int(n), ratio, np.full(ratio.size, n)) for n in pool.counts]
    return {
        s: np.array([q[i] for q in per_class], dtype=np.int64) for i, s in enumerate(pool.splits)
    }


def check_minimum_sizes(settings: DataSettings, n_classes: int) -> None:
    """Balanced sampling: a size below the class count would draw no rows at all."""
    if settings.train_size < n_classes:
        raise DataError(
            f"data.train_size={settings.train_size} is smaller than the number of "
            f"classes ({n_classes}); a balanced sample needs at least one per class "
            "(or set data.sampling=stratified)"
        )
    for split, size in sizes_of(settings).items():
        if 0 < size < n_classes:
            raise DataError(
                f"data.{split}_size={size} is smaller than the number of classes "
                f"({n_classes}): it would draw no rows; use 0 or at least "
                f"{n_classes} (or set data.sampling=stratified)"
            )


def shortfalls(pools: list[Pool], sizes: dict[str, int], sampling: str) -> list[Pool]:
    """The pools whose samples cannot all be drawn at these sizes."""

    def short(pool: Pool) -> bool:
        if sampling == "balanced":
            p = pool.counts.size
            return int(pool.counts.min()) < sum(sizes[s] // p for s in pool.splits)
        if sampling == "stratified":
            return pool.rows < sum(sizes[s] for s in pool.splits)
        return False

    return [pool for pool in pools if short(pool)]


def fitting_sizes(pools: list[Pool], sizes: dict[str, int], sampling: str) -> dict[str, int]:
    """Sizes that fit together: the sizes as set where they fit, else scaled down in proportion
    (train >= 1 row per class, a size that was set >= 1 per class where the rows allow)."""
    out = dict(sizes)
    for pool in shortfalls(pools, sizes, sampling):
        p = pool.counts.size
        if sampling == "balanced":
            want = np.array([sizes[s] // p for s in pool.splits])
            fit = apportion(int(pool.counts.min()), want, want, minimum=1)
            if "train" in pool.splits and fit[0] == 0 and pool.counts.min() > 0:
                fit = np.concatenate(
                    [[1], apportion(int(pool.counts.min()) - 1, want[1:], want[1:])]
                )
            out.update({s: int(n) * p for s, n in zip(pool.splits, fit)})
        else:
            want = np.array([sizes[s] for s in pool.splits])
            fit = apportion(pool.rows, want, want, minimum=p)
            out.update({s: int(n) for s, n in zip(pool.splits, fit)})
    return out


def _params(splits: tuple[str, ...], values: list[int]) -> str:
    names = " + ".join(f"data.{s}_size" for s in splits)
    return (
        f"{names} = {' + '.join(map(str, values))}" if len(splits) > 1 else f"{names}={values[0]}"
    )


def _pool_problem(pool: Pool, sizes: dict[str, int], sampling: str, classes: list[str]) -> str:
    wanted = _params(pool.splits, [sizes[s] for s in pool.splits])
    verb = "need" if len(pool.splits) > 1 else "needs"
    if sampling == "stratified":
        return (
            f"{wanted} {verb} {sum(sizes[s] for s in pool.splits)} rows from {pool.where}, "
            f"which has {pool.rows}"
        )
    p = pool.counts.size
    per_class = [sizes[s] // p for s in pool.splits]
    need = " + ".join(map(str, per_class)) + (f" = {sum(per_class)}" if len(per_class) > 1 else "")
    rarest = int(np.argmin(pool.counts))
    listed = (
        f" (the classes have {', '.join(f'{c} {n}' for c, n in zip(classes, pool.counts))})"
        if p <= 12
        else ""
    )
    return (
        f"{wanted} {verb} {need} rows per class from {pool.where}, whose rarest class "
        f"{classes[rarest]} has {int(pool.counts[rarest])}{listed}"
    )


def size_problem(dataset: Dataset, settings: DataSettings) -> str | None:
    """One message naming every size that cannot be met and a set of sizes that fits together
    (None when the sizes fit)."""
    sampling, sizes = settings.sampling, sizes_of(settings)
    pools = pools_of(dataset, settings)
    short = shortfalls(pools, sizes, sampling)
    if not short:
        return None
    parts = [_pool_problem(pool, sizes, sampling, dataset.classes) for pool in short]
    fit = fitting_sizes(pools, sizes, sampling)
    advice = "Sizes that fit together: " + ", ".join(f"data.{s}_size={fit[s]}" for s in SPLITS)
    if fit["train"] < (len(dataset.classes) if sampling == "balanced" else 1):
        advice = f"No {sampling} sizes fit: a class has no rows in {short[0].where}"
    other = ["data.sampling=all takes every row"]
    if sampling == "balanced":
        fits = (
            "fits the sizes as set"
            if not shortfalls(pools, sizes, "stratified")
            else "keeps the class proportions"
        )
        other.insert(0, f"data.sampling=stratified {fits}")
    return (
        f"{'; '.join(parts)} ({dataset.source}, data.sampling={sampling}). {advice}; or "
        f"{' or '.join(other)}"
    )
