"""Disjoint, class-balanced random samples train / test / predict (paper 3.1).

Each sample has ``size // p`` rows per class. With ``data.use_splits`` and a dataset that has
both a train and a test split, train is drawn from the train split and test + predict from the
test split; otherwise all three come from the pooled rows. Within a pool every class's rows are
permuted once and consecutive chunks go to the samples, so samples never share a row.
All randomness comes from one ``numpy.random.default_rng(seed)``, used in a fixed order.
"""

from __future__ import annotations

import logging
import os

import numpy as np
import pandas as pd

from lttw.data.datasets import Dataset
from lttw.errors import DataError
from lttw.layout import SPLITS
from lttw.settings import DataSettings

log = logging.getLogger("lttw.sampling")


def per_class_sizes(settings: DataSettings, n_classes: int) -> dict[str, int]:
    """Rows per class of each sample; the log says when a size is not divisible by p."""
    sizes = {"train": settings.train_size, "test": settings.test_size,
             "predict": settings.predict_size}
    if settings.train_size < n_classes:
        raise DataError(f"data.train_size={settings.train_size} is smaller than the number of "
                        f"classes ({n_classes}); a balanced sample needs at least one per class")
    out = {}
    for split, size in sizes.items():
        if 0 < size < n_classes:
            raise DataError(f"data.{split}_size={size} is smaller than the number of classes "
                            f"({n_classes}): it would draw no rows; use 0 or at least "
                            f"{n_classes}")
        out[split] = size // n_classes
        if size % n_classes:
            log.warning("data.%s_size=%d is not divisible by %d classes: using %d per class = "
                        "%d rows", split, size, n_classes, out[split], out[split] * n_classes)
    return out


def sample_pools(dataset: Dataset, use_splits: bool) -> dict[str, str | None]:
    """Which split each sample is drawn from (None: all rows pooled)."""
    present = set(dataset.splits.tolist())
    if use_splits and {"train", "test"} <= present:
        return {"train": "train", "test": "test", "predict": "test"}
    if use_splits:
        log.info("%s has no separate train and test splits (has %s): pooling all rows",
                 dataset.source, ", ".join(sorted(present)))
    return {split: None for split in SPLITS}


def _check_fit(dataset: Dataset, counts: np.ndarray, need: dict[str, int],
               pool: str | None) -> None:
    if (counts >= sum(need.values())).all():
        return
    names = ", ".join(f"{c} {n}" for c, n in zip(dataset.classes, counts.tolist()))
    params = " + ".join(f"data.{s}_size" for s in need)
    wanted = " + ".join(str(n * len(counts)) for n in need.values())
    where = f"the {pool} split" if pool else "all rows (pooled)"
    largest = int(counts.min())
    raise DataError(f"{params} = {wanted} needs {sum(need.values())} rows per class from {where} "
                    f"of {dataset.source}, but the classes have {names}; the largest balanced "
                    f"{params} is {largest * len(counts)} ({largest} per class)")


def balanced_indices(dataset: Dataset, per_class: dict[str, int], pools: dict[str, str | None],
                     rng: np.random.Generator) -> dict[str, np.ndarray]:
    """Row indices into ``dataset`` of each sample: disjoint, balanced, shuffled."""
    p = len(dataset.classes)
    chosen: dict[str, list[np.ndarray]] = {split: [] for split in SPLITS}
    for pool in dict.fromkeys(pools.values()):  # pools in first-use order
        splits = [s for s in SPLITS if pools[s] == pool]
        need = {s: per_class[s] for s in splits}
        rows = dataset.rows_of(pool)
        labels = dataset.labels[rows]
        _check_fit(dataset, np.bincount(labels, minlength=p), need, pool)
        for c in range(p):
            permuted = rng.permutation(rows[labels == c])
            start = 0
            for split in splits:
                chosen[split].append(permuted[start:start + need[split]])
                start += need[split]
    return {split: rng.permutation(np.concatenate(parts)).astype(np.int64)
            for split, parts in chosen.items()}


def sample_frame(dataset: Dataset, rows: np.ndarray) -> pd.DataFrame:
    """Columns text (str), label (int64), source_row (int64) for the given dataset rows."""
    return pd.DataFrame({"text": pd.array(dataset.texts[rows].tolist(), dtype="str"),
                         "label": dataset.labels[rows].astype(np.int64),
                         "source_row": dataset.source_rows[rows].astype(np.int64)})


def count_duplicates(train_texts: pd.Series, other_texts: pd.Series) -> int:
    """How many of ``other_texts`` also occur (verbatim) among ``train_texts``."""
    return int(other_texts.isin(set(train_texts)).sum())


def source_in_root(source: str, root: str) -> str:
    """``source`` relative to ``data.root`` when it lies under it (hub URLs as they are), so
    that the same files reached through another spelling of the root (an absolute path in a
    queued experiment) give a byte-identical sample and DVC reruns nothing downstream."""
    if "://" in source:
        return source
    rel = os.path.relpath(os.path.abspath(source), os.path.abspath(root))
    return source if rel == ".." or rel.startswith(".." + os.sep) else rel


def draw_samples(dataset: Dataset, settings: DataSettings,
                 seed: int) -> tuple[dict[str, pd.DataFrame], dict]:
    """The three samples as frames, and the ``labels.json`` record describing them."""
    per_class = per_class_sizes(settings, len(dataset.classes))
    pools = sample_pools(dataset, settings.use_splits)
    rows = balanced_indices(dataset, per_class, pools, np.random.default_rng(seed))
    frames = {split: sample_frame(dataset, rows[split]) for split in SPLITS}
    duplicates = {split: count_duplicates(frames["train"]["text"], frames[split]["text"])
                  for split in ("test", "predict")}
    for split, n in duplicates.items():
        if n:
            log.warning("%d of the %d %s texts also occur verbatim in the train sample",
                        n, len(frames[split]), split)
    for split in SPLITS:
        log.info("%s: %d rows (%d per class) from %s", split, len(frames[split]),
                 per_class[split], f"the {pools[split]} split" if pools[split] else "all rows")
    info = {"dataset": dataset.name, "classes": dataset.classes,
            "label_values": dataset.label_values,
            "sizes": {split: len(frame) for split, frame in frames.items()},
            "per_class": per_class, "pools": pools, "seed": seed,
            "source": source_in_root(dataset.source, settings.root),
            "dropped_empty": dataset.dropped_empty,
            "dropped_unlabelled": dataset.dropped_unlabelled,
            "duplicate_texts": dataset.duplicate_texts,
            "conflicting_texts": dataset.conflicting_texts,
            "duplicates_test_in_train": sum(duplicates.values()),
            "duplicates_in_train": duplicates}
    return frames, info
