"""``lttw data check``: what the pipeline would see in a dataset, computed with
``lttw.data.datasets`` and ``lttw.data.sampling`` themselves (no second reading of the rules).
``lttw data list`` is ``lttw.checks.dataset_list``; the check drawn as tables, ``lttw.checks.dataset_tables``.

A check finds *problems* (the data is not what the pipeline assumes: rows it would drop, sizes
it cannot draw) and *notes* (worth knowing, harmless: duplicates, rounding of sizes).
"""

from __future__ import annotations

import contextlib
import logging
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import pandas as pd

from lttw.checks.encoder_coverage import encoder_coverage
from lttw.checks.label_format import (
    Cardinality,
    cardinality,
    label_format_advice,
)
from lttw.checks.sample_plan import plan_quotas, sample_plan
from lttw.checks.word_splitting import word_splitting
from lttw.data.datasets import Dataset, load_dataset
from lttw.data.label_sets import label_counts
from lttw.data.sample_sizes import (
    pools_of,
    sizes_of,
)
from lttw.data.sampling import plan_samples
from lttw.data.tables import TABLE_SUFFIXES, ColumnError
from lttw.errors import DataError
from lttw.factors.nmf import auto_rank_capped, resolve_rank
from lttw.settings import DataSettings, Settings
from lttw.settings.data import FoldSettings

#: the fewest folds ``folds.n_folds`` allows (its constraint in ``FoldSettings``)
MIN_FOLDS = next(m.ge for m in FoldSettings.model_fields["n_folds"].metadata if hasattr(m, "ge"))
DROPPED_EMPTY = "rows with an empty or missing text (dropped by sample)"
DROPPED_UNLABELLED = "rows without a label (dropped by sample)"


@dataclass
class DataCheck:
    dataset: Dataset
    settings: DataSettings
    class_table: pd.DataFrame  # index: class names; columns: one per split + total, share
    quality: dict[str, int]  # check name -> number of rows concerned
    plan: pd.DataFrame  # one row per sample split: from, rows, per_class, fits, fitting_size
    sample_error: str | None
    problems: list[str] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    words: dict | None = None  # word_splitting(): the resolved rule, its reason, the quality
    coverage: dict | None = None  # encoder_coverage(): the share of [UNK] tokens, a warning
    cardinality: Cardinality | None = None  # labels per text, multi-label data only
    #: a single-label class with fewer train-sample rows than folds (``fold_note``): the
    #: folds stage would stop on it; ``lttw init`` refuses such data
    folds_error: str | None = None


class _Collect(logging.Handler):
    def __init__(self) -> None:
        super().__init__(logging.WARNING)
        self.messages: list[str] = []

    def emit(self, record: logging.LogRecord) -> None:
        self.messages.append(record.getMessage())


@contextlib.contextmanager
def _collect_warnings(name: str) -> Iterator[list[str]]:
    """Warnings logged under ``name`` while the block runs, kept out of the console."""
    logger, handler = logging.getLogger(name), _Collect()
    propagate, logger.propagate = logger.propagate, False
    logger.addHandler(handler)
    try:
        yield handler.messages
    finally:
        logger.removeHandler(handler)
        logger.propagate = propagate


def target_settings(
    path_or_name: str,
    data: DataSettings,
    text_column: str | None,
    label_column: str | None,
    label_delimiter: str | None = None,
) -> DataSettings:
    """Data settings that point at ``path_or_name``: an existing file or folder, else a
    dataset name under ``data.root``. Column and delimiter flags override the parameters."""
    update = {
        "text_column": text_column or data.text_column,
        "label_column": label_column or data.label_column,
        "label_delimiter": label_delimiter or data.label_delimiter,
    }
    path = Path(path_or_name)
    if path.exists():
        path = path.resolve()
        update.update(root=str(path.parent), dataset=path.name)
    elif (Path(data.root) / path_or_name).exists() or path.suffix.lower() not in TABLE_SUFFIXES:
        update["dataset"] = path_or_name  # a name under data.root (or a hub dataset)
    else:
        raise FileNotFoundError(2, f"no such file (nor under data.root {data.root})", path_or_name)
    return data.model_copy(update=update)


def class_table(dataset: Dataset) -> pd.DataFrame:
    """Rows per class and split, with the total and each class's share of the rows (for
    multi-label data the shares add up to the labels per text)."""
    if dataset.multi_label:
        splits = sorted(set(dataset.splits.tolist()))
        p = len(dataset.classes)
        table = pd.DataFrame(
            {s: label_counts(dataset.labels[dataset.rows_of(s)], p) for s in splits},
            index=pd.Index(dataset.classes, name="class"),
        )
    else:
        frame = pd.DataFrame(
            {
                "class": np.asarray(dataset.classes, dtype=object)[dataset.labels],
                "split": dataset.splits,
            }
        )
        table = pd.crosstab(frame["class"], frame["split"]).reindex(dataset.classes, fill_value=0)
    table["total"] = table.sum(axis=1)
    table["share"] = table["total"] / max(len(dataset.texts), 1)
    return table


def duplicate_counts(dataset: Dataset) -> dict[str, int]:
    texts = pd.Series(dataset.texts, dtype=object)
    splits = pd.Series(dataset.splits, dtype=object)
    train, test = texts[splits == "train"], texts[splits == "test"]
    return {
        "rows repeating an earlier text": dataset.duplicate_texts,
        "texts seen with several labels": dataset.conflicting_texts,
        "test-split texts also in train": int(test.isin(set(train)).sum()),
        "texts with U+FFFD (lossy decoding)": int(texts.str.contains("\ufffd", regex=False).sum()),
    }


def column_fix(err: ColumnError) -> str:
    """A missing-column message naming this command's options and the pipeline's params."""
    return err.fix_with(
        f"pass {err.names('--{}-column')} (for the pipeline: set {err.names('data.{}_column')})"
    )


def factor_notes(settings: Settings, n_classes: int) -> list[str]:
    """Settings that make weak latent factors for this many classes."""
    rank = resolve_rank(settings.nmf.rank, n_classes, warn=False)
    if rank >= n_classes:
        return []
    if settings.nmf.rank == "auto":
        return [auto_rank_capped(n_classes)]
    return [
        f"nmf.rank={rank} is below the number of classes ({n_classes}): the factors cannot "
        f"give every class one of its own; set nmf.rank >= {n_classes}"
    ]


def fold_note(check: DataCheck, n_folds: int) -> str | None:
    """A class with fewer train-sample rows than folds (the folds stage would stop; for
    multi-label data some folds would lack it)."""
    if not check.plan["fits"].all():
        return None
    pool = next(p for p in pools_of(check.dataset, check.settings) if "train" in p.splits)
    train = plan_quotas(check.dataset, pool, sizes_of(check.settings), check.settings.sampling)[
        "train"
    ]
    rarest = int(train.argmin())
    if train[rarest] >= n_folds:
        return None
    if check.dataset.multi_label:  # the folds stage warns, iterative stratification goes on
        return (
            f"class {check.dataset.classes[rarest]} would be on about {int(train[rarest])} "
            f"train-sample rows, fewer than folds.n_folds={n_folds}: some folds have none of "
            "it; raise data.train_size or lower folds.n_folds"
        )
    more = (
        f"add rows of class {check.dataset.classes[rarest]}"
        if check.settings.sampling == "all"  # every row already: data.train_size is ignored
        else "raise data.train_size"
    )
    fewest = int(train[rarest])
    lower = (
        f" or lower folds.n_folds (to {fewest} at most)"
        if fewest >= MIN_FOLDS
        else f" (folds.n_folds is at least {MIN_FOLDS})"
    )
    return (
        f"folds.n_folds={n_folds} needs at least {n_folds} train-sample rows per class, but "
        f"class {check.dataset.classes[rarest]} would get {fewest}; {more}{lower}"
    )


def check_dataset(
    settings: Settings,
    path_or_name: str,
    text_column: str | None = None,
    label_column: str | None = None,
    label_delimiter: str | None = None,
) -> DataCheck:
    """Load ``path_or_name`` as the sample stage would and report on it. Unreadable data
    (missing file or column, bad encoding, no rows) raises ``DataError``."""
    data = target_settings(path_or_name, settings.data, text_column, label_column, label_delimiter)
    with _collect_warnings("lttw") as notes:
        try:
            dataset = load_dataset(data)
        except ColumnError as err:
            raise DataError(column_fix(err)) from None
        sample_error = None
        # multi-label data refuses balanced sampling (the sample error says so): plan stratified
        refused = dataset.multi_label and data.sampling == "balanced"
        plan = sample_plan(
            dataset, data.model_copy(update={"sampling": "stratified"}) if refused else data
        )
        try:  # the sample stage's own plan, without building its frames
            plan_samples(dataset, data, settings.seed)
        except DataError as err:
            sample_error = str(err)
    quality = {
        DROPPED_EMPTY: dataset.dropped_empty,
        DROPPED_UNLABELLED: dataset.dropped_unlabelled,
        **duplicate_counts(dataset),
    }
    check = DataCheck(
        dataset,
        data,
        class_table(dataset),
        quality,
        plan,
        sample_error,
        notes=list(dict.fromkeys(notes + factor_notes(settings, len(dataset.classes)))),
    )
    check.problems = problems(check)
    advice = label_format_advice(dataset, data.label_column or "label", data.multi_label)
    if advice:
        check.problems.insert(0, advice)
    check.cardinality = cardinality(dataset)
    check.words = word_splitting(settings, dataset, data)
    check.coverage = encoder_coverage(settings, dataset, data)
    folds = fold_note(check, settings.folds.n_folds)
    if folds:
        check.notes.append(folds)
        if not dataset.multi_label:
            check.folds_error = folds
    return check


def problems(check: DataCheck) -> list[str]:
    """What makes the data differ from what the pipeline assumes (empty when none): rows the
    sample stage drops, and the sizes it cannot draw (``sample_sizes.size_problem``: every
    unmet size in one message, with sizes that fit together)."""
    out = [
        f"{n} {what}"
        for what, n in check.quality.items()
        if what in (DROPPED_EMPTY, DROPPED_UNLABELLED) and n
    ]
    if check.sample_error:
        out.append(check.sample_error)
    return out
