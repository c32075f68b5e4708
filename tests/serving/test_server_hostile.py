"""Hostile clients against a real server (uvicorn with ``server_for``'s bounded protocol, on a
free loopback port): every client past ``max_connections`` reads its JSON 503 (never a TCP
reset), ``GET /live`` still answers there; a body not sent as ``application/json`` gets 415
and is never computed; two Host headers, a full URL as the target and ``HTTP/2.0`` get 400, as do two
Authorization headers;
and `lttw serve` on a port in use says so in one line."""

from __future__ import annotations

import json
import select
import socket
import subprocess
import sys
import threading
import time
from concurrent.futures import ThreadPoolExecutor

import numpy as np
import pytest
from support.live_server import BOUND_S, Gate, assert_json_error, exchange, serving, until

from lttw.serving.limits import Limits
from lttw.serving.server import create_app

POST = (
    b"POST /predict HTTP/1.1\r\nhost: 127.0.0.1\r\ncontent-type: application/json\r\n"
    b"content-length: %d\r\nconnection: close\r\n\r\n%s"
)


CLOSE = b"connection: close\r\n\r\n"


def status_of(response: bytes) -> tuple[int, dict]:
    head, _, body = response.partition(b"\r\n\r\n")
    return int(head.split(b" ", 2)[1]), json.loads(body)


def test_every_client_past_the_connection_cap_reads_its_503(tmp_path):
    """100 clients at once, each sending a whole request the moment it connects, to a server
    whose 2 connections are busy with requests: every one reads the JSON 503 with Retry-After
    (closing with the request unread sent TCP resets instead); GET /live is answered 200
    there."""
    limits = Limits(max_connections=2, header_timeout_s=BOUND_S)
    body = json.dumps({"texts": ["x" * 2000] * 8}).encode()
    gate = Gate(tmp_path)
    with serving(create_app(gate, limits), limits) as (http, _, port):
        held = busy_connections(port, 2)
        try:
            until(lambda: exchange(port, POST % (2, b"{}")).startswith(b"HTTP/1.1 503"), "the cap")
            with ThreadPoolExecutor(50) as pool:
                answers = list(
                    pool.map(lambda _: exchange(port, POST % (len(body), body)), range(100))
                )
            for answer in answers:
                status, doc = status_of(answer)
                assert status == 503 and "--max-connections" in doc["error"], answer[:200]
                assert b"\r\nretry-after: 1\r\n" in answer.lower()
            live = exchange(port, b"GET /live HTTP/1.1\r\nhost: 127.0.0.1\r\n\r\n")
            assert status_of(live) == (200, {"status": "alive"})
        finally:
            gate.open.set()
            for conn in held:
                conn.close()


def busy_connections(port: int, n: int) -> list[socket.socket]:
    """``n`` connections, each with a /predict in progress (a ``Gate`` holds them)."""
    held = [socket.create_connection(("127.0.0.1", port), timeout=BOUND_S) for _ in range(n)]
    for i, conn in enumerate(held):
        conn.sendall(POST % (len(b'{"text": "held%d"}' % i), b'{"text": "held%d"}' % i))
    return held


def test_slow_header_connections_yield_their_slots(tmp_path):
    """Slowloris: 4 connections trickling headers (the header time-out is 60 s) hold every
    slot; new clients are answered at once, and a trickler reads a one-line 408."""
    limits = Limits(max_connections=4, header_timeout_s=BOUND_S)
    with serving(create_app(Gate(tmp_path), limits), limits) as (_, _, port):
        slow = []
        try:
            for _ in range(4):
                slow.append(socket.create_connection(("127.0.0.1", port), timeout=BOUND_S))
                slow[-1].sendall(b"GET /health HTTP/1.1\r\nhost: 127")
            for _ in range(3):
                answer = exchange(port, b"GET /health HTTP/1.1\r\nhost: 127.0.0.1\r\n" + CLOSE)
                assert answer.startswith(b"HTTP/1.1 200"), answer
            evicted, _, _ = select.select(slow, [], [], BOUND_S)
            status, doc = status_of(evicted[0].recv(65536))
            assert status == 408 and "needed the connection" in doc["error"], doc
        finally:
            for conn in slow:
                conn.close()


@pytest.mark.parametrize(
    "kind",
    ["text/plain", "application/x-www-form-urlencoded", "multipart/form-data; boundary=x", None],
)
def test_a_body_not_sent_as_json_gets_415(tmp_path, kind):
    """What a web page may send to another site without a preflight is never computed."""
    gate = Gate(tmp_path)
    gate.open.set()
    with serving(create_app(gate)) as (http, _, _):
        headers = {"content-type": kind} if kind else {}
        answer = http.post("/predict", content=b'{"text": "a"}', headers=headers)
        assert_json_error(answer, 415, "application/json")
        charset = {"content-type": "Application/JSON; charset=utf-8"}
        assert http.post("/predict", content=b'{"text": "a"}', headers=charset).status_code == 200
    assert gate.seen == [["a"]]


@pytest.mark.parametrize(
    "request_head, words",
    [
        (b"GET /health HTTP/1.1\r\nhost: 127.0.0.1\r\nhost: evil.example\r\n\r\n", "2 Host"),
        (b"GET /health HTTP/1.1\r\nHost: evil.example\r\nhost: 127.0.0.1\r\n\r\n", "2 Host"),
        (
            b"GET /info HTTP/1.1\r\nhost: 127.0.0.1\r\nauthorization: Bearer a\r\n"
            b"Authorization: Bearer b\r\n\r\n",
            "2 Authorization",
        ),
        (b"GET http://evil.example/health HTTP/1.1\r\nhost: 127.0.0.1\r\n\r\n", "a path"),
        (b"GET http://127.0.0.1/health HTTP/1.1\r\nhost: 127.0.0.1\r\n\r\n", "a path"),
        (b"GET /health HTTP/2.0\r\nhost: 127.0.0.1\r\n\r\n", "HTTP/2.0"),
    ],
    ids=[
        "hosts",
        "hosts-reversed",
        "authorizations",
        "absolute-form",
        "absolute-form-own-host",
        "http2",
    ],
)
def test_ambiguous_requests_get_400(tmp_path, request_head, words):
    with serving(create_app(Gate(tmp_path))) as (http, _, port):
        status, doc = status_of(exchange(port, request_head))
        assert status == 400 and list(doc) == ["error"] and words in doc["error"], doc
        http10 = exchange(port, b"GET /health HTTP/1.0\r\nhost: 127.0.0.1\r\n\r\n")
        assert status_of(http10)[0] == 200


def test_a_port_in_use_is_one_error_line(tmp_path):
    """No banner and none of uvicorn's lines: `error: ...` and the exit code of the CLI's
    other environment errors (2), before the model loads."""
    from support.tiny_project import env

    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        ran = subprocess.run(
            [
                sys.executable,
                "-m",
                "lttw.cli",
                "serve",
                "--model",
                str(tmp_path),
                "--port",
                str(port),
            ],
            env=env(),
            capture_output=True,
            text=True,
            timeout=BOUND_S,
        )
    lines = ran.stderr.strip().splitlines()
    assert ran.returncode == 2 and len(lines) == 1, ran.stderr
    assert lines[0].startswith(f"error: cannot listen on 127.0.0.1:{port}: Address already in use")


# ------------------------------------------------------------------ --chunk: work by window


@pytest.fixture(scope="module")
def windowed(tmp_path_factory, tiny_encoder_dir):
    """The tiny LTTW model read in sliding windows (``lttw serve --chunk``), each forward
    pass slowed to 2 ms a window (so the work of a long request outlasts its timeout on any
    machine); ``done`` ends every wait at once."""
    from support.serving_models import shared_lttw_folder

    from lttw.inference.long_texts import WindowedPredictor
    from lttw.inference.predict import Predictor

    predictor = Predictor.load(shared_lttw_folder(tmp_path_factory, tiny_encoder_dir))
    done, real = threading.Event(), predictor.predict_proba

    def slowed(texts, batch_size=64):
        done.wait(0.002 * len(texts))
        return real(texts, batch_size)

    predictor.predict_proba = slowed
    yield WindowedPredictor(predictor, chunk=True)
    done.set()


LONG_TEXT = " ".join(["oil market stock price"] * 500)[:10_000]  # about 130 windows


def test_a_dropped_long_request_frees_the_model_at_once(windowed):
    """16 texts of 10,000 characters (about 2,100 windows, over 4 s of forward passes) get
    504 at 1 s; a one-word request right after is answered at once: the long request's
    remaining passes of --forward-batch windows were dropped, not computed."""
    limits = Limits(request_timeout_s=1.0, max_queue_texts=20_000)
    with serving(create_app(windowed, limits), limits) as (http, _, _):
        assert_json_error(http.post("/predict", json={"texts": [LONG_TEXT] * 16}), 504, "no answer")
        started = time.monotonic()
        small = http.post("/predict", json={"text": "oil"})
        assert small.status_code == 200, small.text
        assert time.monotonic() - started < 1.0
        batches = http.get("/health").json()["batches"]
        assert batches["dropped"] == 1 and batches["pieces"] < 1_000, batches


def test_the_queue_bound_counts_windows(windowed):
    """10 long texts make about 1,300 windows: past a queue of 1,000 they get a one-line
    422 naming the windows (no retry can help), never a place in the queue; texts within it
    get the answers of the windowed predictor."""
    limits = Limits(max_queue_texts=1000)
    with serving(create_app(windowed, limits), limits) as (http, _, _):
        answer = http.post("/predict", json={"texts": [LONG_TEXT] * 10})
        assert_json_error(answer, 422, "windows")
        # long and short texts in steps of SPLIT_STEP: the answers of lttw predict --chunk
        texts = ["oil", LONG_TEXT, *["team game"] * 8, LONG_TEXT]
        answer = http.post("/predict", json={"texts": texts, "top_k": 4})
        assert answer.status_code == 200, answer.text
        for row, item in zip(windowed.predict_proba(texts), answer.json()["predictions"]):
            probs = {top["label"]: top["prob"] for top in item["top"]}
            assert np.allclose([probs[c] for c in windowed.classes], row, atol=1e-5)


@pytest.mark.parametrize(
    "option, value, bound",
    [
        ("--threads", "100000", "1024"),
        ("--max-body-bytes", "100000000000", "268435456"),
        ("--max-texts", "100000000", "10000"),
        ("--max-connections", "10000000", "10000"),
        ("--forward-batch", "1000000000", "1024"),
        ("--request-timeout", "1e9", "3600"),
    ],
)
def test_serve_options_have_upper_bounds(tmp_path, option, value, bound):
    """One line naming the option and its bound, exit 3, before anything listens."""
    from support.cli_runner import assert_user_error, invoke

    ran = invoke("serve", "--model", tmp_path, "--port", "0", option, value)
    assert_user_error(ran, option, f"at most {bound}", code=3)


# ------------------------------------------------------------------ graceful drain


def test_sigterm_drains_before_it_closes(tmp_path):
    """Stop asked (what SIGTERM does) while a request is computed: the server keeps
    listening; a new client reads a JSON 503 for new work and /ready 503, an idle keep-alive
    connection's next request is answered, each with Connection: close; the request in
    progress gets its 200; then the server exits."""
    gate = Gate(tmp_path)
    limits = Limits(max_batch=1, max_wait_ms=0)
    with ThreadPoolExecutor(1) as pool:
        with serving(create_app(gate, limits), limits) as (http, server, port):
            try:
                assert http.get("/health").status_code == 200  # a keep-alive connection
                running = pool.submit(exchange, port, POST % (13, b'{"text": "a"}'))
                until(lambda: gate.seen, "the request runs")
                server.should_exit = True
                until(lambda: server.config.app.state.batcher.draining, "the drain")
                idle = http.get("/ready")  # on the keep-alive connection
                assert idle.headers["connection"] == "close"
                assert_json_error(idle, 503, "shutting down")
                fresh = exchange(port, POST % (13, b'{"text": "b"}'))
                assert status_of(fresh)[0] == 503 and b"connection: close" in fresh
                assert "shutting down" in status_of(fresh)[1]["error"]
            finally:
                gate.open.set()
            assert status_of(running.result(BOUND_S))[0] == 200
    assert gate.seen == [["a"]]
