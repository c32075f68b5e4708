"""How a failed Ray Data run reaches the user (``ray_batch``): the package's own error (a bad
row, a bad shard) raised inside a Ray task comes out unwrapped, one line, and Ray Data's
console copies of the failure (its tracebacks) and its progress lines are held back; Ray
Data's log file in the session folder keeps them. A failure of another kind is raised as it is."""

from __future__ import annotations

import contextlib
import logging
from collections.abc import Iterator

from lttw.errors import UserError

#: the loggers whose console handlers print a failed run's tracebacks
RAY_LOGGERS = ("ray", "ray.data")


class _WarningsOnly(logging.Filter):
    """Ray's warnings pass; its progress lines (INFO, logged while stdout is no terminal)
    and its copies of a failure (ERROR) do not."""

    def filter(self, record: logging.LogRecord) -> bool:
        return record.levelno == logging.WARNING


@contextlib.contextmanager
def ray_failures_as_errors() -> Iterator[None]:
    """Run a Ray Data execution: a ``UserError`` behind Ray's task-error wrappers raised
    as itself, and only Ray's warnings on the console meanwhile."""
    quiet = _WarningsOnly()
    handlers = [
        handler
        for name in RAY_LOGGERS
        for handler in logging.getLogger(name).handlers
        if not isinstance(handler, logging.FileHandler)
    ]
    for handler in handlers:
        handler.addFilter(quiet)
    try:
        yield
    except BaseException as err:
        cause = user_cause(err)
        if cause is not None:  # a read or predict error inside a Ray task: its own message
            raise cause from None
        raise
    finally:
        for handler in handlers:
            handler.removeFilter(quiet)


def user_cause(err: BaseException) -> UserError | None:
    """The ``UserError`` (a bad row, a bad shard) behind Ray's task-error wrappers, if any
    (Ray's wrappers keep it as their ``cause``)."""
    seen: set[int] = set()
    stack: list[BaseException | None] = [err]
    while stack:
        current = stack.pop()
        if current is None or id(current) in seen:
            continue
        seen.add(id(current))
        # the package's own error, not Ray's copy of it (a class of Ray's deriving from it,
        # its message Ray's whole task report)
        if isinstance(current, UserError) and type(current).__module__.startswith("lttw."):
            # Ray adds lines (its retry advice) to the error's message: the package's own
            # messages are one line, its first
            first = (str(current).splitlines() or [""])[0]
            return current if str(current) == first else type(current)(first)
        stack += [current.__cause__, current.__context__, getattr(current, "cause", None)]
    return None
