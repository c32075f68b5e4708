"""What the micro-batcher (``batcher.MicroBatcher``) queues and reports: a request's
``Job`` (its pieces, the future its handler awaits, the rows computed so far), the batcher's
``BatchStats`` (``GET /health``, ``/metrics``), and the errors a request meets instead of
being queued or computed (``QueueFull``: 503, ``TooLarge``: 422, ``ShuttingDown``: 503).
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable
from dataclasses import dataclass, field

import numpy as np

#: the pieces of some texts and what turns the pieces' rows into the texts' (None: one
#: piece per text)
Split = tuple[list[str], Callable[[np.ndarray], np.ndarray] | None]


class QueueFull(Exception):
    """The queue holds too many pieces to take a request; ``retry_after`` is a guess (s)."""

    def __init__(self, queued: int, limit: int, retry_after: int):
        super().__init__(
            f"the server is busy: {queued} texts (windows with --chunk) are waiting (the "
            f"limit is {limit}, --max-queue-texts); retry in {retry_after} s"
        )
        self.retry_after = retry_after


class TooLarge(Exception):
    """One request holds more pieces than the whole queue may (a retry cannot help)."""

    def __init__(self, pieces: int, limit: int):
        super().__init__(
            f"the texts make over {limit} windows for the model to read ({pieces} in the "
            f"first texts), more than the server queues (--max-queue-texts): send fewer or "
            "shorter texts"
        )


class ShuttingDown(Exception):
    """The server is stopping and will not compute this request."""

    def __init__(self):
        super().__init__("the server is shutting down and did not finish this request")


@dataclass
class BatchStats:
    """What the batcher did so far (``GET /health`` reports it)."""

    #: requests answered and their texts
    requests: int = 0
    texts: int = 0
    #: micro-batches gathered, forward passes run, pieces (texts or windows) computed
    batches: int = 0
    passes: int = 0
    pieces: int = 0
    failed_batches: int = 0
    #: pieces in the largest batch
    largest_batch: int = 0
    #: requests whose remaining work was dropped: the client left or the time ran out
    dropped: int = 0
    #: requests refused because the queue was full (503)
    refused: int = 0
    #: seconds spent in forward passes (for ``Retry-After``)
    busy_s: float = 0.0


@dataclass(eq=False)  # a request is itself, whatever it holds
class Job:
    """One request's pieces and the future its handler awaits."""

    pieces: list[str]
    future: asyncio.Future
    #: the pieces' rows -> the texts' rows (None: the pieces are the texts)
    combine: Callable[[np.ndarray], np.ndarray] | None = None
    texts: int = 0
    arrived: float = field(default_factory=time.monotonic)
    taken: int = 0  # pieces handed to batches
    computed: int = 0
    rows: np.ndarray | None = None
    dropped: bool = False

    @property
    def left(self) -> int:
        """Pieces not yet handed to a batch."""
        return len(self.pieces) - self.taken

    def cancel(self) -> None:
        """The request no longer wants an answer: what is not computed yet is dropped."""
        self.future.cancel()

    def put(self, index: int, row: np.ndarray) -> None:
        if self.rows is None:
            self.rows = np.empty((len(self.pieces), *np.shape(row)), np.asarray(row).dtype)
        self.rows[index] = row
        self.computed += 1
        if self.computed == len(self.pieces) and not self.future.done():
            rows = self.rows if self.combine is None else self.combine(self.rows)
            self.future.set_result(rows)


def combine_parts(parts: list[tuple[int, Callable | None]], rows: np.ndarray) -> np.ndarray:
    """The texts' rows from the rows of the pieces of consecutive steps (each: its number of
    pieces and its ``combine``, None where its pieces are its texts)."""
    out, start = [], 0
    for n, combine in parts:
        block = rows[start : start + n]
        out.append(np.asarray(block if combine is None else combine(block), np.float32))
        start += n
    return np.concatenate(out)
