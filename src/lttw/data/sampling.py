"""Disjoint random samples train / test / predict (paper 3.1), drawn as ``data.sampling`` says:
class-balanced (``size // p`` rows per class, the paper), stratified (the class proportions of
the rows drawn from) or all rows; the quotas and the size checks are in ``lttw.data.sample_sizes``.

With ``data.use_splits`` and a dataset that has both a train and a test split, train is drawn
from the train split and test + predict from the test split; otherwise all three come from the
pooled rows. Within a pool every class's rows are permuted once and consecutive chunks go to the
samples, so samples never share a row. All randomness comes from one
``numpy.random.default_rng(seed)``, used in a fixed order.

Multi-label data (``Dataset.multi_label``) is drawn by ``lttw.data.multi_label_sampling``
(iterative stratification; ``balanced`` refused); its samples' ``label`` column is a list of
class ids per text and labels.json says ``"multi_label": true``.
"""

from __future__ import annotations

import logging
import os

import numpy as np
import pandas as pd

from lttw.data.datasets import Dataset
from lttw.data.label_sets import MULTI_LABEL_KEY, label_counts, label_lists
from lttw.data.multi_label_sampling import multi_label_indices, refuse_balanced
from lttw.data.sample_sizes import (
    Pool,
    check_minimum_sizes,
    pool_quotas,
    pools_of,
    sample_pools,
    size_problem,
    sizes_of,
    unused_splits_note,
)
from lttw.errors import DataError
from lttw.layout import SPLITS
from lttw.settings import DataSettings

log = logging.getLogger(__name__)

__all__ = ["draw_samples", "per_class_sizes", "sample_pools", "sample_indices"]

#: what labels.json says about the sizes when data.sampling=all
ALL_ROWS_NOTE = (
    "data.sampling=all: every row is used; the sizes' values are ignored, their "
    "ratio divides a pool shared by several samples"
)


def per_class_sizes(settings: DataSettings, n_classes: int) -> dict[str, int]:
    """Balanced rows per class of each sample; the log says when a size is not divisible by p."""
    check_minimum_sizes(settings, n_classes)
    out = {}
    for split, size in sizes_of(settings).items():
        out[split] = size // n_classes
        if size % n_classes:
            log.warning(
                "data.%s_size=%d is not divisible by %d classes: using %d per class = %d rows",
                split,
                size,
                n_classes,
                out[split],
                out[split] * n_classes,
            )
    return out


def sample_indices(
    dataset: Dataset, pools: list[Pool], quotas: dict[str, np.ndarray], rng: np.random.Generator
) -> dict[str, np.ndarray]:
    """Row indices into ``dataset`` of each sample: disjoint, ``quotas[split][c]`` rows of
    class c, shuffled. The quotas must fit their pools."""
    chosen: dict[str, list[np.ndarray]] = {split: [] for split in SPLITS}
    for pool in pools:
        rows = dataset.rows_of(pool.source)
        labels = dataset.labels[rows]
        for c in range(len(dataset.classes)):
            permuted = rng.permutation(rows[labels == c])
            start = 0
            for split in pool.splits:
                chosen[split].append(permuted[start : start + quotas[split][c]])
                start += quotas[split][c]
    return {
        split: rng.permutation(np.concatenate(parts)).astype(np.int64)
        for split, parts in chosen.items()
    }


def sample_frame(dataset: Dataset, rows: np.ndarray) -> pd.DataFrame:
    """Columns text (str), label (int64; multi-label: a list of int64 class ids, sorted),
    source_row (int64) for the given dataset rows."""
    if dataset.multi_label:  # parquet list<int64> (no pandas ArrowDtype: its metadata
        # does not read back); an empty sample's column is null-typed
        label = pd.Series(label_lists(dataset.labels[rows]), dtype=object)
    else:
        label = dataset.labels[rows].astype(np.int64)
    return pd.DataFrame(
        {
            "text": pd.array(dataset.texts[rows].tolist(), dtype="str"),
            "label": label,
            "source_row": dataset.source_rows[rows].astype(np.int64),
        }
    )


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


def plan_samples(dataset: Dataset, settings: DataSettings, seed: int):
    """What ``draw_samples`` draws, before any frame is built: the dataset rows of each
    sample, the rows per class of each (``quotas``), the ``per_class`` record and the
    pools. Sizes that cannot be met raise one ``DataError`` naming all of them and sizes
    that fit (what ``lttw data check`` calls: no copy of the texts)."""
    sampling = settings.sampling
    unused = unused_splits_note(dataset, settings)
    if unused:
        log.warning("%s", unused)
    refuse_balanced(dataset, sampling)
    if sampling == "balanced":
        per_class = per_class_sizes(settings, len(dataset.classes))
    pools = pools_of(dataset, settings)
    problem = size_problem(dataset, settings)
    if problem:
        raise DataError(problem)
    rng = np.random.default_rng(seed)
    if dataset.multi_label:
        rows = multi_label_indices(dataset, pools, sizes_of(settings), sampling, rng)
        p = len(dataset.classes)
        quotas = {s: label_counts(dataset.labels[rows[s]], p) for s in SPLITS}
    else:
        quotas = {
            s: q
            for pool in pools
            for s, q in pool_quotas(pool, sizes_of(settings), sampling).items()
        }
    if sampling != "balanced":
        per_class = {split: quotas[split].tolist() for split in SPLITS}
    if sampling == "all":
        log.info(ALL_ROWS_NOTE)
    if not dataset.multi_label:
        rows = sample_indices(dataset, pools, quotas, rng)
    return rows, quotas, per_class, pools


def draw_samples(
    dataset: Dataset, settings: DataSettings, seed: int
) -> tuple[dict[str, pd.DataFrame], dict]:
    """The three samples as frames, and the ``labels.json`` record describing them. Sizes that
    cannot be met raise one ``DataError`` naming all of them and sizes that fit."""
    sampling = settings.sampling
    rows, quotas, per_class, pools = plan_samples(dataset, settings, seed)
    frames = {split: sample_frame(dataset, rows[split]) for split in SPLITS}
    duplicates = {
        split: count_duplicates(frames["train"]["text"], frames[split]["text"])
        for split in ("test", "predict")
    }
    for split, n in duplicates.items():
        if n:
            log.warning(
                "%d of the %d %s texts also occur verbatim in the train sample",
                n,
                len(frames[split]),
                split,
            )
    pool_of = {split: pool.source for pool in pools for split in pool.splits}
    for split in SPLITS:
        counts = quotas[split]
        spread = (
            f"{counts[0]} per class"
            if sampling == "balanced"
            else f"{counts.min()}-{counts.max()} per class, {sampling}"
        )
        log.info(
            "%s: %d rows (%s) from %s",
            split,
            len(frames[split]),
            spread,
            f"the {pool_of[split]} split" if pool_of[split] else "all rows",
        )
        if sampling == "stratified" and len(frames[split]) and not counts.all():
            missing = [c for c, n in zip(dataset.classes, counts) if not n]
            log.warning(
                "%s: no rows of %s at data.%s_size=%d",
                split,
                ", ".join(missing),
                split,
                sizes_of(settings)[split],
            )
    info = {
        "dataset": dataset.name,
        "classes": dataset.classes,
        "label_values": dataset.label_values,
        "sizes": {split: len(frame) for split, frame in frames.items()},
        "per_class": per_class,
        "pools": pool_of,
        "seed": seed,
        "source": source_in_root(dataset.source, settings.root),
        "dropped_empty": dataset.dropped_empty,
        "dropped_unlabelled": dataset.dropped_unlabelled,
        "duplicate_texts": dataset.duplicate_texts,
        "conflicting_texts": dataset.conflicting_texts,
        "duplicates_test_in_train": sum(duplicates.values()),
        "duplicates_in_train": duplicates,
    }
    for key in ("language", "word_vectors"):  # manifest fields, only where the manifest has them
        if getattr(dataset, key) is not None:
            info[key] = getattr(dataset, key)
    if dataset.multi_label:  # absent for single-label data: its files stay as they were
        info[MULTI_LABEL_KEY] = True
    if sampling != "balanced":  # absent for balanced: the paper's samples stay byte-identical
        info["sampling"] = sampling
        if sampling == "all":
            info["sizes_ignored"] = ALL_ROWS_NOTE
    return frames, info
