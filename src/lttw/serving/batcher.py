"""Micro-batching: the work of concurrent requests gathered into forward passes.

A request's work is a list of pieces the model reads: its texts, or with ``split``
(``lttw serve --chunk``: ``WindowedPredictor.split_windows``) the sliding windows of its
texts. Each request puts its pieces on a queue and awaits its answer. One worker takes the
pieces of the first waiting request, then of the next ones, until ``max_batch`` pieces are
together or ``max_wait_ms`` has passed since that first request arrived; a request with more
pieces is cut across batches. A batch runs on one background thread (the event loop keeps
accepting requests meanwhile) in forward passes of at most ``batch_size`` pieces, shortest
first, so each pass is padded to nearly its own pieces' length, as with ``lttw predict
--file``. When its last piece is computed a request gets its rows (with windows: the mean of
each text's windows). So a lone request waits at most ``max_wait_ms`` extra.

Bounds: at most ``max_queue_texts`` pieces wait, all requests together (a request that would
pass it raises ``QueueFull`` at once: the server answers 503 with ``Retry-After``; one that
holds more pieces alone raises ``TooLarge``: 422). A request whose client has gone or whose
time ran out is cancelled (``Job.cancel``): its pieces not yet in a forward pass are
dropped, so at most the one pass of ``batch_size`` pieces already running is computed for
it. ``drain`` (graceful shutdown) fails whatever is still waiting or running at its deadline
with ``ShuttingDown``. A failed forward pass fails the requests with pieces in it (500),
never the service.
"""

from __future__ import annotations

import asyncio
import logging
import math
import time
from collections import deque
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from functools import partial

import numpy as np

from lttw.serving.batch_jobs import (
    BatchStats,
    Job,
    QueueFull,
    ShuttingDown,
    Split,
    TooLarge,
    combine_parts,
)

log = logging.getLogger("lttw.serving")

#: texts cut into windows at a time (``MicroBatcher.enqueue``)
SPLIT_STEP = 8


class MicroBatcher:
    """``await batcher.predict(texts)`` -> (len(texts), p) probabilities (or ``enqueue`` /
    ``submit`` for the ``Job``); ``split``: texts -> ``Split`` (None: a text is a piece);
    ``predict_proba`` computes pieces. Start it with ``start()`` inside the event loop, stop
    it with ``await stop()`` (after the server has finished its requests)."""

    def __init__(
        self,
        predict_proba,
        max_batch: int = 64,
        max_wait_ms: float = 5.0,
        batch_size: int = 64,
        max_queue_texts: int | None = None,
        split: Callable[[list[str]], Split] | None = None,
    ):
        self.predict_proba, self.batch_size, self.split = predict_proba, batch_size, split
        self.max_batch, self.max_wait = max_batch, max_wait_ms / 1000.0
        self.max_queue_texts = max_queue_texts
        self.stats = BatchStats()
        self._pending: deque[Job] = deque()
        self._running: list[Job] = []
        self._wakeup: asyncio.Event | None = None
        self._worker: asyncio.Task | None = None
        self._draining = False
        self._pool = ThreadPoolExecutor(max_workers=1, thread_name_prefix="lttw-forward")
        self._splitter = ThreadPoolExecutor(max_workers=1, thread_name_prefix="lttw-split")
        #: called with the number of pieces of each batch computed (``serving.metrics``)
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
        self._splitter.shutdown(wait=False, cancel_futures=True)

    def drain(self, limit_s: float) -> None:
        """Graceful shutdown begins: new requests get ``ShuttingDown``; what waits or runs
        still gets computed for ``limit_s`` seconds, then fails with ``ShuttingDown``."""
        self._draining = True
        asyncio.get_running_loop().call_later(limit_s, self._fail_all)

    def queued_texts(self) -> int:
        """Pieces (texts, or windows with ``split``) waiting for a batch (cancelled requests
        not counted)."""
        return sum(job.left for job in self._pending if not job.future.done())

    def busy(self) -> bool:
        """Whether anything waits or runs."""
        return bool(self._running) or self.queued_texts() > 0

    async def enqueue(self, texts: list[str]) -> Job:
        """``submit`` the pieces of ``texts``, cut by ``split`` on a thread of its own,
        ``SPLIT_STEP`` texts at a time: cancelled, it stops after the step under way; past
        the queue bound, it stops there (``TooLarge``)."""
        if self.split is None:
            return self.submit(texts)
        loop = asyncio.get_running_loop()
        pieces: list[str] = []
        parts: list[tuple[int, Callable | None]] = []
        for start in range(0, len(texts), SPLIT_STEP):
            if self._draining:
                raise ShuttingDown()
            step = texts[start : start + SPLIT_STEP]
            cut, combine = await loop.run_in_executor(self._splitter, self.split, step)
            pieces.extend(cut)
            parts.append((len(cut), combine))
            if self.max_queue_texts is not None and len(pieces) > self.max_queue_texts:
                self.stats.refused += 1
                raise TooLarge(len(pieces), self.max_queue_texts)
        if all(combine is None for _, combine in parts):
            return self.submit(texts)
        return self.submit(texts, (pieces, partial(combine_parts, parts)))

    async def enqueue_within(self, texts: list[str], seconds: float) -> Job:
        """``enqueue`` with ``seconds`` for it (cutting long texts into windows takes time):
        past them, ``asyncio.TimeoutError`` and the request counts as dropped."""
        try:
            return await asyncio.wait_for(self.enqueue(texts), max(seconds, 0.0))
        except asyncio.TimeoutError:
            self.stats.dropped += 1
            raise

    def submit(self, texts: list[str], split: Split | None = None) -> Job:
        """Queue ``texts`` (as ``split``'s pieces where given); raises ``QueueFull``,
        ``TooLarge`` or ``ShuttingDown`` instead of queueing."""
        if self._wakeup is None:
            raise RuntimeError("the batcher is not running")
        if self._draining:
            raise ShuttingDown()
        pieces, combine = split if split is not None else (list(texts), None)
        limit = self.max_queue_texts
        if limit is not None and len(pieces) > limit:
            self.stats.refused += 1
            raise TooLarge(len(pieces), limit)
        queued = self.queued_texts()
        if limit is not None and queued + len(pieces) > limit:
            self.stats.refused += 1
            raise QueueFull(queued, limit, self._retry_after(queued))
        future = asyncio.get_running_loop().create_future()
        job = Job(list(pieces), future, combine, len(texts))
        self._pending.append(job)
        self._wakeup.set()
        return job

    async def predict(self, texts: list[str]) -> np.ndarray:
        return await (await self.enqueue(texts)).future

    def _retry_after(self, queued: int) -> int:
        """Seconds until the queue has drained at the speed measured so far (1 to 60)."""
        per_piece = self.stats.busy_s / self.stats.pieces if self.stats.pieces else 0.0
        return int(min(60, max(1, math.ceil(queued * per_piece))))

    def _fail_all(self) -> None:
        for job in [*self._running, *self._pending]:
            if not job.future.done():
                job.future.set_exception(ShuttingDown())
        self._pending.clear()

    def _gone(self, job: Job) -> bool:
        """Whether ``job`` wants no more work (counted once as dropped if it was cancelled)."""
        if not job.future.done():
            return False
        if job.future.cancelled() and not job.dropped:
            job.dropped = True
            self.stats.dropped += 1
        return True

    async def _next_job(self, deadline: float | None) -> Job | None:
        """The first live waiting request (left queued), waiting for one until ``deadline``
        (monotonic; None: for ever); None when the deadline passes first."""
        assert self._wakeup is not None, "start() first"
        while True:
            while self._pending and self._gone(self._pending[0]):
                self._pending.popleft()
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

    async def _gather(self) -> list[tuple[Job, int]]:
        """The next batch, as (request, piece index): the pieces of the first waiting
        request, then of others until ``max_batch`` pieces or ``max_wait_ms`` after the
        first one arrived. A request's pieces that do not fit start the next batch."""
        job = await self._next_job(None)
        assert job is not None  # no deadline: it waits for one
        deadline = job.arrived + self.max_wait
        items: list[tuple[Job, int]] = []
        while job is not None:
            take = min(job.left, self.max_batch - len(items))
            items.extend((job, i) for i in range(job.taken, job.taken + take))
            job.taken += take
            if not job.left:
                self._pending.popleft()
            if len(items) >= self.max_batch:
                break
            job = await self._next_job(deadline)
        return items

    async def _run(self) -> None:
        while True:
            items = await self._gather()
            self._running = list(dict.fromkeys(job for job, _ in items))
            try:
                self.stats.batches += 1
                self.stats.largest_batch = max(self.stats.largest_batch, len(items))
                if self.on_batch is not None:
                    self.on_batch(len(items))
                if len(items) > self.batch_size:  # shortest first, each pass padded to its own
                    items.sort(key=lambda item: len(item[0].pieces[item[1]]))
                for start in range(0, len(items), self.batch_size):
                    await self._forward(items[start : start + self.batch_size])
            finally:
                self._running = []

    async def _forward(self, items: list[tuple[Job, int]]) -> None:
        """One forward pass of the pieces of ``items`` whose request still wants them."""
        items = [(job, i) for job, i in items if not self._gone(job)]
        if not items:
            return
        loop = asyncio.get_running_loop()
        pieces = [job.pieces[i] for job, i in items]
        started = time.monotonic()
        try:
            probs = await loop.run_in_executor(
                self._pool, self.predict_proba, pieces, self.batch_size
            )
            self.stats.passes += 1
            self.stats.pieces += len(pieces)
            self.stats.busy_s = round(self.stats.busy_s + time.monotonic() - started, 6)
            for row, (job, i) in zip(probs, items):
                if not job.future.done():  # the client may have gone away
                    job.put(i, row)
                    if job.future.done():  # its last piece: answered
                        self.stats.requests += 1
                        self.stats.texts += job.texts
        except Exception as err:  # answer the pass's requests with the error
            self.stats.failed_batches += 1
            log.error("forward pass of %d texts failed: %s", len(pieces), err)
            for job, _ in items:
                if not job.future.done():
                    job.future.set_exception(err)
