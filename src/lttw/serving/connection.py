"""Connection-level bounds uvicorn has no setting for, on its httptools protocol: request
line and headers at most ``max_header_bytes`` (431) received within ``header_timeout_s``
(408), a body within ``body_timeout_s`` (the application answers 408; this closes the
connection a little later if the body still trickles in to a route that does not read it),
and at most ``max_connections`` open connections. A new connection past the cap takes the
slot of the connection that has waited longest for a request's headers (one still sending
them gets 408, an idle keep-alive connection is closed), so slow or silent connections
cannot hold every slot; where every slot is busy with a request, the new connection's request
line is read, then answered 503 with ``Retry-After`` (``GET /live`` still answers 200). A request whose target is not a
path (``GET http://host/path``), whose version is not HTTP/1.0 or 1.1, or which has two
``Host`` or two ``Authorization`` headers gets 400. Each refusal is one JSON line; the connection is then half-closed
and what the client still sends is read and thrown away for up to ``REFUSAL_LINGER_S``
seconds, so the client reads the answer instead of a TCP reset. Idle keep-alive connections
are uvicorn's ``timeout_keep_alive``. Memory per connection stays bounded: headers are cut at
``max_header_bytes`` plus one read.
"""

from __future__ import annotations

import asyncio
import json
import logging
import socket

from uvicorn.protocols.http.httptools_impl import HttpToolsProtocol

from lttw.serving.limits import Limits

log = logging.getLogger("lttw.serving")

#: seconds past ``body_timeout_s`` before a still-trickling body's connection is closed
BODY_GRACE_S = 5.0
#: seconds a refused connection stays half-open, its input read and dropped, before it is
#: closed (a client that reads its answer and closes ends it at once)
REFUSAL_LINGER_S = 2.0
#: seconds a connection past ``max_connections`` may take to send its request line
OVER_CAP_WAIT_S = 1.0
#: headers a request may hold once (two are ambiguous: which one a proxy and the server
#: read may differ): the lower-case name and how the refusal names it
SINGLE_HEADERS = {b"host": "Host", b"authorization": "Authorization"}
#: what ``GET /live`` answers, also on a connection past ``max_connections``
LIVE = {"status": "alive"}


def raw_json_response(
    status: int, reason: str, message: str, extra: str = "", doc: dict | None = None
) -> bytes:
    """A whole HTTP/1.1 response with a one-line JSON error body (or ``doc``) that closes the
    connection (for answers written before or outside a request's ASGI cycle)."""
    body = json.dumps({"error": message} if doc is None else doc).encode()
    head = (
        f"HTTP/1.1 {status} {reason}\r\ncontent-type: application/json\r\n"
        f"content-length: {len(body)}\r\n{extra}connection: close\r\n\r\n"
    )
    return head.encode("ascii") + body


def bind_socket(host: str, port: int) -> socket.socket:
    """A TCP socket bound to host:port (listened on by the server), or ``OSError`` (the
    port is in use, the address is not this machine's, a port below 1024 without the
    right)."""
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    sock = socket.socket(family, socket.SOCK_STREAM)
    try:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        sock.bind((host, port))
    except OSError:
        sock.close()
        raise
    return sock


def protocol_class(limits: Limits, on_refusal=None, draining=None) -> type[HttpToolsProtocol]:
    """uvicorn's ``http`` protocol class, bounded by ``limits``; ``on_refusal(status)`` is
    called for each answer written here (``serving.metrics`` counts them); while
    ``draining()`` holds (graceful shutdown) every answer closes its connection."""
    attrs = {
        "limits": limits,
        "on_refusal": staticmethod(on_refusal or (lambda status: None)),
        "draining": staticmethod(draining or (lambda: False)),
    }
    return type("BoundedHttpProtocol", (BoundedHttpProtocol,), attrs)


class BoundedHttpProtocol(HttpToolsProtocol):
    """uvicorn's httptools protocol with the bounds of ``limits`` (a class attribute, set by
    ``protocol_class``)."""

    limits: Limits = Limits()

    @staticmethod
    def on_refusal(status: int) -> None:
        """Called with the status of each answer written by this class."""

    @staticmethod
    def draining() -> bool:
        """Whether graceful shutdown has begun: each answer says ``Connection: close``."""
        return False

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self._in_body = False  # between a request's headers and its end
        self._header_bytes = 0  # received since the current request began
        self._header_size = 0  # of the request line and headers parsed so far
        self._singles: dict[bytes, int] = {}  # Host / Authorization headers of the request
        self._headers_too_large = False
        self._bad_request: str | None = None  # why the current request is refused (400)
        self._over_cap: bytearray | None = None  # the start of a connection past the cap
        self._refusing = False  # answered and half-closed: input is read and dropped
        self._timer: asyncio.TimerHandle | None = None
        self._waiting_since = 0.0  # when it began waiting for a request's headers

    # -- connection
    def connection_made(self, transport) -> None:
        super().connection_made(transport)
        self._waiting_since = self.loop.time()
        if self._admitted() > self.limits.max_connections and not self._evict_one():
            self._over_cap = bytearray()
            self._arm(OVER_CAP_WAIT_S, self._answer_over_cap)
            return
        self._arm(self.limits.header_timeout_s, self._headers_too_slow)

    def connection_lost(self, exc) -> None:
        self._disarm()
        super().connection_lost(exc)

    def _admitted(self) -> int:
        """Open connections holding a slot (not refused, not past the cap)."""
        return sum(
            1
            for conn in self.connections
            if not getattr(conn, "_refusing", False) and getattr(conn, "_over_cap", None) is None
        )

    def _idle(self) -> bool:
        """Whether it waits for a request's headers (none being read, computed or sent)."""
        return (
            not self._in_body
            and not self._refusing
            and self._over_cap is None
            and not self.transport.is_closing()
            and (self.cycle is None or self.cycle.response_complete)
            and not self.pipeline
        )

    def _evict_one(self) -> bool:
        """Free the slot of the connection waiting longest for headers; False: none waits."""
        waiting = [
            conn
            for conn in self.connections
            if conn is not self and isinstance(conn, BoundedHttpProtocol) and conn._idle()
        ]
        if not waiting:
            return False
        oldest = min(waiting, key=lambda conn: conn._waiting_since)
        seconds = self.loop.time() - oldest._waiting_since
        if oldest._header_bytes or oldest.cycle is None:
            log.warning("request refused: headers still incomplete, its slot needed")
            oldest._refuse(
                408,
                "Request Timeout",
                f"the request line and headers were incomplete after {seconds:.1f} s and the "
                "server needed the connection",
            )
        else:  # an idle keep-alive (or silent) connection: closed as its time-out would
            oldest._disarm()
            oldest._refusing = True  # its slot is free from now on
            oldest.transport.close()
        return True

    def _answer_over_cap(self) -> None:
        """Past ``max_connections``: ``GET /live`` gets 200, any other request 503."""
        self._timer = None
        if self.transport.is_closing():
            return
        line = bytes(self._over_cap or b"").split(b"\n", 1)[0]
        if line.startswith(b"GET /live ") or line.startswith(b"GET /live?"):
            self._refuse(200, "OK", "", doc=LIVE)
            return
        log.warning("connection refused: %d open (--max-connections)", len(self.connections))
        self._refuse(
            503,
            "Service Unavailable",
            f"the server has {self.limits.max_connections} connections open "
            "(--max-connections); retry later",
            "retry-after: 1\r\n",
        )

    def data_received(self, data: bytes) -> None:
        if self.transport.is_closing() or self._refusing:
            return  # a refused request's rest: read and dropped
        if self._over_cap is not None:
            self._over_cap.extend(data[: self.limits.max_header_bytes])
            if b"\n" in self._over_cap or len(self._over_cap) >= self.limits.max_header_bytes:
                self._disarm()
                self._answer_over_cap()
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
            and not self._refusing
        ):
            log.warning("request refused: headers over %d bytes", self.limits.max_header_bytes)
            self._refuse_large_headers()

    def send_400_response(self, msg: str) -> None:  # a request httptools cannot parse
        if self._refusing:
            return
        if self._headers_too_large:
            self._refuse_large_headers()
        else:
            # uvicorn has logged its one warning line ("Invalid HTTP request received.")
            self._refuse(400, "Bad Request", self._bad_request or "the request is not valid HTTP")

    def _refuse_large_headers(self) -> None:
        self._refuse(
            431,
            "Request Header Fields Too Large",
            f"the request line and headers exceed {self.limits.max_header_bytes} bytes",
        )

    # -- parser callbacks
    def on_message_begin(self) -> None:
        self._header_size, self._singles = 0, {}
        super().on_message_begin()

    def on_url(self, url: bytes) -> None:
        self._header_size += len(url)
        super().on_url(url)

    def on_header(self, name: bytes, value: bytes) -> None:
        self._header_size += len(name) + len(value) + 4
        if (lower := name.lower()) in SINGLE_HEADERS:
            self._singles[lower] = self._singles.get(lower, 0) + 1
        super().on_header(name, value)

    def on_headers_complete(self) -> None:
        # a refusal stops the parser (httptools raises a parser error, answered by
        # send_400_response)
        if self._header_size > self.limits.max_header_bytes:  # a whole request in one read
            self._headers_too_large = True
            raise ValueError("headers too large")
        self._bad_request = self._request_line_problem()
        if self._bad_request:
            raise ValueError(self._bad_request)
        self._in_body, self._header_bytes = True, 0
        self._arm(self.limits.body_timeout_s + BODY_GRACE_S, self._body_too_slow)
        super().on_headers_complete()
        if self.draining() and self.cycle is not None:
            self.cycle.keep_alive = False  # answered, then closed

    def on_message_complete(self) -> None:
        self._in_body, self._header_bytes = False, 0
        self._waiting_since = self.loop.time()
        self._disarm()
        super().on_message_complete()

    def _request_line_problem(self) -> str | None:
        """Why the request parsed so far must be refused (400), or None."""
        version = self.parser.get_http_version()
        if version not in ("1.0", "1.1"):
            return f"HTTP/{version} is not served: send HTTP/1.1"
        if not self.url.startswith(b"/") and not (
            self.url == b"*" and self.parser.get_method() == b"OPTIONS"
        ):
            return "the request target must be a path (/predict), not a full URL"
        for name, count in self._singles.items():
            if count > 1:
                return f"the request has {count} {SINGLE_HEADERS[name]} headers; send one"
        return None

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

    def _refuse(
        self, status: int, reason: str, message: str, extra: str = "", doc: dict | None = None
    ) -> None:
        """Answer, half-close, and read and drop what the client still sends until it closes
        or ``REFUSAL_LINGER_S`` pass (closing with unread input would send a TCP reset,
        which can destroy the answer before the client reads it)."""
        self._disarm()
        self._refusing = True
        if status >= 400:
            self.on_refusal(status)
        self.transport.write(raw_json_response(status, reason, message, extra, doc))
        if self.transport.can_write_eof():
            self.transport.write_eof()
        self._timer = self.loop.call_later(REFUSAL_LINGER_S, self.transport.close)
