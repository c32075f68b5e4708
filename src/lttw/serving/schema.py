"""The pydantic models of the HTTP documents, for the OpenAPI schema (``GET /openapi.json``,
the page ``GET /docs``). The server checks request bodies itself (``serving.documents``: one
line per problem, bounded by ``Limits``); these models describe the same documents."""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict, Field


class PredictBody(BaseModel):
    """``POST /predict``: the texts in exactly one of ``texts``, ``text`` or ``inputs``."""

    model_config = ConfigDict(
        extra="forbid",
        json_schema_extra={
            "examples": [
                {"texts": ["Stocks rally as oil prices fall"], "top_k": 2},
                {"inputs": "Late goal wins the final"},
                {"inputs": ["Late goal wins the final", "Chip maker beats forecasts"], "top_k": 2},
            ]
        },
    )
    texts: list[str] | None = Field(None, description="the texts (at most --max-texts)")
    text: str | None = Field(None, description="one text")
    inputs: str | list[str | list[str]] | None = Field(
        None,
        description="one text or a list (each a string, or TEI's [string]): answered in Text "
        "Embeddings Inference's shape, a list of {label, score} per text",
    )
    top_k: int | None = Field(
        None,
        ge=1,
        description="texts / text: also list the k most probable classes; inputs: list only "
        "the k most probable (default: every class)",
    )
    min_prob: float | None = Field(
        None,
        ge=0,
        le=1,
        description="texts / text: no label where the most probable class is below it",
    )
    raw_scores: bool | None = Field(
        None,
        description="inputs: scores before the softmax (log p) or sigmoid (log odds) instead "
        "of probabilities",
    )
    truncate: bool | None = Field(
        None, description="inputs: accepted for TEI clients; a text is read as --chunk says"
    )


class LabelProb(BaseModel):
    label: str
    prob: float


class Prediction(BaseModel):
    """One text's answer: ``label`` and ``prob`` (single-label; ``label`` null below
    ``min_prob``) or ``labels`` (multi-label), and ``top`` with ``top_k``."""

    label: str | None = None
    prob: float | None = None
    labels: list[LabelProb] | None = None
    top: list[LabelProb] | None = None


class PredictAnswer(BaseModel):
    predictions: list[Prediction] = Field(description="one per text, in the order given")


class Score(BaseModel):
    """One class of a TEI answer."""

    label: str
    score: float


#: ``{"inputs": ...}``'s answer: a string's classes, or a list of them per text
TeiAnswer = list[Score] | list[list[Score]]


class ExplainBody(BaseModel):
    """``POST /explain``: one text."""

    model_config = ConfigDict(
        extra="forbid",
        json_schema_extra={"examples": [{"text": "Stocks rally as oil prices fall"}]},
    )
    text: str = Field(description="the text to explain (at most --max-text-chars characters)")


class ExplainAnswer(BaseModel):
    """What ``lttw explain --json`` prints (less the folder) and the page's highlights."""

    model_config = ConfigDict(extra="allow")
    text: str
    variant: str
    classes: list[str]
    prediction: dict[str, object]
    factors: dict[str, object] | None = None
    attention: dict[str, object]
    highlights: dict[str, object]


class ErrorAnswer(BaseModel):
    """Every error: one line."""

    error: str


class StatusAnswer(BaseModel):
    status: str


class HealthAnswer(BaseModel):
    status: str
    backend: str
    queued_texts: int
    batches: dict[str, float]


class InfoAnswer(BaseModel):
    """The model, its limits and who may call (more fields: see the serving reference)."""

    model_config = ConfigDict(extra="allow")
    labels: list[str]
    multi_label: bool
    variant: str
    backend: str
    limits: dict[str, float]
    access: dict[str, object]


#: the error statuses of ``POST /predict`` and what each means
PREDICT_ERRORS = {
    400: "the body is not UTF-8, not JSON, nested too deep, or a bad Host header",
    401: "no valid bearer token (with --api-key)",
    408: "the body was not received within --body-timeout",
    413: "the body is over --max-body-bytes",
    415: "the body is not sent as application/json",
    422: "the wrong fields, types or sizes",
    500: "the forward pass failed",
    503: "the queue is full (Retry-After), or the server is shutting down",
    504: "no answer within --request-timeout",
}
#: the error statuses of ``POST /explain``
EXPLAIN_ERRORS = {
    **PREDICT_ERRORS,
    501: "this server cannot explain (the onnx backend, or an ensemble)",
    503: "explanations are waiting already (Retry-After), or the server is shutting down",
}


def error_responses(statuses: dict[int, str]) -> dict:
    """FastAPI's ``responses`` argument: each status answered with an ``ErrorAnswer``."""
    return {
        status: {"model": ErrorAnswer, "description": text} for status, text in statuses.items()
    }


def request_body(model: type[BaseModel]) -> dict:
    """FastAPI's ``openapi_extra`` for a JSON body the route reads itself."""
    return {
        "requestBody": {
            "required": True,
            "content": {"application/json": {"schema": model.model_json_schema()}},
        }
    }
