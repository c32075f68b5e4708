"""``lttw serve``: a model folder behind HTTP (FastAPI on uvicorn).

    POST /predict  {"texts": [...]} or {"text": "..."}, optional "top_k" and "min_prob"
                   -> {"predictions": [...]}, one per text in order; {"inputs": "..." |
                   [...]} -> Text Embeddings Inference's [{"label", "score"}, ...]
                   (``serving.documents``)
    POST /explain  {"text": "..."} -> its explanation and highlighted words
                   (``serving.explaining``); GET /: a page to try the model (``serving.page``)
    GET  /health   {"status": "ok", "backend": ..., "queued_texts": n,
                    "batches": what the micro-batcher did}
    GET  /live     200 while the process serves (no token, any Host, also past
                   --max-connections); GET /ready: 200 once the model has run a warm-up
                   pass, 503 before and while shutting down
    GET  /info     labels, variant, encoder name, word-splitting rule, backend, the folder's
                   metrics, the limits and who may call (auth, allowed hosts, CORS)
    GET  /metrics  Prometheus text (``serving.metrics``); /openapi.json and /docs: the
                   OpenAPI schema of these routes (``serving.schema``) and its page

Concurrent requests share forward passes (``serving.batcher``). Every error is one JSON line
``{"error": "..."}``: a body that is not UTF-8 or not JSON, or nested too deep (400), over
``max_body_bytes`` (413), not sent as ``application/json`` (415), of the wrong shape or
types, a repeated key, an empty list, a blank text, more than ``max_texts`` texts or a
text over ``max_text_chars`` characters (422), a body not received within
``body_timeout_s`` (408), a full queue (503 with ``Retry-After``), no answer within
``request_timeout_s`` (504), a failed forward pass
(500; the service goes on). A request whose client has left is dropped before its forward
pass. On SIGTERM / Ctrl-C the server drains (``drain``): it keeps listening, ``/ready``
answers 503, new work a JSON 503 and every answer closes its connection, while requests are
in progress (and for ``drain_s``); queued and running requests get ``shutdown_timeout_s`` to
finish, then a 503, and the batcher stops. Connection-level
bounds: ``serving.connection``; Host, token and CORS: ``serving.security``.
"""

from __future__ import annotations

import asyncio
import logging
import math
import time
from contextlib import asynccontextmanager
from dataclasses import asdict

from fastapi import FastAPI, Request
from fastapi.responses import JSONResponse, PlainTextResponse, Response
from starlette.exceptions import HTTPException

from lttw.errors import one_line
from lttw.inference.answers import chosen_ids
from lttw.models.calibration import Calibration
from lttw.serving import schema
from lttw.serving.batch_jobs import QueueFull, ShuttingDown, TooLarge
from lttw.serving.batcher import MicroBatcher
from lttw.serving.connection import LIVE
from lttw.serving.documents import (
    CLIENT_GONE,
    ApiError,
    answer,
    check_json,
    parse_request,
    read_body,
)
from lttw.serving.explaining import Explainer
from lttw.serving.guard import ErrorGuard
from lttw.serving.limits import Limits
from lttw.serving.metrics import Metrics, MetricsMiddleware
from lttw.serving.page import add_page_routes
from lttw.serving.security import Access, AccessMiddleware

log = logging.getLogger("lttw.serving")

__all__ = ["ApiError", "Limits", "create_app", "parse_request", "serve", "server_for"]


def _error(status: int, message: str, headers: dict[str, str] | None = None) -> JSONResponse:
    return JSONResponse({"error": message}, status_code=status, headers=headers)


#: the text of the forward pass ``GET /ready`` waits for
WARM_UP_TEXTS = ["warm up"]


async def _client_gone(receive) -> None:
    """Returns when the client disconnects (the request body has been read already)."""
    while (await receive())["type"] != "http.disconnect":
        pass


def create_app(
    predictor,
    limits: Limits = Limits(),
    backend: str = "torch",
    access: Access | None = None,
    warm_up: bool = False,
) -> FastAPI:
    """The FastAPI application serving ``predictor`` (a ``Predictor``); ``access``: Host
    allow list, token, CORS (None: any Host, no token, no CORS, as an in-process app);
    ``warm_up``: ``GET /ready`` answers 503 until one forward pass has run (else at once)."""
    from lttw.serving.info import model_info

    split = getattr(predictor, "split_windows", None)  # --chunk: queued window by window
    batcher = MicroBatcher(
        predictor.forward_windows if split else predictor.predict_proba,
        limits.max_batch,
        limits.max_wait_ms,
        batch_size=limits.forward_batch,
        max_queue_texts=limits.max_queue_texts,
        split=split,
    )
    access = access or Access(allowed_hosts=())
    info = {**model_info(predictor, backend), "access": access.describe()}
    classes = list(predictor.classes)
    calibration = getattr(predictor, "calibration", Calibration())  # a stand-in may have none
    metrics = Metrics(batcher, limits.max_batch, classes)
    readiness: dict = {"warm": not warm_up, "failed": None}
    explainer = Explainer(predictor, backend, batcher, limits)

    async def warm() -> None:
        try:
            await batcher.warm_up(WARM_UP_TEXTS)
            readiness["warm"] = True
        except Exception as err:  # the model cannot predict: never ready, said once
            readiness["failed"] = one_line(err)
            log.error("warm-up forward pass failed: %s", readiness["failed"])

    @asynccontextmanager
    async def lifespan(app: FastAPI):
        batcher.start()
        warming = asyncio.ensure_future(warm()) if warm_up else None
        yield
        if warming is not None:
            warming.cancel()
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

    app = FastAPI(
        title="lttw",
        summary="A text classifier over HTTP (lttw serve)",
        lifespan=lifespan,
        docs_url=None,  # serving.page: Swagger UI from an installed package, not a CDN
        redoc_url=None,
        openapi_url="/openapi.json",
    )
    app.state.batcher, app.state.metrics = batcher, metrics
    app.state.explainer = explainer

    @app.exception_handler(ApiError)
    async def api_error(request: Request, err: ApiError):
        return _error(err.status, err.message, err.headers)

    @app.exception_handler(HTTPException)
    async def http_error(request: Request, err: HTTPException):  # 404, 405
        return _error(err.status_code, str(err.detail))

    @app.get("/live", responses={200: {"model": schema.StatusAnswer}})
    async def live():
        """Liveness: 200 while the process serves; never waits for the model or the queue."""
        return LIVE

    @app.get(
        "/ready",
        responses={200: {"model": schema.StatusAnswer}}
        | schema.error_responses({503: "warming up, or shutting down"}),
    )
    async def ready():
        """Readiness: 200 once the model has answered a warm-up forward pass; 503 before,
        and from the start of a graceful shutdown."""
        if batcher.draining:
            return _error(503, "not ready: the server is shutting down")
        if readiness["failed"]:
            return _error(503, f"not ready: the warm-up forward pass failed: {readiness['failed']}")
        if not readiness["warm"]:
            return _error(503, "not ready: the model's warm-up forward pass is running")
        return {"status": "ready"}

    @app.get("/metrics", response_class=PlainTextResponse)
    async def get_metrics():
        """Prometheus text format: requests by route and status, latency, queue, batches."""
        return Response(metrics.render(), media_type=metrics.content_type)

    @app.get("/health", responses={200: {"model": schema.HealthAnswer}})
    async def health():
        """What the micro-batcher did so far."""
        return {
            "status": "ok",
            "backend": backend,
            "queued_texts": batcher.queued_texts(),
            "batches": asdict(batcher.stats),
        }

    @app.get("/info", responses={200: {"model": schema.InfoAnswer}})
    async def get_info():
        """The model, its limits and who may call."""
        return {**info, "limits": asdict(limits)}

    @app.post(
        "/predict",
        responses={200: {"model": schema.PredictAnswer | schema.TeiAnswer}}
        | schema.error_responses(schema.PREDICT_ERRORS),
        openapi_extra=schema.request_body(schema.PredictBody),
    )
    async def predict(request: Request):
        """Labels and probabilities of the texts, in the order given (``inputs``: each
        text's classes with their scores, most probable first)."""
        arrived = time.monotonic()
        check_json(request)
        body = await read_body(request, limits)
        asked = parse_request(body, limits, len(classes))
        texts = asked.texts
        late = f"no answer within {limits.request_timeout_s:g} s; the request was dropped"
        try:  # --chunk: cutting the texts into windows counts in the request's time
            left = limits.request_timeout_s - (time.monotonic() - arrived)
            job = await batcher.enqueue_within(texts, left)
        except asyncio.TimeoutError:
            raise ApiError(504, late) from None
        except QueueFull as err:
            raise ApiError(503, str(err), {"retry-after": str(err.retry_after)}) from None
        except TooLarge as err:
            raise ApiError(422, str(err)) from None
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
            raise ApiError(504, late)
        failure = job.future.exception()
        if isinstance(failure, ShuttingDown):
            raise ApiError(503, str(failure))
        if failure is not None:
            return _error(500, f"prediction failed: {one_line(failure)}")
        probs = job.future.result()
        metrics.predicted(probs, chosen_ids(calibration, probs, asked.min_prob))
        return JSONResponse(answer(asked, probs, classes, calibration))

    @app.post(
        "/explain",
        responses={200: {"model": schema.ExplainAnswer}}
        | schema.error_responses(schema.EXPLAIN_ERRORS),
        openapi_extra=schema.request_body(schema.ExplainBody),
    )
    async def explain(request: Request):
        """Why the model predicts what it does for one text: the words its latent factors
        were built from, the probabilities, [CLS]'s attention, the words to highlight."""
        return JSONResponse(await explainer.answer(request))

    add_page_routes(app)

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
    app.add_middleware(MetricsMiddleware, metrics=metrics)
    return app


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
    app = create_app(predictor, limits, backend, access, warm_up=True)
    server_for(app, host, port, limits, access_log).run(sockets=sockets)


def server_for(
    app: FastAPI,
    host: str,
    port: int,
    limits: Limits,
    access_log: bool = False,
    log_level: str = "info",
):
    """The ``uvicorn.Server`` running ``app`` with every bound of ``limits``. On SIGTERM /
    Ctrl-C it drains (``drain``), lets the batcher finish what waits or runs for
    ``limits.shutdown_timeout_s`` (then those requests get a JSON 503), and exits."""
    import uvicorn

    from lttw.serving.connection import protocol_class
    from lttw.serving.lifecycle import drain

    class DrainingServer(uvicorn.Server):
        async def startup(self, sockets=None):
            await super().startup(sockets)
            if sockets and self.started:  # uvicorn says where it listens only on its own
                self._log_started_message(sockets)

        async def shutdown(self, sockets=None):
            app.state.batcher.drain(limits.shutdown_timeout_s)
            await drain(self, limits)
            await super().shutdown(sockets)

    config = uvicorn.Config(
        app,
        host=host,
        port=port,
        http=protocol_class(limits, app.state.metrics.refusal, lambda: app.state.batcher.draining),
        access_log=access_log,
        log_level=log_level,
        lifespan="on",
        timeout_keep_alive=limits.keep_alive_s,
        # the 503s of the drain are written in this margin; uvicorn cancels what is left
        timeout_graceful_shutdown=math.ceil(limits.shutdown_timeout_s) + 5,
    )
    return DrainingServer(config)
