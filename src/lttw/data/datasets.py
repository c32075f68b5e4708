"""Datasets: resolve ``data.dataset``, read its files, validate them and encode the labels.

``data.dataset`` names, under ``data.root``:

* a folder with a ``manifest.json`` (text/label columns, class names, one file per split);
* a folder of parquet / CSV / TSV / JSON Lines files (split = "train"/"test" from the file name, else pooled);
* a single parquet / CSV / TSV / JSON Lines file.

Multi-label data (``data.multi_label``, ``data.label_delimiter``, the manifest's
``multi_label``; ``lttw.data.label_lists``) carries its labels as an ``(n, p)`` indicator matrix.

A known name (``KNOWN_DATASETS``) whose folder is missing, or a manifest whose files are
missing, is read from its Hugging Face dataset (``hf://datasets/<name>``) when online; offline
this fails at once with a one-line ``DataError`` naming both the local path and the hub name.
The balanced sampling itself is in ``lttw.data.sampling``.
"""

from __future__ import annotations

import json
import logging
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import pandas as pd

from lttw.data.label_lists import (
    encode_label_lists,
    is_list_valued,
    split_label_cells,
    wants_multi_label,
)
from lttw.data.tables import TABLE_SUFFIXES, encode_labels, read_table, select_columns
from lttw.errors import DataError
from lttw.hub import offline_reason
from lttw.settings import DataSettings

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class HubSpec:
    """Where and how the full copy of a dataset is read from the Hugging Face hub."""

    name: str  # owner/name
    text_columns: tuple[str, ...] = ("text",)  # joined with one space when several
    label_column: str = "label"
    splits: dict[str, str] = field(default_factory=lambda: {"train": "train", "test": "test"})
    classes: tuple[str, ...] | None = None


KNOWN_DATASETS: dict[str, HubSpec] = {
    "ag_news": HubSpec("fancyzhx/ag_news", classes=("World", "Sports", "Business", "Sci/Tech")),
    # GLUE's SST-2 test labels are hidden (-1): the labelled validation split serves as test
    "sst2": HubSpec(
        "stanfordnlp/sst2",
        ("sentence",),
        splits={"train": "train", "test": "validation"},
        classes=("negative", "positive"),
    ),
    "yahoo_answers": HubSpec(
        "community-datasets/yahoo_answers_topics",
        ("question_title", "question_content", "best_answer"),
        "topic",
        classes=(
            "Society & Culture",
            "Science & Mathematics",
            "Health",
            "Education & Reference",
            "Computers & Internet",
            "Sports",
            "Business & Finance",
            "Entertainment & Music",
            "Family & Relationships",
            "Politics & Government",
        ),
    ),
}


@dataclass(frozen=True)
class Dataset:
    """All usable rows of a dataset, pooled over its files (arrays of shape (n_rows,); the
    labels of multi-label data an (n_rows, p) uint8 indicator matrix).

    source_rows: row index in the concatenation of the source files (manifest split order),
    before any row was dropped.
    """

    name: str
    texts: np.ndarray  # object array of str
    labels: np.ndarray  # int64, 0..p-1; multi_label: (n_rows, p) uint8 indicator matrix
    splits: np.ndarray  # object array: split name of each row
    source_rows: np.ndarray  # int64
    classes: list[str]
    label_values: list
    source: str
    dropped_empty: int = 0
    dropped_unlabelled: int = 0
    duplicate_texts: int = 0  # rows whose text repeats an earlier row's text (kept)
    conflicting_texts: int = 0  # distinct texts that occur with more than one label
    language: str | None = None  # the manifest's language (words.splitter=auto reads it)
    word_vectors: str | None = None  # the manifest's word-vectors file (model.word_vectors)
    multi_label: bool = False  # a set of classes per text (lttw.data.label_sets)

    def rows_of(self, split: str | None) -> np.ndarray:
        """Indices of the rows of one split (all rows for None)."""
        if split is None:
            return np.arange(len(self.texts))
        return np.flatnonzero(self.splits == split)


def _table_files(folder: Path) -> list[tuple[str, Path]]:
    files = sorted(p for p in folder.iterdir() if p.suffix.lower() in TABLE_SUFFIXES)
    if not files:
        raise DataError(f"{folder}: no manifest.json and no parquet/CSV/TSV files")

    def split(path: Path) -> str:
        return next((s for s in ("train", "test") if path.stem.lower().startswith(s)), path.stem)

    return [(split(p), p) for p in files]


def _read_manifest(path: Path) -> dict:
    try:
        manifest = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError) as err:
        raise DataError(f"{path}: not a readable JSON manifest ({err})") from None
    if not isinstance(manifest, dict) or not isinstance(manifest.get("splits"), dict):
        raise DataError(f"{path}: the manifest needs a 'splits' mapping of split -> file")
    return manifest


def hub_split_files(paths: list[str], split: str) -> list[str]:
    """The parquet files of one split among a hub repository's files (sorted)."""

    def matches(path: str) -> bool:
        parts = path.split("/")
        return (
            parts[-1].startswith(f"{split}-")
            or parts[-1] == f"{split}.parquet"
            or (len(parts) > 1 and parts[-2] == split)
        )

    return sorted(p for p in paths if p.endswith(".parquet") and matches(p))


def _read_hub(spec: HubSpec, local: Path) -> list[tuple[str, pd.DataFrame, str]]:
    hint = (
        f"put the dataset folder (manifest.json + parquet files) at {local}, or go online "
        f"to read hf://datasets/{spec.name}"
    )
    reason = offline_reason()
    if reason:
        raise DataError(
            f"no local copy at {local} and the hub dataset {spec.name} cannot be "
            f"read ({reason}); {hint}"
        )
    try:
        from huggingface_hub import HfFileSystem

        fs = HfFileSystem()
        paths = fs.glob(f"datasets/{spec.name}/**/*.parquet")
        out = []
        for split, hub_split in spec.splits.items():
            files = hub_split_files(paths, hub_split)
            if not files:
                raise DataError(
                    f"hf://datasets/{spec.name}: no parquet files for split {hub_split!r}; {hint}"
                )
            for path in files:
                log.info("reading hf://%s", path)
                out.append((split, pd.read_parquet(f"hf://{path}"), f"hf://{path}"))
        return out
    except DataError:
        raise
    except Exception as err:
        raise DataError(
            f"reading hub dataset {spec.name} failed ({type(err).__name__}: "
            f"{str(err).splitlines()[0] if str(err) else ''}); {hint}"
        ) from None


@dataclass(frozen=True)
class _Resolved:
    tables: list[tuple[str, pd.DataFrame, str]]  # (split, frame, file it came from)
    text_columns: tuple[str, ...]
    label_column: str
    classes: list[str] | None
    source: str
    language: str | None = None  # manifest fields, where there is one
    word_vectors: str | None = None
    multi_label: bool = False  # the manifest's "multi_label"


def _from_hub(spec: HubSpec, local: Path) -> _Resolved:
    return _Resolved(
        _read_hub(spec, local),
        spec.text_columns,
        spec.label_column,
        list(spec.classes) if spec.classes else None,
        f"hf://datasets/{spec.name}",
    )


def _from_manifest(name: str, folder: Path) -> _Resolved:
    manifest = _read_manifest(folder / "manifest.json")
    files = [(split, folder / f) for split, f in manifest["splits"].items()]
    present = [path.is_file() for _, path in files]
    text_column = manifest.get("text_column", "text")
    label_column = manifest.get("label_column", "label")
    language = manifest.get("language") if isinstance(manifest.get("language"), str) else None
    vectors = manifest.get("word_vectors")
    vectors = str(folder / vectors) if isinstance(vectors, str) and vectors else None
    if all(present):
        return _Resolved(
            [(s, read_table(p), str(p)) for s, p in files],
            (text_column,),
            label_column,
            manifest.get("classes"),
            str(folder),
            language,
            vectors,
            bool(manifest.get("multi_label", False)),
        )
    if not any(present) and (name in KNOWN_DATASETS or manifest.get("hub_dataset")):
        spec = KNOWN_DATASETS.get(name) or HubSpec(
            manifest["hub_dataset"], (text_column,), label_column
        )
        resolved = _from_hub(spec, folder)
        return _Resolved(
            resolved.tables,
            resolved.text_columns,
            resolved.label_column,
            manifest.get("classes") or resolved.classes,
            resolved.source,
            language,
            vectors,
            bool(manifest.get("multi_label", False)),
        )
    missing = next(path for (_, path), ok in zip(files, present) if not ok)
    raise DataError(f"{missing}: file not found (listed in {folder / 'manifest.json'})")


def resolve(settings: DataSettings) -> _Resolved:
    """Find and read the files of ``data.dataset`` (see the module docstring)."""
    root, name = Path(settings.root), settings.dataset
    target = root / name
    if target.is_dir() and (target / "manifest.json").is_file():
        return _from_manifest(name, target)
    if target.is_dir():
        tables = [(s, read_table(p), str(p)) for s, p in _table_files(target)]
        return _Resolved(tables, ("text",), "label", None, str(target))
    if target.is_file():
        return _Resolved(
            [("all", read_table(target), str(target))], ("text",), "label", None, str(target)
        )
    if name in KNOWN_DATASETS or name.count("/") == 1:  # a known name or a hub owner/name
        return _from_hub(KNOWN_DATASETS.get(name) or HubSpec(name), target)
    known = sorted(p.name for p in root.iterdir()) if root.is_dir() else []
    raise DataError(
        f"data.dataset {name!r}: {target} not found (data.root {root}"
        f"{' has ' + ', '.join(known) if known else ' is empty or missing'})"
    )


def _pool(
    resolved: _Resolved, text_cols: tuple[str, ...], label_col: str, settings: DataSettings
) -> tuple[pd.DataFrame, bool]:
    """All files' rows in one frame (text, label, split), indexed by source row, and whether
    the data is multi-label (then each label is a tuple of labels, None where missing)."""
    parts = [
        (split, select_columns(frame, where, text_cols, label_col), where)
        for split, frame, where in resolved.tables
    ]
    multi_label = wants_multi_label(
        settings.multi_label,
        resolved.multi_label,
        any(is_list_valued(part["label"]) for _, part, _ in parts),
        settings.label_delimiter,
        resolved.source,
    )
    frames, offset = [], 0
    for split, part, where in parts:
        if multi_label:
            cells = split_label_cells(
                part["label"],
                f"{where}, column {label_col}",
                settings.label_delimiter,
                resolved.classes,
            )
            part = part.assign(label=cells)
        part.index = pd.RangeIndex(offset, offset + len(part))
        frames.append(part.assign(split=split))
        offset += len(part)
    pooled = pd.concat(frames) if frames else pd.DataFrame(columns=["text", "label", "split"])
    if pooled.empty:
        raise DataError(f"{resolved.source}: the dataset has no rows")
    return pooled, multi_label


def _usable(
    pooled: pd.DataFrame, source: str, text_cols: tuple[str, ...], label_col: str
) -> tuple[pd.Series, pd.Series]:
    """Masks of rows with a blank text and of rows without a label (counts logged)."""
    blank = pooled["text"].isna() | pooled["text"].astype("str").str.strip().eq("")
    if blank.all():
        raise DataError(
            f"{source}: all {len(pooled)} texts (column {', '.join(text_cols)}) "
            "are missing, empty or whitespace-only"
        )
    unlabelled = pooled["label"].isna() & ~blank
    if unlabelled.sum() == (~blank).sum():
        raise DataError(f"{source}: every label (column {label_col}) is missing")
    if blank.any():
        log.warning(
            "%s: dropped %d rows whose text is missing, empty or whitespace-only",
            source,
            int(blank.sum()),
        )
    if unlabelled.any():
        log.warning("%s: dropped %d rows without a label", source, int(unlabelled.sum()))
    return blank, unlabelled


def load_dataset(settings: DataSettings) -> Dataset:
    """Resolve, read and validate ``data.dataset``; pooled rows with labels encoded 0..p-1."""
    resolved = resolve(settings)
    source = resolved.source
    text_cols = (settings.text_column,) if settings.text_column else resolved.text_columns
    label_col = settings.label_column or resolved.label_column
    pooled, multi_label = _pool(resolved, text_cols, label_col, settings)
    blank, unlabelled = _usable(pooled, source, text_cols, label_col)
    kept = pooled[~blank & ~unlabelled]
    duplicates, conflicting = _duplicates(kept, source)
    if multi_label:
        ids, class_names, label_values = encode_label_lists(kept["label"], resolved.classes)
    else:
        ids, class_names, label_values = encode_labels(
            kept["label"], resolved.classes, f"{source}, column {label_col}"
        )
    if len(class_names) < 2:
        raise DataError(f"{source}: only one class ({class_names[0]!r}) in column {label_col}")
    return Dataset(
        name=settings.dataset,
        texts=kept["text"].astype("str").to_numpy(dtype=object),
        labels=ids if multi_label else ids.astype(np.int64),
        splits=kept["split"].to_numpy(dtype=object),
        source_rows=kept.index.to_numpy(dtype=np.int64),
        classes=class_names,
        label_values=label_values,
        source=source,
        dropped_empty=int(blank.sum()),
        dropped_unlabelled=int(unlabelled.sum()),
        duplicate_texts=duplicates,
        conflicting_texts=conflicting,
        language=resolved.language,
        word_vectors=resolved.word_vectors,
        multi_label=multi_label,
    )


def _duplicates(kept: pd.DataFrame, source: str) -> tuple[int, int]:
    """Rows repeating an earlier row's text, and texts seen with several labels (logged)."""
    texts = kept["text"].astype("str")
    repeated = int(texts.duplicated().sum())
    conflicting = 0
    if repeated:
        labels_per_text = kept["label"].astype("str").groupby(texts.to_numpy()).nunique()
        conflicting = int((labels_per_text > 1).sum())
        log.warning(
            "%s: %d rows repeat the text of an earlier row (kept; counted in "
            "labels.json as duplicate_texts)%s",
            source,
            repeated,
            f", and {conflicting} texts occur with different labels" if conflicting else "",
        )
    return repeated, conflicting
