"""`lttw serve` in a process of its own, started once (each start costs the interpreter,
torch and the model's warm-up; the server's behaviour is tested in-process beside it): ready
only after its warm-up, its probes, metrics and OpenAPI; the token read from LTTW_API_KEY and
/info without paths; bodies nested 100,000 deep and a top_k of 5,000 digits answered by a
one-line JSON 400; 20 uploads abandoned half-way logged one line each; and on SIGTERM a
clean exit that says what it served, no traceback."""

from __future__ import annotations

import signal
from pathlib import Path

import httpx
import pytest
from prometheus_client.parser import text_string_to_metric_families
from support.live_server import BOUND_S, assert_json_error, exchange, lttw_serve, until
from support.serving_models import shared_lttw_folder

from lttw.serving.security import LOOPBACK_HOSTS

KEY = "from-the-env"
BOMBS = (
    (b"[" * 100_000 + b"]" * 100_000, "nested too deep"),
    (b'{"texts": ' + b"[" * 100_000, "nested too deep"),
    (b'{"text": "a", "top_k": ' + b"7" * 5000 + b"}", "too many digits"),
)
ABANDONED = (
    b"POST /predict HTTP/1.1\r\nhost: 127.0.0.1\r\nauthorization: Bearer "
    + KEY.encode()
    + b"\r\ncontent-length: 100000\r\ncontent-type: application/json\r\n\r\n"
    + b"x" * 1000
)


@pytest.fixture(scope="module")
def model_dir(tmp_path_factory, tiny_encoder_dir) -> Path:
    return shared_lttw_folder(tmp_path_factory, tiny_encoder_dir)


def texts_counted(metrics: str) -> float:
    return next(
        s.value
        for family in text_string_to_metric_families(metrics)
        for s in family.samples
        if s.name == "lttw_batcher_texts_total" and not s.labels
    )


def test_lttw_serve_in_a_process_of_its_own(model_dir):
    url = "http://127.0.0.1:{}"
    with lttw_serve(model_dir, {"LTTW_API_KEY": KEY}) as (proc, port, lines):
        bare = httpx.Client(base_url=url.format(port), timeout=BOUND_S)
        http = httpx.Client(
            base_url=url.format(port), timeout=BOUND_S, headers={"authorization": f"Bearer {KEY}"}
        )
        with bare, http:
            until(lambda: bare.get("/ready").status_code == 200, "ready")
            assert bare.get("/live").json() == {"status": "alive"}
            assert_json_error(bare.get("/info"), 401, "API key")
            info = http.get("/info")
            assert_json_error(http.get("/info", headers={"host": "evil.example"}), 400, "Host")
            answer = http.post("/predict", json={"texts": ["stock market", "team won"]})
            assert answer.status_code == 200 and len(answer.json()["predictions"]) == 2
            assert http.post("/predict", json={"text": "oil"}).status_code == 200
            counted = texts_counted(http.get("/metrics").text)
            assert http.get("/openapi.json").json()["paths"]["/predict"]
            for body, words in BOMBS:
                bomb = http.post(
                    "/predict", content=body, headers={"content-type": "application/json"}
                )
                assert_json_error(bomb, 400, words)
            for _ in range(20):
                exchange(port, ABANDONED, close_after_send=True)
            until(lambda: bare.get("/health").status_code == 200, "still up")
        proc.send_signal(signal.SIGTERM)
        rest = proc.communicate(timeout=BOUND_S)[1]
    assert counted == 3  # the warm-up pass is not counted
    assert info.status_code == 200, info.text
    doc = info.json()
    assert doc["access"] == {
        "auth": "bearer token",
        "allowed_hosts": list(LOOPBACK_HOSTS),
        "cors_origins": [],
        "cors": "off",
    }
    assert doc["encoder"] and "/" not in doc["encoder"] and str(Path.home()) not in info.text
    assert str(model_dir) not in info.text and KEY not in info.text
    # uvicorn re-raises the signal once it has shut down: "terminated by SIGTERM", cleanly
    assert proc.returncode in (0, -signal.SIGTERM), rest
    assert "Application shutdown complete" in rest
    assert "stopped after 2 requests, 3 texts" in rest
    assert "Traceback" not in rest and "Exception in ASGI" not in rest, rest
    assert rest.count("client left during its upload") <= 20, rest
    assert len(rest.splitlines()) <= 20 + 10, rest  # one line per abort, a few of its own
    assert "serving " in "".join(lines) and "lttw, torch, 4 labels" in "".join(lines)
