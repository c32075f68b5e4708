"""The tests' stage fork server (``support.stage_forks``): a ``stages/*.py`` command run
through the shim behaves as the same command in a fresh interpreter (argv, working folder,
environment, stdin/stdout/stderr, exit code, signals), only warm; anything else, or another
import-time environment, runs in a fresh interpreter."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from support import stage_forks

PROBE = """
import json, os, sys
print(json.dumps({
    "argv": sys.argv, "cwd": os.getcwd(), "name": __name__, "path0": sys.path[0],
    "x": os.environ.get("PROBE_X"), "stdin": sys.stdin.read(), "pid": os.getpid(),
    "warm": "torch" in sys.modules, "site": os.environ.get("PROBE_SITE"), "path": sys.path,
}))
print("to stderr", file=sys.stderr)
sys.exit(int(os.environ.get("PROBE_CODE", "0")))
"""
SLEEPER = """
import os, sys, time
open(sys.argv[1], "w").write(str(os.getpid()))
time.sleep(120)
"""


@pytest.fixture(scope="module")
def project(tmp_path_factory) -> Path:
    if stage_forks.start() is None:
        pytest.skip("the stage fork server is switched off (LTTW_TEST_FORKED_STAGES=0)")
    root = tmp_path_factory.mktemp("forks")
    (root / "stages").mkdir()
    (root / "stages" / "probe.py").write_text(PROBE)
    (root / "stages" / "sleeper.py").write_text(SLEEPER)
    (root / "site").mkdir()
    (root / "site" / "sitecustomize.py").write_text("import os\nos.environ['PROBE_SITE'] = 'ran'\n")
    assert stage_forks.wait_ready(120), "the fork server did not start"
    return root


def shell(command: str, cwd: Path, stdin: str = "", **extra: str):
    env = {**os.environ, "PATH": stage_forks.path_prefix(), **extra}
    return subprocess.run(
        command, shell=True, cwd=cwd, env=env, input=stdin, capture_output=True, text=True
    )


def test_a_stage_script_runs_warm_as_a_fresh_one_would(project):
    done = shell("python stages/probe.py --fold 2", project, "some input", PROBE_X="1")
    assert done.returncode == 0, done.stderr
    seen = json.loads(done.stdout)
    assert seen["warm"]  # forked from the server: torch already imported
    assert seen["argv"] == ["stages/probe.py", "--fold", "2"]
    assert seen["cwd"] == str(project) and seen["name"] == "__main__"
    assert seen["path0"] == str(project / "stages")
    assert seen["x"] == "1" and seen["stdin"] == "some input"
    assert done.stderr == "to stderr\n"
    assert stage_forks.log().splitlines()[-1] == "fork stages/probe.py --fold 2"
    assert shell("python stages/probe.py", project, PROBE_CODE="3").returncode == 3


def test_dvc_runs_warm_and_says_what_the_real_one_does(project):
    forked = shell("dvc --version", project)
    assert stage_forks.log().splitlines()[-1] == "fork -m dvc --version"
    real = shell("dvc --version", project, PATH=stage_forks.path_prefix(forked=False))
    assert (forked.returncode, forked.stdout) == (real.returncode, real.stdout) == (0, real.stdout)
    assert real.stdout.strip()


def test_other_commands_and_import_time_settings_run_a_fresh_interpreter(project):
    done = shell("python -c 'import sys; print(\"torch\" in sys.modules)'", project)
    assert done.stdout == "False\n"
    fresh = shell("python stages/probe.py", project, OMP_NUM_THREADS="3")
    assert not json.loads(fresh.stdout)["warm"]  # a thread count is read at import
    assert stage_forks.log().splitlines()[-1] == "exec (OMP_NUM_THREADS) stages/probe.py"
    seed = shell("python stages/probe.py", project, PYTHONHASHSEED="7")
    assert not json.loads(seed.stdout)["warm"]  # read at start-up


def test_folders_put_before_pythonpath_run_their_sitecustomize(project):
    """Folders before the server's PYTHONPATH (``param_trace``) go after the script's on
    ``sys.path``, as in a fresh interpreter, and a ``sitecustomize`` there runs."""
    site = str(project / "site")
    path = os.pathsep.join(filter(None, [site, os.environ.get("PYTHONPATH")]))
    seen = json.loads(shell("python stages/probe.py", project, PYTHONPATH=path).stdout)
    assert seen["warm"] and seen["site"] == "ran"
    assert seen["path"][:2] == [str(project / "stages"), site]
    if os.environ.get("PYTHONPATH"):  # one that does not end with the server's: fresh
        odd = os.pathsep.join([os.environ["PYTHONPATH"], site])
        assert not json.loads(shell("python stages/probe.py", project, PYTHONPATH=odd).stdout)[
            "warm"
        ]


def _pid_from(path: Path) -> int:
    deadline = time.monotonic() + 60
    while not (path.is_file() and path.read_text()):
        assert time.monotonic() < deadline, "the stage did not start"
        time.sleep(0.05)
    return int(path.read_text())


def _gone(pid: int, timeout: float = 10) -> bool:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        try:
            os.kill(pid, 0)
        except ProcessLookupError:
            return True
        time.sleep(0.05)
    return False


@pytest.mark.parametrize("sig", [signal.SIGTERM, signal.SIGKILL])
def test_a_signal_to_the_command_ends_its_stage(project, tmp_path, sig):
    """SIGTERM reaches the forked stage, whose end the shim repeats; SIGKILL of the shim
    (``kill -9``, which it cannot pass on) takes the stage with it."""
    pid_file = tmp_path / "pid"
    env = {**os.environ, "PATH": stage_forks.path_prefix()}
    proc = subprocess.Popen(["python", "stages/sleeper.py", str(pid_file)], cwd=project, env=env)
    stage = _pid_from(pid_file)
    assert stage != proc.pid  # a fork of the server, not the shim
    proc.send_signal(sig)
    assert proc.wait(30) == -sig
    assert _gone(stage), f"stage {stage} outlived its command"


def test_without_the_shim_python_is_this_interpreter(project):
    path = stage_forks.path_prefix(forked=False)
    assert path.split(os.pathsep)[0] == str(Path(sys.executable).parent)
    done = shell("python stages/probe.py", project, PATH=path)
    assert not json.loads(done.stdout)["warm"]
