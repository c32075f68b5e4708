"""Micro-batching: the texts of concurrent requests gathered into one batch.

Each request puts its texts on a queue and awaits its answer. One worker takes the first
waiting request, then keeps gathering until ``max_batch`` texts are together or ``max_wait_ms``
has passed since that first request, runs the whole batch through the predictor on one
background thread (the event loop keeps accepting requests meanwhile: they queue up for the
next batch) and hands each request its rows. The predictor runs a batch shortest text first
in forward passes of ``batch_size`` texts, each padded to its own longest text. So a lone
request waits at most ``max_wait_ms`` extra, and under load every batch is full, as with
``lttw predict --file``. A request is never split across batches: one larger than
``max_batch`` runs alone, in parts of ``max_batch`` texts.

Bounds: at most ``max_queue_texts`` texts wait (a request that would pass it raises
``QueueFull`` at once: the server answers 503 with ``Retry-After``); a request whose client
has gone or whose time ran out is cancelled (``Job.cancel``) and dropped before its batch
runs, never computed (a large request's remaining parts are dropped too). ``drain`` (graceful shutdown) fails whatever is still waiting or
running at its deadline with ``ShuttingDown``. A failed forward pass fails the requests of
that batch only (500), never the service.
"""

from __future__ import annotations

import asyncio
import logging
import math
import time
from collections import deque
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field

import numpy as np

log = logging.getLogger("lttw.serving")


class QueueFull(Exception):
    """The queue holds ``max_queue_texts`` texts already; ``retry_after`` is a guess (s)."""

    def __init__(self, queued: int, limit: int, retry_after: int):
        super().__init__(
            f"the server is busy: {queued} texts are waiting (the limit is {limit}); "
            f"retry in {retry_after} s"
        )
        self.retry_after = retry_after


class ShuttingDown(Exception):
    """The server is stopping and will not compute this request."""

    def __init__(self):
        super().__init__("the server is shutting down and did not finish this request")


@dataclass
class BatchStats:
    """What the batcher did so far (``GET /health`` reports it)."""

    requests: int = 0
    texts: int = 0
    batches: int = 0
    failed_batches: int = 0
    largest_batch: int = 0
    #: requests dropped before their forward pass: the client left or the time ran out
    dropped: int = 0
    #: requests refused because the queue was full (503)
    refused: int = 0
    #: seconds spent in forward passes (for ``Retry-After``)
    busy_s: float = 0.0

    def record(self, requests: int, texts: int, seconds: float) -> None:
        self.requests += requests
        self.texts += texts
        self.batches += 1
        self.largest_batch = max(self.largest_batch, texts)
        self.busy_s = round(self.busy_s + seconds, 6)


@dataclass
class Job:
    """One request's texts and the future its handler awaits."""

    texts: list[str]
    future: asyncio.Future
    arrived: float = field(default_factory=time.monotonic)

    def cancel(self) -> None:
        """The request no longer wants an answer: dropped unless its batch already runs."""
        self.future.cancel()


class MicroBatcher:
    """``await batcher.predict(texts)`` -> (len(texts), p) probabilities (or ``submit`` for
    the ``Job``); start it with ``start()`` inside the event loop, stop it with
    ``await stop()`` (after the server has finished its requests)."""

    def __init__(
        self,
        predict_proba,
        max_batch: int = 64,
        max_wait_ms: float = 5.0,
        batch_size: int = 64,
        max_queue_texts: int | None = None,
    ):
        self.predict_proba, self.batch_size = predict_proba, batch_size
        self.max_batch, self.max_wait = max_batch, max_wait_ms / 1000.0
        self.max_queue_texts = max_queue_texts
        self.stats = BatchStats()
        self._pending: deque[Job] = deque()
        self._running: list[Job] = []
        self._wakeup: asyncio.Event | None = None
        self._worker: asyncio.Task | None = None
        self._draining = False
        self._pool = ThreadPoolExecutor(max_workers=1, thread_name_prefix="lttw-forward")
        #: called with the number of texts of each batch computed (``serving.metrics``)
        self.on_batch = None

    @property
    def draining(self) -> bool:
        """Whether graceful shutdown has begun (``drain``)."""
        return self._draining

    async def warm_up(self, texts: list[str]) -> None:
        """One forward pass of ``texts`` on the batcher's thread, outside the statistics:
        whatever the predictor initialises lazily is ready before the first request."""
        loop = asyncio.get_running_loop()
        await loop.run_in_executor(self._pool, self.predict_proba, list(texts), self.batch_size)

    async def run_alone(self, fn, *args):
        """``fn(*args)`` on the forward passes' thread, between batches (an explanation);
        ``ShuttingDown`` once graceful shutdown has begun. Cancelled before it starts, it
        never runs."""
        if self._draining:
            raise ShuttingDown()
        return await asyncio.get_running_loop().run_in_executor(self._pool, fn, *args)

    def start(self) -> None:
        self._wakeup = asyncio.Event()
        self._worker = asyncio.get_running_loop().create_task(self._run())

    async def stop(self) -> None:
        if self._worker is not None:
            self._worker.cancel()
            try:
                await self._worker
            except asyncio.CancelledError:
                pass
        self._fail_all()
        self._pool.shutdown(wait=False, cancel_futures=True)

    def drain(self, limit_s: float) -> None:
        """Graceful shutdown begins: new requests get ``ShuttingDown``; what waits or runs
        still gets computed for ``limit_s`` seconds, then fails with ``ShuttingDown``."""
        self._draining = True
        asyncio.get_running_loop().call_later(limit_s, self._fail_all)

    def queued_texts(self) -> int:
        """Texts waiting for a batch (cancelled requests not counted)."""
        return sum(len(job.texts) for job in self._pending if not job.future.done())

    def submit(self, texts: list[str]) -> Job:
        """Queue ``texts``; raises ``QueueFull`` or ``ShuttingDown`` instead of queueing."""
        if self._wakeup is None:
            raise RuntimeError("the batcher is not running")
        if self._draining:
            raise ShuttingDown()
        queued = self.queued_texts()
        if self.max_queue_texts is not None and queued + len(texts) > self.max_queue_texts:
            self.stats.refused += 1
            raise QueueFull(queued, self.max_queue_texts, self._retry_after(queued))
        job = Job(list(texts), asyncio.get_running_loop().create_future())
        self._pending.append(job)
        self._wakeup.set()
        return job

    async def predict(self, texts: list[str]) -> np.ndarray:
        return await self.submit(texts).future

    def _retry_after(self, queued: int) -> int:
        """Seconds until the queue has drained at the speed measured so far (1 to 60)."""
        per_text = self.stats.busy_s / self.stats.texts if self.stats.texts else 0.0
        return int(min(60, max(1, math.ceil(queued * per_text))))

    def _fail_all(self) -> None:
        for job in [*self._running, *self._pending]:
            if not job.future.done():
                job.future.set_exception(ShuttingDown())
        self._pending.clear()

    def _drop_gone(self) -> None:
        while self._pending and self._pending[0].future.done():
            self._pending.popleft()
            self.stats.dropped += 1

    async def _next_job(self, deadline: float | None) -> Job | None:
        """The first live waiting request (left queued), waiting for one until ``deadline``
        (monotonic; None: for ever); None when the deadline passes first."""
        assert self._wakeup is not None, "start() first"
        while True:
            self._drop_gone()
            if self._pending:
                return self._pending[0]
            self._wakeup.clear()
            remaining = None if deadline is None else deadline - time.monotonic()
            if remaining is not None and remaining <= 0:
                return None
            try:
                await asyncio.wait_for(self._wakeup.wait(), remaining)
            except asyncio.TimeoutError:
                return None

    async def _gather(self) -> list[Job]:
        """The next batch: the first waiting request, then others until ``max_batch`` texts
        or ``max_wait_ms`` after the first one arrived. One that does not fit stays first
        in the queue and starts the next batch."""
        first = await self._next_job(None)
        assert first is not None  # no deadline: it waits for one
        self._pending.popleft()
        jobs: list[Job] = [first]
        size = len(first.texts)
        deadline = first.arrived + self.max_wait
        while size < self.max_batch:
            job = await self._next_job(deadline)
            if job is None or size + len(job.texts) > self.max_batch:
                break
            jobs.append(self._pending.popleft())
            size += len(job.texts)
        return jobs

    async def _forward(self, jobs: list[Job], texts: list[str]) -> np.ndarray | None:
        """The batch's probabilities; a batch over ``max_batch`` texts (one large request)
        runs in parts of ``max_batch``, and stops (None) when no request wants it any more."""
        loop = asyncio.get_running_loop()
        parts = []
        for start in range(0, len(texts), self.max_batch):
            if start and all(job.future.done() for job in jobs):
                return None
            chunk = texts[start : start + self.max_batch]
            parts.append(
                await loop.run_in_executor(self._pool, self.predict_proba, chunk, self.batch_size)
            )
        return np.concatenate(parts)

    async def _run(self) -> None:
        while True:
            gathered = await self._gather()
            jobs = [job for job in gathered if not job.future.done()]  # gone while gathering
            self.stats.dropped += len(gathered) - len(jobs)
            if not jobs:
                continue
            texts = [t for job in jobs for t in job.texts]
            self._running = jobs
            started = time.monotonic()
            try:
                probs = await self._forward(jobs, texts)
                if probs is None:  # every client left or timed out while it ran
                    self.stats.dropped += len(jobs)
                    continue
                self.stats.record(len(jobs), len(texts), time.monotonic() - started)
                if self.on_batch is not None:
                    self.on_batch(len(texts))
                start = 0
                for job in jobs:
                    if not job.future.done():  # the client may have gone away
                        job.future.set_result(probs[start : start + len(job.texts)])
                    start += len(job.texts)
            except Exception as err:  # answer the batch's requests with the error
                self.stats.failed_batches += 1
                log.error("forward pass of %d texts failed: %s", len(texts), err)
                for job in jobs:
                    if not job.future.done():
                        job.future.set_exception(err)
            finally:
                self._running = []
