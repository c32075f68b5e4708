"""``lttw data fetch NAME``: download a dataset and write it in this project's dataset format:
a known name (``lttw.data.fetch_sources``: its source, pinned revision, columns and classes)
or any Hugging Face hub dataset id with parquet files (``lttw.data.hub_fetch``).

Hub files come through ``huggingface_hub`` (retries, resumed downloads, its cache; offline,
what the cache holds); THUCNews's published files through ``lttw.data.download`` into
``DIR/.NAME.download/`` (resumable, bounded in time). What was downloaded is read and checked
(a parquet file, label ids inside the classes); a download that fails the check is removed
(from the cache or the download folder) and the message says so, so that a rerun fetches it
again. Atomic: ``DIR/NAME`` is written in a temporary folder beside it and renamed into place
at the end (``lttw.io.atomic_dir``); its manifest.json records the sha256 of every file, which
``lttw.data.dataset_manifest`` checks whenever the dataset is read. Unreachable, it fails in
one line that names the dataset and the manual alternative (``--from-files``).
"""

from __future__ import annotations

import logging
import os
import shutil
import socket
from dataclasses import dataclass, replace
from pathlib import Path
from urllib.parse import urlparse

import numpy as np
import pandas as pd

from lttw.data import hub_fetch
from lttw.data.dataset_manifest import file_sha256, verify_manifest
from lttw.data.download import download
from lttw.data.fetch_sources import SOURCES, FetchSpec, hub_manual
from lttw.errors import DataError, UserError
from lttw.hub import download_snapshot
from lttw.io import atomic_dir, read_json, write_json

log = logging.getLogger(__name__)

#: the most lines read from a text-format (TSV) file
MAX_LINES = 5_000_000


@dataclass(frozen=True)
class Fetched:
    folder: Path
    rows: dict[str, int]
    present: bool = False  # already there: nothing was downloaded


def spec_of(name: str, revision: str | None = None) -> FetchSpec | None:
    """A known name's source (at ``revision`` where given); None for a hub dataset id."""
    if name in SOURCES:
        spec = SOURCES[name]
        if revision and not spec.hub:
            raise UserError(f"--revision: {name} comes from {spec.files_url()}, not the hub")
        return replace(spec, revision=revision) if revision else spec
    if not hub_fetch.DATASET_ID.fullmatch(name):
        raise UserError(
            f"unknown dataset {name!r}; lttw data fetch knows {', '.join(SOURCES)}, or give a "
            "Hugging Face dataset id (org/name)"
        )
    return None


def unreachable(spec: FetchSpec) -> str | None:
    """Why a published (non-hub) source cannot be used now (None: try it)."""
    url = urlparse(spec.files_url())
    if any(os.environ.get(v) for v in ("HTTPS_PROXY", "https_proxy", "ALL_PROXY", "all_proxy")):
        return None
    try:
        port = url.port or (443 if url.scheme == "https" else 80)
        socket.create_connection((url.hostname, port), timeout=3).close()
    except OSError as err:
        return f"{url.hostname} is not reachable: {err}"
    return None


def _frame_from_parquet(spec: FetchSpec, path: Path) -> pd.DataFrame:
    columns = [*spec.text_columns, spec.label_column]
    try:
        frame = pd.read_parquet(path, columns=columns)
    except Exception as err:
        raise DataError(f"{path.name}: not the expected parquet file ({err})") from None
    text = frame[spec.text_columns[0]].fillna("").astype(str)
    for column in spec.text_columns[1:]:
        text = text + " " + frame[column].fillna("").astype(str)
    return pd.DataFrame({"text": text.str.strip(), "label": frame[spec.label_column]})


def _frame_from_tsv(path: Path) -> pd.DataFrame:
    texts, labels = [], []
    with path.open(encoding="utf-8") as f:
        for number, line in enumerate(f, 1):
            if number > MAX_LINES:
                raise DataError(f"{path.name}: more than {MAX_LINES:,} lines")
            if not line.strip():
                continue
            text, sep, label = line.rstrip("\n").rpartition("\t")
            if not sep or not label.strip().isdigit():
                raise DataError(f"{path.name} line {number}: not 'text<TAB>label-id'")
            texts.append(text.strip())
            labels.append(int(label))
    return pd.DataFrame({"text": texts, "label": labels})


def read_split(spec: FetchSpec, files: list[Path]) -> pd.DataFrame:
    """The rows of one split's downloaded files, as columns text and label (multi-label:
    labels, lists of class names), labels checked against the classes."""
    read = _frame_from_tsv if spec.reader == "tsv" else lambda p: _frame_from_parquet(spec, p)
    frame = pd.concat([read(p) for p in files], ignore_index=True)
    p = len(spec.classes)
    where = f"{files[0].name}: a label outside the {p} classes (ids 0..{p - 1})"
    if spec.multi_label:
        ids = [_ids(pd.Series(v), spec.classes) for v in frame["label"]]
        if any(((i < 0) | (i >= p)).any() for i in ids):
            raise DataError(where)
        names = [[spec.classes[j] for j in i] for i in ids]
        return pd.DataFrame({"text": frame["text"], "labels": names})
    labels = _ids(frame["label"], spec.classes)
    if len(labels) and (labels.min() < 0 or labels.max() >= p):
        raise DataError(where)
    return pd.DataFrame({"text": frame["text"], "label": labels})


def _ids(values: pd.Series, classes: tuple[str, ...]) -> np.ndarray:
    """Label ids: integers as they are, names by their place in ``classes``; -1 for a
    missing label or a name that is no class."""
    if pd.api.types.is_integer_dtype(values) or (len(values) and values.map(type).eq(int).all()):
        return values.to_numpy(dtype=np.int64)
    index = {c: i for i, c in enumerate(classes)}
    return np.asarray([index.get(str(v), -1) if v is not None else -1 for v in values], np.int64)


def manifest_of(spec: FetchSpec, rows: dict, checksums: dict, commit: str | None) -> dict:
    out = {
        "name": spec.name,
        "description": spec.description,
        "text_column": "text",
        "label_column": "labels" if spec.multi_label else "label",
        "classes": list(spec.classes),
        "splits": {split: f"{split}.parquet" for split in rows},
        "rows": rows,
        "complete": True,
        "hub_dataset": spec.hub,
        "source": spec.source(),
        "revision": commit or spec.revision,
        "licence": spec.licence,
        "sha256": checksums,
        "fetched_by": "lttw data fetch",
    }
    if spec.multi_label:
        out["multi_label"] = True
    if spec.language:
        out["language"] = spec.language
    if spec.notes:
        out["notes"] = spec.notes
    return out


def fetch(
    name: str,
    to: Path,
    from_files: Path | None = None,
    force: bool = False,
    revision: str | None = None,
    splits: list[str] | None = None,
    text_column: str | None = None,
    label_column: str | None = None,
) -> Fetched:
    """Download ``name`` (a known name or a hub dataset id; or read a known name's files
    from ``from_files``) and write ``to/FOLDER`` (the name, or the id's last part)."""
    spec = spec_of(name, revision)
    if spec is not None and (splits or text_column or label_column):
        raise UserError(f"{name} is read as its source's own splits and columns; --split, "
                        "--text-column and --label-column are for other hub datasets")  # fmt: skip
    if spec is None and from_files is not None:
        raise UserError(f"--from-files is for the known names ({', '.join(SOURCES)})")
    target = Path(to) / (spec.name if spec else name.rsplit("/", 1)[-1])
    if target.exists() and not force:
        return _present(target, spec.hub if spec else name)
    if spec is None:
        spec, local = _any_hub_dataset(name, revision, splits, text_column, label_column)
    elif from_files is not None:
        local = _from_files(spec, from_files)
    else:
        local, commit = _download(spec, Path(to))
        spec = replace(spec, revision=commit or spec.revision)
    try:
        frames = {split: read_split(spec, files) for split, files in local.items()}
    except DataError as err:
        if from_files is not None:
            raise
        _remove_downloads(spec, Path(to), local)
        raise DataError(f"{err}; the download is removed: rerun to fetch it again") from None
    with atomic_dir(target) as tmp:
        checksums = {}
        for split, frame in frames.items():
            frame.to_parquet(tmp / f"{split}.parquet", index=False, compression="zstd")
            checksums[f"{split}.parquet"] = file_sha256(tmp / f"{split}.parquet")
        rows = {split: len(frame) for split, frame in frames.items()}
        write_json(tmp / "manifest.json", manifest_of(spec, rows, checksums, spec.revision))
    shutil.rmtree(Path(to) / f".{spec.name}.download", ignore_errors=True)
    return Fetched(target, rows)


def _present(target: Path, hub: str | None) -> Fetched:
    """A folder already there: a complete copy of ``hub`` (checked against its manifest's
    sha256)."""
    manifest = target / "manifest.json"
    present = read_json(manifest) if manifest.is_file() else {}
    if isinstance(present, dict) and present.get("complete"):
        if hub and present.get("hub_dataset") not in (None, hub):
            raise UserError(f"{target} holds {present.get('hub_dataset')}, not {hub}: give "
                            "--to another folder, or --force to replace it")  # fmt: skip
        verify_manifest(target, present)
        return Fetched(target, present.get("rows", {}), present=True)
    raise UserError(
        f"{target} exists and is not a complete copy (the embedded sample, or another "
        "folder): give --to another folder, or --force to replace it"
    )


def _from_files(spec: FetchSpec, folder: Path) -> dict[str, list[Path]]:
    local = {split: [folder / p.rsplit("/", 1)[-1] for p in ps] for split, ps in spec.files.items()}
    missing = [str(p) for files in local.values() for p in files if not p.is_file()]
    if missing:
        raise UserError(f"--from-files: {', '.join(missing)} not found ({spec.manual})")
    return local


def _download(spec: FetchSpec, to: Path) -> tuple[dict[str, list[Path]], str | None]:
    """A known source's files: the hub's through its cache, a published one's into
    ``to/.NAME.download``; and the commit served (hub)."""
    if spec.hub:
        wanted = [p for paths in spec.files.values() for p in paths]
        try:
            snap = Path(
                download_snapshot(spec.hub, spec.revision, "dataset", allow_patterns=wanted)
            )
        except UserError as err:
            raise DataError(f"lttw data fetch {spec.name}: {err}; manual alternative: "
                            f"{spec.manual}") from None  # fmt: skip
        missing = [p for p in wanted if not (snap / p).is_file()]
        if missing:
            raise DataError(f"{spec.source()}: no file {missing[0]} at that revision")
        return {split: [snap / p for p in ps] for split, ps in spec.files.items()}, snap.name
    reason = unreachable(spec)
    if reason:
        raise DataError(f"lttw data fetch {spec.name}: {spec.source()} cannot be reached "
                        f"({reason}); manual alternative: {spec.manual}")  # fmt: skip
    downloads = to / f".{spec.name}.download"
    downloads.mkdir(parents=True, exist_ok=True)
    local: dict[str, list[Path]] = {}
    for split, paths in spec.files.items():
        local[split] = []
        for url in paths:
            dest = downloads / url.rsplit("/", 1)[-1]
            log.info("fetching %s", url)
            download(url, dest)
            local[split].append(dest)
    return local, None


def _any_hub_dataset(name, revision, splits, text_column, label_column):
    """The spec and files of a hub dataset of any id (``hub_fetch``)."""
    snap, found = hub_fetch.fetch_files(name, revision, hub_fetch.parse_splits(splits))
    local = {split: [snap / p for p in paths] for split, paths in found.items()}
    first = next(iter(local.values()))
    try:
        info = hub_fetch.describe(name, [p for ps in local.values() for p in ps], text_column,
                                  label_column)  # fmt: skip
    except DataError as err:
        for path in first:
            hub_fetch.remove_cached(path)
        raise DataError(f"{err}; the download is removed: rerun to fetch it again") from None
    files = {split: tuple(paths) for split, paths in found.items()}
    spec = FetchSpec(
        name=name.rsplit("/", 1)[-1],
        description=f"the Hugging Face dataset {name}",
        files=files,
        licence=hub_fetch.licence(snap),
        manual=hub_manual(name, snap.name, files).replace("NAME", name),
        hub=name,
        revision=snap.name,
        **info,
    )
    return spec, local


def _remove_downloads(spec: FetchSpec, to: Path, local: dict[str, list[Path]]) -> None:
    if spec.hub:
        for files in local.values():
            for path in files:
                hub_fetch.remove_cached(path)
    shutil.rmtree(to / f".{spec.name}.download", ignore_errors=True)
