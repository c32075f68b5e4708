"""Whether the Hugging Face hub may be used right now: the offline switches, then one quick
TCP connect to its endpoint (no retries). The one check for hub encoders (``model.encoder``)
and hub datasets (``data.dataset``), so that both fail fast, offline, with a clear reason."""

from __future__ import annotations

import os
import socket
from urllib.parse import urlparse

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
