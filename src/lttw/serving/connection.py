"""Connection-level bounds uvicorn has no setting for, on its httptools protocol: request
line and headers at most ``max_header_bytes`` (431) received within ``header_timeout_s``
(408), a body within ``body_timeout_s`` (the application answers 408; this closes the
connection a little later if the body still trickles in to a route that does not read it),
and at most ``max_connections`` open connections (503 at once). Each refusal is one JSON line
and closes the connection; idle keep-alive connections are uvicorn's ``timeout_keep_alive``.
Memory per connection stays bounded: headers are cut at ``max_header_bytes`` plus one read.
"""

from __future__ import annotations

import asyncio
import json
import logging

from uvicorn.protocols.http.httptools_impl import HttpToolsProtocol

from lttw.serving.limits import Limits

log = logging.getLogger("lttw.serving")

#: seconds past ``body_timeout_s`` before a still-trickling body's connection is closed
BODY_GRACE_S = 5.0


def raw_json_response(status: int, reason: str, message: str, extra: str = "") -> bytes:
    """A whole HTTP/1.1 response with a one-line JSON error body that closes the connection
    (for refusals written before or outside a request's ASGI cycle)."""
    body = json.dumps({"error": message}).encode()
    head = (
        f"HTTP/1.1 {status} {reason}\r\ncontent-type: application/json\r\n"
        f"content-length: {len(body)}\r\n{extra}connection: close\r\n\r\n"
    )
    return head.encode("ascii") + body


def protocol_class(limits: Limits) -> type[HttpToolsProtocol]:
    """uvicorn's ``http`` protocol class, bounded by ``limits``."""
    return type("BoundedHttpProtocol", (BoundedHttpProtocol,), {"limits": limits})


class BoundedHttpProtocol(HttpToolsProtocol):
    """uvicorn's httptools protocol with the bounds of ``limits`` (a class attribute, set by
    ``protocol_class``)."""

    limits: Limits = Limits()

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self._in_body = False  # between a request's headers and its end
        self._header_bytes = 0  # received since the current request began
        self._header_size = 0  # of the request line and headers parsed so far
        self._headers_too_large = False
        self._timer: asyncio.TimerHandle | None = None

    # -- connection
    def connection_made(self, transport) -> None:
        super().connection_made(transport)
        if len(self.connections) > self.limits.max_connections:
            log.warning("connection refused: %d open (--max-connections)", len(self.connections))
            self._refuse(
                503,
                "Service Unavailable",
                f"the server has {self.limits.max_connections} connections open "
                "(--max-connections); retry later",
                "retry-after: 1\r\n",
            )
            return
        self._arm(self.limits.header_timeout_s, self._headers_too_slow)

    def connection_lost(self, exc) -> None:
        self._disarm()
        super().connection_lost(exc)

    def data_received(self, data: bytes) -> None:
        if self.transport.is_closing():
            return
        if not self._in_body:
            self._header_bytes += len(data)
            if self._timer is None:
                self._arm(self.limits.header_timeout_s, self._headers_too_slow)
        super().data_received(data)
        if (
            not self._in_body
            and self._header_bytes > self.limits.max_header_bytes
            and not self.transport.is_closing()
        ):
            log.warning("request refused: headers over %d bytes", self.limits.max_header_bytes)
            self._refuse_large_headers()

    def send_400_response(self, msg: str) -> None:  # a request httptools cannot parse
        if self._headers_too_large:
            self._refuse_large_headers()
        else:
            self._refuse(400, "Bad Request", "the request is not valid HTTP/1.1")

    def _refuse_large_headers(self) -> None:
        self._refuse(
            431,
            "Request Header Fields Too Large",
            f"the request line and headers exceed {self.limits.max_header_bytes} bytes",
        )

    # -- parser callbacks
    def on_message_begin(self) -> None:
        self._header_size = 0
        super().on_message_begin()

    def on_url(self, url: bytes) -> None:
        self._header_size += len(url)
        super().on_url(url)

    def on_header(self, name: bytes, value: bytes) -> None:
        self._header_size += len(name) + len(value) + 4
        super().on_header(name, value)

    def on_headers_complete(self) -> None:
        if self._header_size > self.limits.max_header_bytes:
            # a whole request in one read: stop parsing (httptools raises a parser error,
            # answered by send_400_response)
            self._headers_too_large = True
            raise ValueError("headers too large")
        self._in_body, self._header_bytes = True, 0
        self._arm(self.limits.body_timeout_s + BODY_GRACE_S, self._body_too_slow)
        super().on_headers_complete()

    def on_message_complete(self) -> None:
        self._in_body, self._header_bytes = False, 0
        self._disarm()
        super().on_message_complete()

    # -- timers
    def _arm(self, seconds: float, callback) -> None:
        self._disarm()
        self._timer = self.loop.call_later(seconds, callback)

    def _disarm(self) -> None:
        if self._timer is not None:
            self._timer.cancel()
            self._timer = None

    def _headers_too_slow(self) -> None:
        self._timer = None
        if self.transport.is_closing() or self._in_body:
            return
        if self.cycle is not None and not self.cycle.response_complete:
            # a pipelined request waits behind a response still being computed
            self._arm(self.limits.header_timeout_s, self._headers_too_slow)
            return
        if self._header_bytes == 0 and self.cycle is not None:
            return  # an idle keep-alive connection: uvicorn's keep-alive timer closes it
        log.warning("request refused: headers not received in %g s", self.limits.header_timeout_s)
        self._refuse(
            408,
            "Request Timeout",
            f"the request line and headers took over {self.limits.header_timeout_s:g} s",
        )

    def _body_too_slow(self) -> None:
        self._timer = None
        if not self.transport.is_closing() and self._in_body:
            log.warning("connection closed: body not received in time")
            self.transport.close()

    def _refuse(self, status: int, reason: str, message: str, extra: str = "") -> None:
        self._disarm()
        self.transport.write(raw_json_response(status, reason, message, extra))
        self.transport.close()
