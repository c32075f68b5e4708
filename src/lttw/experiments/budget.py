"""A direct grid window's budget and account (``direct_runner`` runs the cells): the clock that
says when the budget is up, what the window did, and stopping a running stage at the budget."""

from __future__ import annotations

import os
import signal
import subprocess
import time
from dataclasses import dataclass, field
from pathlib import Path

from lttw.io import write_json

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


@dataclass
class Outcome:
    """What a window did: cells written, skipped (written before), failed, left to do."""

    done: list[str] = field(default_factory=list)
    skipped: list[str] = field(default_factory=list)
    failed: list[str] = field(default_factory=list)
    left: list[str] = field(default_factory=list)


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


def write_window(path: Path, outcome: Outcome, seconds: float) -> None:
    """A window's account (JSON): what it wrote, skipped, failed and left."""
    write_json(path, {**outcome.__dict__, "wall_s": round(seconds, 1)})
