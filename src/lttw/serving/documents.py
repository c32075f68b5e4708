"""The documents of ``POST /predict``: the request body (``{"texts": [...]}``,
``{"text": "..."}`` or the Hugging Face / TEI shape ``{"inputs": "..." | [...]}``) checked
into (texts, top_k, min_prob), every problem an ``ApiError`` with a status and one line, and the answer's
predictions (``inference.answers.AnswerRule.records``: single-label ``label`` (null below
``min_prob``) and ``prob``; multi-label ``labels``, a list of {label, prob}; ``top`` with
``top_k``)."""

from __future__ import annotations

import asyncio
import json
import logging
import math
from typing import NamedTuple

from starlette.requests import ClientDisconnect, Request

from lttw.inference.answers import AnswerRule
from lttw.models.calibration import Calibration
from lttw.serving.limits import Limits

log = logging.getLogger("lttw.serving")

#: a status no client sees: the answer to a request whose client has gone (as nginx logs it)
CLIENT_GONE = 499
#: the fields of a /predict body
FIELDS = ("texts", "text", "inputs", "top_k", "min_prob")
#: the fields that carry the texts: exactly one per request
TEXT_FIELDS = ("texts", "text", "inputs")


class PredictRequest(NamedTuple):
    """A checked /predict body: the texts, the number of most probable classes to list
    (None: none), and the probability below which no label is given (None: no floor)."""

    texts: list[str]
    top_k: int | None = None
    min_prob: float | None = None


class ApiError(Exception):
    """An answer other than 200: ``status``, a one-line ``message``, optional headers."""

    def __init__(self, status: int, message: str, headers: dict[str, str] | None = None):
        super().__init__(message)
        self.status, self.message, self.headers = status, message, headers


def parse_request(body: bytes, limits: Limits, n_labels: int) -> PredictRequest:
    """The texts, top_k and min_prob of a /predict body, or an ApiError saying in one line
    what is wrong."""
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
    except RecursionError:
        raise ApiError(400, "the body is nested too deep (send a flat JSON object)") from None
    except ValueError:  # an integer over sys.get_int_max_str_digits() digits
        raise ApiError(400, "the body holds a number with too many digits") from None
    shape = (
        'send {"texts": ["...", ...]}, {"text": "..."} or {"inputs": "..." | ["...", ...]}, '
        'optionally with "top_k": k and "min_prob": p'
    )
    if not isinstance(doc, dict):
        raise ApiError(422, f"the body must be a JSON object: {shape}")
    unknown = sorted(set(doc) - set(FIELDS))
    if unknown:
        raise ApiError(422, f"unknown field(s) {', '.join(map(repr, unknown))}: {shape}")
    given = [name for name in TEXT_FIELDS if name in doc]
    if len(given) > 1:
        named = " and ".join(map(repr, given))
        raise ApiError(422, f"{named} given together: send the texts in one of them")
    if not given:
        raise ApiError(422, f"no texts: {shape}")
    field, value = given[0], doc[given[0]]
    if field == "text" or (field == "inputs" and isinstance(value, str)):
        if not isinstance(value, str):
            raise ApiError(422, f"'text' must be a string, not {_kind(value)}")
        texts, where = [value], lambda i: repr(field)
    else:
        texts, where = value, lambda i: f"{field}[{i}]"
        if not isinstance(texts, list):
            what = "a string or a list of strings" if field == "inputs" else "a list of strings"
            raise ApiError(422, f"{field!r} must be {what}, not {_kind(texts)}")
        if not texts:
            raise ApiError(422, f"{field!r} is empty: give one or more texts")
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
    min_prob = doc.get("min_prob")
    if min_prob is not None and (
        not isinstance(min_prob, int | float)
        or isinstance(min_prob, bool)
        or not (math.isfinite(min_prob) and 0.0 <= min_prob <= 1.0)
    ):
        raise ApiError(422, "'min_prob' must be a number from 0 to 1")
    return PredictRequest(texts, top_k, None if min_prob is None else float(min_prob))


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


def predictions(
    probs,
    classes: list[str],
    top_k: int | None,
    calibration: Calibration = Calibration(),
    min_prob: float | None = None,
) -> list[dict]:
    """The answer for each row of probabilities (see the module docstring)."""
    return AnswerRule(calibration, min_prob, top_k).records(probs, classes)


def check_json(request: Request) -> None:
    """A body must say it is JSON: a form or plain text (what a web page may send to
    another site without asking) gets 415, not a prediction."""
    kind = request.headers.get("content-type", "")
    if kind.partition(";")[0].strip().lower() != "application/json":
        raise ApiError(
            415,
            f"the body must be sent with 'content-type: application/json', not {kind!r}"
            if kind
            else "the body must be sent with 'content-type: application/json' (none given)",
        )


async def read_body(request: Request, limits: Limits) -> bytes:
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
