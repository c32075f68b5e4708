"""``lttw serve``: a model folder behind HTTP (FastAPI on uvicorn).

    POST /predict  {"texts": ["...", ...]} or {"text": "..."}, optional "top_k": k and
                   "min_prob": p (0..1: below it no label)
                   -> {"predictions": [{"label": L, "prob": p[, "top": [{"label", "prob"}...]]}]}
                   one per text, in the order given; "label" is null where the most
                   probable class is below min_prob; a multi-label model answers
                   {"labels": [{"label", "prob"}...][, "top": ...]} (``serving.documents``)
    GET  /health   {"status": "ok", "backend": ..., "queued_texts": n,
                    "batches": what the micro-batcher did}
    GET  /info     labels, variant, encoder name, word-splitting rule, backend, the folder's
                   metrics, the limits and who may call (auth, allowed hosts, CORS)

Concurrent requests share forward passes (``serving.batcher``). Every error is one JSON line
``{"error": "..."}``: a body that is not UTF-8 or not JSON, or nested too deep (400), over
``max_body_bytes`` (413), of the wrong shape or types, an empty list, more than
``max_texts`` texts or a text over ``max_text_chars`` characters (422), a body not received
within ``body_timeout_s`` (408), a full queue (503 with ``Retry-After``), no answer within
``request_timeout_s`` (504), a failed forward pass (500; the service goes on). A request
whose client has left is dropped before its forward pass. On SIGTERM / Ctrl-C uvicorn stops
accepting connections; queued and running requests get ``shutdown_timeout_s`` to finish,
then a 503, and the batcher stops. Connection-level bounds: ``serving.connection``; Host,
token and CORS: ``serving.security``.
"""

from __future__ import annotations

import asyncio
import logging
import math
import time
from contextlib import asynccontextmanager
from dataclasses import asdict

from fastapi import FastAPI, Request
from fastapi.responses import JSONResponse, Response
from starlette.exceptions import HTTPException
from starlette.requests import ClientDisconnect

from lttw.models.calibration import Calibration
from lttw.serving.batcher import MicroBatcher, QueueFull, ShuttingDown
from lttw.serving.documents import ApiError, parse_request, predictions
from lttw.serving.limits import Limits
from lttw.serving.security import Access, AccessMiddleware, send_json

log = logging.getLogger("lttw.serving")

__all__ = ["ApiError", "Limits", "create_app", "parse_request", "serve", "server_for"]


def _error(status: int, message: str, headers: dict[str, str] | None = None) -> JSONResponse:
    return JSONResponse({"error": message}, status_code=status, headers=headers)


#: a status no client sees: the answer to a request whose client has gone (as nginx logs it)
CLIENT_GONE = 499


async def _read_body(request: Request, limits: Limits) -> bytes:
    limit = limits.max_body_bytes
    declared = request.headers.get("content-length", "")
    if declared.isdigit() and int(declared) > limit:
        raise ApiError(413, f"the body has {declared} bytes; the limit is {limit}")
    body = bytearray()

    async def collect() -> None:
        async for chunk in request.stream():
            body.extend(chunk)
            if len(body) > limit:
                raise ApiError(413, f"the body exceeds the limit of {limit} bytes")

    try:
        await asyncio.wait_for(collect(), limits.body_timeout_s)
    except asyncio.TimeoutError:
        raise ApiError(
            408,
            f"the body was not received within {limits.body_timeout_s:g} s "
            f"({len(body)} bytes arrived)",
            {"connection": "close"},
        ) from None
    except ClientDisconnect:
        log.info("client left during its upload (%d bytes received)", len(body))
        raise ApiError(CLIENT_GONE, "the client left") from None
    return bytes(body)


async def _client_gone(receive) -> None:
    """Returns when the client disconnects (the request body has been read already)."""
    while (await receive())["type"] != "http.disconnect":
        pass


def create_app(
    predictor, limits: Limits = Limits(), backend: str = "torch", access: Access | None = None
) -> FastAPI:
    """The FastAPI application serving ``predictor`` (a ``Predictor``); ``access``: Host
    allow list, token, CORS (None: any Host, no token, no CORS, as an in-process app)."""
    from lttw.serving.info import model_info

    batcher = MicroBatcher(
        predictor.predict_proba,
        limits.max_batch,
        limits.max_wait_ms,
        batch_size=limits.forward_batch,
        max_queue_texts=limits.max_queue_texts,
    )
    access = access or Access(allowed_hosts=())
    info = {**model_info(predictor, backend), "access": access.describe()}
    classes = list(predictor.classes)
    calibration = getattr(predictor, "calibration", Calibration())  # a stand-in may have none

    @asynccontextmanager
    async def lifespan(app: FastAPI):
        batcher.start()
        yield
        await batcher.stop()  # uvicorn has finished every request by now
        stats = batcher.stats
        log.info(
            "stopped after %d requests, %d texts in %d forward passes (%d dropped, %d refused)",
            stats.requests,
            stats.texts,
            stats.batches,
            stats.dropped,
            stats.refused,
        )

    app = FastAPI(title="lttw", lifespan=lifespan, docs_url=None, redoc_url=None, openapi_url=None)
    app.state.batcher = batcher

    @app.exception_handler(ApiError)
    async def api_error(request: Request, err: ApiError):
        return _error(err.status, err.message, err.headers)

    @app.exception_handler(HTTPException)
    async def http_error(request: Request, err: HTTPException):  # 404, 405
        return _error(err.status_code, str(err.detail))

    @app.get("/health")
    async def health():
        return {
            "status": "ok",
            "backend": backend,
            "queued_texts": batcher.queued_texts(),
            "batches": asdict(batcher.stats),
        }

    @app.get("/info")
    async def get_info():
        return {**info, "limits": asdict(limits)}

    @app.post("/predict")
    async def predict(request: Request):
        arrived = time.monotonic()
        body = await _read_body(request, limits)
        texts, top_k, min_prob = parse_request(body, limits, len(classes))
        try:
            job = batcher.submit(texts)
        except QueueFull as err:
            raise ApiError(503, str(err), {"retry-after": str(err.retry_after)}) from None
        except ShuttingDown as err:
            raise ApiError(503, str(err)) from None
        left = limits.request_timeout_s - (time.monotonic() - arrived)
        gone = asyncio.ensure_future(_client_gone(request.receive))
        try:
            await asyncio.wait(
                {job.future, gone}, timeout=max(left, 0.0), return_when=asyncio.FIRST_COMPLETED
            )
        finally:
            gone.cancel()
            job.cancel()  # no answer wanted any more: dropped unless computed already
        if job.future.cancelled():
            if gone.done() and not gone.cancelled():
                log.info("client left before its answer: %d texts dropped", len(texts))
                return Response(status_code=CLIENT_GONE)
            raise ApiError(
                504, f"no answer within {limits.request_timeout_s:g} s; the request was dropped"
            )
        failure = job.future.exception()
        if isinstance(failure, ShuttingDown):
            raise ApiError(503, str(failure))
        if failure is not None:
            from lttw.stage import one_line

            return _error(500, f"prediction failed: {one_line(failure)}")
        answers = predictions(job.future.result(), classes, top_k, calibration, min_prob)
        return {"predictions": answers}

    if access.cors_origins:
        from starlette.middleware.cors import CORSMiddleware

        app.add_middleware(
            CORSMiddleware,
            allow_origins=list(access.cors_origins),
            allow_methods=["GET", "POST"],
            allow_headers=["authorization", "content-type"],
        )
    app.add_middleware(AccessMiddleware, access=access)
    app.add_middleware(ErrorGuard)
    return app


class ErrorGuard:
    """Outermost ASGI middleware: whatever escapes the application is one log line and, where
    no response has started, a one-line JSON 500 (503 when uvicorn cancels the request at the
    end of its shutdown limit): never a plain-text 500 or a traceback in the log."""

    def __init__(self, app):
        self.app = app

    async def __call__(self, scope, receive, send):
        if scope["type"] != "http":
            return await self.app(scope, receive, send)
        started = False

        async def tracked(message):
            nonlocal started
            started = started or message["type"] == "http.response.start"
            await send(message)

        try:
            await self.app(scope, receive, tracked)
        except asyncio.CancelledError:
            if not started:
                await send_json(send, 503, str(ShuttingDown()))
            raise
        except Exception as err:
            from lttw.stage import one_line

            log.error("%s %s failed: %s", scope.get("method"), scope.get("path"), one_line(err))
            if not started:
                await send_json(send, 500, f"internal error: {one_line(err)}")


def serve(
    predictor,
    host: str,
    port: int,
    limits: Limits = Limits(),
    backend: str = "torch",
    access_log: bool = False,
    sockets=None,
    access: Access | None = None,
) -> None:
    """Run the service until SIGTERM / SIGINT; ``sockets``: already bound sockets to serve
    on instead of host:port."""
    server_for(create_app(predictor, limits, backend, access), host, port, limits, access_log).run(
        sockets=sockets
    )


def server_for(
    app: FastAPI,
    host: str,
    port: int,
    limits: Limits,
    access_log: bool = False,
    log_level: str = "info",
):
    """The ``uvicorn.Server`` running ``app`` with every bound of ``limits``. On SIGTERM /
    Ctrl-C it stops accepting connections, lets the batcher finish what waits or runs for
    ``limits.shutdown_timeout_s`` (then those requests get a JSON 503), and exits."""
    import uvicorn

    from lttw.serving.connection import protocol_class

    class DrainingServer(uvicorn.Server):
        async def shutdown(self, sockets=None):
            app.state.batcher.drain(limits.shutdown_timeout_s)
            await super().shutdown(sockets)

    config = uvicorn.Config(
        app,
        host=host,
        port=port,
        http=protocol_class(limits),
        access_log=access_log,
        log_level=log_level,
        lifespan="on",
        timeout_keep_alive=limits.keep_alive_s,
        # the 503s of the drain are written in this margin; uvicorn cancels what is left
        timeout_graceful_shutdown=math.ceil(limits.shutdown_timeout_s) + 5,
    )
    return DrainingServer(config)
