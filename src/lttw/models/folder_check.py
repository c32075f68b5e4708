"""``lttw verify`` and the check before every load: a model folder's files against the
checksums its lttw.json records (``folder_files``), with the sizes, the files it cannot do
without and an ensemble's parts. ``verify`` reports every problem; ``check_folder`` raises
the first as one line."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

from lttw.errors import UserError
from lttw.io import read_json
from lttw.models.ensemble import ENSEMBLE_PARTS
from lttw.models.file_limits import check_size, size_problem
from lttw.models.files import CHECKSUMS, META
from lttw.models.folder_files import (
    file_sha256,
    loader_files,
    required_files,
    settings_sha256,
    unread_files,
)


@dataclass
class FolderCheck:
    """What ``verify`` found: ``recorded`` (checksums present), files checked, problems
    (each one line naming a file), files present that the loader does not read
    (``ignored``), and those of them inside an ensemble's part folder (``stray``: a part
    holds what its loader reads, nothing else; loading skips them, ``lttw verify`` fails)."""

    folder: Path
    recorded: bool
    checked: int = 0
    problems: list[str] = field(default_factory=list)
    ignored: list[str] = field(default_factory=list)
    stray: list[str] = field(default_factory=list)


def verify(folder: str | Path, meta: dict | None = None, first_only: bool = False) -> FolderCheck:
    """Check ``folder`` against its recorded checksums (and for the files it needs)."""
    folder = Path(folder)
    if meta is None:
        check_size(folder / META)
        meta = read_json(folder / META)
    sums = meta.get(CHECKSUMS) if isinstance(meta, dict) else None
    check = FolderCheck(folder, recorded=sums is not None)
    meta_path = folder / META
    if sums is not None and not (
        isinstance(sums, dict)
        and all(isinstance(k, str) and isinstance(v, str) for k, v in sums.items())
    ):
        check.problems.append(f"{meta_path}: {CHECKSUMS!r} is not a map of file to digest")
        return check
    sums = sums or {}
    for name in loader_files(folder):  # by size on disk, before any is read or hashed
        too_large = size_problem(folder / name, name)
        if too_large:
            check.problems.append(too_large)
            if first_only:
                return check
    for name, what in required_files(folder, meta).items():
        if not (folder / name).is_file() and name not in sums:
            check.problems.append(
                f"{folder / name}: missing (no {what} here); the model folder is incomplete "
                "(copy it again whole, or retrain)"
            )
            if first_only:
                return check
    for name, want in sorted(sums.items()):
        path = folder / name
        if ".." in Path(name).parts or Path(name).is_absolute():
            check.problems.append(f"{meta_path}: checksum for a path outside the folder: {name}")
        elif name == META:
            if settings_sha256(meta) != want:
                check.problems.append(
                    f"{path}: its settings changed since the model folder was written (their "
                    "sha256 differs from the one recorded); restore the file or retrain"
                )
        elif not path.is_file():
            check.problems.append(
                f"{path}: missing (its sha256 is recorded in {meta_path}); "
                "the model folder is incomplete"
            )
        elif file_sha256(path) != want:
            check.problems.append(
                f"{path}: changed since the model folder was written (sha256 differs from "
                f"the one recorded in {meta_path}); restore the file or retrain"
            )
        check.checked += 1
        if first_only and check.problems:
            return check
    if check.recorded:
        for name in loader_files(folder):
            if name != META and name not in sums:
                check.problems.append(
                    f"{folder / name}: not among the checksums recorded in {meta_path}; "
                    "added after the folder was written (remove it, or re-export the folder)"
                )
                if first_only:
                    return check
    read = set(loader_files(folder)) | set(sums)
    parts = ENSEMBLE_PARTS.get(str(meta.get("variant")), ())
    for part in parts:
        read |= _verify_part(check, folder, part, first_only)
        if first_only and check.problems:
            return check
    unread = unread_files(folder, read)
    check.stray = [name for name in unread if name.split("/")[0] in parts]
    check.ignored = [name for name in unread if name not in check.stray]
    return check


def _verify_part(check: FolderCheck, folder: Path, part: str, first_only: bool) -> set[str]:
    """An ensemble's part (a whole model folder of its own, ``folder/part``) verified into
    ``check``; the part's files the loader reads, as paths relative to ``folder``."""
    sub = folder / part
    if not (sub / META).is_file():
        check.problems.append(
            f"{sub / META}: missing (the ensemble's part {part!r}); the model folder is incomplete"
        )
        return set()
    found = verify(sub, first_only=first_only)
    check.problems += found.problems
    check.checked += found.checked
    check.recorded = check.recorded and found.recorded
    part_read = set(loader_files(sub)) | set(read_json(sub / META).get(CHECKSUMS) or {})
    return {f"{part}/{name}" for name in part_read | {META}}


def check_folder(folder: str | Path, meta: dict) -> None:
    """Raise a one-line ``UserError`` for the first missing, changed or unrecorded file of
    ``folder`` (what ``Predictor.load`` and the evaluate stage call before reading it)."""
    found = verify(folder, meta, first_only=True)
    if found.problems:
        raise UserError(found.problems[0])
