"""Where a model folder is: a local path, or a Hugging Face hub id (``org/name``) downloaded
by ``huggingface_hub.snapshot_download`` into its cache (its retries, resumed downloads and
locks; ``HF_HUB_OFFLINE=1`` serves what the cache holds). A downloaded folder is then read
like a local one: ``Predictor.load`` checks every file against the sha256 map in its
``lttw.json`` (``models.folder_files``), so a changed download is refused.

``push_folder`` is the way back: the folder checked as ``lttw verify`` checks it, then
``create_repo`` + ``upload_folder``. Every hub failure is one ``UserError`` line.
"""

from __future__ import annotations

import re
from pathlib import Path

from lttw.errors import UserError
from lttw.hub import download_snapshot, endpoint, hub_failure, progress_bars

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


def push_folder(
    folder: str | Path, repo_id: str, revision: str | None = None, private: bool = False
) -> str:
    """Upload ``folder`` to the hub model repository ``repo_id`` (made where missing) on
    branch ``revision`` (made where missing; default main), once its files match the
    checksums in its ``lttw.json``; the commit's address."""
    from lttw.models.model_folder import verify_folder  # (it imports this module)

    folder = Path(folder)
    if not HUB_ID.fullmatch(repo_id):
        raise UserError(f"{repo_id}: not a hub id (org/name)")
    check_revision(revision)
    if not folder.is_dir():
        raise UserError(f"{folder}: no such model folder")
    try:
        check = verify_folder(folder)
    except UserError as err:
        raise UserError(f"not pushed: {err}") from None
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
