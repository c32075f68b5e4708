"""Who may use the service: the Host header against an allow list (DNS rebinding, a server
reached under a name it does not answer to), an optional bearer token compared in constant
time, CORS only for the origins given. Refusals are one JSON line like every other error."""

from __future__ import annotations

import hmac
import ipaddress
import json
import logging
from dataclasses import dataclass

from lttw.serving.page import PAGE_FILES

log = logging.getLogger("lttw.serving")

#: the names a server bound to a loopback address answers to unless told otherwise
LOOPBACK_HOSTS = ("127.0.0.1", "localhost", "::1")
#: the probes (``GET /live``, ``GET /ready``): answered whatever the Host header and without a
#: token (an orchestrator's probe sends the pod's address as Host); they tell nothing else
PROBE_PATHS = frozenset({"/live", "/ready"})
#: what needs no token: the probes, ``GET /health`` and the page at ``GET /`` with its files
#: (``serving.page``: no data; it asks for the key and sends it with its requests)
OPEN_PATHS = frozenset({"/health", *PROBE_PATHS, *PAGE_FILES})
#: the environment variable ``lttw serve`` reads the token from when ``--api-key`` is not given
API_KEY_ENV = "LTTW_API_KEY"


def is_loopback(host: str) -> bool:
    """Whether listening on ``host`` reaches this machine only."""
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


@dataclass(frozen=True)
class Access:
    """Who may call: ``allowed_hosts`` (Host header names, ``*.example.com`` a subdomain
    pattern, ``*`` any; empty: any), ``api_key`` (None: no token needed), ``cors_origins``
    (browser origins allowed cross-origin; empty: CORS off)."""

    allowed_hosts: tuple[str, ...] = LOOPBACK_HOSTS
    api_key: str | None = None
    cors_origins: tuple[str, ...] = ()

    def describe(self) -> dict:
        """What ``GET /info`` says about access (never the token)."""
        return {
            "auth": "bearer token" if self.api_key else "none",
            "allowed_hosts": list(self.allowed_hosts) or ["*"],
            "cors_origins": list(self.cors_origins),
            "cors": "on" if self.cors_origins else "off",
        }


def host_name(value: str) -> str:
    """The name of a Host header value, without its port ('[::1]:80' -> '::1')."""
    value = value.strip().lower()
    if value.startswith("["):
        return value[1 : value.find("]")] if "]" in value else value[1:]
    return value.rsplit(":", 1)[0] if value.count(":") == 1 else value


def host_allowed(value: str, allowed: tuple[str, ...]) -> bool:
    if not allowed or "*" in allowed:
        return True
    name = host_name(value)
    for pattern in allowed:
        pattern = pattern.lower()
        if name == pattern or (pattern.startswith("*.") and name.endswith(pattern[1:])):
            return True
    return False


class AccessMiddleware:
    """ASGI middleware: a Host outside ``access.allowed_hosts`` gets 400 (except on
    ``PROBE_PATHS``), a missing or wrong bearer token 401 (``WWW-Authenticate: Bearer``),
    except on ``OPEN_PATHS`` and for a CORS preflight from an allowed origin (which the CORS
    middleware answers; another origin's preflight gets 400)."""

    def __init__(self, app, access: Access):
        self.app, self.access = app, access
        self._key = access.api_key.encode() if access.api_key else None

    async def __call__(self, scope, receive, send):
        if scope["type"] != "http":
            return await self.app(scope, receive, send)
        if scope["path"] in PROBE_PATHS and scope["method"] in ("GET", "HEAD"):
            return await self.app(scope, receive, send)
        headers = dict(scope["headers"])
        origin = headers.get(b"origin", b"").decode("latin-1")
        # a refusal to an allowed origin says so, or the browser shows a CORS failure
        cors = (
            [(b"access-control-allow-origin", origin.encode("latin-1")), (b"vary", b"Origin")]
            if origin in self.access.cors_origins
            else []
        )
        host = headers.get(b"host", b"").decode("latin-1")
        if not host_allowed(host, self.access.allowed_hosts):
            return await send_json(
                send, 400, f"the Host header {host!r} is not one this server answers to", cors
            )
        if scope["method"] == "OPTIONS" and b"access-control-request-method" in headers:
            # a CORS preflight carries no token (browsers send none): never authenticated;
            # an origin not allowed is refused here, in JSON like every other error
            if origin not in self.access.cors_origins:
                return await send_json(
                    send, 400, f"the origin {origin!r} may not call this server cross-origin"
                )
            return await self.app(scope, receive, send)
        if self._key is not None and scope["path"] not in OPEN_PATHS:
            given = headers.get(b"authorization", b"")
            scheme, _, token = given.partition(b" ")
            if scheme.lower() != b"bearer" or not hmac.compare_digest(token.strip(), self._key):
                return await send_json(
                    send,
                    401,
                    "a valid API key is needed: send 'Authorization: Bearer <key>'",
                    [(b"www-authenticate", b"Bearer"), *cors],
                )
        return await self.app(scope, receive, send)


async def send_json(send, status: int, message: str, headers=()) -> None:
    """Answer with a one-line JSON ``{"error": message}``."""
    body = json.dumps({"error": message}).encode()
    await send(
        {
            "type": "http.response.start",
            "status": status,
            "headers": [
                (b"content-type", b"application/json"),
                (b"content-length", str(len(body)).encode()),
                *headers,
            ],
        }
    )
    await send({"type": "http.response.body", "body": body})
