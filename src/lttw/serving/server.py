"""``lttw serve``: a model folder behind HTTP (FastAPI on uvicorn).

    POST /predict  {"texts": ["...", ...]} or {"text": "..."}, optional "top_k": k
                   -> {"predictions": [{"label": L, "prob": p[, "top": [{"label", "prob"}...]]}]}
                   one per text, in the order given
    GET  /health   {"status": "ok", "backend": ..., "batches": what the micro-batcher did}
    GET  /info     labels, variant, encoder, word-splitting rule, backend, the folder's metrics

Concurrent requests share forward passes (``serving.batcher``). Bad input gets a 4xx and a
one-line JSON ``{"error": "..."}``: a body that is not UTF-8 or not JSON (400), over
``max_body_bytes`` (413), of the wrong shape or types, an empty list, more than
``max_texts`` texts or a text over ``max_text_chars`` characters (422). A failed forward
pass answers 500 with one line; the service goes on. On SIGTERM / Ctrl-C uvicorn stops
accepting connections, finishes the requests in flight, then the batcher stops.
"""

from __future__ import annotations

import json
import logging
from contextlib import asynccontextmanager
from dataclasses import asdict, dataclass

from fastapi import FastAPI, Request
from fastapi.responses import JSONResponse
from starlette.exceptions import HTTPException

from lttw.serving.batcher import MicroBatcher

log = logging.getLogger("lttw.serving")


@dataclass(frozen=True)
class Limits:
    """What one request may hold, and how requests are batched (``lttw serve --help``)."""

    max_texts: int = 256  # texts per request
    max_text_chars: int = 10_000  # characters per text (the model reads max_len tokens)
    max_body_bytes: int = 4 * 1024 * 1024  # request body
    max_batch: int = 64  # texts gathered from concurrent requests into one batch
    max_wait_ms: float = 5.0  # how long the first request of a batch waits for others
    #: texts per forward pass: a gathered batch runs shortest first in passes of this many, so
    #: each pass is padded to nearly its own texts' length, not to the batch's longest text
    forward_batch: int = 16


class ApiError(Exception):
    def __init__(self, status: int, message: str):
        super().__init__(message)
        self.status, self.message = status, message


def _error(status: int, message: str) -> JSONResponse:
    return JSONResponse({"error": message}, status_code=status)


async def _read_body(request: Request, limit: int) -> bytes:
    declared = request.headers.get("content-length", "")
    if declared.isdigit() and int(declared) > limit:
        raise ApiError(413, f"the body has {declared} bytes; the limit is {limit}")
    body = bytearray()
    async for chunk in request.stream():
        body += chunk
        if len(body) > limit:
            raise ApiError(413, f"the body exceeds the limit of {limit} bytes")
    return bytes(body)


def parse_request(body: bytes, limits: Limits, n_labels: int) -> tuple[list[str], int | None]:
    """(texts, top_k) of a /predict body, or an ApiError saying in one line what is wrong."""
    try:
        text = body.decode("utf-8")
    except UnicodeDecodeError as err:
        raise ApiError(
            400, f"the body is not valid UTF-8 (byte {err.start}: {err.reason})"
        ) from None
    try:
        doc = json.loads(text)
    except json.JSONDecodeError as err:
        raise ApiError(
            400, f"the body is not valid JSON ({err.msg} at line {err.lineno} column {err.colno})"
        ) from None
    shape = 'send {"texts": ["...", ...]} or {"text": "..."}, optionally with "top_k": k'
    if not isinstance(doc, dict):
        raise ApiError(422, f"the body must be a JSON object: {shape}")
    unknown = sorted(set(doc) - {"texts", "text", "top_k"})
    if unknown:
        raise ApiError(422, f"unknown field(s) {', '.join(map(repr, unknown))}: {shape}")
    if ("texts" in doc) == ("text" in doc):
        raise ApiError(422, f"give exactly one of 'texts' and 'text': {shape}")
    if "text" in doc:
        if not isinstance(doc["text"], str):
            raise ApiError(422, f"'text' must be a string, not {_kind(doc['text'])}")
        texts, where = [doc["text"]], lambda i: "'text'"
    else:
        texts, where = doc["texts"], lambda i: f"texts[{i}]"
        if not isinstance(texts, list):
            raise ApiError(422, f"'texts' must be a list of strings, not {_kind(texts)}")
        if not texts:
            raise ApiError(422, "'texts' is empty: give one or more texts")
        if len(texts) > limits.max_texts:
            raise ApiError(
                422,
                f"{len(texts)} texts in one request; the limit is "
                f"{limits.max_texts} (split them over several requests)",
            )
    for i, item in enumerate(texts):
        if not isinstance(item, str):
            raise ApiError(422, f"{where(i)} must be a string, not {_kind(item)}")
        if len(item) > limits.max_text_chars:
            raise ApiError(
                422, f"{where(i)} has {len(item)} characters; the limit is {limits.max_text_chars}"
            )
        try:
            item.encode("utf-8")
        except UnicodeEncodeError:
            raise ApiError(
                422, f"{where(i)} holds an unpaired surrogate (\\ud800-\\udfff)"
            ) from None
    top_k = doc.get("top_k")
    if top_k is not None and (
        not isinstance(top_k, int) or isinstance(top_k, bool) or not 1 <= top_k <= n_labels
    ):
        raise ApiError(422, f"'top_k' must be an integer from 1 to {n_labels}")
    return texts, top_k


def _kind(value) -> str:
    return {
        dict: "an object",
        list: "a list",
        str: "a string",
        bool: "a boolean",
        type(None): "null",
        int: "a number",
        float: "a number",
    }.get(type(value), "a value")


def predictions(probs, classes: list[str], top_k: int | None) -> list[dict]:
    out = []
    for row in probs:
        order = row.argsort()[::-1]
        item = {"label": classes[order[0]], "prob": float(row[order[0]])}
        if top_k:
            item["top"] = [{"label": classes[i], "prob": float(row[i])} for i in order[:top_k]]
        out.append(item)
    return out


def create_app(predictor, limits: Limits = Limits(), backend: str = "torch") -> FastAPI:
    """The FastAPI application serving ``predictor`` (a ``Predictor``)."""
    from lttw.serving.info import model_info

    batcher = MicroBatcher(
        predictor.predict_proba,
        limits.max_batch,
        limits.max_wait_ms,
        batch_size=limits.forward_batch,
    )
    info = model_info(predictor, backend)
    classes = list(predictor.classes)

    @asynccontextmanager
    async def lifespan(app: FastAPI):
        batcher.start()
        yield
        await batcher.stop()  # uvicorn has finished every request by now
        log.info(
            "stopped after %d requests, %d texts in %d forward passes",
            batcher.stats.requests,
            batcher.stats.texts,
            batcher.stats.batches,
        )

    app = FastAPI(title="lttw", lifespan=lifespan, docs_url=None, redoc_url=None, openapi_url=None)
    app.state.batcher = batcher

    @app.exception_handler(ApiError)
    async def api_error(request: Request, err: ApiError):
        return _error(err.status, err.message)

    @app.exception_handler(HTTPException)
    async def http_error(request: Request, err: HTTPException):  # 404, 405
        return _error(err.status_code, str(err.detail))

    @app.get("/health")
    async def health():
        return {"status": "ok", "backend": backend, "batches": asdict(batcher.stats)}

    @app.get("/info")
    async def get_info():
        return {**info, "limits": asdict(limits)}

    @app.post("/predict")
    async def predict(request: Request):
        body = await _read_body(request, limits.max_body_bytes)
        texts, top_k = parse_request(body, limits, len(classes))
        try:
            probs = await batcher.predict(texts)
        except Exception as err:
            from lttw.stage import one_line

            return _error(500, f"prediction failed: {one_line(err)}")
        return {"predictions": predictions(probs, classes, top_k)}

    return app


def serve(
    predictor,
    host: str,
    port: int,
    limits: Limits = Limits(),
    backend: str = "torch",
    access_log: bool = False,
    sockets=None,
) -> None:
    """Run the service until SIGTERM / SIGINT (uvicorn's own handling: in-flight requests
    finish first). ``sockets``: already bound sockets to serve on instead of host:port."""
    import uvicorn

    config = uvicorn.Config(
        create_app(predictor, limits, backend),
        host=host,
        port=port,
        access_log=access_log,
        log_level="info",
        lifespan="on",
        timeout_graceful_shutdown=30,
    )
    uvicorn.Server(config).run(sockets=sockets)
