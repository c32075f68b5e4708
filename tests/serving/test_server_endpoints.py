"""`lttw serve`'s endpoints for running replicas, through a real server on a free loopback
port: liveness (``/live``: no token, any Host) and readiness (``/ready``: 503 until the
warm-up forward pass has run and once shutdown begins), Prometheus ``/metrics``, the OpenAPI
schema and page behind the same Host allow list and token, and the Hugging Face / TEI
request shape ``{"inputs": ...}``."""

from __future__ import annotations

import json
import re
import threading
from concurrent.futures import ThreadPoolExecutor

import httpx
import numpy as np
import pytest
from prometheus_client.parser import text_string_to_metric_families
from support.live_server import BOUND_S, Gate, assert_json_error, serving, until

from lttw.serving import explaining
from lttw.serving.limits import Limits
from lttw.serving.security import LOOPBACK_HOSTS, Access
from lttw.serving.server import create_app

TOKEN = {"authorization": "Bearer s3cret"}


def test_live_and_ready_need_no_token_or_allowed_host(tmp_path):
    gate = Gate(tmp_path)
    access = Access(allowed_hosts=LOOPBACK_HOSTS, api_key="s3cret")
    app = create_app(gate, access=access, warm_up=True)
    with serving(app) as (http, server, _):
        pod = {"host": "10.1.2.3:8000"}  # what an orchestrator's probe sends
        assert http.get("/live", headers=pod).json() == {"status": "alive"}
        assert_json_error(http.get("/ready", headers=pod), 503, "warm-up forward pass")
        until(lambda: gate.seen, "the warm-up pass runs")
        assert http.get("/live").status_code == 200  # while the model computes
        gate.open.set()
        until(lambda: http.get("/ready").status_code == 200, "ready once warm")
        assert http.get("/ready", headers=pod).json() == {"status": "ready"}
        assert_json_error(http.get("/health", headers=pod), 400, "Host header")
        assert_json_error(http.get("/info"), 401, "API key")
        # graceful shutdown begins (what SIGTERM does first): not ready, still alive
        loop = server.servers[0].get_loop()
        loop.call_soon_threadsafe(app.state.batcher.drain, BOUND_S)
        until(lambda: http.get("/ready").status_code == 503, "not ready while draining")
        assert_json_error(http.get("/ready"), 503, "shutting down")
        assert http.get("/live").status_code == 200
    assert gate.seen == [["warm up"]]


def test_a_failed_warm_up_keeps_the_server_unready(tmp_path):
    class Broken(Gate):
        def predict_proba(self, texts, batch_size=64):
            raise RuntimeError("CUDA error: out of memory")

    with serving(create_app(Broken(tmp_path), warm_up=True)) as (http, _, _):
        until(lambda: "failed" in http.get("/ready").text, "the warm-up fails")
        assert_json_error(http.get("/ready"), 503, "warm-up forward pass failed: CUDA error")
        assert http.get("/live").status_code == 200


def test_inputs_get_text_embeddings_inference_answers(tmp_path):
    gate = Gate(tmp_path)  # every text: a 0.25, b 0.75
    gate.open.set()
    b_first = [{"label": "b", "score": 0.75}, {"label": "a", "score": 0.25}]
    with serving(create_app(gate)) as (http, _, _):
        one = http.post("/predict", json={"inputs": "oil prices fall"})
        many = http.post("/predict", json={"inputs": ["a", ["b"]], "truncate": True})
        top = http.post("/predict", json={"inputs": ["a"], "top_k": 1})
        raw = http.post("/predict", json={"inputs": "a", "raw_scores": True})
        texts = http.post("/predict", json={"texts": ["a"]})
        both = http.post("/predict", json={"inputs": "a", "text": "b"})
    assert one.json() == b_first  # TEI: a string's classes, most probable first
    assert many.json() == [b_first, b_first]  # a list: one list per text, TEI's [text] too
    assert top.json() == [[{"label": "b", "score": 0.75}]]
    assert raw.json() == [
        {"label": "b", "score": pytest.approx(np.log(0.75))},
        {"label": "a", "score": pytest.approx(np.log(0.25))},
    ]
    assert texts.json() == {"predictions": [{"label": "b", "prob": 0.75}]}  # lttw's shape
    assert_json_error(both, 422, "'text' and 'inputs' given together")
    assert gate.seen == [["oil prices fall"], ["a", "b"], ["a"], ["a"], ["a"]]


def metric_samples(text: str) -> dict[tuple[str, tuple], float]:
    return {
        (s.name, tuple(sorted(s.labels.items()))): s.value
        for family in text_string_to_metric_families(text)
        for s in family.samples
    }


def test_metrics_count_requests_errors_latency_queue_and_batches(tmp_path):
    import socket

    gate = Gate(tmp_path)
    gate.open.set()
    limits = Limits(max_batch=8)
    access = Access(allowed_hosts=LOOPBACK_HOSTS, api_key="s3cret")
    with serving(create_app(gate, limits, access=access), limits) as (http, _, port):
        for texts in (["a"], ["b", "c", "d"]):
            assert http.post("/predict", json={"texts": texts}, headers=TOKEN).status_code == 200
        assert http.post("/predict", json={"texts": []}, headers=TOKEN).status_code == 422
        assert http.post("/predict", content=b"{}", headers=TOKEN).status_code == 415
        assert http.get("/made-up/path/1", headers=TOKEN).status_code == 404
        with socket.create_connection(("127.0.0.1", port), timeout=BOUND_S) as conn:
            conn.sendall(b"GET /health HTTP/2.0\r\nhost: 127.0.0.1\r\n\r\n")
            assert conn.recv(64).startswith(b"HTTP/1.1 400")
        assert_json_error(http.get("/metrics"), 401, "API key")  # the token applies
        scraped = http.get("/metrics", headers=TOKEN)
    assert scraped.status_code == 200 and scraped.headers["content-type"].startswith("text/plain")
    got = metric_samples(scraped.text)

    def requests(route, status):
        return got.get(("lttw_http_requests_total", (("route", route), ("status", status))), 0)

    assert requests("/predict", "200") == 2 and requests("/predict", "422") == 1
    assert requests("/predict", "415") == 1 and requests("/metrics", "401") == 1
    assert requests("other", "404") == 1  # made-up paths never become series of their own
    assert got[("lttw_http_request_duration_seconds_count", (("route", "/predict"),))] == 4
    assert got[("lttw_connections_refused_total", (("status", "400"),))] == 1
    assert got[("lttw_queue_texts", ())] == 0
    assert got[("lttw_batch_texts_count", ())] == 2 and got[("lttw_batch_texts_sum", ())] == 4
    assert got[("lttw_batch_texts_bucket", (("le", "1.0"),))] == 1
    assert got[("lttw_batcher_texts_total", ())] == 4


def test_metrics_count_predicted_labels_and_confidence(tmp_path):
    gate = Gate(tmp_path)  # every text: a 0.25, b 0.75
    gate.open.set()
    with serving(create_app(gate)) as (http, _, _):
        http.post("/predict", json={"texts": ["x", "y", "z"]})
        http.post("/predict", json={"inputs": "x"})
        http.post("/predict", json={"text": "x", "min_prob": 0.9})  # no label
        got = metric_samples(http.get("/metrics").text)
    assert got[("lttw_predicted_labels_total", (("label", "b"),))] == 4
    assert got[("lttw_predicted_labels_total", (("label", "a"),))] == 0  # every class, at 0
    assert got[("lttw_texts_without_label_total", ())] == 1
    assert got[("lttw_prediction_confidence_count", ())] == 5
    assert got[("lttw_prediction_confidence_bucket", (("le", "0.7"),))] == 0
    assert got[("lttw_prediction_confidence_bucket", (("le", "0.8"),))] == 5


def test_explain_is_bounded_and_refused_where_it_cannot_run(tmp_path, monkeypatch):
    release = threading.Event()

    def held(predictor, text):  # an explanation that runs until the test releases it
        assert release.wait(BOUND_S)
        return {"text": text}

    monkeypatch.setattr(explaining, "explained", held)
    gate = Gate(tmp_path)
    gate.open.set()
    gate.tokenizer = object()  # explainable, as a torch model folder is
    limits = Limits(request_timeout_s=3)
    app = create_app(gate, limits)
    slots = explaining.MAX_EXPLAINS
    with serving(app, limits) as (http, _, port), ThreadPoolExecutor(slots) as pool:
        try:
            waiting = [
                pool.submit(httpx.post, f"http://127.0.0.1:{port}/explain", json={"text": "t"})
                for _ in range(slots)
            ]
            until(lambda: app.state.explainer.busy == slots, "every slot taken")
            busy = http.post("/explain", json={"text": "one more"})
            answered = [w.result() for w in waiting]
        finally:
            release.set()
    assert_json_error(busy, 503, "explanations are waiting")
    assert busy.headers["retry-after"] == "1"
    assert {a.status_code for a in answered} == {504}  # held past --request-timeout
    with serving(create_app(gate, backend="onnx")) as (http, _, _):
        assert_json_error(http.post("/explain", json={"text": "a"}), 501, "torch backend")


def test_openapi_schema_and_page_behind_the_same_access(tmp_path):
    access = Access(allowed_hosts=LOOPBACK_HOSTS, api_key="s3cret")
    with serving(create_app(Gate(tmp_path), access=access)) as (http, _, _):
        assert_json_error(http.get("/openapi.json"), 401, "API key")
        wrong_host = {**TOKEN, "host": "evil.example"}
        assert_json_error(http.get("/openapi.json", headers=wrong_host), 400, "Host header")
        schema = http.get("/openapi.json", headers=TOKEN).json()
        page = http.get("/docs", headers=TOKEN)
    assert page.status_code == 200 and "/openapi.json" in page.text
    assert {"/predict", "/health", "/info", "/live", "/ready", "/metrics"} <= set(schema["paths"])
    predict = schema["paths"]["/predict"]["post"]
    body = predict["requestBody"]["content"]["application/json"]["schema"]
    assert {"texts", "text", "inputs", "top_k", "min_prob", "raw_scores", "truncate"} == set(
        body["properties"]
    )
    assert {"200", "400", "413", "415", "422", "503"} <= set(predict["responses"])
    answer = predict["responses"]["200"]["content"]["application/json"]["schema"]
    assert {"PredictAnswer", "Score"} <= set(re.findall(r"/(\w+)\"", json.dumps(answer)))
    assert "ErrorAnswer" in schema["components"]["schemas"]


def test_openapi_without_token_is_open_on_a_loopback_server(tmp_path):
    with serving(create_app(Gate(tmp_path), access=Access())) as (http, _, _):
        assert http.get("/openapi.json").json()["info"]["title"] == "lttw"
        assert http.get("/ready").json() == {"status": "ready"}  # no warm-up asked
