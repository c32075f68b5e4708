"""The documents of ``POST /predict``: the request body checked into (texts, top_k,
min_prob), every problem an ``ApiError`` with a status and one line, and the answer's
predictions (``inference.answers.AnswerRule.records``: single-label ``label`` (null below
``min_prob``) and ``prob``; multi-label ``labels``, a list of {label, prob}; ``top`` with
``top_k``)."""

from __future__ import annotations

import json
import math
from typing import NamedTuple

from lttw.inference.answers import AnswerRule
from lttw.models.calibration import Calibration
from lttw.serving.limits import Limits

#: the fields of a /predict body
FIELDS = ("texts", "text", "top_k", "min_prob")


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
        'send {"texts": ["...", ...]} or {"text": "..."}, optionally with "top_k": k '
        'and "min_prob": p'
    )
    if not isinstance(doc, dict):
        raise ApiError(422, f"the body must be a JSON object: {shape}")
    unknown = sorted(set(doc) - set(FIELDS))
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
