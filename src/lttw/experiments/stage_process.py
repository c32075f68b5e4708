"""One stage of ``dvc.yaml`` as a process, the way the direct runner starts it without dvc: its command with this interpreter and a parameters file,
the package of the checkout on ``PYTHONPATH``, within a time budget (the clock that says when
it is up), stopped at the budget (SIGTERM to its process group, SIGKILL after a grace period;
a stopped training resumes from its checkpoint)."""

from __future__ import annotations

import contextlib
import os
import shlex
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import IO

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


@contextlib.contextmanager
def sigterm_stops() -> Iterator[None]:
    """SIGTERM (a batch system stopping the job: Slurm's cancel or time limit, Kubernetes'
    pod deletion) handled as Ctrl-C meanwhile: the running stages are stopped, not left
    behind in their own process groups. Only in the main thread (signals go there)."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return

    def interrupt(signum, frame):
        raise KeyboardInterrupt(f"signal {signum}")

    previous = signal.signal(signal.SIGTERM, interrupt)
    try:
        yield
    finally:
        signal.signal(signal.SIGTERM, previous)


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


def stage_argv(cmd: str, params_file: Path) -> list[str]:
    """A stage's ``cmd`` as run here: ``python`` is this interpreter, and the stage reads
    ``params_file`` instead of ``params.yaml``."""
    argv = shlex.split(cmd)
    if argv[0] in ("python", "python3"):
        argv[0] = sys.executable
    return [*argv, "--params", str(params_file)]


def stage_env(repo: Path, jobs: int = 1) -> dict[str, str]:
    """The environment of a stage of checkout ``repo``: its ``src/`` first on ``PYTHONPATH``
    (the package of the checkout when it is not installed) and, unless set, the CPU's threads
    shared by ``jobs`` stages at a time."""
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(repo / "src"), env.get("PYTHONPATH")]))
    threads = str(max(1, (os.cpu_count() or 1) // max(1, jobs)))
    for var in ("OMP_NUM_THREADS", "MKL_NUM_THREADS"):
        env.setdefault(var, threads)
    return env


def run_stage(
    argv: list[str],
    cwd: Path,
    env: dict[str, str],
    clock: Clock,
    output: IO[bytes] | None = None,
    running: set[subprocess.Popen] | None = None,
) -> int | None:
    """Run one stage's ``argv`` in ``cwd`` in a process group of its own, its output to
    ``output`` (None: this process's); its exit code, or None where ``clock`` ran out first
    (the stage is then stopped). ``running`` holds the process while it runs, so that a
    caller interrupted meanwhile can stop it."""
    clock.starting()
    proc = subprocess.Popen(
        argv,
        cwd=cwd,
        env=env,
        stdout=output,
        stderr=subprocess.STDOUT if output is not None else None,
        start_new_session=True,
    )
    if running is not None:
        running.add(proc)
    try:
        return proc.wait(timeout=clock.left())
    except subprocess.TimeoutExpired:
        stop_stage(proc)
        return None
    except KeyboardInterrupt:
        stop_stage(proc)
        raise
    finally:
        if running is not None:
            running.discard(proc)
