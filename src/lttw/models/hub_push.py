"""``lttw push``: a model folder uploaded to a Hugging Face hub model repository, checked
first as ``lttw verify`` checks it (a folder that fails is never pushed), then
``create_repo`` + ``upload_folder``. Every hub failure is one ``UserError`` line."""

from __future__ import annotations

from pathlib import Path

from lttw.errors import UserError
from lttw.hub import endpoint, hub_failure, progress_bars
from lttw.models.hub_snapshot import HUB_ID, check_revision
from lttw.models.model_folder import verify_folder


def push_folder(
    folder: str | Path, repo_id: str, revision: str | None = None, private: bool = False
) -> str:
    """Upload ``folder`` to the hub model repository ``repo_id`` (made where missing) on
    branch ``revision`` (made where missing; default main), once its files match the
    checksums in its ``lttw.json``; the commit's address."""
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
