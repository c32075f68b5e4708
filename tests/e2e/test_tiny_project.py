"""The helpers the end-to-end tests run commands with (``tiny_project``): a stuck command is
stopped, with what it started, and reported, never waited on forever."""

import subprocess
import time

import pytest
from support.tiny_project import run


def test_a_command_past_its_timeout_is_stopped_with_its_children(tmp_path):
    marker = tmp_path / "child.pid"
    start = time.monotonic()
    with pytest.raises(subprocess.TimeoutExpired) as err:
        run(f"echo started; sleep 60 & echo $! > {marker}; wait", tmp_path, timeout=2)
    assert time.monotonic() - start < 30
    assert "started" in err.value.stdout  # the output so far
    child = int(marker.read_text())
    for _ in range(50):  # the killed group's child is gone (or a zombie being reaped)
        try:
            state = open(f"/proc/{child}/stat").read().split()[2]
        except FileNotFoundError:
            break
        if state == "Z":
            break
        time.sleep(0.1)
    else:
        pytest.fail(f"child {child} still runs")


def test_a_finished_command_returns_its_output(tmp_path):
    assert run(["echo", "done"], tmp_path, timeout=30) == "done\n"
