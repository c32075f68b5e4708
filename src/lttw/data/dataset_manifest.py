"""A dataset folder's files checked against its ``manifest.json``: the ``sha256`` map that
``lttw data fetch`` writes (file -> hex digest). A manifest that records digests has each
listed file there with that digest; one that calls itself ``"complete": true`` must record
the digest of every split file it names. Checked whenever the dataset is read (the pipeline,
``lttw data check``) and before ``lttw data fetch`` calls a folder already there; the first
problem is one ``DataError`` line naming the file."""

from __future__ import annotations

import hashlib
import re
from pathlib import Path

from lttw.errors import DataError

SHA256 = re.compile(r"[0-9a-f]{64}")
_BLOCK = 1 << 20


def _sha256(path: Path) -> str:
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
    sums = {} if sums is None else sums
    again = f"fetch it again (lttw data fetch {manifest.get('hub_dataset') or folder.name} --force)"
    if not isinstance(sums, dict) or not all(
        isinstance(k, str) and isinstance(v, str) and SHA256.fullmatch(v) for k, v in sums.items()
    ):
        raise DataError(f"{path}: 'sha256' is not a map of file -> sha256 digest; {again}")
    splits = manifest.get("splits")
    for name in splits.values() if isinstance(splits, dict) else ():
        if complete and name not in sums:
            raise DataError(f"{path}: says complete but records no sha256 for {name}; {again}")
    for name, want in sums.items():
        file = folder / name
        if Path(name).is_absolute() or ".." in Path(name).parts:
            raise DataError(f"{path}: a sha256 for a path outside the folder: {name}")
        if not file.is_file():
            raise DataError(f"{file}: missing (its sha256 is recorded in {path}); {again}")
        if _sha256(file) != want:
            raise DataError(
                f"{file}: changed since it was fetched (sha256 differs from {path}); {again}"
            )
