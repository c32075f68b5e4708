"""The documents of ``POST /predict``: the request body (``{"texts": [...]}``,
``{"text": "..."}`` or the Hugging Face / TEI shape ``{"inputs": "..." | [...]}``) checked
into a ``PredictRequest``, every problem an ``ApiError`` with a status and one line, and the
answers: for ``texts`` / ``text``, ``{"predictions": [...]}``
(``inference.answers.AnswerRule.records``: single-label ``label`` (null below ``min_prob``)
and ``prob``; multi-label ``labels``, a list of {label, prob}; ``top`` with ``top_k``); for
``inputs``, Text Embeddings Inference's ``/predict`` answer (``score_lists``): each text's
classes as ``[{"label", "score"}, ...]``, most probable first (all, or ``top_k``), one such
list for a string and a list of them for a list of texts."""

from __future__ import annotations

import asyncio
import json
import logging
import math
from collections import Counter
from typing import NamedTuple

import numpy as np
from starlette.requests import ClientDisconnect, Request

from lttw.inference.answers import AnswerRule, ranked
from lttw.models.calibration import Calibration
from lttw.serving.limits import Limits

log = logging.getLogger("lttw.serving")

#: a status no client sees: the answer to a request whose client has gone (as nginx logs it)
CLIENT_GONE = 499
#: the fields that carry the texts: exactly one per request
TEXT_FIELDS = ("texts", "text", "inputs")
#: lttw's options, with ``texts`` / ``text`` and (``top_k``) with ``inputs``
OPTIONS = ("top_k", "min_prob")
#: Text Embeddings Inference's options, with ``inputs`` only
TEI_OPTIONS = ("raw_scores", "truncate")
#: the fields of a /predict body
FIELDS = (*TEXT_FIELDS, *OPTIONS, *TEI_OPTIONS)
SHAPE = (
    'send {"texts": ["...", ...]}, {"text": "..."} or {"inputs": "..." | ["...", ...]}, '
    'optionally with "top_k": k and "min_prob": p (texts, text) or "raw_scores" (inputs)'
)


class PredictRequest(NamedTuple):
    """A checked /predict body: the texts, the number of most probable classes to list
    (None: none, or every class in a TEI answer), the probability below which no label is
    given (None: no floor), the answer's shape (None: ``{"predictions": ...}``; ``"one"``
    / ``"many"``: TEI's list of scores for ``inputs`` as a string / a list) and whether TEI's
    ``raw_scores`` were asked for."""

    texts: list[str]
    top_k: int | None = None
    min_prob: float | None = None
    tei: str | None = None
    raw_scores: bool = False


class ApiError(Exception):
    """An answer other than 200: ``status``, a one-line ``message``, optional headers."""

    def __init__(self, status: int, message: str, headers: dict[str, str] | None = None):
        super().__init__(message)
        self.status, self.message, self.headers = status, message, headers


def _unique_keys(pairs: list[tuple[str, object]]) -> dict:
    """``json.loads``' ``object_pairs_hook``: an object that repeats a key is refused (which
    value counts would be a guess)."""
    doc = dict(pairs)
    if len(doc) < len(pairs):
        counts = Counter(key for key, _ in pairs)
        repeated = next(key for key, n in counts.items() if n > 1)
        raise ApiError(422, f"the body repeats the key {repeated!r}: give each field once")
    return doc


def load_json(body: bytes):
    """The JSON document of a request body, or an ApiError saying in one line what is
    wrong (400: not UTF-8, not JSON, nested too deep; 422: a repeated key)."""
    try:
        text = body.decode("utf-8")
    except UnicodeDecodeError as err:
        raise ApiError(
            400, f"the body is not valid UTF-8 (byte {err.start}: {err.reason})"
        ) from None
    try:
        return json.loads(text, object_pairs_hook=_unique_keys)
    except json.JSONDecodeError as err:
        raise ApiError(
            400, f"the body is not valid JSON ({err.msg} at line {err.lineno} column {err.colno})"
        ) from None
    except RecursionError:
        raise ApiError(400, "the body is nested too deep (send a flat JSON object)") from None
    except ValueError:  # an integer over sys.get_int_max_str_digits() digits
        raise ApiError(400, "the body holds a number with too many digits") from None


def check_text(item, where: str, limits: Limits) -> str:
    """``item`` if it is a text the model may read, else an ApiError naming ``where``."""
    if not isinstance(item, str):
        raise ApiError(422, f"{where} must be a string, not {_kind(item)}")
    if len(item) > limits.max_text_chars:
        raise ApiError(
            422, f"{where} has {len(item)} characters; the limit is {limits.max_text_chars}"
        )
    if not item.strip():
        raise ApiError(422, f"{where} is empty or only whitespace: send a text to classify")
    try:
        item.encode("utf-8")
    except UnicodeEncodeError:
        raise ApiError(422, f"{where} holds an unpaired surrogate (\\ud800-\\udfff)") from None
    return item


def _tei_item(i: int, item):
    """An element of a TEI ``inputs`` list: a text, or TEI's batch form ``["text"]``."""
    if isinstance(item, list):
        if len(item) != 1:
            raise ApiError(
                422,
                f"inputs[{i}] holds {len(item)} strings: text pairs are not classified "
                "here; send one text (or [text]) per item",
            )
        return item[0]
    return item


def parse_request(body: bytes, limits: Limits, n_labels: int) -> PredictRequest:
    """The checked request of a /predict body, or an ApiError saying in one line what is
    wrong."""
    doc = load_json(body)
    if not isinstance(doc, dict):
        raise ApiError(422, f"the body must be a JSON object: {SHAPE}")
    unknown = sorted(set(doc) - set(FIELDS))
    if unknown:
        raise ApiError(422, f"unknown field(s) {', '.join(map(repr, unknown))}: {SHAPE}")
    given = [name for name in TEXT_FIELDS if name in doc]
    if len(given) > 1:
        named = " and ".join(map(repr, given))
        raise ApiError(422, f"{named} given together: send the texts in one of them")
    if not given:
        raise ApiError(422, f"no texts: {SHAPE}")
    field, value = given[0], doc[given[0]]
    misplaced = [
        name for name in (TEI_OPTIONS if field != "inputs" else ("min_prob",)) if name in doc
    ]
    if misplaced:
        goes_with = "'inputs'" if field != "inputs" else "'texts' or 'text'"
        raise ApiError(422, f"{misplaced[0]!r} goes with {goes_with}, not {field!r}")
    if field == "text" or (field == "inputs" and isinstance(value, str)):
        texts = [check_text(value, repr(field), limits)]
    else:
        if not isinstance(value, list):
            what = "a string or a list of strings" if field == "inputs" else "a list of strings"
            raise ApiError(422, f"{field!r} must be {what}, not {_kind(value)}")
        if not value:
            raise ApiError(422, f"{field!r} is empty: give one or more texts")
        if len(value) > limits.max_texts:
            raise ApiError(
                422,
                f"{len(value)} texts in one request; the limit is "
                f"{limits.max_texts} (split them over several requests)",
            )
        if field == "inputs":
            value = [_tei_item(i, item) for i, item in enumerate(value)]
        texts = [check_text(item, f"{field}[{i}]", limits) for i, item in enumerate(value)]
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
    for name in TEI_OPTIONS:
        if not isinstance(doc.get(name, False), bool):
            raise ApiError(422, f"{name!r} must be true or false")
    if field != "inputs":
        return PredictRequest(texts, top_k, None if min_prob is None else float(min_prob))
    tei = "one" if isinstance(value, str) else "many"
    return PredictRequest(texts, top_k, tei=tei, raw_scores=doc.get("raw_scores", False))


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


def score_lists(
    probs: np.ndarray, classes: list[str], top_k: int | None, raw_scores: bool, multi_label: bool
) -> list[list[dict]]:
    """TEI's answer for each row of probabilities: ``[{"label", "score"}, ...]``, most
    probable first, every class or the ``top_k`` first. ``raw_scores``: the scores before
    the softmax (single-label: log p, the logits less their log-sum-exp, which the softmax
    ignores) or the sigmoid (multi-label: log(p / (1 - p))), recovered from the probabilities
    served."""
    probs = np.asarray(probs, dtype=np.float32)
    scores = probs.astype(np.float64)
    if raw_scores:
        low, high = float(np.finfo(np.float32).tiny), 1.0 - float(np.finfo(np.float32).eps)
        scores = np.clip(scores, low, high if multi_label else 1.0)
        scores = np.log(scores / (1.0 - scores)) if multi_label else np.log(scores)
    k = top_k or len(classes)
    return [
        [{"label": classes[i], "score": float(row[i])} for i in ranked(p)[:k]]
        for p, row in zip(probs, scores)
    ]


def answer(request: PredictRequest, probs, classes: list[str], calibration: Calibration):
    """The JSON answer of a checked request: ``{"predictions": [...]}``, or TEI's score
    list (``"one"``) or list of them (``"many"``)."""
    if request.tei is None:
        return {
            "predictions": predictions(probs, classes, request.top_k, calibration, request.min_prob)
        }
    lists = score_lists(probs, classes, request.top_k, request.raw_scores, calibration.multi_label)
    return lists[0] if request.tei == "one" else lists


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
