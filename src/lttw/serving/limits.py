"""Every bound ``lttw serve`` puts on a request, a client and a connection, with its default
(``lttw serve --help``, docs/how-to/serving.md, "Limits and security", and
docs/reference/cli-limits.md say what a client gets past each one; the connection-level
constants are in ``serving.connection``)."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Limits:
    """What one request may hold, how requests are batched and queued, and how long and how
    many clients may hold the server."""

    max_texts: int = 256  # texts per request (more: 422)
    max_text_chars: int = 10_000  # characters per text, the model reads max_len tokens (422)
    max_body_bytes: int = 4 * 1024 * 1024  # request body (413)
    max_batch: int = 64  # texts gathered from concurrent requests into one batch
    max_wait_ms: float = 5.0  # how long the first request of a batch waits for others
    #: texts per forward pass: a gathered batch runs shortest first in passes of this many, so
    #: each pass is padded to nearly its own texts' length, not to the batch's longest text
    forward_batch: int = 16
    #: texts waiting for a forward pass, all requests together (more: 503 + Retry-After)
    max_queue_texts: int = 1024
    #: seconds from a request's arrival to its answer (past it: 504, its work dropped)
    request_timeout_s: float = 30.0
    #: on SIGTERM / Ctrl-C, seconds to finish queued and running requests (then 503)
    shutdown_timeout_s: float = 20.0
    #: on SIGTERM, seconds the server keeps listening at least (a load balancer sees
    #: ``/ready`` 503 and stops sending); it also listens on while requests are in progress
    drain_s: float = 0.0
    #: bytes of request line and headers (more: 431, connection closed)
    max_header_bytes: int = 16 * 1024
    #: seconds to receive a request's line and headers (past it: 408, connection closed)
    header_timeout_s: float = 10.0
    #: seconds to receive a request's body once its headers are in (past it: 408)
    body_timeout_s: float = 30.0
    #: seconds an idle keep-alive connection stays open between requests
    keep_alive_s: int = 5
    #: open connections (more: 503 at once, connection closed)
    max_connections: int = 128


#: the largest value each ``lttw serve`` option takes (past it: one line, exit 3), so that a
#: typo cannot start a server whose bounds no longer bound anything
UPPER_BOUNDS: dict[str, int] = {
    "threads": 1024,
    "max_batch": 4096,
    "forward_batch": 1024,
    "max_wait_ms": 10_000,
    "max_texts": 10_000,
    "max_text_chars": 1_000_000,
    "max_body_bytes": 256 * 1024 * 1024,
    "max_queue_texts": 1_000_000,
    "request_timeout": 3600,
    "shutdown_timeout": 3600,
    "drain": 600,
    "max_header_bytes": 1024 * 1024,
    "header_timeout": 600,
    "body_timeout": 3600,
    "keep_alive": 3600,
    "max_connections": 10_000,
}


def over_bound(values: dict[str, float | None]) -> str | None:
    """The first option of ``values`` (``UPPER_BOUNDS``' names) past its bound, said in one
    line; None when every one is within."""
    for name, value in values.items():
        if value is not None and value > UPPER_BOUNDS[name]:
            option = "--" + name.replace("_", "-")
            given = f"{value:g}" if isinstance(value, float) else str(value)
            return f"{option} {given}: at most {UPPER_BOUNDS[name]}"
    return None
