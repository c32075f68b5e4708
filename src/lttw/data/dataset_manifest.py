"""A dataset folder's files checked against its ``manifest.json``: the ``sha256`` map that
``lttw data fetch`` writes (file -> hex digest). A manifest that records digests has each
listed file there with that digest; one that calls itself ``"complete": true`` must back it
for every split file it names: by its digest, or (a manifest without digests, made by
another tool) by the file's row count in its ``rows``, read from the parquet metadata. Checked whenever the dataset is read (the pipeline,
``lttw data check``) and before ``lttw data fetch`` calls a folder already there; the first
problem is one ``DataError`` line naming the file."""

from __future__ import annotations

import hashlib
import re
from pathlib import Path

from lttw.errors import DataError

SHA256 = re.compile(r"[0-9a-f]{64}")
_BLOCK = 1 << 20


def file_sha256(path: Path) -> str:
    """The hex sha256 of a dataset file, read in 1 MiB blocks: what a manifest records."""
    digest = hashlib.sha256()
    with path.open("rb") as f:
        while block := f.read(_BLOCK):
            digest.update(block)
    return digest.hexdigest()


def verify_manifest(folder: Path, manifest: dict) -> None:
    """Raise a one-line ``DataError`` for the first file of ``folder`` that its manifest's
    ``sha256`` map does not vouch for (see the module docstring)."""
    path = folder / "manifest.json"
    sums = manifest.get("sha256")
    complete = manifest.get("complete") is True
    if sums is None and not complete:
        return  # a folder made by hand: no digests claimed
    again = f"fetch it again (lttw data fetch {manifest.get('hub_dataset') or folder.name} --force)"
    splits = manifest.get("splits")
    splits = splits if isinstance(splits, dict) else {}
    if sums is None:  # complete, without digests: each split file there with its rows
        _check_rows(folder, manifest, splits, again)
        return
    if not isinstance(sums, dict) or not all(
        isinstance(k, str) and isinstance(v, str) and SHA256.fullmatch(v) for k, v in sums.items()
    ):
        raise DataError(f"{path}: 'sha256' is not a map of file -> sha256 digest; {again}")
    for name in splits.values():
        if complete and name not in sums:
            raise DataError(f"{path}: says complete but records no sha256 for {name}; {again}")
    for name, want in sums.items():
        file = folder / name
        if Path(name).is_absolute() or ".." in Path(name).parts:
            raise DataError(f"{path}: a sha256 for a path outside the folder: {name}")
        if not file.is_file():
            raise DataError(f"{file}: missing (its sha256 is recorded in {path}); {again}")
        if file_sha256(file) != want:
            raise DataError(
                f"{file}: changed since it was fetched (sha256 differs from {path}); {again}"
            )


def _check_rows(folder: Path, manifest: dict, splits: dict, again: str) -> None:
    """A complete manifest without digests: every split file present, and a parquet file's
    rows (its metadata) as many as the manifest's ``rows`` says."""
    path = folder / "manifest.json"
    rows = manifest.get("rows")
    rows = rows if isinstance(rows, dict) else {}
    for split, name in splits.items():
        file = folder / str(name)
        if not file.is_file():
            raise DataError(f"{file}: missing (named in {path}); {again}")
        want = rows.get(split)
        if not isinstance(want, int) or isinstance(want, bool):
            raise DataError(
                f"{path}: says complete but records neither a sha256 nor the rows of {name}; "
                f"{again}"
            )
        if file.suffix in (".parquet", ".pq"):
            import pyarrow.parquet as pq

            try:
                got = pq.ParquetFile(file).metadata.num_rows
            except Exception as err:  # pyarrow's errors on a file that is no parquet
                raise DataError(f"{file}: not a readable parquet file ({err}); {again}") from None
            if got != want:
                raise DataError(f"{file}: {got:,} rows, {path} says {want:,}; {again}")
