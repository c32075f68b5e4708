"""Downloading one file from a published address that is not the Hugging Face hub (THUCNews's
GitHub files; hub datasets go through ``huggingface_hub``, ``data.hub_fetch``), resumably and
checked: ``FILE.part`` grows (an HTTP range request continues it after a break) and becomes
``FILE`` only when whole and, where the server states the file's sha256, equal to it. Bounded
in time: each read waits at most ``TIMEOUT_S``, every ``TIMEOUT_S`` must bring at least
``MIN_BYTES`` (a server trickling a byte at a time is dropped), and a file gets ``TOTAL_S``."""

from __future__ import annotations

import http.client
import os
import re
import time
import urllib.error
import urllib.request
from pathlib import Path
from urllib.parse import urlparse

from lttw.data.dataset_manifest import file_sha256
from lttw.errors import DataError

#: the largest file downloaded (the datasets' parquet files are far smaller)
MAX_FILE_BYTES = 4 << 30
#: seconds to wait for a connection or the next block of a download
TIMEOUT_S = 60
#: the least that must arrive in every TIMEOUT_S (a block), and the most one file may take
MIN_BYTES = 64 << 10
TOTAL_S = 3600
BLOCK = 1 << 20
SHA256 = re.compile(r"^[0-9a-f]{64}$")


class _Redirects(urllib.request.HTTPRedirectHandler):
    """Follows redirects, keeping each response's headers (the hub states a file's sha256
    and commit on the redirect to its storage) and dropping credentials on another host."""

    def __init__(self) -> None:
        self.seen: list = []

    def redirect_request(self, req, fp, code, msg, headers, newurl):
        self.seen.append(headers)
        new = super().redirect_request(req, fp, code, msg, headers, newurl)
        if new is not None and urlparse(newurl).hostname != urlparse(req.full_url).hostname:
            new.remove_header("Authorization")
        return new


def _stated(headers: list, name: str) -> str | None:
    for h in headers:
        value = h.get(name)
        if value:
            return value.strip().strip('"').removeprefix("W/").strip('"')
    return None


def download(url: str, dest: Path, token: str | None = None) -> dict:
    """``url`` into ``dest`` through ``dest.part`` (continued where a .part is left); the
    commit the server states, if any. A whole ``dest`` is kept as it is."""
    if dest.is_file():
        return {}
    part = dest.with_name(dest.name + ".part")
    have = part.stat().st_size if part.is_file() else 0
    request = urllib.request.Request(url, headers={"User-Agent": "lttw"})
    if have:
        request.add_header("Range", f"bytes={have}-")
    if token:
        request.add_header("Authorization", f"Bearer {token}")
    redirects = _Redirects()
    opener = urllib.request.build_opener(redirects)
    try:
        response = opener.open(request, timeout=TIMEOUT_S)
    except urllib.error.HTTPError as err:
        if err.code == 416 and have:  # the .part is no prefix of the file: start again
            part.unlink()
            return download(url, dest, token)
        raise DataError(f"{url}: HTTP {err.code} {err.reason}") from None
    except (OSError, http.client.HTTPException) as err:
        raise DataError(f"{url}: {getattr(err, 'reason', None) or err}") from None
    try:
        return _receive(response, redirects.seen, url, part, dest, have)
    except (OSError, http.client.HTTPException) as err:
        why = (
            f"{type(err).__name__}: {err}" if isinstance(err, TimeoutError) else type(err).__name__
        )
        raise DataError(f"{url}: the download broke off ({why}); rerun to continue it") from None


def _receive(response, redirected: list, url: str, part: Path, dest: Path, have: int) -> dict:
    with response:
        headers = [*redirected, response.headers]
        resumed = response.status == 206
        total = int(response.headers.get("Content-Length") or 0) + (have if resumed else 0)
        if total > MAX_FILE_BYTES:
            raise DataError(f"{url}: {total:,} bytes; at most {MAX_FILE_BYTES:,} are fetched")
        written = have if resumed else 0
        start = window = time.monotonic()
        in_window = 0
        with part.open("ab" if resumed else "wb") as out:
            while block := response.read1(BLOCK):  # what one read brings, not a whole BLOCK
                written += len(block)
                in_window += len(block)
                if written > MAX_FILE_BYTES:
                    raise DataError(f"{url}: more than {MAX_FILE_BYTES:,} bytes")
                out.write(block)
                now = time.monotonic()
                if now - start > TOTAL_S:
                    raise TimeoutError(f"more than {TOTAL_S} s")
                if now - window > TIMEOUT_S:
                    if in_window < MIN_BYTES:
                        raise TimeoutError(f"under {MIN_BYTES:,} bytes in {TIMEOUT_S} s")
                    window, in_window = now, 0
    if total and written != total:
        raise DataError(
            f"{url}: the download broke off at {written:,} of {total:,} bytes; rerun to continue it"
        )
    stated = (_stated(headers, "X-Linked-Etag") or _stated(headers, "ETag") or "").lower()
    if SHA256.match(stated) and file_sha256(part) != stated:
        part.unlink()
        raise DataError(f"{url}: the file's sha256 is not the {stated} the server states; rerun")
    os.replace(part, dest)
    commit = _stated(headers, "X-Repo-Commit")
    return {"commit": commit} if commit else {}
