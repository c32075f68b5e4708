"""`lttw serve`'s bounds through a real server (uvicorn, with ``server_for``'s bounded
protocol) on a free loopback port: a full queue (503 + Retry-After), a client that left
(its work dropped), a request timeout (504), the shutdown limit (JSON 503), headers too
large or too slow (431 / 408), a body too slow (408), keep-alive, the connection cap, JSON
bombs (400) and one log line per aborted upload. The stub predictor's forward passes wait for
the test to open a gate, so what runs and what waits is set by the test, never by timing;
every wait is bounded (a hang fails the test)."""

from __future__ import annotations

import asyncio
import json
import socket
import threading
from concurrent.futures import ThreadPoolExecutor

import httpx
import numpy as np
import pytest
from support.live_server import (
    BOUND_S,
    Gate,
    assert_json_error,
    exchange,
    lttw_serve,  # noqa: F401
    serving,
    until,  # noqa: F401
)

from lttw.serving.batcher import MicroBatcher
from lttw.serving.limits import Limits
from lttw.serving.server import create_app


def status_and_error(response: bytes) -> tuple[int, str]:
    """The status of a raw HTTP response and its one-line JSON error."""
    head, _, body = response.partition(b"\r\n\r\n")
    doc = json.loads(body)
    assert list(doc) == ["error"] and "\n" not in doc["error"], body
    return int(head.split(b" ", 2)[1]), doc["error"]


# ------------------------------------------------------------------ queue, clients, time


def test_a_full_queue_answers_503_with_retry_after(tmp_path):
    gate = Gate(tmp_path)
    limits = Limits(max_batch=1, max_wait_ms=0, max_queue_texts=2)
    with serving(create_app(gate, limits), limits) as (http, _, _), ThreadPoolExecutor(3) as pool:
        try:
            running = pool.submit(http.post, "/predict", json={"text": "first"})
            until(lambda: gate.seen, "the first request runs")
            waiting = [pool.submit(http.post, "/predict", json={"text": t}) for t in "xy"]
            until(lambda: queued(http) == 2, "two texts queue")
            refused = http.post("/predict", json={"text": "one too many"})
            assert_json_error(refused, 503, "busy")
            assert int(refused.headers["retry-after"]) >= 1
        finally:
            gate.open.set()
        answers = [f.result(BOUND_S) for f in [running, *waiting]]
    assert [a.status_code for a in answers] == [200, 200, 200]
    assert "one too many" not in sum(gate.seen, [])


def test_work_of_a_client_that_left_is_dropped(tmp_path):
    gate = Gate(tmp_path)
    limits = Limits(max_batch=1, max_wait_ms=0)
    with (
        serving(create_app(gate, limits), limits) as (http, _, port),
        ThreadPoolExecutor(1) as pool,
    ):
        try:
            running = pool.submit(http.post, "/predict", json={"text": "first"})
            until(lambda: gate.seen, "the first request runs")
            body = b'{"texts": ["left", "left too"]}'
            with socket.create_connection(("127.0.0.1", port), timeout=BOUND_S) as leaving:
                leaving.sendall(
                    b"POST /predict HTTP/1.1\r\nhost: 127.0.0.1\r\ncontent-type: application/json"
                    b"\r\ncontent-length: %d\r\n\r\n%s" % (len(body), body)
                )
                until(lambda: queued(http) == 2, "its two texts queue")
            until(lambda: queued(http) == 0, "the server notices the client left")
        finally:
            gate.open.set()
        assert running.result(BOUND_S).status_code == 200
        assert http.post("/predict", json={"text": "after"}).status_code == 200
        stats = http.get("/health").json()["batches"]
    assert gate.seen == [["first"], ["after"]]  # the texts of the client that left never ran
    assert stats["dropped"] == 1 and stats["requests"] == 2


def test_a_large_request_stops_between_parts_once_its_client_left():
    """A request over ``max_batch`` texts runs in parts of ``max_batch``; once nobody wants
    its answer, the parts not started yet are never computed."""
    seen, started, release = [], threading.Event(), threading.Event()

    def predict_proba(texts, batch_size):
        seen.append(list(texts))
        started.set()
        assert release.wait(BOUND_S)
        return np.zeros((len(texts), 2))

    async def main():
        batcher = MicroBatcher(predict_proba, max_batch=2, max_wait_ms=0)
        batcher.start()
        job = batcher.submit(list("abcdef"))
        assert await asyncio.to_thread(started.wait, BOUND_S)
        job.cancel()  # what the server does when the client disconnects
        release.set()
        for _ in range(BOUND_S * 100):
            if batcher.stats.dropped:
                break
            await asyncio.sleep(0.01)
        await batcher.stop()
        return batcher.stats

    stats = asyncio.run(main())
    assert seen == [["a", "b"]] and stats.dropped == 1 and stats.requests == 0


def test_a_request_timed_out_while_cut_into_windows_counts_as_dropped():
    """With ``--chunk`` a request's time includes cutting its texts into windows: one whose
    time runs out there is counted as dropped and never reaches a forward pass."""
    seen, cutting, release = [], threading.Event(), threading.Event()

    def split(texts):
        cutting.set()
        assert release.wait(BOUND_S)
        return [f"{text} window" for text in texts], lambda rows: rows

    async def main():
        batcher = MicroBatcher(lambda texts, _: seen.append(texts), split=split)
        batcher.start()
        timing_out = asyncio.ensure_future(batcher.enqueue_within(["long"], 0.05))
        assert await asyncio.to_thread(cutting.wait, BOUND_S)
        try:
            await timing_out
        except asyncio.TimeoutError:
            pass
        release.set()
        with pytest.raises(asyncio.TimeoutError):  # no time left at all: never cut
            await batcher.enqueue_within(["late"], -1.0)
        await batcher.stop()
        return batcher.stats, timing_out

    stats, timing_out = asyncio.run(main())
    assert isinstance(timing_out.exception(), asyncio.TimeoutError)
    assert stats.dropped == 2 and stats.pieces == 0 and seen == []


def queued(http: httpx.Client) -> int:
    return http.get("/health").json()["queued_texts"]


def test_a_request_past_its_timeout_gets_504(tmp_path):
    gate = Gate(tmp_path)
    limits = Limits(request_timeout_s=0.5)
    with serving(create_app(gate, limits), limits) as (http, _, _):
        try:
            assert_json_error(http.post("/predict", json={"text": "slow"}), 504, "no answer")
        finally:
            gate.open.set()
        assert http.get("/health").json()["status"] == "ok"


def test_shutdown_answers_what_it_cannot_finish_with_json_503(tmp_path):
    gate = Gate(tmp_path)
    limits = Limits(max_batch=1, max_wait_ms=0, shutdown_timeout_s=0.5)
    with ThreadPoolExecutor(2) as pool:
        try:
            with serving(create_app(gate, limits), limits) as (http, server, _):
                running = pool.submit(http.post, "/predict", json={"text": "running"})
                until(lambda: gate.seen, "the first request runs")
                waiting = pool.submit(http.post, "/predict", json={"text": "queued"})
                until(lambda: queued(http) == 1, "one queues")
                server.should_exit = True  # what SIGTERM does
                answers = [running.result(BOUND_S), waiting.result(BOUND_S)]
        finally:
            gate.open.set()
    for answer in answers:
        assert_json_error(answer, 503, "shutting down")
    assert gate.seen == [["running"]]


def test_an_unexpected_error_is_a_json_500_and_one_log_line(tmp_path, caplog):
    """Answers the server cannot turn into predictions (here: not numbers): a one-line
    JSON 500, one log line, no traceback, and the service goes on."""

    class Broken(Gate):
        def predict_proba(self, texts, batch_size=64):
            return np.array([["x", "y"]] * len(texts))

    with serving(create_app(Broken(tmp_path))) as (http, _, _):
        with caplog.at_level("ERROR", logger="lttw.serving"):
            assert_json_error(http.post("/predict", json={"text": "a"}), 500, "internal error")
        assert http.get("/health").json()["status"] == "ok"
    # warnings and errors only: the server's own info line when it stops may land here too
    lines = [r for r in caplog.records if r.name == "lttw.serving" and r.levelno >= 30]
    assert len(lines) == 1 and "POST /predict failed" in lines[0].getMessage()
    assert not lines[0].exc_info


# ------------------------------------------------------------------ headers, bodies, connections


def test_headers_too_large_get_431_and_are_not_kept(tmp_path):
    limits = Limits(max_header_bytes=2048)
    with serving(create_app(Gate(tmp_path), limits), limits) as (http, _, port):
        big = b"GET /health HTTP/1.1\r\nhost: 127.0.0.1\r\nx-big: " + b"a" * 3000
        status, error = status_and_error(exchange(port, big))
        assert status == 431 and "2048 bytes" in error
        many = b"GET /health HTTP/1.1\r\n" + b"x-h: 0123456789\r\n" * 200 + b"\r\n"
        assert status_and_error(exchange(port, many))[0] == 431
        assert http.get("/health", headers={"x-fine": "a" * 1000}).status_code == 200


def test_slow_headers_and_silent_connections_get_408(tmp_path):
    limits = Limits(header_timeout_s=0.3)
    with serving(create_app(Gate(tmp_path), limits), limits) as (http, _, port):
        status, error = status_and_error(exchange(port, b"GET /health HTTP/1.1\r\nhost: x"))
        assert status == 408 and "headers" in error
        assert status_and_error(exchange(port, b""))[0] == 408
        assert http.get("/health").status_code == 200


def test_a_slow_body_gets_408_and_the_connection_closes(tmp_path):
    limits = Limits(body_timeout_s=0.3)
    with serving(create_app(Gate(tmp_path), limits), limits) as (http, _, port):
        head = (
            b"POST /predict HTTP/1.1\r\nhost: 127.0.0.1\r\ncontent-length: 100\r\n"
            b"content-type: application/json\r\n\r\n"
        )
        status, error = status_and_error(exchange(port, head + b'{"text": "'))
        assert status == 408 and "10 bytes arrived" in error
        assert http.get("/health").status_code == 200


def test_an_idle_keep_alive_connection_is_closed(tmp_path):
    limits = Limits(keep_alive_s=1)
    with serving(create_app(Gate(tmp_path), limits), limits) as (_, _, port):
        response = exchange(port, b"GET /health HTTP/1.1\r\nhost: 127.0.0.1\r\n\r\n")
    assert response.startswith(b"HTTP/1.1 200") and b'"status":"ok"' in response


def test_connections_past_the_cap_get_503(tmp_path):
    limits = Limits(max_connections=3, header_timeout_s=BOUND_S)
    gate = Gate(tmp_path)
    with serving(create_app(gate, limits), limits) as (http, _, port):
        busy = [socket.create_connection(("127.0.0.1", port), timeout=BOUND_S) for _ in range(3)]
        try:
            for conn in busy:  # each holds a request the gate keeps computing
                conn.sendall(
                    b"POST /predict HTTP/1.1\r\nhost: 127.0.0.1\r\ncontent-length: 13\r\n"
                    b'content-type: application/json\r\n\r\n{"text": "a"}'
                )
            until(lambda: _refused(port), "the server holds three connections")
            status, error = status_and_error(exchange(port, b""))  # nothing sent: 503 too
            assert status == 503 and "--max-connections" in error
        finally:
            gate.open.set()
            for conn in busy:
                conn.close()

        def healthy():
            try:
                return http.get("/health").status_code == 200
            except httpx.HTTPError:
                return False

        until(healthy, "the server answers again once the idle connections closed")


def _refused(port: int) -> bool:
    """Whether a request on a new connection is answered 503 (the connection cap)."""
    answer = exchange(port, b"GET /health HTTP/1.1\r\nhost: 127.0.0.1\r\nconnection: close\r\n\r\n")
    return answer.startswith(b"HTTP/1.1 503")


# ------------------------------------------------------------------ JSON bombs, log lines
