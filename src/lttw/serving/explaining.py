"""``POST /explain``: one text's explanation (``inference.explain``: the words the latent
factors were built from with their class affinities, every class's probability, [CLS]'s
attention), as ``lttw explain --json`` prints it less the server's folder path, plus
``highlights``: the text cut into segments, each word the model read given its weight
toward the predicted class (the page at ``GET /`` colours them).

Bounds: the body as for ``/predict`` (size, time, JSON, a repeated key), one text of at most
``max_text_chars`` characters that is not only whitespace; the explanation runs on the
forward passes' thread between batches (``MicroBatcher.run_alone``); at most
``MAX_EXPLAINS`` explanations wait or run at once (more: 503 with ``Retry-After``), each
within ``request_timeout_s`` (504)."""

from __future__ import annotations

import asyncio
import re
import time

from starlette.requests import Request

from lttw.errors import one_line
from lttw.serving.batch_jobs import ShuttingDown
from lttw.serving.batcher import MicroBatcher
from lttw.serving.documents import ApiError, check_json, check_text, load_json, read_body
from lttw.serving.limits import Limits

#: explanations waiting or running at once, all clients together (more: 503)
MAX_EXPLAINS = 4


def parse_explain(body: bytes, limits: Limits) -> str:
    """The text of a /explain body ``{"text": "..."}``, or an ApiError in one line."""
    doc = load_json(body)
    if not isinstance(doc, dict) or set(doc) != {"text"}:
        raise ApiError(422, 'send {"text": "..."}: one text to explain, and no other field')
    return check_text(doc["text"], "'text'", limits)


def unavailable(predictor, backend: str) -> str | None:
    """Why this server cannot explain (None: it can): an explanation reads the torch
    model's attention and the folder's latent factors."""
    if backend != "torch":
        return f"explanations need the torch backend; this server runs {backend}"
    if getattr(predictor, "tokenizer", None) is None:
        return "explanations need one model folder; this server runs an ensemble"
    return None


class Explainer:
    """Answers ``POST /explain`` for ``predictor`` (see the module docstring)."""

    def __init__(self, predictor, backend: str, batcher: MicroBatcher, limits: Limits):
        self.predictor, self.batcher, self.limits = predictor, batcher, limits
        self.cannot = unavailable(predictor, backend)
        self.busy = 0  # explanations waiting or running

    async def answer(self, request: Request) -> dict:
        """The explanation of the request's text, or an ApiError."""
        arrived, limits = time.monotonic(), self.limits
        check_json(request)
        text = parse_explain(await read_body(request, limits), limits)
        if self.cannot:
            raise ApiError(501, self.cannot)
        if self.busy >= MAX_EXPLAINS:
            raise ApiError(
                503,
                f"the server is busy: {MAX_EXPLAINS} explanations are waiting; retry in 1 s",
                {"retry-after": "1"},
            )
        left = limits.request_timeout_s - (time.monotonic() - arrived)
        self.busy += 1
        try:
            work = self.batcher.run_alone(explained, self.predictor, text)
            return await asyncio.wait_for(work, max(left, 0.0))
        except asyncio.TimeoutError:
            raise ApiError(
                504, f"no explanation within {limits.request_timeout_s:g} s; it was dropped"
            ) from None
        except ShuttingDown as err:
            raise ApiError(503, str(err)) from None
        except ApiError:
            raise
        except Exception as err:
            raise ApiError(500, f"explanation failed: {one_line(err)}") from None
        finally:
            self.busy -= 1


def explained(predictor, text: str) -> dict:
    """The explanation of ``text`` with its ``highlights`` (runs the model: call it on the
    forward thread)."""
    from lttw.inference.explain import explain

    doc = explain(predictor, text)
    doc.pop("model", None)  # the server's folder path tells a client nothing it needs
    doc["highlights"] = highlights(doc)
    return doc


def predicted_label(prediction: dict) -> str:
    """The class an explanation's highlights are weighed toward: the label, the most
    probable label chosen (multi-label), or else the most probable class."""
    if prediction.get("label"):
        return prediction["label"]
    if prediction.get("labels"):
        return prediction["labels"][0]["label"]
    probabilities = prediction["probabilities"]
    return max(probabilities, key=probabilities.get)


def highlights(doc: dict) -> dict:
    """``{"label", "segments": [{"text", "weight"}...]}``: ``doc["text"]`` cut into
    segments that join back into it; a word the latent factors were built from (top-k and
    bottom-s words) has ``weight`` its class affinity toward ``label`` over the largest
    one (0 to 1; 0 where it has none), any other segment ``null``. Words are found in the
    text whatever their case; an ASCII word only as a whole word."""
    text, label = doc["text"], predicted_label(doc["prediction"])
    factors = doc.get("factors") or {"top": [], "bottom": []}
    affinity = {
        entry["word"].lower(): max(0.0, float(entry["class_affinity"].get(label, 0.0)))
        for entry in factors["top"] + factors["bottom"]
    }
    if not affinity:
        return {"label": label, "segments": [{"text": text, "weight": None}]}
    largest = max(affinity.values()) or 1.0
    patterns = [
        rf"(?<!\w){re.escape(word)}(?!\w)" if word.isascii() else re.escape(word)
        for word in sorted(affinity, key=len, reverse=True)
    ]
    segments, at = [], 0
    for found in re.finditer("|".join(patterns), text, flags=re.IGNORECASE):
        if found.start() > at:
            segments.append({"text": text[at : found.start()], "weight": None})
        weight = affinity.get(found.group().lower(), 0.0) / largest
        segments.append({"text": found.group(), "weight": round(weight, 4)})
        at = found.end()
    if at < len(text):
        segments.append({"text": text[at:], "weight": None})
    return {"label": label, "segments": segments}
