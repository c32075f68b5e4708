"""Where a model folder is: a local path, or a Hugging Face hub id (``org/name``) downloaded
by ``huggingface_hub.snapshot_download`` into its cache (its retries, resumed downloads and
locks; ``HF_HUB_OFFLINE=1`` serves what the cache holds). A downloaded folder is then read
like a local one: ``Predictor.load`` checks every file against the sha256 map in its
``lttw.json`` (``models.folder_files``), so a changed download is refused.

``push_folder`` is the way back: the folder checked as ``lttw verify`` checks it, then
``create_repo`` + ``upload_folder``. Every hub failure is one ``UserError`` line.
"""

from __future__ import annotations

import os
import re
from pathlib import Path

from lttw.errors import UserError, one_line

#: ``org/name`` (the hub's own rule: letters, digits, ``-``, ``_``, ``.``; 96 characters)
HUB_ID = re.compile(r"[A-Za-z0-9][\w.-]{0,95}/[A-Za-z0-9][\w.-]{0,95}")
#: a revision: a branch, tag or commit (no spaces, no ``..``)
REVISION = re.compile(r"[\w./-]{1,200}")


def endpoint() -> str:
    """The hub's address: ``HF_ENDPOINT`` as set now (huggingface_hub reads it once)."""
    from huggingface_hub import constants

    return os.environ.get("HF_ENDPOINT", constants.ENDPOINT).rstrip("/")


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
    return Path(_download(text, revision, repo_type="model"))


def hub_failure(repo_id: str, revision: str | None, err: Exception, kind: str = "model") -> str:
    """One line saying why ``repo_id`` could not be had from the hub (or its cache)."""
    from huggingface_hub.errors import (
        GatedRepoError,
        LocalEntryNotFoundError,
        OfflineModeIsEnabled,
        RepositoryNotFoundError,
        RevisionNotFoundError,
    )

    where = f"{kind} {repo_id}" + (f" at revision {revision}" if revision else "")
    if isinstance(err, RevisionNotFoundError):
        return f"{where}: the hub ({endpoint()}) has no such revision"
    if isinstance(err, GatedRepoError):
        return f"{where}: gated on the hub; accept its terms and log in (`hf auth login`)"
    if isinstance(err, RepositoryNotFoundError):
        return (
            f"{where}: no such {kind} on the hub ({endpoint()}), or it is private (log in with "
            "`hf auth login`); a local folder of that name does not exist either"
        )
    if isinstance(err, (LocalEntryNotFoundError, OfflineModeIsEnabled)):
        from lttw.hub import offline_reason

        reason = offline_reason() or "the hub could not be reached"
        return f"{where}: not in the local hub cache and not downloaded ({reason})"
    return f"{where}: the hub download failed ({one_line(err, lines=1, limit=300)})"


def progress_bars():
    """huggingface_hub's progress bars on a terminal; none where stderr is a file or a
    pipe (a log, a test), where they would be a line per update."""
    import contextlib
    import sys

    from huggingface_hub.utils import disable_progress_bars

    return contextlib.nullcontext() if sys.stderr.isatty() else disable_progress_bars()


def _download(repo_id: str, revision: str | None, repo_type: str, **kw) -> str:
    from huggingface_hub import snapshot_download

    try:
        with progress_bars():
            return snapshot_download(
                repo_id, revision=revision, repo_type=repo_type, endpoint=endpoint(), **kw
            )
    except (OSError, ValueError) as err:  # huggingface_hub's errors, httpx's, a full disk
        raise UserError(hub_failure(repo_id, revision, err, repo_type)) from None


def push_folder(
    folder: str | Path, repo_id: str, revision: str | None = None, private: bool = False
) -> str:
    """Upload ``folder`` to the hub model repository ``repo_id`` (made where missing) on
    branch ``revision`` (made where missing; default main), once its files match the
    checksums in its ``lttw.json``; the commit's address."""
    from lttw.models.folder_files import verify

    folder = Path(folder)
    if not HUB_ID.fullmatch(repo_id):
        raise UserError(f"{repo_id}: not a hub id (org/name)")
    check_revision(revision)
    if not folder.is_dir():
        raise UserError(f"{folder}: no such model folder")
    check = verify(folder)
    if check.problems:
        raise UserError(f"not pushed: {check.problems[0]}")
    if not check.recorded:
        raise UserError(
            f"not pushed: {folder} records no checksums (lttw verify); "
            "make a checked copy with `lttw export` and push that"
        )
    from huggingface_hub import HfApi

    api = HfApi(endpoint=endpoint())
    try:
        with progress_bars():
            api.create_repo(repo_id, private=private, exist_ok=True)
            if revision:
                api.create_branch(repo_id, branch=revision, exist_ok=True)
            info = api.upload_folder(
                repo_id=repo_id,
                folder_path=folder,
                revision=revision,
                commit_message=f"lttw push {folder.name}",
                ignore_patterns=check.ignored or None,  # stray files: not the model's
            )
    except (OSError, ValueError) as err:
        raise UserError(hub_failure(repo_id, revision, err)) from None
    return str(info.commit_url)
