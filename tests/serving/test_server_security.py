"""Who may use `lttw serve`, through a real server on a free loopback port: the Host header
against the allow list (400), the bearer token (401 without it, compared in constant time;
/health stays open), CORS only for the origins given, /info naming the encoder, never its
local path, and `lttw serve` refusing a non-loopback address without --allowed-host."""

from __future__ import annotations

import pytest
from support.cli_runner import assert_user_error, invoke
from support.live_server import Gate, assert_json_error, serving

from lttw.serving.info import encoder_name
from lttw.serving.security import LOOPBACK_HOSTS, Access, host_allowed
from lttw.serving.server import create_app


def test_host_header_outside_the_allow_list_gets_400(tmp_path):
    access = Access(allowed_hosts=(*LOOPBACK_HOSTS, "*.example.org"))
    with serving(create_app(Gate(tmp_path), access=access)) as (http, _, port):
        assert http.get("/health").status_code == 200  # Host: 127.0.0.1:<port>
        assert http.get("/health", headers={"host": f"localhost:{port}"}).status_code == 200
        assert http.get("/health", headers={"host": "api.example.org"}).status_code == 200
        for host in ("evil.example", "example.org.evil", "127.0.0.2"):
            assert_json_error(http.get("/info", headers={"host": host}), 400, "Host header")


def test_host_names():
    assert host_allowed("[::1]:8000", LOOPBACK_HOSTS) and host_allowed("LOCALHOST", LOOPBACK_HOSTS)
    assert not host_allowed("", LOOPBACK_HOSTS) and host_allowed("anything", ("*",))


def test_a_token_guards_every_route_but_health(tmp_path):
    access = Access(allowed_hosts=LOOPBACK_HOSTS, api_key="s3cret-token")
    with serving(create_app(Gate(tmp_path), access=access)) as (http, _, _):
        assert http.get("/health").status_code == 200
        for headers in ({}, {"authorization": "Bearer wrong"}, {"authorization": "s3cret-token"}):
            answer = http.get("/info", headers=headers)
            assert_json_error(answer, 401, "Authorization: Bearer")
            assert answer.headers["www-authenticate"] == "Bearer"
        refused = http.post("/predict", json={"text": "x"})
        assert_json_error(refused, 401, "API key")
        info = http.get("/info", headers={"authorization": "Bearer s3cret-token"})
        assert info.status_code == 200 and "s3cret" not in info.text
        assert info.json()["access"]["auth"] == "bearer token"


def test_cors_is_off_unless_origins_are_given(tmp_path):
    preflight = {
        "origin": "https://app.example",
        "access-control-request-method": "POST",
        "access-control-request-headers": "content-type",
    }
    with serving(create_app(Gate(tmp_path))) as (http, _, _):
        assert (
            "access-control-allow-origin" not in http.options("/predict", headers=preflight).headers
        )
        assert "access-control-allow-origin" not in http.get("/health", headers=preflight).headers
        assert http.get("/info").json()["access"]["cors"] == "off"
    access = Access(allowed_hosts=(), cors_origins=("https://app.example",))
    with serving(create_app(Gate(tmp_path), access=access)) as (http, _, _):
        allowed = http.options("/predict", headers=preflight)
        assert allowed.headers["access-control-allow-origin"] == "https://app.example"
        other = http.options("/predict", headers={**preflight, "origin": "https://evil.example"})
        assert "access-control-allow-origin" not in other.headers
        assert_json_error(other, 400, "may not call this server cross-origin")
        assert http.get("/info").json()["access"]["cors_origins"] == ["https://app.example"]
    # with a token: the preflight (it carries none) is answered, the request itself needs it
    access = Access(
        allowed_hosts=LOOPBACK_HOSTS, api_key="s3cret", cors_origins=("https://app.example",)
    )
    with_auth = {**preflight, "access-control-request-headers": "authorization, content-type"}
    with serving(create_app(Gate(tmp_path), access=access)) as (http, _, _):
        allowed = http.options("/predict", headers=with_auth)
        assert allowed.status_code == 200, allowed.text
        assert allowed.headers["access-control-allow-origin"] == "https://app.example"
        assert "authorization" in allowed.headers["access-control-allow-headers"].lower()
        refused = http.post(
            "/predict", json={"text": "x"}, headers={"origin": "https://app.example"}
        )
        assert_json_error(refused, 401, "API key")
        # the browser reads the 401 (not a CORS failure); another origin learns nothing
        assert refused.headers["access-control-allow-origin"] == "https://app.example"
        assert refused.headers["vary"] == "Origin"
        other = http.post(
            "/predict", json={"text": "x"}, headers={"origin": "https://evil.example"}
        )
        assert other.status_code == 401 and "access-control-allow-origin" not in other.headers


def test_encoder_is_a_name_never_a_path(tmp_path):
    assert encoder_name("sentence-transformers/all-MiniLM-L6-v2") == (
        "sentence-transformers/all-MiniLM-L6-v2"
    )
    snapshot = tmp_path / "hub" / "models--org--tiny-bert" / "snapshots" / "abc123"
    assert encoder_name(str(snapshot)) == "org/tiny-bert"
    assert encoder_name(str(tmp_path / "encoders" / "bert")) == "bert"
    assert encoder_name("../models/encoders/bert") == "bert"


def test_lttw_serve_refuses_an_empty_api_key(tmp_path, monkeypatch):
    """An empty token (a typo, an unset variable expanded) is refused, not served open."""
    assert_user_error(invoke("serve", "--model", tmp_path, "--api-key", ""), "is empty")
    monkeypatch.setenv("LTTW_API_KEY", " ")
    assert_user_error(invoke("serve", "--model", tmp_path), "LTTW_API_KEY is empty")


@pytest.mark.parametrize(
    "option, value",
    [
        ("--allowed-host", "evil.com:80"),
        ("--allowed-host", "https://api.example.org"),
        ("--allowed-host", "a/b"),
        ("--cors-origin", "not a url"),
        ("--cors-origin", "https://app.example.org/path"),
        ("--cors-origin", "ftp://app.example.org"),
    ],
)
def test_lttw_serve_refuses_a_host_or_origin_it_could_never_match(tmp_path, option, value):
    assert_user_error(invoke("serve", "--model", tmp_path, option, value), option)


def test_lttw_serve_beyond_loopback_needs_allowed_hosts(tmp_path):
    assert_user_error(invoke("serve", "--model", tmp_path, "--host", "0.0.0.0"), "--allowed-host")
