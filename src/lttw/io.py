"""Atomic writers for the pipeline's safe artifact formats (parquet, JSON, CSV, safetensors).

Every writer writes to a temporary file beside the target and renames it into place, so a
stage killed mid-way never leaves a half-written file that looks complete. The temporary a
killed writer left behind (``.<name>.<8 random chars>.tmp``) is removed by the next write of
the same target.
Files and folders get the modes any other tool gives them under the process umask (0644 /
0755 under umask 022), not ``mkstemp`` / ``mkdtemp``'s private 0600 / 0700.
"""

from __future__ import annotations

import contextlib
import json
import os
import re
import shutil
import struct
import tempfile
from collections.abc import Iterator
from pathlib import Path

import numpy as np
import yaml

from lttw.errors import UserError

#: the largest parameters, pipeline or grid file read (a hand-written one is a few KB)
MAX_YAML_BYTES = 1 << 20


class _NoAliasSafeLoader(yaml.SafeLoader):
    """``yaml.safe_load`` without aliases (nine nested ``*name`` levels expand to gigabytes,
    and no file a user writes for lttw needs them) and without a key written twice in one
    mapping (where the last one would win silently)."""

    def compose_node(self, parent, index):
        if self.check_event(yaml.AliasEvent):
            mark = self.peek_event().start_mark
            raise yaml.YAMLError(
                f"line {mark.line + 1}: an alias (*name); aliases are not accepted, "
                "write the value out"
            )
        return super().compose_node(parent, index)

    def construct_mapping(self, node, deep=False):
        seen = set()
        for key_node, _ in node.value:
            key = self.construct_object(key_node, deep=True)
            if not isinstance(key, (str, int, float, bool)) or key is None:
                continue  # safe_load's own error for an unhashable key follows
            if key in seen:
                raise yaml.YAMLError(
                    f"line {key_node.start_mark.line + 1}: {key!r} twice in one mapping"
                )
            seen.add(key)
        return super().construct_mapping(node, deep)


def load_yaml(text: str):
    """Parse YAML as ``yaml.safe_load`` does, refusing aliases and repeated keys
    (``yaml.YAMLError``)."""
    return yaml.load(text, Loader=_NoAliasSafeLoader)


def read_yaml(path: str | Path):
    """A YAML file of at most ``MAX_YAML_BYTES``, parsed by ``load_yaml``; ``yaml.YAMLError``
    where it is larger or not YAML."""
    path = Path(path)
    size = path.stat().st_size
    if size > MAX_YAML_BYTES:
        raise yaml.YAMLError(f"{size:,} bytes; at most {MAX_YAML_BYTES:,} are read")
    return load_yaml(path.read_text(encoding="utf-8"))


def read_yaml_or_fail(path: str | Path):
    """``read_yaml``, with a file that cannot be read or is not YAML a one-line
    ``UserError`` naming it (a grid, a search space, the checkout's params.yaml)."""
    try:
        return read_yaml(path)
    except OSError as err:
        raise UserError(f"{path}: not readable ({err.strerror})") from None
    except yaml.YAMLError as err:
        raise UserError(f"{path}: not YAML ({str(err).splitlines()[0]})") from None


class UnreadableFileError(UserError, ValueError):
    """A file that exists but cannot be parsed; the message names it and says why."""


def _umask() -> int:
    """The process umask (read without changing it where /proc allows)."""
    try:
        with open("/proc/self/status", encoding="ascii") as status:
            for line in status:
                if line.startswith("Umask:"):
                    return int(line.split()[1], 8)
    except (OSError, ValueError):
        pass
    mask = os.umask(0o022)  # elsewhere: set and restore
    os.umask(mask)
    return mask


def _remove_stale_temporaries(path: Path) -> None:
    """Delete what an earlier, killed write of ``path`` left: the temporaries that
    ``tempfile.mkstemp`` / ``mkdtemp`` named after exactly this target."""
    if not path.parent.is_dir():
        return
    stale = re.compile(rf"\.{re.escape(path.name)}\.[a-z0-9_]{{8}}\.tmp")
    for entry in path.parent.iterdir():
        if stale.fullmatch(entry.name):
            if entry.is_dir() and not entry.is_symlink():
                shutil.rmtree(entry, ignore_errors=True)
            else:
                entry.unlink(missing_ok=True)


def remove_inside(path: str | Path, root: str | Path) -> None:
    """Delete the folder ``path`` (nothing where it does not exist), only where it lies
    strictly inside ``root``, the folder that owns it: a name that resolves elsewhere (``..``,
    an absolute path, a link out) raises ``ValueError`` and nothing is deleted."""
    path, root = Path(path), Path(root).resolve()
    resolved = path.resolve()
    if resolved == root or not resolved.is_relative_to(root):
        raise ValueError(f"{path}: not inside {root}; refusing to delete it")
    if path.is_symlink():
        raise ValueError(f"{path}: a link; refusing to delete what it points to")
    shutil.rmtree(path, ignore_errors=True)


@contextlib.contextmanager
def atomic_path(path: str | Path) -> Iterator[Path]:
    """Yield a temporary path beside ``path``; on success rename it to ``path``."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    _remove_stale_temporaries(path)
    fd, tmp_name = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    os.close(fd)
    tmp = Path(tmp_name)
    try:
        yield tmp
        # mkstemp's (or the writer's, e.g. safetensors') 0600 -> what open() would have given
        tmp.chmod(0o666 & ~_umask())
        os.replace(tmp, path)
    finally:
        tmp.unlink(missing_ok=True)


@contextlib.contextmanager
def atomic_dir(path: str | Path) -> Iterator[Path]:
    """Yield a fresh temporary directory; on success it replaces ``path`` whole."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    _remove_stale_temporaries(path)
    tmp = Path(tempfile.mkdtemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent))
    tmp.chmod(0o777 & ~_umask())  # mkdtemp's 0700 -> what mkdir() would have given
    try:
        yield tmp
        if path.exists():
            shutil.rmtree(path)
        os.replace(tmp, path)
    finally:
        if tmp.exists():
            shutil.rmtree(tmp, ignore_errors=True)


def write_json(path: str | Path, obj) -> None:
    with atomic_path(path) as tmp:
        tmp.write_text(
            json.dumps(obj, indent=2, sort_keys=False, default=_jsonable) + "\n", encoding="utf-8"
        )


def numbers_only(obj):
    """``obj`` with what is not a number left out: a DVC metrics file holds numbers only
    (``dvc metrics show`` / ``dvc exp show`` make a column of every value), so words go to
    the parameters, the model folder's ``lttw.json`` or a report. True / False become 1 / 0;
    dicts and lists are kept where something numeric is left in them; numpy scalars become
    plain numbers; None where nothing is left."""
    if isinstance(obj, (bool, np.bool_)):
        return int(obj)
    if isinstance(obj, (int, float, np.integer, np.floating)):
        return obj.item() if isinstance(obj, np.generic) else obj
    if isinstance(obj, dict):
        kept = {str(k): numbers_only(v) for k, v in obj.items()}
        return {k: v for k, v in kept.items() if v is not None} or None
    if isinstance(obj, (list, tuple)):
        kept = [numbers_only(v) for v in obj]
        return kept if kept and all(v is not None for v in kept) else None
    return None


def write_metrics(path: str | Path, obj: dict) -> None:
    """A DVC metrics file: ``obj``'s numbers (``numbers_only``), written atomically."""
    write_json(path, numbers_only(obj) or {})


def read_json(path: str | Path):
    """The JSON document in ``path``; a damaged file raises ``UnreadableFileError`` naming it."""
    try:
        return json.loads(Path(path).read_text(encoding="utf-8"))
    except json.JSONDecodeError as err:
        raise UnreadableFileError(
            f"{path}: not valid JSON ({err.msg} at line {err.lineno} column {err.colno})"
        ) from None
    except UnicodeDecodeError as err:
        raise UnreadableFileError(
            f"{path}: not valid UTF-8 JSON ({err.reason} at byte {err.start})"
        ) from None


def write_parquet(path: str | Path, frame) -> None:
    with atomic_path(path) as tmp:
        frame.to_parquet(tmp, index=False)


def write_csv(path: str | Path, frame) -> None:
    with atomic_path(path) as tmp:
        frame.to_csv(tmp, index=False)


def write_arrays(
    path: str | Path, metadata: dict[str, str] | None = None, **arrays: np.ndarray
) -> None:
    """Write named numpy arrays as safetensors: no pickle, and byte-identical for identical
    inputs (unlike ``np.savez``, whose zip entries carry the time), so DVC hashes are stable."""
    from safetensors.numpy import save_file

    with atomic_path(path) as tmp:
        save_file(
            {k: np.ascontiguousarray(v) for k, v in arrays.items()}, str(tmp), metadata=metadata
        )
        if metadata and len(metadata) > 1:
            sort_safetensors_metadata(tmp)


def sort_safetensors_metadata(path: str | Path) -> None:
    """Rewrite a safetensors header in place with its ``__metadata__`` keys sorted.

    safetensors keeps the metadata in a hash map, so the order of its keys in the file, and
    with it the file's bytes and DVC hash, change from one process to the next; sorted keys
    make identical inputs give identical files. The header keeps its length (same keys and
    values, compact JSON, space padding), so the tensor data does not move."""
    with open(path, "r+b") as f:
        (length,) = struct.unpack("<Q", f.read(8))
        raw = f.read(length)
        header = json.loads(raw)
        header["__metadata__"] = dict(sorted(header.get("__metadata__", {}).items()))
        ordered = {"__metadata__": header.pop("__metadata__"), **header}
        new = json.dumps(ordered, separators=(",", ":"), ensure_ascii=False).encode("utf-8")
        if len(new) > length:  # cannot happen for serde's compact JSON; keep the file as is
            return
        f.seek(8)
        f.write(new + b" " * (length - len(new)))


def read_arrays(path: str | Path) -> dict[str, np.ndarray]:
    from safetensors.numpy import load_file

    return load_file(str(path))


def read_arrays_metadata(path: str | Path) -> dict[str, str]:
    """The ``metadata`` that ``write_arrays`` stored (empty where none), arrays unread."""
    from safetensors import safe_open

    with safe_open(str(path), framework="numpy") as f:
        return dict(f.metadata() or {})


def _jsonable(obj):
    if isinstance(obj, np.generic):
        return obj.item()
    if isinstance(obj, np.ndarray):
        return obj.tolist()
    if isinstance(obj, Path):
        return str(obj)
    raise TypeError(f"not JSON serialisable: {type(obj).__name__}")
