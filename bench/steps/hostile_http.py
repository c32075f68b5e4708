"""bench/serve_hostile.py's scenarios about HTTP itself: a crowd past ``--max-connections``,
slow-header connections holding every slot,
bodies not sent as JSON, ambiguous requests, a port in use, and the probes and metrics."""

from __future__ import annotations

import json
import socket
import subprocess
import sys
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

from steps.hostile_client import BOUND_S, Server, count, exchange


def crowd(model: Path, n: int = 500) -> dict:
    server = Server(model, "--max-connections", "64")
    body = json.dumps({"text": "stocks rally as oil prices fall"}).encode()
    request = (
        b"POST /predict HTTP/1.1\r\nhost: 127.0.0.1\r\ncontent-type: application/json\r\n"
        b"connection: close\r\ncontent-length: %d\r\n\r\n%s" % (len(body), body)
    )
    start = threading.Barrier(n, timeout=BOUND_S)

    def one(_):
        start.wait()
        return exchange(server.port, request)[0]

    with ThreadPoolExecutor(n) as pool:
        answers = count(pool.map(one, range(n)))
    return {"clients": n, "max_connections": 64, "answers": answers, **server.stop()}


def content_type(model: Path) -> dict:
    server = Server(model)
    body = b'{"text": "stocks rally"}'
    rows = {}
    for kind in ("text/plain", "application/x-www-form-urlencoded", None, "application/json"):
        header = b"content-type: %s\r\n" % kind.encode() if kind else b""
        request = (
            b"POST /predict HTTP/1.1\r\nhost: 127.0.0.1\r\nconnection: close\r\n%s"
            b"content-length: %d\r\n\r\n%s" % (header, len(body), body)
        )
        rows[kind or "none"] = exchange(server.port, request)[0]
    return {"answers": rows, **server.stop()}


def ambiguous(model: Path) -> dict:
    server = Server(model)
    cases = {
        "two_hosts": b"GET /health HTTP/1.1\r\nhost: 127.0.0.1\r\nhost: evil.example\r\n\r\n",
        "two_authorizations": b"GET /info HTTP/1.1\r\nhost: 127.0.0.1\r\n"
        b"authorization: Bearer a\r\nauthorization: Bearer b\r\n\r\n",
        "absolute_form": b"GET http://evil.example/health HTTP/1.1\r\nhost: 127.0.0.1\r\n\r\n",
        "http_2_0": b"GET /health HTTP/2.0\r\nhost: 127.0.0.1\r\n\r\n",
        "http_1_0": b"GET /health HTTP/1.0\r\nhost: 127.0.0.1\r\n\r\n",
    }
    rows = {name: exchange(server.port, request)[0] for name, request in cases.items()}
    return {"answers": rows, **server.stop()}


def port_in_use(model: Path) -> dict:
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        ran = subprocess.run(
            [sys.executable, "-m", "lttw.cli", "serve", "--model", str(model), "--port", str(port)],
            capture_output=True,
            text=True,
            timeout=BOUND_S,
        )
    lines = ran.stderr.strip().splitlines()
    return {"exit_code": ran.returncode, "stderr_lines": len(lines), "first": lines[:1]}


def probes(model: Path) -> dict:
    started = time.monotonic()
    server = Server(model)
    get = b"GET %s HTTP/1.1\r\nhost: 127.0.0.1\r\nconnection: close\r\n\r\n"
    first_ready = exchange(server.port, get % b"/ready")[0]
    while exchange(server.port, get % b"/ready")[0] != "200 json":
        assert time.monotonic() - started < BOUND_S, "never ready"
        time.sleep(0.05)
    ready_s = round(time.monotonic() - started, 2)
    live = exchange(server.port, get % b"/live")[0]
    key, data = exchange(server.port, get % b"/metrics")
    return {
        "ready_first_answer": first_ready,
        "ready_after_start_s": ready_s,
        "live": live,
        "metrics": key.split()[0],
        "metrics_series": data.count(b"\nlttw_"),
        **server.stop(),
    }


def slowloris(model: Path, n: int = 64) -> dict:
    """``n`` connections trickling headers (a byte a second) hold every slot of
    ``--max-connections n``; then 20 clients each send a whole request."""
    server = Server(model, "--max-connections", str(n))
    slow = []
    for _ in range(n):
        conn = socket.create_connection(("127.0.0.1", server.port), timeout=BOUND_S)
        conn.sendall(b"GET /health HTTP/1.1\r\nhost: 127")
        slow.append(conn)
    time.sleep(1)
    get = b"GET /health HTTP/1.1\r\nhost: 127.0.0.1\r\nconnection: close\r\n\r\n"
    answers, seconds = [], []
    for _ in range(20):
        started = time.monotonic()
        answers.append(exchange(server.port, get)[0])
        seconds.append(time.monotonic() - started)
    for conn in slow:
        conn.close()
    return {
        "slow_connections": n,
        "answers": count(answers),
        "slowest_s": round(max(seconds), 3),
        **server.stop(),
    }


SCENARIOS = {
    f.__name__: f for f in (crowd, content_type, ambiguous, port_in_use, probes, slowloris)
}
