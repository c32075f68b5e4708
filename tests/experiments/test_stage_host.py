"""The direct runner's warm stages (``lttw.experiments.stage_host``): a stage of the package runs
in a child of a host that imported its module once, and writes what a process of its own
writes, byte for byte; its exit code and output are the stage's; any other command is a
process of its own."""

from __future__ import annotations

import hashlib
import os
import shutil
import signal
import sys
import time
from pathlib import Path

from lttw.experiments.stage_process import (
    Clock,
    StageHost,
    StageHosts,
    WarmStage,
    run_stage,
    stage_argv,
    stage_env,
    stage_module,
    stop_stage,
)

SUPPORT = Path(__file__).resolve().parents[1] / "support"

OUTPUTS = ("models/fold_0", "metrics/train/fold_0.json", "dvclive/train/fold_0")
#: what differs between two runs of the same training: the measured times
TIMED = ("metrics/train/fold_0.json", "dvclive/train/fold_0", "fold_0/meta.json")


class Seen(set):
    """A ``running`` set that remembers what was added to it."""

    def __init__(self):
        super().__init__()
        self.added: list = []

    def add(self, item) -> None:
        self.added.append(item)
        super().add(item)


def digests(project: Path) -> dict[str, str]:
    out = {}
    for name in OUTPUTS:
        root = project / name
        for path in [root] if root.is_file() else sorted(p for p in root.rglob("*") if p.is_file()):
            rel = str(path.relative_to(project))
            if not any(part in rel for part in TIMED):
                out[rel] = hashlib.sha256(path.read_bytes()).hexdigest()
    return out


def train(project: Path, hosts: StageHosts | None) -> tuple[int | None, list, str]:
    for name in OUTPUTS:
        path = project / name
        shutil.rmtree(path) if path.is_dir() else path.unlink(missing_ok=True)
    argv = stage_argv("python stages/train.py --fold 0", project / "params.yaml")
    seen = Seen()
    log = project / "log.txt"
    with open(log, "wb") as output:
        code = run_stage(argv, project, stage_env(project), Clock(None), output, seen, hosts)
    return code, seen.added, log.read_text()


def test_a_warm_stage_writes_what_a_process_of_its_own_writes(tiny_repro, tmp_path):
    """``train@0`` run warm from the start (no checkpoint) writes what the session's tiny run
    wrote, where ``dvc repro`` ran it as a process of its own."""
    fresh = digests(tiny_repro.root)
    assert any(name.endswith("model.safetensors") for name in fresh), fresh
    project = tiny_repro.copy(tmp_path / "p")
    shutil.rmtree(project / "data" / "checkpoints")  # trains from the start, as that run did
    hosts = StageHosts(stage_env(project), project)
    try:
        code, started, log = train(project, hosts)
        assert code == 0 and isinstance(started[0], WarmStage), log
        assert "fold 0 trained" in log and "resuming" not in log  # the stage's own log lines
        assert digests(project) == fresh
    finally:
        hosts.close()


def test_a_warm_stages_error_is_its_exit_code_and_its_output(tmp_path):
    hosts = StageHosts(stage_env(tmp_path), tmp_path)
    argv = [sys.executable, "-m", "lttw.stages.summary", "--params", "missing.yaml"]
    seen = Seen()
    try:
        with open(tmp_path / "log.txt", "wb") as output:
            code = run_stage(argv, tmp_path, os.environ.copy(), Clock(None), output, seen, hosts)
    finally:
        hosts.close()
    assert code == 2 and isinstance(seen.added[0], WarmStage)
    log = (tmp_path / "log.txt").read_text()
    assert "error: " in log and "missing.yaml" in log


def test_only_the_packages_stages_run_warm():
    python = sys.executable
    assert stage_module([python, "stages/train.py", "--fold", "1"]) == (
        "lttw.stages.train",
        ["--fold", "1"],
    )
    assert stage_module([python, "-m", "lttw.stages.nmf", "--fold", "0"]) == (
        "lttw.stages.nmf",
        ["--fold", "0"],
    )
    for argv in (
        ["torchrun", "--nproc-per-node", "2", "stages/train.py"],  # a launcher: its own
        [python, "scripts/mine.py"],
        [python, "-m", "mypackage.stages.train"],
        ["/other/python", "stages/train.py"],
        [python, "-c", "print(1)"],
    ):
        assert stage_module(argv) is None, argv


def test_another_command_with_hosts_is_a_process_of_its_own(tmp_path):
    hosts = StageHosts(os.environ.copy(), tmp_path)
    seen = Seen()
    argv = [sys.executable, "-c", "import os; print(os.getpid())"]
    try:
        with open(tmp_path / "log.txt", "wb") as output:
            code = run_stage(argv, tmp_path, os.environ.copy(), Clock(None), output, seen, hosts)
    finally:
        hosts.close()
    assert code == 0 and not isinstance(seen.added[0], WarmStage)
    assert (tmp_path / "log.txt").read_text().strip() == str(seen.added[0].pid)


def _sleeping(tmp_path: Path) -> tuple[StageHosts, StageHost, WarmStage]:
    """A host (``support`` on its path) running ``support.sleeping_stage``, once it runs."""
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(SUPPORT.parent), *sys.path])}
    hosts = StageHosts(env, tmp_path)
    host = hosts.acquire()
    stage = host.start("support.sleeping_stage", [], tmp_path, str(tmp_path / "log.txt"))
    assert stage is not None
    end = time.monotonic() + 30
    while not (tmp_path / "stage.pid").is_file():
        assert time.monotonic() < end, (tmp_path / "log.txt").read_text()
        time.sleep(0.05)
    assert int((tmp_path / "stage.pid").read_text()) == stage.pid
    return hosts, host, stage


def _gone(pid: int) -> bool:
    """No such process, or only its zombie (reaped by whoever adopted it)."""
    try:
        status = Path(f"/proc/{pid}/status").read_text()
    except FileNotFoundError:
        return True
    return "State:\tZ" in status


def test_a_warm_stage_stops_as_a_process_does(tmp_path):
    hosts, _, stage = _sleeping(tmp_path)
    try:
        stop_stage(stage)  # the runner's stop at the budget: SIGTERM to its process group
        assert stage.returncode == -signal.SIGTERM and _gone(stage.pid)
    finally:
        hosts.close()


def test_a_stage_of_a_host_that_died_is_stopped_and_failed(tmp_path):
    hosts, host, stage = _sleeping(tmp_path)
    try:
        os.kill(host.proc.pid, signal.SIGKILL)  # the host itself, as the OOM killer would
        assert stage.wait(timeout=30) == -signal.SIGKILL
        end = time.monotonic() + 10
        while not _gone(stage.pid):
            assert time.monotonic() < end, "the stage ran on without its host"
            time.sleep(0.05)
    finally:
        hosts.close()


def test_a_stopped_clock_stops_a_stage_that_starts_after_it(tmp_path):
    """Ctrl-C or SIGTERM stops the runner's clock: a stage whose host was still importing
    its module then runs for no time (``run_stage`` waits ``clock.left()``: 0)."""
    clock = Clock(None)
    assert not clock.up() and clock.left() is None
    clock.stop()
    assert clock.up() and clock.left() == 0.0
    argv = [sys.executable, "-c", "import time; time.sleep(60)"]
    start = time.monotonic()
    assert run_stage(argv, tmp_path, os.environ.copy(), clock) is None  # stopped
    assert time.monotonic() - start < 20


def test_closing_the_hosts_stops_a_stage_still_running(tmp_path):
    """A stage that started as the runner was interrupted (after its stages were stopped)
    does not outlive the runner: closing the hosts stops it."""
    hosts, _, stage = _sleeping(tmp_path)
    start = time.monotonic()
    hosts.close()
    assert stage.returncode == -signal.SIGTERM and _gone(stage.pid)
    assert time.monotonic() - start < 10
