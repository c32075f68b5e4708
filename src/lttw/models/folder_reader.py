"""A model folder read once: ``read_folder`` holds every file any part of it reads to its
size limit, reads it into memory, and checks it against the sha256 its lttw.json records
(``folder_files``), an ensemble's parts included; what comes back (``FolderFiles``: bytes
per relative name) is all that checking the settings and building a classifier read
(``model_folder.ModelFolder``), so no file is opened twice or changed between its check
and its use. ``verify`` (``lttw verify``) makes the same checks and reports every problem,
hashing the files in blocks without keeping them."""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from lttw.errors import UserError
from lttw.io import UnreadableFileError
from lttw.models.bundle import check_meta
from lttw.models.ensemble import ENSEMBLE_PARTS
from lttw.models.files import CHECKSUMS, META
from lttw.models.folder_files import (
    file_sha256,
    loader_files,
    required_files,
    settings_sha256,
    size_problem,
    unread_files,
)


@dataclass
class FolderCheck:
    """What ``verify`` found: files checked, problems (each one line naming a file), files
    present that the loader does not read (``ignored``), and those of them inside an
    ensemble's part folder (``stray``: a part holds what its loader reads, nothing else;
    loading skips them, ``lttw verify`` fails)."""

    folder: Path
    checked: int = 0
    problems: list[str] = field(default_factory=list)
    ignored: list[str] = field(default_factory=list)
    stray: list[str] = field(default_factory=list)


@dataclass(frozen=True)
class FolderFiles:
    """A checked model folder in memory: ``root`` (named in messages, never read again),
    ``files`` (relative POSIX name -> bytes; an ensemble's parts under their sub-folder)
    and ``meta`` (its lttw.json, parsed)."""

    root: Path
    files: dict[str, bytes]
    meta: dict

    def where(self, name: str) -> Path:
        return self.root / name

    def has(self, name: str) -> bool:
        return name in self.files

    def json(self, name: str) -> Any:
        """The JSON document of ``name``; a damaged one is a UserError naming the file."""
        return _document(self.files[name], self.root / name)

    def names(self, sub: str) -> list[str]:
        """The names of the files under ``sub/``, sorted."""
        return sorted(name for name in self.files if name.startswith(f"{sub}/"))

    def take(self, name: str) -> bytes:
        """The bytes of ``name``, no longer held here (weights: one copy, where built)."""
        return self.files.pop(name)

    def part(self, name: str) -> FolderFiles:
        """An ensemble's part, a model folder of its own (its files moved there)."""
        prefix = f"{name}/"
        inner = {
            key[len(prefix) :]: self.files.pop(key)
            for key in [key for key in self.files if key.startswith(prefix)]
        }
        return FolderFiles(self.root / name, inner, _document(inner[META], self.root / name / META))


def _document(data: bytes, where: Path) -> Any:
    """The JSON document in ``data``, read from ``where``; a damaged one raises
    ``UnreadableFileError`` naming it (as ``io.read_json`` does)."""
    try:
        return json.loads(data.decode("utf-8"))
    except json.JSONDecodeError as err:
        raise UnreadableFileError(
            f"{where}: not valid JSON ({err.msg} at line {err.lineno} column {err.colno})"
        ) from None
    except UnicodeDecodeError as err:
        raise UnreadableFileError(
            f"{where}: not valid UTF-8 JSON ({err.reason} at byte {err.start})"
        ) from None


def _meta(folder: Path) -> tuple[dict, bytes]:
    """lttw.json, held to its size limit before it is read whole: parsed, and its bytes."""
    problem = size_problem(folder / META, META)
    if problem:
        raise UserError(problem)
    raw = (folder / META).read_bytes()
    meta = _document(raw, folder / META)
    if not isinstance(meta, dict):
        raise UserError(f"{folder / META}: not a JSON object; the file is damaged")
    return meta, raw


def read_folder(folder: Path) -> FolderFiles:
    """``folder``'s files, read once and checked (see the module docstring): the first
    problem is one UserError line naming the file."""
    meta, raw = _meta(folder)
    check_meta(folder, meta)
    files = {META: raw}
    found = _check(folder, meta, True, files)
    if found.problems:
        raise UserError(found.problems[0])
    return FolderFiles(folder, files, meta)


def verify(folder: str | Path, meta: dict | None = None, first_only: bool = False) -> FolderCheck:
    """Check ``folder`` against its recorded checksums (and for the files it needs), hashing
    each file in blocks, keeping none."""
    folder = Path(folder)
    if meta is None:
        meta = _meta(folder)[0]
        check_meta(folder, meta)
    return _check(folder, meta, first_only, None)


def _check(
    folder: Path, meta: dict, first_only: bool, keep: dict[str, bytes] | None, prefix: str = ""
) -> FolderCheck:
    """The checks of ``verify``; where ``keep`` is a dict, each file read is kept in it
    (under ``prefix``: an ensemble's part), hashed in memory."""
    sums = meta.get(CHECKSUMS)
    check = FolderCheck(folder)
    meta_path = folder / META
    if sums is None:
        check.problems.append(
            f"{meta_path}: no checksums recorded (no {CHECKSUMS!r} key), so the folder cannot "
            "be verified; not loaded: retrain, or export the model again from the folder lttw "
            "wrote (a folder assembled by hand: `lttw verify --record DIR` records them)"
        )
        return check
    if not (
        isinstance(sums, dict)
        and all(isinstance(k, str) and isinstance(v, str) for k, v in sums.items())
    ):
        check.problems.append(f"{meta_path}: {CHECKSUMS!r} is not a map of file to digest")
        return check
    names = loader_files(folder)
    for name in names:  # by size on disk, before any is read or hashed
        too_large = size_problem(folder / name, name)
        if too_large:
            check.problems.append(too_large)
            if first_only:
                return check
    present: set[str] = set()
    digests: dict[str, str] = {}
    for name in sorted((set(names) | {n for n in sums if _inside(n)}) - {META}):
        path = folder / name
        if not path.is_file():
            continue
        present.add(name)
        too_large = size_problem(path, name)
        if too_large and name not in names:  # recorded, not a loader file: not yet said
            check.problems.append(too_large)
            if first_only:
                return check
        if too_large:
            continue
        if keep is None:
            digests[name] = file_sha256(path)
        else:
            data = keep[prefix + name] = path.read_bytes()
            digests[name] = hashlib.sha256(data).hexdigest()
    for name, what in required_files(folder, meta).items():
        if name not in present and name not in sums:
            check.problems.append(
                f"{folder / name}: missing (no {what} here); the model folder is incomplete "
                "(copy it again whole, or retrain)"
            )
            if first_only:
                return check
    for name, want in sorted(sums.items()):
        path = folder / name
        if not _inside(name):
            check.problems.append(f"{meta_path}: checksum for a path outside the folder: {name}")
        elif name == META:
            if settings_sha256(meta) != want:
                check.problems.append(
                    f"{path}: its settings changed since the model folder was written (their "
                    "sha256 differs from the one recorded); restore the file or retrain"
                )
        elif name not in present:
            check.problems.append(
                f"{path}: missing (its sha256 is recorded in {meta_path}); "
                "the model folder is incomplete"
            )
        elif name in digests and digests[name] != want:
            check.problems.append(
                f"{path}: changed since the model folder was written (sha256 differs from "
                f"the one recorded in {meta_path}); restore the file or retrain"
            )
        check.checked += 1
        if first_only and check.problems:
            return check
    for name in names:
        if name != META and name not in sums:
            check.problems.append(
                f"{folder / name}: not among the checksums recorded in {meta_path}; "
                "added after the folder was written (remove it, or re-export the folder)"
            )
            if first_only:
                return check
    read = set(names) | set(sums)
    parts = ENSEMBLE_PARTS.get(str(meta.get("variant")), ())
    for part in parts:
        read |= _check_part(check, folder, part, first_only, keep, prefix)
        if first_only and check.problems:
            return check
    unread = unread_files(folder, read)
    check.stray = [name for name in unread if name.split("/")[0] in parts]
    check.ignored = [name for name in unread if name not in check.stray]
    return check


def _inside(name: str) -> bool:
    return ".." not in Path(name).parts and not Path(name).is_absolute()


def _check_part(
    check: FolderCheck,
    folder: Path,
    part: str,
    first_only: bool,
    keep: dict[str, bytes] | None,
    prefix: str,
) -> set[str]:
    """An ensemble's part (a whole model folder of its own, ``folder/part``) checked into
    ``check``; the part's files the loader reads, as paths relative to ``folder``."""
    sub = folder / part
    if not (sub / META).is_file():
        check.problems.append(
            f"{sub / META}: missing (the ensemble's part {part!r}); the model folder is incomplete"
        )
        return set()
    part_meta, raw = _meta(sub)
    check_meta(sub, part_meta)
    if keep is not None:
        keep[f"{prefix}{part}/{META}"] = raw
    found = _check(sub, part_meta, first_only, keep, f"{prefix}{part}/")
    check.problems += found.problems
    check.checked += found.checked
    sums = part_meta.get(CHECKSUMS)
    part_read = set(loader_files(sub)) | set(sums if isinstance(sums, dict) else {})
    return {f"{part}/{name}" for name in part_read | {META}}
