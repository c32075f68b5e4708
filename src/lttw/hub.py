"""The Hugging Face hub as lttw uses it: whether it may be used right now (the offline
switches, then one quick TCP connect to its endpoint, no retries: hub encoders fail fast
offline), its address (``HF_ENDPOINT`` as set now), and ``download_snapshot``: a model or
dataset repository through ``huggingface_hub.snapshot_download`` and its cache, every failure
one line (``hub_failure``)."""

from __future__ import annotations

import contextlib
import os
import socket
import sys
from urllib.parse import urlparse

from lttw.errors import UserError, one_line

OFFLINE_VARS = ("HF_HUB_OFFLINE", "TRANSFORMERS_OFFLINE", "HF_DATASETS_OFFLINE")
PROXY_VARS = ("HTTPS_PROXY", "https_proxy", "ALL_PROXY", "all_proxy")


def _true(var: str) -> bool:
    return os.environ.get(var, "").strip().upper() in {"1", "ON", "YES", "TRUE"}


def offline_reason(timeout: float = 3.0) -> str | None:
    """Why the hub cannot be used (None: try it; behind a proxy the proxy decides)."""
    for var in OFFLINE_VARS:
        if _true(var):
            return f"{var} is set"
    if any(os.environ.get(v) for v in PROXY_VARS):
        return None
    url = urlparse(os.environ.get("HF_ENDPOINT", "https://huggingface.co"))
    port = url.port or (443 if url.scheme == "https" else 80)
    try:
        socket.create_connection((url.hostname, port), timeout=timeout).close()
    except OSError as err:
        return f"{url.hostname} is not reachable: {err}"
    return None


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
            "`hf auth login`)"
            + ("; no local folder of that name either" if kind == "model" else "")
        )
    if isinstance(err, (LocalEntryNotFoundError, OfflineModeIsEnabled)):
        reason = offline_reason() or "the hub could not be reached"
        return f"{where}: not in the local hub cache and not downloaded ({reason})"
    return f"{where}: the hub download failed ({one_line(err, lines=1, limit=300)})"


def endpoint() -> str:
    """The hub's address: ``HF_ENDPOINT`` as set now (huggingface_hub reads it once)."""
    from huggingface_hub import constants

    return os.environ.get("HF_ENDPOINT", constants.ENDPOINT).rstrip("/")


@contextlib.contextmanager
def progress_bars():
    """huggingface_hub's progress bars on a terminal; none where stderr is a file or a
    pipe (a log, a test), where they would be a line per update."""
    from huggingface_hub.utils import (
        are_progress_bars_disabled,
        disable_progress_bars,
        enable_progress_bars,
    )

    quiet = not sys.stderr.isatty() and not are_progress_bars_disabled()
    if quiet:
        disable_progress_bars()
    try:
        yield
    finally:
        if quiet:
            enable_progress_bars()


def download_snapshot(repo_id: str, revision: str | None, repo_type: str, **kw) -> str:
    """The local folder of ``repo_id`` at ``revision`` (``snapshot_download``: downloaded
    into the hub cache, or found there; ``kw``: e.g. its ``allow_patterns``)."""
    from huggingface_hub import snapshot_download

    try:
        with progress_bars():
            return snapshot_download(
                repo_id, revision=revision, repo_type=repo_type, endpoint=endpoint(), **kw
            )
    except (OSError, ValueError) as err:  # huggingface_hub's errors, httpx's, a full disk
        raise UserError(hub_failure(repo_id, revision, err, repo_type)) from None
