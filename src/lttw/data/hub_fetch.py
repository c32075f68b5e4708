"""A Hugging Face hub dataset's parquet files for ``lttw data fetch``: downloaded through
``huggingface_hub.snapshot_download`` (its retries, resumed downloads, cache and progress
bars; ``HF_HUB_OFFLINE=1`` serves what the cache holds), the files of each split picked by
the hub's own naming (``train-00000-of-00001.parquet``, ``test.parquet``, ``validation/0.parquet``),
and, for any dataset that is not one of the known names, its columns and class names read
from the files themselves (the ``datasets`` library's ClassLabel names, kept in each parquet
file's schema, or else the label values)."""

from __future__ import annotations

import json
import re
from pathlib import Path

from lttw.errors import DataError, UserError
from lttw.hub import download_snapshot

#: the splits fetched when ``--split`` names none (those the dataset has)
DEFAULT_SPLITS = ("train", "validation", "test")
#: a hub dataset id: ``org/name`` (or an old single-name id such as ``imdb``)
DATASET_ID = re.compile(r"[A-Za-z0-9][\w.-]{0,95}(/[A-Za-z0-9][\w.-]{0,95})?")
#: the most distinct labels a dataset of any hub id may have (else it is not classes)
MAX_CLASSES = 10_000


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


def parse_splits(given: list[str] | None) -> dict[str, str | None]:
    """``--split NAME`` or ``--split NAME=GLOB`` (the files, as hub paths): name -> glob."""
    out: dict[str, str | None] = {}
    for item in given or []:
        name, _, pattern = item.partition("=")
        if not re.fullmatch(r"[A-Za-z0-9_.-]{1,64}", name) or (pattern and ".." in pattern):
            raise UserError(f"--split {item!r}: give NAME or NAME=GLOB (hub file paths)")
        out[name] = pattern or None
    return out


def _patterns(splits: dict[str, str | None]) -> list[str]:
    names = splits or dict.fromkeys(DEFAULT_SPLITS)
    globs = ["README.md"]  # the dataset card: its licence
    for name, pattern in names.items():
        globs += [pattern] if pattern else [f"*{name}-*.parquet", f"*{name}.parquet", f"*{name}/*"]
    return globs


def fetch_files(
    repo_id: str, revision: str | None, splits: dict[str, str | None]
) -> tuple[Path, dict[str, list[str]]]:
    """The snapshot folder and, per split, the parquet files (hub paths) of ``repo_id``."""
    from fnmatch import fnmatchcase

    try:
        folder = Path(
            download_snapshot(repo_id, revision, "dataset", allow_patterns=_patterns(splits))
        )
    except UserError as err:  # the dataset cannot be had: bad input, exit 3
        raise DataError(str(err)) from None
    paths = sorted(p.relative_to(folder).as_posix() for p in folder.rglob("*.parquet"))
    found = {}
    for name in splits or DEFAULT_SPLITS:
        pattern = splits.get(name)
        files = (
            [p for p in paths if fnmatchcase(p, pattern)]
            if pattern
            else hub_split_files(paths, name)
        )
        if files:
            found[name] = files
        elif splits:
            raise DataError(
                f"{repo_id}: no parquet files for split {name!r} (files: {_few(paths)})"
            )
    if not found:
        raise DataError(
            f"{repo_id}: no parquet files of a train, validation or test split "
            f"(files: {_few(paths)}); name them with --split NAME=GLOB"
        )
    folders = {str(Path(p).parent) for files in found.values() for p in files}
    if len(folders) > 1 and not any(splits.values()):
        raise DataError(
            f"{repo_id}: split files in several folders ({', '.join(sorted(folders))}: "
            "configurations?); choose one with --split train=FOLDER/train-*.parquet "
            "--split test=FOLDER/test-*.parquet"
        )
    return folder, found


def _few(paths: list[str]) -> str:
    return (
        ", ".join(paths[:5]) + (f" and {len(paths) - 5} more" if len(paths) > 5 else "") or "none"
    )


def class_names(path: Path, column: str) -> list[str] | None:
    """The ClassLabel names the ``datasets`` library stores for ``column`` in a parquet
    file's schema (``huggingface`` metadata); None where there are none."""
    import pyarrow.parquet as pq

    meta = (pq.read_schema(path).metadata or {}).get(b"huggingface")
    try:
        features = json.loads(meta)["info"]["features"] if meta else {}
    except (ValueError, KeyError, TypeError):
        return None
    feature = features.get(column) if isinstance(features, dict) else None
    while isinstance(feature, dict) and "names" not in feature:  # Sequence / List of labels
        feature = feature.get("feature")
    names = feature.get("names") if isinstance(feature, dict) else None
    if not isinstance(names, list) or not all(isinstance(n, str) for n in names):
        return None
    return names if 0 < len(names) <= MAX_CLASSES else None


def describe(
    repo_id: str, files: list[Path], text_column: str | None, label_column: str | None
) -> dict:
    """How to read a dataset of any hub id: its text and label columns (given, or ``text`` /
    ``label``), its classes, whether a row holds a list of labels."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    try:
        schema = pq.read_schema(files[0])
    except Exception as err:  # pyarrow's own error types for a file that is not parquet
        raise DataError(f"{files[0].name}: not a parquet file ({err})") from None
    names = schema.names
    text = text_column or ("text" if "text" in names else None)
    label = label_column or ("label" if "label" in names else None)
    for option, column in (("--text-column", text), ("--label-column", label)):
        if column is None or column not in names:
            raise DataError(
                f"{repo_id}: {'no column ' + repr(column) if column else 'which column?'} "
                f"(columns: {', '.join(names[:20])}); name it with {option}"
            )
    assert text is not None and label is not None  # checked above
    kind = schema.field(label).type
    multi = pa.types.is_list(kind) or pa.types.is_large_list(kind)
    classes = class_names(files[0], label)
    if classes is None:
        values: set = set()
        for path in files:
            column = pq.read_table(path, columns=[label]).column(0)
            for value in (column.combine_chunks().flatten() if multi else column).unique():
                values.add(value.as_py())
                if len(values) > MAX_CLASSES:
                    raise DataError(
                        f"{repo_id}: column {label!r} has more than {MAX_CLASSES:,} distinct "
                        "values: not class labels (--label-column)"
                    )
        values.discard(None)
        classes = [str(v) for v in sorted(values, key=lambda v: (str(type(v)), v))]
        ids = all(isinstance(v, int) for v in values)
        if ids:  # bare ids: their own names, in order
            classes = [str(v) for v in range(max(values) + 1)] if values else []
    return {"text_columns": (text,), "label_column": label, "classes": tuple(classes),
            "multi_label": multi}  # fmt: skip


def licence(snapshot: Path) -> str:
    """The licence the dataset card (README.md front matter) states; "unknown" otherwise."""
    card = snapshot / "README.md"
    if not card.is_file():
        return "unknown (the dataset card states none)"
    from huggingface_hub.repocard import metadata_load

    try:
        stated = (metadata_load(card) or {}).get("license")
    except Exception:  # a card whose front matter is not YAML
        stated = None
    if isinstance(stated, list):
        stated = ", ".join(str(s) for s in stated)
    return str(stated) if stated else "unknown (the dataset card states none)"


def remove_cached(path: Path) -> None:
    """Remove a downloaded file from the hub cache (the snapshot's link and the blob it
    points to), so that the next run downloads it again."""
    blob = path.resolve()
    path.unlink(missing_ok=True)
    if blob != path:
        blob.unlink(missing_ok=True)
