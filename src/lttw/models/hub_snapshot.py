"""Where a model folder is: a local path, or a Hugging Face hub id (``org/name``) downloaded
by ``huggingface_hub.snapshot_download`` into its cache (its retries, resumed downloads and
locks; ``HF_HUB_OFFLINE=1`` serves what the cache holds). A downloaded folder is then read
like a local one: ``Predictor.load`` checks every file against the sha256 map in its
``lttw.json`` (``models.folder_files``), so a changed download is refused.

The way back, ``lttw push``, is ``models.hub_push``. Every hub failure is one ``UserError``
line.
"""

from __future__ import annotations

import re
from pathlib import Path

from lttw.errors import UserError
from lttw.hub import download_snapshot

#: ``org/name`` (the hub's own rule: letters, digits, ``-``, ``_``, ``.``; 96 characters)
HUB_ID = re.compile(r"[A-Za-z0-9][\w.-]{0,95}/[A-Za-z0-9][\w.-]{0,95}")
#: a revision: a branch, tag or commit (no spaces, no ``..``)
REVISION = re.compile(r"[\w./-]{1,200}")


def is_hub_id(text: str) -> bool:
    """Whether ``text`` reads as a hub id rather than a local path: ``org/name``, and its
    first part is no folder here (``models/final`` inside a project stays a path)."""
    return bool(HUB_ID.fullmatch(text)) and not Path(text.split("/")[0]).exists()


def check_revision(revision: str | None) -> None:
    if revision is not None and (not REVISION.fullmatch(revision) or ".." in revision):
        raise UserError(f"--revision {revision!r}: not a branch, tag or commit name")


def resolve_model_location(name_or_path: str | Path, revision: str | None = None) -> Path:
    """The local folder of ``name_or_path``: an existing path as it is, a hub id
    downloaded (or found in the cache) at ``revision`` (default: main)."""
    path = Path(name_or_path).expanduser()
    text = str(name_or_path)
    if path.exists() or not is_hub_id(text):
        if revision is not None:
            raise UserError(f"--revision {revision}: only for a hub id (org/name), not {text}")
        return path
    check_revision(revision)
    return Path(download_snapshot(text, revision, repo_type="model"))
