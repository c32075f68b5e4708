"""Where a dataset's files are (``lttw.data.datasets`` reads and validates them).

``data.dataset`` names, under ``data.root``:

* a folder with a ``manifest.json`` (text/label columns, class names, one file per split);
* a folder of parquet / CSV / TSV / JSON Lines files (split = "train"/"test" from the file name, else pooled);
* a single parquet / CSV / TSV / JSON Lines file.

A folder's ``manifest.json`` that records the sha256 of its files (``lttw data fetch``)
has them checked on every read (``dataset_manifest``). A name whose folder is missing (a known
name, a hub dataset id) is one ``DataError`` line naming the path and the command that
fetches it (``lttw data fetch NAME``): the hub is read by ``lttw data fetch`` only.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path

import pandas as pd

from lttw.data.dataset_manifest import verify_manifest
from lttw.data.tables import TABLE_SUFFIXES, read_table
from lttw.errors import DataError
from lttw.settings import DataSettings


@dataclass(frozen=True)
class HubSpec:
    """A known dataset's Hugging Face hub copy (``lttw data fetch`` and ``lttw data list``)."""

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


@dataclass(frozen=True)
class Resolved:
    """The files of a dataset as read, before validation: its tables and where its text and
    label columns, classes and manifest fields are."""

    tables: list[tuple[str, pd.DataFrame, str]]  # (split, frame, file it came from)
    text_columns: tuple[str, ...]
    label_column: str
    classes: list[str] | None
    source: str
    language: str | None = None  # manifest fields, where there is one
    word_vectors: str | None = None
    multi_label: bool = False  # the manifest's "multi_label"


def _fetch_hint(name: str, local: Path) -> DataError:
    hub = KNOWN_DATASETS[name].name if name in KNOWN_DATASETS else name
    return DataError(
        f"data.dataset {name!r}: no local copy at {local}; fetch it from the hub ({hub}) with "
        f"`lttw data fetch {name} --to {local.parent}`"
    )


def _from_manifest(name: str, folder: Path) -> Resolved:
    manifest = _read_manifest(folder / "manifest.json")
    verify_manifest(folder, manifest)
    files = [(split, folder / f) for split, f in manifest["splits"].items()]
    present = [path.is_file() for _, path in files]
    text_column = manifest.get("text_column", "text")
    label_column = manifest.get("label_column", "label")
    language = manifest.get("language") if isinstance(manifest.get("language"), str) else None
    vectors = manifest.get("word_vectors")
    vectors = str(folder / vectors) if isinstance(vectors, str) and vectors else None
    if all(present):
        return Resolved(
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
        raise _fetch_hint(name if name in KNOWN_DATASETS else manifest["hub_dataset"], folder)
    missing = next(path for (_, path), ok in zip(files, present) if not ok)
    raise DataError(f"{missing}: file not found (listed in {folder / 'manifest.json'})")


def resolve(settings: DataSettings) -> Resolved:
    """Find and read the files of ``data.dataset`` (see the module docstring)."""
    root, name = Path(settings.root), settings.dataset
    target = root / name
    if target.is_dir() and (target / "manifest.json").is_file():
        return _from_manifest(name, target)
    if target.is_dir():
        tables = [(s, read_table(p), str(p)) for s, p in _table_files(target)]
        return Resolved(tables, ("text",), "label", None, str(target))
    if target.is_file():
        return Resolved(
            [("all", read_table(target), str(target))], ("text",), "label", None, str(target)
        )
    if name in KNOWN_DATASETS or name.count("/") == 1:  # a known name or a hub owner/name
        raise _fetch_hint(name, target)
    known = sorted(p.name for p in root.iterdir()) if root.is_dir() else []
    raise DataError(
        f"data.dataset {name!r}: {target} not found (data.root {root}"
        f"{' has ' + ', '.join(known) if known else ' is empty or missing'})"
    )
