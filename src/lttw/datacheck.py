"""``lttw data check`` / ``lttw data list``: what the pipeline would see in a dataset, and which
datasets are available locally, computed with ``lttw.data`` and ``lttw.sampling`` themselves
(no second reading of the rules).

A check finds *problems* (the data is not what the pipeline assumes: rows it would drop, sizes
it cannot draw) and *notes* (worth knowing, harmless: duplicates, rounding of sizes).
"""

from __future__ import annotations

import contextlib
import json
import logging
from dataclasses import dataclass, field
from pathlib import Path
from typing import Iterator

import numpy as np
import pandas as pd

from .data import KNOWN_DATASETS, Dataset, load_dataset
from .errors import DataError
from .layout import SPLITS
from .sampling import draw_samples, per_class_sizes, sample_pools
from .settings import DataSettings, Settings


@dataclass
class DataCheck:
    dataset: Dataset
    settings: DataSettings
    class_table: pd.DataFrame  # index: class names; columns: one per split + total, share
    quality: dict[str, int]  # check name -> number of rows concerned
    plan: pd.DataFrame  # one row per sample split: pool, per_class, rows, largest_per_class
    sample_error: str | None
    problems: list[str] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)


class _Collect(logging.Handler):
    def __init__(self):
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


def target_settings(path_or_name: str, data: DataSettings, text_column: str | None,
                    label_column: str | None) -> DataSettings:
    """Data settings that point at ``path_or_name``: an existing file or folder, else a
    dataset name under ``data.root``. Column flags override the parameters."""
    update = {"text_column": text_column or data.text_column,
              "label_column": label_column or data.label_column}
    path = Path(path_or_name)
    if path.exists():
        path = path.resolve()
        update.update(root=str(path.parent), dataset=path.name)
    else:
        update["dataset"] = path_or_name
    return data.model_copy(update=update)


def class_table(dataset: Dataset) -> pd.DataFrame:
    """Rows per class and split, with the total and each class's share of it."""
    frame = pd.DataFrame({"class": np.asarray(dataset.classes, dtype=object)[dataset.labels],
                          "split": dataset.splits})
    table = pd.crosstab(frame["class"], frame["split"]).reindex(dataset.classes, fill_value=0)
    table["total"] = table.sum(axis=1)
    table["share"] = table["total"] / max(int(table["total"].sum()), 1)
    return table


def duplicate_counts(dataset: Dataset) -> dict[str, int]:
    texts = pd.Series(dataset.texts, dtype=object)
    splits = pd.Series(dataset.splits, dtype=object)
    train, test = texts[splits == "train"], texts[splits == "test"]
    return {"duplicate texts": int(texts.duplicated().sum()),
            "test texts also in train": int(test.isin(set(train)).sum()),
            "texts with U+FFFD (lossy decoding)": int(texts.str.contains("\ufffd",
                                                                         regex=False).sum())}


def sample_plan(dataset: Dataset, settings: DataSettings) -> pd.DataFrame:
    """For each sample: the split it is drawn from, rows per class wanted, and the most rows
    per class that pool leaves for it once the other samples from the same pool are served."""
    per_class = per_class_sizes(settings, len(dataset.classes))
    pools = sample_pools(dataset, settings.use_splits)
    rows = []
    for split in SPLITS:
        pool = pools[split]
        counts = np.bincount(dataset.labels[dataset.rows_of(pool)],
                             minlength=len(dataset.classes))
        others = sum(per_class[s] for s in SPLITS if pools[s] == pool and s != split)
        largest = max(int(counts.min()) - others, 0)
        rows.append({"sample": split, "from": f"the {pool} split" if pool else "all rows",
                     "per_class": per_class[split],
                     "rows": per_class[split] * len(dataset.classes),
                     "largest_per_class": largest,
                     "fits": per_class[split] <= largest})
    return pd.DataFrame(rows).set_index("sample")


def check_dataset(settings: Settings, path_or_name: str, text_column: str | None = None,
                  label_column: str | None = None) -> DataCheck:
    """Load ``path_or_name`` as the sample stage would and report on it. Unreadable data
    (missing file or column, bad encoding, no rows) raises ``DataError``."""
    data = target_settings(path_or_name, settings.data, text_column, label_column)
    dataset = load_dataset(data)
    quality = {"empty or missing texts (dropped)": dataset.dropped_empty,
               "rows without a label (dropped)": dataset.dropped_unlabelled,
               **duplicate_counts(dataset)}
    sample_error = None
    with _collect_warnings("lttw.sampling") as notes:
        plan = sample_plan(dataset, data)
        try:
            draw_samples(dataset, data, settings.seed)
        except DataError as err:
            sample_error = str(err)
    check = DataCheck(dataset, data, class_table(dataset), quality, plan, sample_error,
                      notes=list(dict.fromkeys(notes)))
    check.problems = problems(check)
    return check


def problems(check: DataCheck) -> list[str]:
    """What makes the data differ from what the pipeline assumes (empty when none)."""
    out = [f"{n} {what}" for what, n in check.quality.items() if "dropped" in what and n]
    for split, row in check.plan.iterrows():
        if not row["fits"]:
            out.append(f"data.{split}_size={row['rows']} needs {row['per_class']} rows per class "
                       f"from {row['from']}; the largest that fits is "
                       f"{row['largest_per_class'] * len(check.dataset.classes)} "
                       f"({row['largest_per_class']} per class)")
    if check.sample_error and not out:
        out.append(check.sample_error)
    return out


# ---------------------------------------------------------------- data list


def _split_rows(path: Path) -> int | None:
    if path.suffix.lower() in (".parquet", ".pq"):
        import pyarrow.parquet as pq

        return pq.ParquetFile(path).metadata.num_rows
    return None


def describe_local(folder: Path) -> dict:
    """Status of one dataset folder: present / partial / missing, rows per split, complete."""
    manifest_path = folder / "manifest.json"
    if not manifest_path.is_file():
        files = sorted(p for p in folder.glob("*") if p.suffix.lower() in (".parquet", ".pq",
                                                                              ".csv", ".tsv"))
        status = "present (no manifest)" if files else "missing"
        return {"status": status, "rows": {p.stem: _split_rows(p) for p in files},
                "complete": None, "official_rows": {}}
    manifest = json.loads(manifest_path.read_text(encoding="utf-8"))
    files = {split: folder / name for split, name in manifest.get("splits", {}).items()}
    present = {split: path.is_file() for split, path in files.items()}
    rows = {split: (_split_rows(path) if present[split] else None)
            or (manifest.get("rows", {}).get(split) if present[split] else None)
            for split, path in files.items()}
    status = ("present" if all(present.values()) else
              "partial" if any(present.values()) else "missing")
    return {"status": status, "rows": rows, "complete": manifest.get("complete"),
            "official_rows": manifest.get("official_rows", {}),
            "hub": manifest.get("hub_dataset")}


def list_datasets(root: str | Path) -> list[dict]:
    """The known datasets (and any other folder under ``root``), where each is found locally
    and the Hugging Face dataset it is read from when online."""
    root = Path(root)
    names = list(KNOWN_DATASETS)
    if root.is_dir():
        names += sorted(p.name for p in root.iterdir() if p.is_dir() and p.name not in names)
    out = []
    for name in names:
        local = describe_local(root / name) if (root / name).is_dir() else \
            {"status": "missing", "rows": {}, "complete": None, "official_rows": {}}
        hub = local.pop("hub", None) or (KNOWN_DATASETS[name].name
                                         if name in KNOWN_DATASETS else None)
        out.append({"name": name, "path": str(root / name), **local,
                    "hub": f"hf://datasets/{hub}" if hub else None})
    return out
