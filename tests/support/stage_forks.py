"""Stage scripts and ``dvc`` forked from a warm interpreter, for the tests that run DVC.

Every ``dvc repro`` in the suite runs each stage as ``python stages/<name>.py``: a fresh
interpreter that spends 1 to 3 CPU-s importing torch, transformers, pandas and lttw before
its first line of work, and ``dvc`` itself spends about 1 CPU-s importing its modules; on
2 cores, stage scripts and dvc took over half the suite's CPU. ``start`` launches, per interpreter, one fork
server (``stage_fork_server.py``) that has imported them, and writes ``python`` and ``dvc``
shims into a folder that ``path_prefix`` puts first on PATH (``tiny_project.env`` calls it:
the server starts with a worker's first test that runs DVC).

For ``python <dir>/stages/<name>.py ...``, ``python -m lttw.pipeline_stage <name>`` (a
project of ``lttw init``) and ``dvc ...``, the shim hands its stdin/stdout/stderr, argv,
working directory and environment to the server, whose forked child runs the script or
module as ``__main__``; signals sent to the shim reach the child, a killed shim takes the
child's process group with it, and the shim exits as the child did. Any other command, one
whose environment differs in what is read at import time (thread counts, the hub's
switches; folders put before the server's ``PYTHONPATH``, such as ``param_trace``'s, go on
``sys.path`` and their ``sitecustomize`` runs), or one that comes before the server
listens, executes the real interpreter: same arguments, same environment.

What DVC runs and records is unchanged: the same commands, code, outputs and exit codes
(``tests/project/test_stage_forks.py`` holds the shim to the real interpreter).
``test_faults`` kills real stage processes (``env(forked_stages=False)``), and its forked,
uninterrupted reference must match them byte for byte. ``LTTW_TEST_FORKED_STAGES=0`` turns
the servers off for a whole run.
"""

from __future__ import annotations

import atexit
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

SERVER = Path(__file__).resolve().parent / "stage_fork_server.py"

SHIM = r'''#!{python} -IS
"""``python`` for the tests' DVC runs: ``stages/*.py`` through the fork server (see
tests/support/stage_forks.py), anything else by the real interpreter."""
import os, sys

PYTHON, SOCKET, PREFIX = {python!r}, {socket!r}, {prefix!r}  # PREFIX: ["-m", "dvc"] for dvc


def forked(args):
    import json, signal, socket

    try:
        conn = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        conn.connect(SOCKET)
    except OSError:
        return None
    job = json.dumps({{"argv": args, "cwd": os.getcwd(), "env": dict(os.environ)}}).encode()
    try:
        socket.send_fds(conn, [len(job).to_bytes(8, "big")], [0, 1, 2])
        conn.sendall(job)
    except OSError:  # the server is going: no job reached it
        return None

    def forward(sig, frame):
        try:
            conn.sendall(bytes([sig]))
        except OSError:  # the server is gone; the stage with it
            pass

    for sig in (signal.SIGINT, signal.SIGTERM, signal.SIGHUP, signal.SIGQUIT):
        signal.signal(sig, forward)
    code = b""
    while len(code) < 4:
        chunk = conn.recv(4 - len(code))
        if not chunk:
            print("error: the tests' stage fork server went away", file=sys.stderr)
            return 1
        code += chunk
    code = int.from_bytes(code, "big", signed=True)
    if code < 0:
        signal.signal(-code, signal.SIG_DFL)
        os.kill(os.getpid(), -code)
    return code


args = PREFIX + sys.argv[1:]
script = args[:1] != ["-m"] and args[:1] and args[0].endswith(".py")
if os.path.exists(SOCKET) and (
    args[:2] in (["-m", "dvc"], ["-m", "lttw.pipeline_stage"])  # lttw.pipeline_stage: `lttw init`
    or (script and os.path.basename(os.path.dirname(os.path.abspath(args[0]))) == "stages")
):
    code = forked(args)
    if code is not None:
        sys.exit(code)
os.execv(PYTHON, [PYTHON, *args])
'''

#: interpreter -> its fork server's folder (bin/python the shim, server.sock, server.log),
#: or None where the server is switched off
_SERVERS: dict[str, Path | None] = {}


def start(python: str = sys.executable, env: dict | None = None) -> Path | None:
    """The shim folder of ``python``'s fork server, started on first use with ``env`` (the
    environment its stages will run in; default this process's), or None where
    ``LTTW_TEST_FORKED_STAGES=0`` or the platform cannot fork. For this interpreter, puts
    the shim first on this process's PATH too, for the commands tests start with
    ``os.environ``."""
    if python in _SERVERS:
        folder = _SERVERS[python]
        return None if folder is None else folder / "bin"
    _SERVERS[python] = None
    if os.environ.get("LTTW_TEST_FORKED_STAGES", "1") == "0" or not hasattr(os, "fork"):
        return None
    folder = Path(tempfile.mkdtemp(prefix="lttw-stage-forks-"))  # short: a socket's path
    (folder / "bin").mkdir()
    for name, prefix in (("python", []), ("dvc", ["-m", "dvc"])):
        shim = folder / "bin" / name
        shim.write_text(
            SHIM.format(python=python, socket=str(folder / "server.sock"), prefix=prefix)
        )
        shim.chmod(0o755)
    with open(folder / "server.log", "wb") as log:  # what it ran, and how
        server = subprocess.Popen(
            [python, str(SERVER), str(folder / "server.sock"), python],
            stdin=subprocess.PIPE,
            stdout=subprocess.DEVNULL,
            stderr=log,
            env=os.environ if env is None else env,
        )
    atexit.register(_stop, server, folder)
    _SERVERS[python] = folder
    if python == sys.executable:
        os.environ["PATH"] = path_prefix()
    return folder / "bin"


def wait_ready(timeout: float, python: str = sys.executable) -> bool:
    """Whether ``python``'s server listens (it does once it has imported its libraries),
    waiting up to ``timeout`` seconds; until then the shim runs a fresh interpreter."""
    folder = _SERVERS.get(python)
    deadline = time.monotonic() + timeout
    while folder is not None and not (folder / "server.sock").exists():
        if time.monotonic() > deadline:
            return False
        time.sleep(0.1)
    return folder is not None


def log(python: str = sys.executable) -> str:
    """What ``python``'s server ran so far, a line each: ``fork ARGV`` or ``exec (the
    variables that differ) ARGV``."""
    folder = _SERVERS.get(python)
    return "" if folder is None else (folder / "server.log").read_text()


def _stop(server: subprocess.Popen, folder: Path) -> None:
    if server.stdin is not None:
        server.stdin.close()  # the server's signal to end
    try:
        server.wait(10)
    except subprocess.TimeoutExpired:
        server.kill()
    shutil.rmtree(folder, ignore_errors=True)


def path_prefix(forked: bool = True, python: str = sys.executable, env: dict | None = None) -> str:
    """PATH for commands whose ``python`` is ``python``: its fork server's shim folder first
    (``forked``; the server starts here on first use, with ``env``), then ``python``'s own
    folder (dvc, lttw, and ``python`` itself without the shim), then this process's PATH
    without any shim folder."""
    shim = start(python, env) if forked else None
    shims = {str(folder / "bin") for folder in _SERVERS.values() if folder is not None}
    rest = [p for p in os.environ["PATH"].split(os.pathsep) if p not in shims]
    first = [str(shim)] if shim is not None else []
    return os.pathsep.join([*first, str(Path(python).parent), *rest])
