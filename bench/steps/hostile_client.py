"""The client side of bench/serve_hostile.py: `lttw serve` in a subprocess and raw-socket
requests whose answers are read to the end (bounded)."""

from __future__ import annotations

import json
import re
import resource
import signal
import socket
import subprocess
import sys
import threading
import time
from pathlib import Path

BOUND_S = 120


class Server:
    """``lttw serve`` in a subprocess; ``log``: its stderr lines after start-up."""

    def __init__(self, model: Path, *args: str):
        def limit_fds():
            resource.setrlimit(resource.RLIMIT_NOFILE, (256, 256))

        self.proc = subprocess.Popen(
            [
                sys.executable,
                "-m",
                "lttw.cli",
                "serve",
                "--model",
                str(model),
                "--port",
                "0",
                *args,
            ],
            stderr=subprocess.PIPE,
            text=True,
            preexec_fn=limit_fds,
        )
        self.log: list[str] = []
        for line in self.proc.stderr:
            found = re.search(r"running on http://127\.0\.0\.1:(\d+)", line)
            if found:
                self.port = int(found[1])
                break
        else:
            raise SystemExit("lttw serve did not start")
        self.reader = threading.Thread(target=lambda: self.log.extend(self.proc.stderr))
        self.reader.start()

    def rss_mb(self) -> float:
        status = Path(f"/proc/{self.proc.pid}/status").read_text()
        return int(re.search(r"VmRSS:\s+(\d+)", status)[1]) / 1024

    def stop(self) -> dict:
        self.proc.send_signal(signal.SIGTERM)
        self.proc.wait(BOUND_S)
        self.reader.join(BOUND_S)
        text = "".join(self.log)
        return {
            "log_lines": len(self.log),
            "log_bytes": len(text.encode()),
            "tracebacks": text.count("Traceback"),
        }


def connect(port: int) -> socket.socket:
    return socket.create_connection(("127.0.0.1", port), timeout=BOUND_S)


def read_status(conn: socket.socket) -> tuple[int | None, str]:
    """(status, content type) of what the server sends before closing; (None, '') if it
    closed without an answer."""
    data = b""
    try:
        while chunk := conn.recv(65536):
            data += chunk
    except OSError:
        pass
    if not data.startswith(b"HTTP/1.1 "):
        return None, ""
    kind = re.search(rb"content-type: ([^\r]+)", data, re.I)
    return int(data.split(b" ", 2)[1]), kind[1].decode() if kind else ""


def post(port: int, body: bytes, timeout: float = BOUND_S) -> tuple[int | None, str, float]:
    start = time.monotonic()
    with connect(port) as conn:
        conn.settimeout(timeout)
        conn.sendall(
            b"POST /predict HTTP/1.1\r\nhost: 127.0.0.1\r\nconnection: close\r\n"
            b"content-type: application/json\r\n"
            b"content-length: %d\r\n\r\n%s" % (len(body), body)
        )
        status, kind = read_status(conn)
    return status, kind, round(time.monotonic() - start, 3)


def texts_body(n: int, words: int = 60) -> bytes:
    text = " ".join(["stocks rally as oil prices fall"] * (words // 6))
    return json.dumps({"texts": [text] * n}).encode()


def exchange(port: int, request: bytes) -> tuple[str, bytes]:
    """Send ``request`` as the connection opens, read to the end: ('200' / '503 json
    retry-after' / ..., the answer) or ('reset', b'') / ('closed', b'')."""
    try:
        with connect(port) as conn:
            conn.sendall(request)
            data = b""
            while chunk := conn.recv(65536):
                data += chunk
    except ConnectionResetError:
        return "reset", b""
    except OSError as err:
        return type(err).__name__, b""
    if not data.startswith(b"HTTP/1.1 "):
        return "closed", data
    head, _, body = data.partition(b"\r\n\r\n")
    key = head.split(b" ", 2)[1].decode()
    try:
        json.loads(body)
        key += " json"
    except ValueError:
        key += " not-json"
    if b"\nretry-after:" in head.lower():
        key += " retry-after"
    return key, data


def count(keys) -> dict[str, int]:
    counts: dict[str, int] = {}
    for key in keys:
        counts[key] = counts.get(key, 0) + 1
    return counts
