"""Micro-batching: the texts of concurrent requests gathered into one batch.

Each request puts its texts on a queue and awaits its answer. One worker takes the first
waiting request, then keeps gathering until ``max_batch`` texts are together or ``max_wait_ms``
has passed since that first request, runs the whole batch through the predictor on one
background thread (the event loop keeps accepting requests meanwhile: they queue up for the
next batch) and hands each request its rows. The predictor runs a batch shortest text first
in forward passes of ``batch_size`` texts, each padded to its own longest text. So a lone
request waits at most ``max_wait_ms`` extra, and under load every batch is full, as with
``lttw predict --file``. A request is never split: one larger than ``max_batch`` runs alone.

A failed forward pass fails the requests of that batch only (500), never the service.
"""

from __future__ import annotations

import asyncio
import logging
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field

import numpy as np

log = logging.getLogger("lttw.serving")


@dataclass
class BatchStats:
    """What the batcher did so far (``GET /health`` reports it)."""

    requests: int = 0
    texts: int = 0
    batches: int = 0
    failed_batches: int = 0
    largest_batch: int = 0

    def record(self, requests: int, texts: int) -> None:
        self.requests += requests
        self.texts += texts
        self.batches += 1
        self.largest_batch = max(self.largest_batch, texts)


@dataclass
class _Job:
    texts: list[str]
    future: asyncio.Future
    arrived: float = field(default_factory=time.monotonic)


class MicroBatcher:
    """``await batcher.predict(texts)`` -> (len(texts), p) probabilities; start it with
    ``start()`` inside the event loop, stop it with ``await stop()`` (after the server has
    finished its requests)."""

    def __init__(
        self, predict_proba, max_batch: int = 64, max_wait_ms: float = 5.0, batch_size: int = 64
    ):
        self.predict_proba, self.batch_size = predict_proba, batch_size
        self.max_batch, self.max_wait = max_batch, max_wait_ms / 1000.0
        self.stats = BatchStats()
        self._queue: asyncio.Queue[_Job] | None = None
        self._worker: asyncio.Task | None = None
        self._carry: _Job | None = None
        self._pool = ThreadPoolExecutor(max_workers=1, thread_name_prefix="lttw-forward")

    def start(self) -> None:
        self._queue = asyncio.Queue()
        self._worker = asyncio.get_running_loop().create_task(self._run())

    async def stop(self) -> None:
        if self._worker is not None:
            self._worker.cancel()
            try:
                await self._worker
            except asyncio.CancelledError:
                pass
        self._pool.shutdown(wait=True)

    async def predict(self, texts: list[str]) -> np.ndarray:
        if self._queue is None:
            raise RuntimeError("the batcher is not running")
        job = _Job(list(texts), asyncio.get_running_loop().create_future())
        await self._queue.put(job)
        return await job.future

    async def _gather(self) -> list[_Job]:
        """The next batch: the request carried over (or the first to arrive), then others
        until ``max_batch`` texts or ``max_wait_ms`` after the first one arrived."""
        assert self._queue is not None  # set by start(), before the worker runs
        first = self._carry or await self._queue.get()
        self._carry = None
        jobs, size = [first], len(first.texts)
        deadline = first.arrived + self.max_wait
        while size < self.max_batch:
            try:
                job = self._queue.get_nowait()
            except asyncio.QueueEmpty:
                remaining = deadline - time.monotonic()
                if remaining <= 0:
                    break
                try:  # an item stays queued until taken: a timeout never loses one
                    job = await asyncio.wait_for(self._queue.get(), remaining)
                except asyncio.TimeoutError:
                    break
            if size + len(job.texts) > self.max_batch:
                self._carry = job  # starts the next batch
                break
            jobs.append(job)
            size += len(job.texts)
        return jobs

    async def _run(self) -> None:
        loop = asyncio.get_running_loop()
        while True:
            jobs = await self._gather()
            texts = [t for job in jobs for t in job.texts]
            try:
                probs = await loop.run_in_executor(
                    self._pool, self.predict_proba, texts, self.batch_size
                )
            except Exception as err:  # answer the batch's requests with the error
                self.stats.failed_batches += 1
                log.error("forward pass of %d texts failed: %s", len(texts), err)
                for job in jobs:
                    if not job.future.done():
                        job.future.set_exception(err)
                continue
            self.stats.record(len(jobs), len(texts))
            start = 0
            for job in jobs:
                if not job.future.done():  # the client may have gone away
                    job.future.set_result(probs[start : start + len(job.texts)])
                start += len(job.texts)
