"""Progress bars for every long loop of the pipeline and the CLI, through one helper.

On a terminal: an ordinary tqdm bar. In a log (stderr is not a terminal: ``dvc queue logs``,
``dvc exp run`` in CI, ``2> log``): one plain line per 10% of the total (per 30 s when the
total is unknown), each ending in a newline, instead of thousands of carriage-return updates.
"""

from __future__ import annotations

import math
import sys
from collections.abc import Iterable, Sized
from typing import IO, Any, cast

#: in a log: a line every ``1 / LOG_STEPS`` of the total, or every LOG_INTERVAL_S seconds
LOG_STEPS = 10
LOG_INTERVAL_S = 30.0


class _Lines:
    """A stream for tqdm that turns each carriage-return redraw into a line of its own."""

    last: str | None

    def __init__(self, stream: IO[str]):
        self.stream, self.last = stream, None

    def write(self, text: str) -> None:
        text = text.replace("\r", "").rstrip()
        state = _state(text)
        if text and state != self.last:  # skip tqdm's clears and its repeat at close
            self.stream.write(text + "\n")
            self.last = state

    def flush(self) -> None:
        self.stream.flush()


def _state(line: str) -> str:
    """A bar's line without what changes between two redraws of the same count: the timings
    and the bar itself (its width follows the length of the rate text)."""
    head, bar, rest = line.partition("|")
    if not bar:  # no total: "desc: 37text [00:01, 30.1text/s]"
        return line.split("[")[0]
    return head + "|" + rest.rpartition("|")[2].split("[")[0]


def is_terminal(stream: Any) -> bool:
    isatty = getattr(stream, "isatty", None)
    try:
        return bool(isatty and isatty())
    except ValueError:  # a closed stream
        return False


def log_settings(total: float | None) -> dict[str, Any]:
    """tqdm settings for a log: refresh every 10% of ``total`` (or every 30 s), no
    time-based extra redraws, a fixed width and plain characters."""
    if total:
        every = {"miniters": max(1, math.ceil(total / LOG_STEPS)), "mininterval": 0.0}
    else:
        every = {"miniters": 1, "mininterval": LOG_INTERVAL_S}
    return {
        **every,
        "maxinterval": float("inf"),
        "ncols": 100,
        "ascii": True,
        "dynamic_ncols": False,
    }


def progress(
    iterable: Iterable | None = None,
    *,
    total: float | None = None,
    file: IO[str] | None = None,
    **kwargs,
):
    """``tqdm(iterable, total=..., **kwargs)`` writing to ``file`` (default stderr); in a log
    with the settings of ``log_settings``. Use it as tqdm: iterate, ``update()``, ``with``."""
    from tqdm.auto import tqdm

    stream = sys.stderr if file is None else file
    if total is None and iterable is not None and hasattr(iterable, "__len__"):
        total = len(cast(Sized, iterable))  # it has __len__ (checked above)
    if is_terminal(stream):
        return tqdm(iterable, total=total, file=stream, **kwargs)
    return tqdm(iterable, total=total, file=_Lines(stream), **{**kwargs, **log_settings(total)})
