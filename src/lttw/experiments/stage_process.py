"""One stage of the direct runner as a process within a time budget: the clock that says
when the budget is up, and stopping a running stage at the budget (SIGTERM to its process
group, SIGKILL after a grace period; a stopped training resumes from its checkpoint)."""

from __future__ import annotations

import os
import signal
import subprocess
import time
from dataclasses import dataclass

STOP_GRACE_S = 20


@dataclass
class Clock:
    """The budget's deadline (None: no budget)."""

    deadline: float | None

    def left(self) -> float | None:
        return None if self.deadline is None else max(0.0, self.deadline - time.monotonic())

    def up(self) -> bool:
        return self.deadline is not None and time.monotonic() >= self.deadline

    def starting(self) -> None:
        """A stage is about to start (a test's clock counts them)."""


def stop_stage(proc: subprocess.Popen) -> None:
    """SIGTERM to the stage's process group, SIGKILL after a grace period."""
    try:
        os.killpg(proc.pid, signal.SIGTERM)
        proc.wait(timeout=STOP_GRACE_S)
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, signal.SIGKILL)
        proc.wait()
    except ProcessLookupError:
        pass
