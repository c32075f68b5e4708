"""A real lttw server on a free loopback port for the serving tests, a gate that holds its batches, and the check of its one-line JSON errors."""

from __future__ import annotations

import re
import socket
import subprocess
import sys
import threading
import time
from contextlib import contextmanager
from pathlib import Path

import httpx
import numpy as np

from lttw.serving.limits import Limits
from lttw.serving.server import server_for

#: a bounded wait for a server, a request or a condition: a hang fails instead of blocking
BOUND_S = 60


class Gate:
    """A predictor whose forward passes wait until ``open`` is set; ``seen``: the texts of
    every pass, in order."""

    def __init__(self, folder: Path):
        self.classes, self.folder, self.meta = ["a", "b"], folder, {"variant": "stub"}
        self.seen: list[list[str]] = []
        self.open = threading.Event()

    def predict_proba(self, texts, batch_size=64):
        self.seen.append(list(texts))
        assert self.open.wait(BOUND_S)
        return np.tile([[0.25, 0.75]], (len(texts), 1))


@contextmanager
def serving(app, limits: Limits = Limits()):
    """``app`` behind ``server_for(limits)`` in a thread on 127.0.0.1:<free port>; yields
    (client, server, port) and stops the server (as SIGTERM does) on the way out."""
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    sock.bind(("127.0.0.1", 0))
    server = server_for(app, "127.0.0.1", 0, limits, log_level="warning")
    thread = threading.Thread(target=server.run, kwargs={"sockets": [sock]}, daemon=True)
    thread.start()
    until(lambda: server.started or not thread.is_alive(), "the server started")
    assert server.started, "the server did not start"
    port = sock.getsockname()[1]
    try:
        with httpx.Client(base_url=f"http://127.0.0.1:{port}", timeout=BOUND_S) as client:
            yield client, server, port
    finally:
        server.should_exit = True
        thread.join(BOUND_S)
        sock.close()
        assert not thread.is_alive(), "the server did not stop"


def exchange(port: int, data: bytes, *, close_after_send: bool = False) -> bytes:
    """Send raw ``data``, then read until the server closes the connection (bounded; a reset raises)."""
    with socket.create_connection(("127.0.0.1", port), timeout=BOUND_S) as conn:
        conn.sendall(data)
        if close_after_send:
            return b""
        chunks = []
        while chunk := conn.recv(65536):
            chunks.append(chunk)
    return b"".join(chunks)


def assert_json_error(response: httpx.Response, status: int, words: str) -> None:
    assert response.status_code == status, response.text
    doc = response.json()
    assert list(doc) == ["error"] and "\n" not in doc["error"] and words in doc["error"], doc


def until(condition, what: str) -> None:
    """Poll ``condition`` until it holds (bounded)."""
    deadline = time.monotonic() + BOUND_S
    while not condition():
        assert time.monotonic() < deadline, f"never happened: {what}"
        time.sleep(0.02)


@contextmanager
def lttw_serve(model_dir: Path, extra_env: dict[str, str] | None = None):
    """`lttw serve --port 0` on ``model_dir`` in a process of its own, once it prints its
    address; yields (process, port, the stderr lines so far). A watchdog kills a hung server
    (a hang fails, never blocks); on the way out a server still running is killed."""
    from support.tiny_project import env

    proc = subprocess.Popen(
        [sys.executable, "-m", "lttw.cli", "serve", "--model", str(model_dir), "--port", "0"],
        env={**env(), **(extra_env or {})},
        stderr=subprocess.PIPE,
        text=True,
    )
    watchdog = threading.Timer(4 * BOUND_S, proc.kill)
    watchdog.start()
    try:
        lines: list[str] = []
        found = None
        for line in proc.stderr or ():  # bounded: the process ends or prints its address
            lines.append(line)
            found = re.search(r"running on http://127\.0\.0\.1:(\d+)", line)
            if found:
                break
        assert found, "".join(lines)
        yield proc, int(found[1]), lines
    finally:
        watchdog.cancel()
        if proc.poll() is None:
            proc.kill()
            proc.wait()
