"""`lttw serve`'s graceful shutdown: the drain before uvicorn closes its listener."""

from __future__ import annotations

import asyncio
import logging

from lttw.serving.limits import Limits

log = logging.getLogger("lttw.serving")


async def drain(server, limits: Limits) -> None:
    """Graceful shutdown's first part: the listener stays open and every answer closes its
    connection (``/ready`` 503, new work a JSON 503, an idle keep-alive connection's next
    request answered) for ``limits.drain_s`` seconds, and on while requests are in progress,
    at most ``limits.shutdown_timeout_s`` (then uvicorn closes the listener and idle
    connections and waits for the rest). A second Ctrl-C (``server.force_exit``) ends it."""
    loop = asyncio.get_running_loop()
    started = loop.time()
    log.info("draining: /ready answers 503, every answer closes its connection")
    while not server.force_exit and (
        loop.time() - started < limits.drain_s
        or (server.server_state.tasks and loop.time() - started < limits.shutdown_timeout_s + 1)
    ):
        await asyncio.sleep(0.05)
