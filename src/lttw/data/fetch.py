"""``lttw data fetch NAME``: download a dataset from its public source
(``lttw.data.fetch_sources``) and write it in this project's dataset format.

Resumable: each file is downloaded into ``DIR/.NAME.download/`` as ``FILE.part`` and renamed
to ``FILE`` once whole and checked (its sha256 against the one the hub states for it); a rerun
skips whole files and continues a ``.part`` where it stopped (an HTTP range request).
Atomic: the dataset folder ``DIR/NAME`` is written in a temporary folder beside it and renamed
into place at the end (``lttw.io.atomic_dir``), so a broken download or conversion leaves no
``DIR/NAME`` that looks complete; the download folder is removed after success.
Offline (``HF_HUB_OFFLINE`` or the source unreachable) it fails at once, in one line that names
the dataset and the manual alternative (``--from-files``: the same files, downloaded elsewhere).
"""

from __future__ import annotations

import logging
import os
import shutil
import socket
from dataclasses import dataclass
from pathlib import Path
from urllib.parse import urlparse

import numpy as np
import pandas as pd

from lttw.data.download import download, sha256_of
from lttw.data.fetch_sources import HUB_ENDPOINT, SOURCES, FetchSpec
from lttw.errors import DataError, UserError
from lttw.hub import offline_reason
from lttw.io import atomic_dir, read_json, write_json

log = logging.getLogger(__name__)

#: the most lines read from a text-format (TSV) file
MAX_LINES = 5_000_000


@dataclass(frozen=True)
class Fetched:
    folder: Path
    rows: dict[str, int]
    present: bool = False  # already there: nothing was downloaded


def spec_of(name: str) -> FetchSpec:
    if name not in SOURCES:
        raise UserError(f"unknown dataset {name!r}; lttw data fetch knows {', '.join(SOURCES)}")
    return SOURCES[name]


def file_url(spec: FetchSpec, path: str) -> str:
    """The download address of one file: a hub file at the pinned revision (through
    ``HF_ENDPOINT`` when set), or the published URL itself."""
    if not spec.hub:
        return path
    from huggingface_hub import hf_hub_url

    endpoint = os.environ.get("HF_ENDPOINT", HUB_ENDPOINT).rstrip("/")
    return hf_hub_url(
        spec.hub, path, repo_type="dataset", revision=spec.revision, endpoint=endpoint
    )


def unreachable(spec: FetchSpec) -> str | None:
    """Why the source cannot be used now (None: try it)."""
    if spec.hub:
        return offline_reason()
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
    if spec.multi_label:
        ids = [np.asarray(v, dtype=np.int64) for v in frame["label"]]
        if any(((i < 0) | (i >= p)).any() for i in ids):
            raise DataError(f"{files[0].name}: a label id outside 0..{p - 1}")
        names = [[spec.classes[j] for j in i] for i in ids]
        return pd.DataFrame({"text": frame["text"], "labels": names})
    labels = frame["label"].to_numpy(dtype=np.int64)
    if len(labels) and (labels.min() < 0 or labels.max() >= p):
        raise DataError(f"{files[0].name}: a label id outside 0..{p - 1}")
    return pd.DataFrame({"text": frame["text"], "label": labels})


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


def fetch(name: str, to: Path, from_files: Path | None = None, force: bool = False) -> Fetched:
    """Download ``name`` (or read its files from ``from_files``) and write ``to/name``."""
    spec = spec_of(name)
    target = Path(to) / name
    if target.exists() and not force:
        manifest = target / "manifest.json"
        present = read_json(manifest) if manifest.is_file() else {}
        if isinstance(present, dict) and present.get("complete"):
            return Fetched(target, present.get("rows", {}), present=True)
        raise UserError(
            f"{target} exists and is not a complete copy (the embedded sample, or another "
            "folder): give --to another folder, or --force to replace it"
        )
    downloads = Path(to) / f".{name}.download"
    paths = {split: [p.rsplit("/", 1)[-1] for p in files] for split, files in spec.files.items()}
    commit = None
    local: dict[str, list[Path]] = {}
    if from_files is not None:
        local = {split: [Path(from_files) / f for f in files] for split, files in paths.items()}
        missing = [str(p) for files in local.values() for p in files if not p.is_file()]
        if missing:
            raise UserError(f"--from-files: {', '.join(missing)} not found ({spec.manual})")
    else:
        reason = unreachable(spec)
        if reason:
            raise DataError(
                f"lttw data fetch {name}: {spec.source()} cannot be reached ({reason}); "
                f"manual alternative: {spec.manual}"
            )
        token = _token() if spec.hub else None
        downloads.mkdir(parents=True, exist_ok=True)
        for split, files in spec.files.items():
            local[split] = []
            for path in files:
                dest = downloads / path.rsplit("/", 1)[-1]
                log.info("fetching %s", file_url(spec, path))
                commit = download(file_url(spec, path), dest, token).get("commit") or commit
                local[split].append(dest)
    frames = {split: read_split(spec, files) for split, files in local.items()}
    with atomic_dir(target) as tmp:
        checksums = {}
        for split, frame in frames.items():
            frame.to_parquet(tmp / f"{split}.parquet", index=False, compression="zstd")
            checksums[f"{split}.parquet"] = sha256_of(tmp / f"{split}.parquet")
        rows = {split: len(frame) for split, frame in frames.items()}
        record = manifest_of(spec, rows, checksums, commit)
        write_json(tmp / "manifest.json", record)
    shutil.rmtree(downloads, ignore_errors=True)
    return Fetched(target, rows)


def _token() -> str | None:
    try:
        from huggingface_hub import get_token

        return get_token()
    except Exception:  # no token store: anonymous
        return None
