"""Hostile clients against ``lttw serve``: what each gets back, how long the server holds it,
and what it costs the server in memory and log lines.

    python bench/serve_hostile.py --tiny            # the tests' tiny model (built in seconds)
    python bench/serve_hostile.py --model models/fold_0

Each scenario starts its own ``lttw serve --port 0`` on 127.0.0.1 (under ``ulimit -n 256``)
with the default limits unless it says otherwise, and stops it with SIGTERM:
headers (8 connections each sending an unfinished 64 MB header), slow_body (a body at one
byte a second), idle (a connection that sends nothing), stalled (3,000 connections sending
half a request line), left (20 clients each sending 256 texts and disconnecting, then one
text from a client that waits), sigterm (50 requests of 256 texts queued with
``--max-queue-texts 20000 --shutdown-timeout 5``, then SIGTERM), aborted (3,000 uploads cut
half-way), bombs (a body nested 100,000 deep, a top_k of 5,000 digits), crowd (500 clients
at once, each sending a request as it connects, against ``--max-connections 64``: every one
must read a 200 or a JSON 503, none a TCP reset), content_type (a body sent as text/plain,
as a form, with no content type: 415), ambiguous (two Host headers, a full URL as the
target, HTTP/2.0: 400), port_in_use (`lttw serve` on a port taken: one ``error:`` line),
probes (``/live``, ``/ready`` from start-up, ``/metrics``), chunk (``--chunk``: 256 texts
of 10,000 characters timing out, then one-word requests), slowloris (64 connections
trickling headers against ``--max-connections 64``, then 20 clients). Client traffic goes to 127.0.0.1
only; every wait is bounded. Writes JSON (machine, rows) to ``--out``.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import signal
import socket
import sys
import tempfile
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from types import SimpleNamespace

from steps import hostile_http
from steps.hostile_client import BOUND_S, Server, connect, post, read_status, texts_body

ROOT = Path(__file__).resolve().parent.parent


def headers(model: Path) -> dict:
    server = Server(model)
    before = server.rss_mb()

    def one(_):
        with connect(server.port) as conn:
            conn.sendall(b"GET /health HTTP/1.1\r\nhost: 127.0.0.1\r\nx-big: ")
            chunk, sent = b"a" * (1 << 20), 0
            try:
                while sent < 64 << 20:
                    conn.sendall(chunk)
                    sent += len(chunk)
            except OSError:
                pass
            return read_status(conn)[0], sent

    with ThreadPoolExecutor(8) as pool:
        answers = list(pool.map(one, range(8)))
    after = server.rss_mb()
    return {
        "statuses": [a[0] for a in answers],
        "mb_sent_before_cut": [round(a[1] / 2**20, 1) for a in answers],
        "rss_added_mb": round(after - before, 1),
        **server.stop(),
    }


def slow_body(model: Path) -> dict:
    server = Server(model)
    start = time.monotonic()
    with connect(server.port) as conn:
        conn.sendall(
            b"POST /predict HTTP/1.1\r\nhost: 127.0.0.1\r\ncontent-length: 1000\r\n"
            b"content-type: application/json\r\n\r\n"
        )
        sent = 0
        try:
            while sent < 1000:
                conn.sendall(b"x")
                sent += 1
                time.sleep(1.0)
                conn.setblocking(False)
                try:
                    if conn.recv(1, socket.MSG_PEEK) is not None:
                        break
                except BlockingIOError:
                    pass
                finally:
                    conn.setblocking(True)
        except OSError:
            pass
        status = read_status(conn)[0]
    return {"status": status, "held_s": round(time.monotonic() - start, 1), **server.stop()}


def idle(model: Path) -> dict:
    server = Server(model)
    start = time.monotonic()
    with connect(server.port) as conn:
        status = read_status(conn)[0]
    return {"status": status, "held_s": round(time.monotonic() - start, 1), **server.stop()}


def stalled(model: Path, n: int = 3000) -> dict:
    server = Server(model)
    conns, statuses = [], {}
    for _ in range(n):
        try:
            conn = connect(server.port)
            conn.sendall(b"GET /health HT")
            conns.append(conn)
        except OSError as err:
            statuses[type(err).__name__] = statuses.get(type(err).__name__, 0) + 1
    start = time.monotonic()
    health = None
    while time.monotonic() - start < BOUND_S:
        try:
            with connect(server.port) as conn:
                conn.sendall(
                    b"GET /health HTTP/1.1\r\nhost: 127.0.0.1\r\nconnection: close\r\n\r\n"
                )
                conn.settimeout(5)
                health = read_status(conn)[0]
        except OSError:
            health = None
        if health == 200:
            break
        time.sleep(0.2)
    health_s = round(time.monotonic() - start, 1)
    for conn in conns:
        conn.settimeout(0)
        try:
            data = conn.recv(64)
            key = data[:12].decode() or "closed"
        except BlockingIOError:
            key = "still open"
        except OSError as err:
            key = type(err).__name__
        statuses[key] = statuses.get(key, 0) + 1
        conn.close()
    return {
        "connections": statuses,
        "health_status": health,
        "health_after_s": health_s,
        **server.stop(),
    }


def left(model: Path) -> dict:
    server = Server(model)
    body = texts_body(256)
    for _ in range(20):
        with connect(server.port) as conn:
            conn.sendall(
                b"POST /predict HTTP/1.1\r\nhost: 127.0.0.1\r\ncontent-length: %d\r\n"
                b"content-type: application/json\r\n\r\n%s" % (len(body), body)
            )
    status, _, seconds = post(server.port, json.dumps({"text": "oil prices fall"}).encode())
    with connect(server.port) as conn:
        conn.sendall(b"GET /health HTTP/1.1\r\nhost: 127.0.0.1\r\nconnection: close\r\n\r\n")
        data = b""
        while chunk := conn.recv(65536):
            data += chunk
    batches = json.loads(data.partition(b"\r\n\r\n")[2])["batches"]
    stopped = server.stop()
    said = "".join(server.log)
    return {
        "next_status": status,
        "next_latency_s": seconds,
        "computed_requests": batches["requests"] - 1,
        "dropped": batches.get("dropped"),
        "left_during_upload": said.count("client left during its upload"),
        "left_before_answer": said.count("client left before its answer"),
        **stopped,
    }


def sigterm(model: Path) -> dict:
    server = Server(model, "--max-queue-texts", "20000", "--shutdown-timeout", "5")
    body = texts_body(256)
    with ThreadPoolExecutor(50) as pool:
        futures = [pool.submit(post, server.port, body) for _ in range(50)]
        time.sleep(3)  # let them queue (a bench, not a test)
        start = time.monotonic()
        server.proc.send_signal(signal.SIGTERM)
        answers = [f.result(BOUND_S) for f in futures]
        server.proc.wait(BOUND_S)
        exit_s = round(time.monotonic() - start, 1)
    server.reader.join(BOUND_S)
    counts: dict[str, int] = {}
    for status, kind, _ in answers:
        key = f"{status} {kind}"
        counts[key] = counts.get(key, 0) + 1
    text = "".join(server.log)
    return {
        "answers": counts,
        "exit_after_sigterm_s": exit_s,
        "tracebacks": text.count("Traceback"),
    }


def aborted(model: Path, n: int = 3000) -> dict:
    server = Server(model)
    for _ in range(n):
        with connect(server.port) as conn:
            conn.sendall(
                b"POST /predict HTTP/1.1\r\nhost: 127.0.0.1\r\ncontent-length: 100000\r\n"
                b"content-type: application/json\r\n\r\n" + b"x" * 1000
            )
    time.sleep(1)
    return server.stop()


def chunk(model: Path) -> dict:
    """``--chunk --request-timeout 5``: 256 texts of 10,000 characters (about 33,000
    windows) with the default queue (1,024 windows) and with room for them, then one-word
    requests: how soon after the long request's 504 the model answers again."""
    long_body = json.dumps({"texts": [("oil market stock price " * 500)[:10_000]] * 256}).encode()
    small = json.dumps({"text": "oil"}).encode()
    rows = {}
    for queue in ("1024", "100000"):
        server = Server(model, "--chunk", "--request-timeout", "5", "--max-queue-texts", queue)
        status, _, seconds = post(server.port, long_body)
        after = []
        for _ in range(5):
            after.append(post(server.port, small)[0::2])
        rows[f"queue_{queue}"] = {
            "long_status": status,
            "long_s": seconds,
            "next_requests": [{"status": a, "s": b} for a, b in after],
            **server.stop(),
        }
    return rows


def bombs(model: Path) -> dict:
    server = Server(model)
    nested = post(server.port, b"[" * 100_000 + b"]" * 100_000)
    digits = post(server.port, b'{"text": "a", "top_k": ' + b"7" * 5000 + b"}")
    return {"nested": nested[:2], "top_k_digits": digits[:2], **server.stop()}


SCENARIOS = {
    f.__name__: f
    for f in (
        headers,
        slow_body,
        idle,
        stalled,
        left,
        sigterm,
        aborted,
        bombs,
        chunk,
    )
} | hostile_http.SCENARIOS


def tiny_model(folder: Path) -> Path:
    """The tests' tiny model folder (tests/conftest.py's random BERT, serving_models')."""
    sys.path.insert(0, str(ROOT / "tests"))
    import conftest
    from support.serving_models import build_lttw_folder

    factory = SimpleNamespace(mktemp=lambda name: Path(tempfile.mkdtemp(prefix=name, dir=folder)))
    encoder = conftest.tiny_encoder_dir.__wrapped__(factory)
    return build_lttw_folder(folder / "model", encoder)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    group = parser.add_mutually_exclusive_group(required=True)
    group.add_argument("--model", type=Path)
    group.add_argument("--tiny", action="store_true", help="the tests' tiny model")
    parser.add_argument("--scenarios", nargs="+", choices=list(SCENARIOS), default=list(SCENARIOS))
    parser.add_argument("--out", type=Path, default=ROOT / "bench/results/serve-hostile.json")
    args = parser.parse_args()
    resource.setrlimit(resource.RLIMIT_NOFILE, (resource.getrlimit(resource.RLIMIT_NOFILE)[1],) * 2)
    from common import describe

    with tempfile.TemporaryDirectory() as tmp:
        model = tiny_model(Path(tmp)) if args.tiny else args.model
        rows = {}
        for name in args.scenarios:
            rows[name] = SCENARIOS[name](model)
            print(name, json.dumps(rows[name]), flush=True)
    args.out.parent.mkdir(parents=True, exist_ok=True)
    doc = {"machine": describe(), "model": "tiny" if args.tiny else str(args.model), "rows": rows}
    args.out.write_text(json.dumps(doc, indent=1) + "\n")
    print(f"wrote {args.out}", file=sys.stderr)


if __name__ == "__main__":
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    main()
