"""The fork server behind ``stage_forks``: one interpreter that has imported the stage scripts'
libraries (torch, transformers, pandas, scikit-learn, lttw) serves ``python stages/<x>.py``
commands, each in a forked child, so that a stage that DVC runs in a test skips the 1 to 3
CPU-s of interpreter and import start-up. Stdlib only apart from the imports it warms.

    python stage_fork_server.py SOCKET PYTHON

A client (the ``python`` shim that ``stage_forks`` writes) connects to the Unix socket
SOCKET, sends its stdin, stdout and stderr (SCM_RIGHTS) and a JSON job {"argv", "cwd",
"env"}; it may then send signal numbers (one byte each) to forward to the child, and it
reads back the child's exit code (4 bytes, signed: minus the signal that ended it). The
child runs the script as ``__main__`` with the job's argv, working directory and environment,
as a fresh ``PYTHON`` would; where the environment differs from the server's in a variable
read at import time (``PYTHON*``, ``LTTW_*``, thread counts, the hub's switches) it executes
``PYTHON`` itself instead. The server exits when its stdin closes (its test worker ended).
"""

from __future__ import annotations

import atexit
import contextlib
import importlib
import json
import os
import runpy
import selectors
import signal
import socket
import sys
import traceback

#: environment variables that a library reads when it is imported, or Python at start-up: a
#: job whose values differ from the server's runs in a fresh interpreter instead
IMPORT_TIME = ("PYTHON", "OMP_", "MKL_", "HF_", "TRANSFORMERS_", "TOKENIZERS_", "TORCH_")

#: what the stage scripts import (their own imports pull in the rest of lttw)
WARM = (
    "torch",
    "torch.optim",
    "transformers",
    "pandas",
    "pyarrow.parquet",
    "scipy.sparse",
    "sklearn.decomposition",
    "sklearn.model_selection",
    "safetensors.torch",
    "yaml",
    "pydantic",
    "lttw.stage",
    "lttw.pipeline_stage",
    "lttw.settings",
    "lttw.data.datasets",
    "lttw.data.sampling",
    "lttw.data.folds",
    "lttw.data.fold_inputs",
    "lttw.factors.counts",
    "lttw.factors.nmf",
    "lttw.encoder.pretrained",
    "lttw.encoder.tokenizer",
    "lttw.encoder.tokens",
    "lttw.text.encoder_vocab",
    "lttw.training.fold",
    "lttw.evaluation.metrics",
    # dvc's commands (the `dvc` shim): what `dvc repro`, `dvc status` and `dvc exp run`
    # import on their way (from `python -X importtime -m dvc ...`), over half their CPU
    "dvc.cli",
    "dvc.cli.parser",
    "dvc.repo",
    "dvc.repo.index",
    "dvc.repo.reproduce",
    "dvc.repo.status",
    "dvc.repo.plots",
    "dvc.repo.datasets",
    "dvc.repo.experiments.run",
    "dvc.repo.experiments.show",
    "dvc.repo.experiments.queue.celery",
    "dvc.repo.experiments.queue.tempdir",
    "dvc.repo.experiments.queue.workspace",
    "dvc.repo.experiments.executor.base",
    "dvc.stage.cache",
    "dvc.lock",
    "dvc.scm",
    "dvc.utils.hydra",
    "dvc.utils.studio",
    "dvc_data.index",
    "scmrepo.git",
    "scmrepo.git.backend.dulwich",
    "scmrepo.git.backend.pygit2",
    "hydra.core.override_parser.overrides_parser",
    "networkx",
    "ruamel.yaml",
    "pyparsing",
)


def import_time_env(env: dict) -> dict:
    return {k: v for k, v in env.items() if k.startswith(IMPORT_TIME) and k != "PYTHONPATH"}


def extra_path(env: dict, base: dict) -> list[str] | None:
    """The folders the job's PYTHONPATH puts before the server's (None: not such a prefix)."""
    own = [p for p in base.get("PYTHONPATH", "").split(os.pathsep) if p]
    job = [p for p in env.get("PYTHONPATH", "").split(os.pathsep) if p]
    if job[len(job) - len(own) :] != own:
        return None
    return job[: len(job) - len(own)]


def recv_exact(conn: socket.socket, n: int) -> bytes:
    data = b""
    while len(data) < n:
        chunk = conn.recv(n - len(data))
        if not chunk:
            raise ConnectionError("client went away")
        data += chunk
    return data


def run_child(job: dict, fds: list[int], python: str, extra: list[str] | None) -> None:
    """In the forked child: become the stage process; never returns."""
    os.setpgid(0, 0)  # its own group: a killed client takes it and its children along
    for fd, target in zip(fds, (0, 1, 2), strict=True):
        os.dup2(fd, target)
        os.close(fd)
    os.chdir(job["cwd"])
    argv = job["argv"]
    if extra is None:
        os.execve(python, [python, *argv], job["env"])
    os.environ.clear()
    os.environ.update(job["env"])
    module = argv[1] if argv[0] == "-m" else None  # python -m lttw.pipeline_stage NAME
    sys.argv = argv[1:] if module else list(argv)  # run_module puts the module's file first
    # first on sys.path, as a fresh interpreter puts it (the server took its own folder off)
    sys.path.insert(0, os.getcwd() if module else os.path.dirname(os.path.abspath(argv[0])))
    if extra:  # PYTHONPATH's folders go after the script's; a sitecustomize there runs first
        sys.path[1:1] = [os.path.abspath(p) for p in extra]
        if any(os.path.isfile(os.path.join(p, "sitecustomize.py")) for p in extra):
            sys.modules.pop("sitecustomize", None)
            importlib.import_module("sitecustomize")
    code = 0
    try:
        if module:
            runpy.run_module(module, run_name="__main__", alter_sys=True)
        else:
            runpy.run_path(argv[0], run_name="__main__")
    except SystemExit as exc:
        if exc.code is None or isinstance(exc.code, int):
            code = exc.code or 0
        else:
            print(exc.code, file=sys.stderr)
            code = 1
    except KeyboardInterrupt:
        traceback.print_exc()
        code = -signal.SIGINT
    except BaseException:
        traceback.print_exc()
        code = 1
    with contextlib.suppress(BaseException):
        atexit._run_exitfuncs()
    for stream in (sys.stdout, sys.stderr):
        with contextlib.suppress(BaseException):
            stream.flush()
    if code < 0:  # ended by a signal, as Python does on an uncaught KeyboardInterrupt
        signal.signal(-code, signal.SIG_DFL)
        os.kill(os.getpid(), -code)
    os._exit(code & 0xFF)


def serve(path: str, python: str) -> None:
    base = dict(os.environ)  # before the imports, which may set variables of their own
    for name in WARM:
        with contextlib.suppress(ImportError):  # a stage that needs it fails on its own
            importlib.import_module(name)
    base_env = import_time_env(base)
    wake_r, wake_w = os.pipe()
    os.set_blocking(wake_r, False)
    os.set_blocking(wake_w, False)
    signal.set_wakeup_fd(wake_w)
    signal.signal(signal.SIGCHLD, lambda *_: None)
    listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    listener.bind(path)
    listener.listen(64)
    selector = selectors.DefaultSelector()
    selector.register(listener, selectors.EVENT_READ, "accept")
    selector.register(wake_r, selectors.EVENT_READ, "child")
    selector.register(0, selectors.EVENT_READ, "stdin")
    children: dict[int, socket.socket] = {}  # pid -> its client's connection
    pids: dict[socket.socket, int] = {}
    while True:
        for key, _ in selector.select():
            if key.data == "stdin":
                if not os.read(0, 4096):  # the test worker is gone
                    for pid in children:
                        with contextlib.suppress(OSError):
                            os.killpg(pid, signal.SIGKILL)
                    os.unlink(path)
                    return
            elif key.data == "accept":
                conn, _ = listener.accept()
                try:
                    head, fds, _, _ = socket.recv_fds(conn, 8, 3)
                    job = json.loads(recv_exact(conn, int.from_bytes(head, "big")))
                except (OSError, ValueError):
                    conn.close()
                    continue
                env = import_time_env(job["env"])
                differ = sorted(
                    k for k in env.keys() | base_env.keys() if env.get(k) != base_env.get(k)
                )
                extra = None if differ else extra_path(job["env"], base)
                how = "fork" if extra is not None else f"exec ({' '.join(differ) or 'PYTHONPATH'})"
                print(how, *job["argv"], file=sys.stderr, flush=True)  # server.log
                pid = os.fork()
                if pid == 0:
                    signal.set_wakeup_fd(-1)
                    signal.signal(signal.SIGCHLD, signal.SIG_DFL)
                    selector.close()
                    listener.close()
                    for other in (conn, *pids):  # the server's ends, this client's and others'
                        other.close()
                    os.close(wake_r)
                    os.close(wake_w)
                    run_child(job, fds, python, extra)
                with contextlib.suppress(OSError):
                    os.setpgid(pid, pid)  # as the child does: no kill lands before its group
                for fd in fds:
                    os.close(fd)
                children[pid], pids[conn] = conn, pid
                selector.register(conn, selectors.EVENT_READ, "client")
            elif key.data == "client":
                conn = key.fileobj
                pid = pids.get(conn)
                if pid is None:  # its child was reaped earlier in this round
                    continue
                try:
                    data = conn.recv(64)
                except OSError:
                    data = b""
                if not data:  # the client died (killed): so do its stage and what it started
                    selector.unregister(conn)
                    with contextlib.suppress(OSError):
                        os.killpg(pid, signal.SIGKILL)
                for sig in data:
                    with contextlib.suppress(OSError):
                        os.kill(pid, sig)
            else:  # SIGCHLD: reap, and tell each client how its stage ended
                with contextlib.suppress(BlockingIOError):
                    while os.read(wake_r, 4096):
                        pass
                while children:
                    pid, status = os.waitpid(-1, os.WNOHANG)
                    if pid == 0:
                        break
                    conn = children.pop(pid)
                    pids.pop(conn)
                    code = os.waitstatus_to_exitcode(status)
                    with contextlib.suppress(OSError):
                        conn.sendall(code.to_bytes(4, "big", signed=True))
                    with contextlib.suppress(KeyError, ValueError):
                        selector.unregister(conn)
                    conn.close()


if __name__ == "__main__":
    del sys.path[0]  # this folder (tests/support): nothing it holds is to shadow a library
    serve(sys.argv[1], sys.argv[2])
