"""One stage of ``dvc.yaml`` as a process, the way the direct runner starts it without dvc: its
command with this interpreter and a parameters file, the package of the checkout on
``PYTHONPATH``, within a time budget (the clock that says when it is up), stopped at the budget
(SIGTERM to its process group, SIGKILL after a grace period; a stopped training resumes from
its checkpoint). A command that runs one of the package's stages starts in a warm host's child
(``stage_host``: the stage's imports are paid once a runner, not once a stage); any other (a
``torchrun`` launcher, a script of one's own) as a process of its own."""

from __future__ import annotations

import contextlib
import json
import os
import queue
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

from lttw.project.files import STAGE_PACKAGE, STAGE_SCRIPT

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

    def stop(self) -> None:
        """The time is up now (Ctrl-C, SIGTERM): a stage that starts meanwhile (a warm host
        may still be importing its module) is stopped as soon as it runs."""
        self.deadline = time.monotonic()


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


def stop_stage(proc: subprocess.Popen | WarmStage) -> None:
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


def stage_module(argv: list[str]) -> tuple[str, list[str]] | None:
    """The package module and arguments of a command that runs one of lttw's stages with this
    interpreter: ``python stages/NAME.py`` (this repository's entry point, which only calls
    ``lttw.stages.NAME``) or ``python -m lttw.stages.NAME`` (a project's); else None."""
    if len(argv) < 2 or argv[0] != sys.executable:
        return None
    if match := STAGE_SCRIPT.fullmatch(argv[1]):  # the rule ``lttw init`` applies
        return f"{STAGE_PACKAGE}.{match[1]}", argv[2:]
    if argv[1] == "-m" and len(argv) > 2:
        package, _, name = argv[2].rpartition(".")
        if package == STAGE_PACKAGE and name.isidentifier():
            return argv[2], argv[3:]
    return None


class WarmStage:
    """A stage running in a host's child: what ``run_stage`` and ``stop_stage`` use of a
    ``Popen`` (its ``pid``, also its process group's; ``wait``)."""

    def __init__(self, pid: int):
        self.pid = pid
        self.returncode: int | None = None
        self._done = threading.Event()

    def finish(self, code: int) -> None:
        self.returncode = code
        self._done.set()

    def wait(self, timeout: float | None = None) -> int:
        if not self._done.wait(timeout):
            raise subprocess.TimeoutExpired(f"stage {self.pid}", timeout or 0)
        assert self.returncode is not None
        return self.returncode


class StageHost:
    """One ``stage_host`` process (started with ``env``), running one stage at a time."""

    def __init__(self, env: dict[str, str], cwd: Path):
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "lttw.experiments.stage_host"],
            cwd=cwd,
            env=env,
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            text=True,
            start_new_session=True,  # Ctrl-C reaches the runner, which stops the stages
        )
        self.alive = True
        self._started: queue.Queue[WarmStage | None] = queue.Queue()
        self._stage: WarmStage | None = None
        self._reader = threading.Thread(target=self._read, daemon=True)
        self._reader.start()

    def _read(self) -> None:
        assert self.proc.stdout is not None
        for line in self.proc.stdout:
            message = json.loads(line)
            if "exit" in message and self._stage is not None:
                self._stage.finish(message["exit"])
                self._stage = None
            elif "pid" in message:
                self._stage = None if message["pid"] is None else WarmStage(message["pid"])
                self._started.put(self._stage)
        self.alive = False  # the host ended: a stage it ran is stopped, and failed
        if self._stage is not None:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(self._stage.pid, signal.SIGKILL)  # nothing runs on unseen
            self._stage.finish(-signal.SIGKILL)
        self._started.put(None)

    def start(self, module: str, argv: list[str], cwd: Path, log: str) -> WarmStage | None:
        """The stage running in a child of the host; None where the host cannot run it."""
        request = {"module": module, "argv": argv, "cwd": str(cwd), "log": log}
        try:
            assert self.proc.stdin is not None
            self.proc.stdin.write(json.dumps(request) + "\n")
            self.proc.stdin.flush()
        except (BrokenPipeError, OSError):
            self.alive = False
            return None
        return self._started.get()

    def close(self) -> None:
        """End the host. A stage it still runs (one that started while the runner was being
        interrupted, the host still importing its module) is stopped first."""
        with contextlib.suppress(OSError):
            assert self.proc.stdin is not None
            self.proc.stdin.close()
        deadline = time.monotonic() + STOP_GRACE_S
        while self.proc.poll() is None and time.monotonic() < deadline:
            stage = self._stage
            if stage is not None and stage.returncode is None:
                stop_stage(stage)
            time.sleep(0.05)
        if self.proc.poll() is None:
            os.killpg(self.proc.pid, signal.SIGKILL)
            self.proc.wait()
        self._reader.join(STOP_GRACE_S)
        if not self._reader.is_alive():
            assert self.proc.stdout is not None
            self.proc.stdout.close()


class StageHosts:
    """The warm hosts of one runner, with its stages' environment: one for each stage
    running at once, started when first needed; ``close`` ends them."""

    def __init__(self, env: dict[str, str], cwd: Path):
        self.env, self.cwd = env, cwd
        self._idle: list[StageHost] = []
        self._all: list[StageHost] = []
        self._lock = threading.Lock()

    def acquire(self) -> StageHost:
        with self._lock:
            while self._idle:
                host = self._idle.pop()
                if host.alive:
                    return host
            host = StageHost(self.env, self.cwd)
            self._all.append(host)
            return host

    def release(self, host: StageHost) -> None:
        with self._lock:
            self._idle.append(host)

    def close(self) -> None:
        with self._lock:
            hosts, self._all, self._idle = self._all, [], []
        for host in hosts:
            host.close()


def run_stage(
    argv: list[str],
    cwd: Path,
    env: dict[str, str],
    clock: Clock,
    output: IO[bytes] | None = None,
    running: set[subprocess.Popen | WarmStage] | None = None,
    hosts: StageHosts | None = None,
) -> int | None:
    """Run one stage's ``argv`` in ``cwd`` in a process group of its own, its output to
    ``output`` (None: this process's); its exit code, or None where ``clock`` ran out first
    (the stage is then stopped). ``running`` holds the process while it runs, so that a
    caller interrupted meanwhile can stop it. With ``hosts`` (whose environment is then
    ``env``) and an ``output`` file, one of the package's stages runs in a warm host's child."""
    clock.starting()
    warm = stage_module(argv) if hosts is not None and output is not None else None
    host = hosts.acquire() if hosts is not None and warm is not None else None
    proc: subprocess.Popen | WarmStage | None = None
    try:
        if host is not None and warm is not None and output is not None:
            output.flush()
            proc = host.start(*warm, cwd, os.path.abspath(output.name))
        if proc is None:
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
        if running is not None and proc is not None:
            running.discard(proc)
        if host is not None and hosts is not None:
            hosts.release(host)
