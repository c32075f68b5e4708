"""The outermost safety net of the application: nothing escapes as a plain-text 500 or a
traceback."""

from __future__ import annotations

import asyncio
import logging

from lttw.errors import one_line
from lttw.serving.batch_jobs import ShuttingDown
from lttw.serving.security import send_json

log = logging.getLogger("lttw.serving")


class ErrorGuard:
    """Outermost ASGI middleware: whatever escapes the application is one log line and, where
    no response has started, a one-line JSON 500 (503 when uvicorn cancels the request at the
    end of its shutdown limit): never a plain-text 500 or a traceback in the log."""

    def __init__(self, app):
        self.app = app

    async def __call__(self, scope, receive, send):
        if scope["type"] != "http":
            return await self.app(scope, receive, send)
        started = False

        async def tracked(message):
            nonlocal started
            started = started or message["type"] == "http.response.start"
            await send(message)

        try:
            await self.app(scope, receive, tracked)
        except asyncio.CancelledError:
            if not started:
                await send_json(send, 503, str(ShuttingDown()))
            raise
        except Exception as err:
            log.error("%s %s failed: %s", scope.get("method"), scope.get("path"), one_line(err))
            if not started:
                await send_json(send, 500, f"internal error: {one_line(err)}")
