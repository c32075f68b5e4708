"""``GET /metrics``: what the server does, in Prometheus' text format (``prometheus-client``),
one registry per application.

- ``lttw_http_requests_total{route, status}``: answers by route and status code (errors are
  the 4xx and 5xx statuses; 499: the client left before its answer)
- ``lttw_http_request_duration_seconds{route}``: a histogram of the time to answer
- ``lttw_connections_refused_total{status}``: answers written before a request reached the
  application (503 past ``--max-connections``, 400 not HTTP/1.x, 408, 431)
- ``lttw_queue_texts``: texts waiting for a forward pass now
- ``lttw_batch_texts``: a histogram of the texts per micro-batch
- ``lttw_batcher_*_total``: the micro-batcher's counts (``GET /health``'s ``batches``)
- ``lttw_predicted_labels_total{label}``: the labels ``POST /predict`` gave, by class (every
  class from the start; a multi-label text counts once per label), and
  ``lttw_texts_without_label_total``: texts given none (below ``min_prob``, or no class past
  its threshold): the drift of what the model says
- ``lttw_prediction_confidence``: a histogram of each answered text's top probability

A route is one of ``ROUTES`` or ``other``, so a client requesting made-up paths cannot grow
the number of series; a label is one of the model's classes.
"""

from __future__ import annotations

import time

import numpy as np
from prometheus_client import CONTENT_TYPE_LATEST, CollectorRegistry, Counter, Gauge, Histogram
from prometheus_client.core import CounterMetricFamily

from lttw.serving.page import DOCS_FILES, PAGE_FILES

#: the routes counted by name (anything else is ``other``)
ROUTES = frozenset(
    {
        "/predict",
        "/explain",
        "/health",
        "/info",
        "/live",
        "/ready",
        "/metrics",
        "/openapi.json",
        "/docs",
        *PAGE_FILES,
        *DOCS_FILES,
    }
)
#: seconds: the buckets of the latency histogram
LATENCY_BUCKETS = (0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0)
#: the buckets of the top-probability histogram
CONFIDENCE_BUCKETS = (0.1, 0.2, 0.3, 0.4, 0.5, 0.6, 0.7, 0.8, 0.9, 0.95, 0.99, 1.0)
#: the batcher's counters exported (``BatchStats`` fields)
BATCHER_COUNTS = ("requests", "texts", "batches", "failed_batches", "dropped", "refused")


class Metrics:
    """The registry of one server and the series it updates."""

    content_type = CONTENT_TYPE_LATEST

    def __init__(self, batcher, max_batch: int, classes: list[str] | tuple[str, ...] = ()):
        self.registry = CollectorRegistry()
        self.requests = Counter(
            "lttw_http_requests",
            "HTTP answers, by route and status code",
            ["route", "status"],
            registry=self.registry,
        )
        self.latency = Histogram(
            "lttw_http_request_duration_seconds",
            "seconds from a request's arrival to its answer",
            ["route"],
            buckets=LATENCY_BUCKETS,
            registry=self.registry,
        )
        self.refused = Counter(
            "lttw_connections_refused",
            "answers written before a request reached the application, by status code",
            ["status"],
            registry=self.registry,
        )
        queue = Gauge(
            "lttw_queue_texts", "texts waiting for a forward pass", registry=self.registry
        )
        queue.set_function(batcher.queued_texts)
        sizes, size = [], 1
        while size < max_batch:
            sizes.append(size)
            size *= 2
        self.batch = Histogram(
            "lttw_batch_texts",
            "texts per micro-batch",
            buckets=(*sizes, max_batch),
            registry=self.registry,
        )
        batcher.on_batch = self.batch.observe
        self.labels = Counter(
            "lttw_predicted_labels",
            "labels given by POST /predict, by class",
            ["label"],
            registry=self.registry,
        )
        self.classes = list(classes)
        for name in self.classes:
            self.labels.labels(name)  # every class's series from the start, at 0
        self.unlabelled = Counter(
            "lttw_texts_without_label",
            "texts POST /predict gave no label (below min_prob, or none past its threshold)",
            registry=self.registry,
        )
        self.confidence = Histogram(
            "lttw_prediction_confidence",
            "the top class probability of each text POST /predict answered",
            buckets=CONFIDENCE_BUCKETS,
            registry=self.registry,
        )
        self.registry.register(_BatcherCounts(batcher))

    def refusal(self, status: int) -> None:
        """A connection-level answer (``serving.connection``)."""
        self.refused.labels(str(status)).inc()

    def predicted(self, probs: np.ndarray, chosen: list[list[int]]) -> None:
        """The answers of one request: each text's chosen class ids (``inference.answers``'
        ``chosen_ids``) and its probabilities."""
        for row, ids in zip(probs, chosen):
            self.confidence.observe(float(np.max(row)))
            for i in ids:
                self.labels.labels(self.classes[i]).inc()
            if not ids:
                self.unlabelled.inc()

    def render(self) -> bytes:
        from prometheus_client import generate_latest

        return generate_latest(self.registry)


class _BatcherCounts:
    """The micro-batcher's statistics as counters, read when scraped."""

    def __init__(self, batcher):
        self.batcher = batcher

    def describe(self):
        return []  # read at scrape time only

    def collect(self):
        stats = self.batcher.stats
        for name in BATCHER_COUNTS:
            yield CounterMetricFamily(
                f"lttw_batcher_{name}", f"the micro-batcher's {name}", value=getattr(stats, name)
            )


class MetricsMiddleware:
    """Outermost ASGI middleware: counts every answer by route and status and times it."""

    def __init__(self, app, metrics: Metrics):
        self.app, self.metrics = app, metrics

    async def __call__(self, scope, receive, send):
        if scope["type"] != "http":
            return await self.app(scope, receive, send)
        started, status = time.perf_counter(), 500

        async def tracked(message):
            nonlocal status
            if message["type"] == "http.response.start":
                status = message["status"]
            await send(message)

        try:
            await self.app(scope, receive, tracked)
        finally:
            route = scope["path"] if scope["path"] in ROUTES else "other"
            self.metrics.requests.labels(route, str(status)).inc()
            self.metrics.latency.labels(route).observe(time.perf_counter() - started)
