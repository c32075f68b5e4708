"""The page at ``GET /`` and Swagger UI at ``GET /docs``, served from installed packages, as
headless Chromium shows them through a real server on a free loopback port (no network
beyond it): ``/?text=...`` predicts on load and draws one bar per class and the highlighted
words; a server with an API key has the page ask for it; ``/docs`` renders the routes."""

from __future__ import annotations

import re
from urllib.parse import quote

import numpy as np
import pytest
from support.live_server import assert_json_error, serving
from support.screenshots import browser, page_dom, screenshot, share_near
from support.serving_models import CLASSES, shared_lttw_folder

from lttw.inference.predict import Predictor
from lttw.serving.security import LOOPBACK_HOSTS, Access
from lttw.serving.server import create_app

TEXT = "Stocks rally as oil prices fall, the market and the bank deal"
BAR_BLUE = (0x1F, 0x6F, 0xEB)  # page.css's .bar


@pytest.fixture(scope="module")
def predictor(tmp_path_factory, tiny_encoder_dir):
    return Predictor.load(shared_lttw_folder(tmp_path_factory, tiny_encoder_dir))


def test_the_page_predicts_and_highlights_in_chromium(predictor, tmp_path):
    browser()
    probs = predictor.predict_proba([TEXT])[0]
    with serving(create_app(predictor)) as (http, _, port):
        url = f"http://127.0.0.1:{port}/?text={quote(TEXT)}"
        dom = page_dom(url, tmp_path / "profile")
        pixels = screenshot(url, tmp_path / "page.png", 1000, 900, wait_ms=10_000)
        page = http.get("/")
    assert "default-src 'self'" in page.headers["content-security-policy"]
    assert not re.search(r"(src|href)=\"(https?:)?//", page.text)  # nothing from elsewhere
    assert 'data-state="done"' in dom, dom[-2000:]
    assert f"Most probable class: {CLASSES[int(np.argmax(probs))]}" in dom
    bars = re.findall(r'data-label="([^"]+)".*?style="width: ([\d.]+)%', dom)
    assert [label for label, _ in bars] == [CLASSES[i] for i in np.argsort(-probs)]
    widths = dict((label, float(width)) for label, width in bars)
    for label, p in zip(CLASSES, probs):
        assert widths[label] == pytest.approx(100 * p, abs=0.051)
    marked = re.findall(r"<mark [^>]*>([^<]+)</mark>", dom)
    assert {"oil", "market", "bank", "deal"} <= set(marked), marked
    assert share_near(pixels, BAR_BLUE) > 0.005  # the bars are drawn


def test_the_page_asks_for_the_api_key(predictor, tmp_path):
    browser()
    access = Access(allowed_hosts=LOOPBACK_HOSTS, api_key="s3cret")
    with serving(create_app(predictor, access=access)) as (http, _, port):
        dom = page_dom(f"http://127.0.0.1:{port}/?text=team+won", tmp_path / "profile")
        assets = [http.get(path) for path in ("/", "/static/page.js", "/static/page.css")]
        assert_json_error(http.get("/", headers={"host": "evil.example"}), 400, "Host header")
        assert_json_error(http.post("/explain", json={"text": "a"}), 401, "API key")
    assert 'data-state="key"' in dom and "needs its API key" in dom
    assert re.search(r'<div id="key-box">', dom)  # shown: no longer hidden
    assert [a.status_code for a in assets] == [200, 200, 200]  # no token: they hold no data
    assert assets[1].headers["content-type"].startswith("text/javascript")


def test_docs_render_offline_from_the_package(predictor, tmp_path):
    browser()
    with serving(create_app(predictor)) as (http, _, port):
        page = http.get("/docs")
        script = http.get("/docs/swagger-ui-bundle.js")
        dom = page_dom(f"http://127.0.0.1:{port}/docs", tmp_path / "profile")
    assert page.status_code == 200 and "/docs/swagger-ui-bundle.js" in page.text
    assert not re.search(r"(src|href)=\"(https?:)?//", page.text)  # no CDN
    assert script.status_code == 200 and len(script.content) > 100_000
    assert "opblock" in dom and "/predict" in dom and "/explain" in dom  # Swagger UI drew it
