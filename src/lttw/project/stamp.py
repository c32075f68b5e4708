"""The code stamp of a user project, ``lttw-version.json``: the lttw version and a digest of
its code. In a project made by ``lttw init`` every stage depends on it in place of the code
itself; ``lttw init`` writes it, ``lttw init --upgrade`` rewrites it, and a stage run from
the package (``lttw.stages``) stops where it differs from the installed lttw: such a run
would store its outputs under the wrong dependency hash."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

from lttw.errors import UserError

#: the code stamp of a user project: every stage depends on it in place of the code
STAMP = "lttw-version.json"

_PACKAGE = Path(__file__).resolve().parents[1]  # the lttw package


def code_digest() -> str:
    """sha256 over the lttw package's Python files (path and bytes, sorted): it changes with
    any code a stage can run."""
    digest = hashlib.sha256()
    for path in sorted(p for p in _PACKAGE.rglob("*.py") if "__pycache__" not in p.parts):
        digest.update(f"{path.relative_to(_PACKAGE)}\n".encode())
        digest.update(path.read_bytes())
    return digest.hexdigest()


def stamp() -> dict:
    """The content of ``lttw-version.json`` for the installed lttw."""
    from lttw import __version__

    return {"lttw": __version__, "code_sha256": code_digest()}


def read_stamp(path: Path) -> dict | None:
    """A project's ``lttw-version.json``, or None where it is missing or unreadable."""
    try:
        found = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    return found if isinstance(found, dict) else None


def check_stamp(project: Path) -> None:
    """UserError unless ``project/lttw-version.json`` matches the installed lttw."""
    found, installed = read_stamp(project / STAMP), stamp()
    if found != installed:
        said = f"lttw {found.get('lttw')}" if found else "nothing readable"
        raise UserError(
            f"{project / STAMP}: says {said}, code {str((found or {}).get('code_sha256'))[:12]}; "
            f"the installed lttw is {installed['lttw']}, code {installed['code_sha256'][:12]}: "
            "run `lttw init --upgrade .` (then `dvc repro` reruns what the new code changes)"
        )
