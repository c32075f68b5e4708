"""A warm process for the direct runner's stages: ``python -m lttw.experiments.stage_host``.

A stage that ``python`` starts afresh spends most of its time on imports (pandas, scikit-learn,
transformers, torch: seconds a stage on a CPU, ``python bench/startup.py stage``; more than a
small fold's work). The host
imports a stage's module once (``lttw.stages.NAME``) and runs each stage in a child forked from
itself, as PyTorch's DataLoader forks its workers: the child starts with the modules loaded, in
a session of its own (so that the runner stops it, and what it starts, as it stops a process),
in the stage's folder, its output appended to the stage's log, and exits with the stage's exit
code. The host never runs a stage itself nor touches a GPU, so each child starts as clean as a
fresh process.

Protocol, one JSON object a line: on stdin ``{"module", "argv", "cwd", "log"}`` per stage; on
stdout ``{"pid": N}`` once the child runs (``{"pid": null, "error": ...}`` where the module
cannot be imported here: the runner then starts the stage as a process of its own), then
``{"exit": CODE}`` (a negative CODE: killed by that signal, as ``subprocess`` reports it). The
host ends at the end of its stdin.
"""

from __future__ import annotations

import importlib
import json
import os
import sys
import traceback
import warnings
from typing import NoReturn

#: what a stage's module leaves to its first use and the host imports beside it: torch's
#: optimizers import ``torch._dynamo`` on their first step (about 2 s on a CPU)
ALSO_IMPORT = {"lttw.stages.train": ("torch._dynamo",), "lttw.stages.final": ("torch._dynamo",)}


def _reply(message: dict) -> None:
    sys.stdout.write(json.dumps(message) + "\n")
    sys.stdout.flush()


def _child(run, path: str, request: dict) -> NoReturn:
    """Run the stage in this forked child, then exit with its code (no interpreter shutdown:
    the host's exit handlers are not the stage's)."""
    code = 1
    try:
        os.setsid()
        os.chdir(request["cwd"])
        log = os.open(request["log"], os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
        null = os.open(os.devnull, os.O_RDONLY)
        os.dup2(null, 0)  # not the host's protocol
        os.dup2(log, 1)
        os.dup2(log, 2)
        os.close(log)
        os.close(null)
        sys.argv = [path, *request["argv"]]
        run(request["argv"])
        code = 0
    except SystemExit as done:
        if isinstance(done.code, int):
            code = done.code
        elif done.code is None:
            code = 0
        else:
            print(done.code, file=sys.stderr)
    except BaseException:  # noqa: BLE001 - a fresh process prints the traceback too
        traceback.print_exc()
    finally:
        for stream in (sys.stdout, sys.stderr):
            try:
                stream.flush()
            except Exception:  # noqa: BLE001, S110 - a closed stream: nothing more to say
                pass
        os._exit(code)


def _load(name: str):
    """The stage module's ``run`` and file, importing what it leaves to its first use."""
    module = importlib.import_module(name)
    for extra in ALSO_IMPORT.get(name, ()):
        importlib.import_module(extra)
    torch = sys.modules.get("torch")
    if torch is not None and torch.cuda.is_initialized():  # a child could not use the GPU
        raise RuntimeError(f"importing {name} started CUDA; its stages start afresh")
    return module.run, module.__file__ or name


def serve() -> None:
    for line in sys.stdin:
        request = json.loads(line)
        try:
            run, path = _load(request["module"])
        except Exception:  # noqa: BLE001 - the runner starts it afresh, which reports it
            _reply({"pid": None, "error": traceback.format_exc(limit=3)})
            continue
        sys.stdout.flush()
        sys.stderr.flush()
        with warnings.catch_warnings():
            # Python 3.12 warns of a fork with other threads: the host's are OpenBLAS's and
            # jemalloc's idle pools, which handle a fork themselves (their atfork handlers)
            warnings.simplefilter("ignore", DeprecationWarning)
            pid = os.fork()
        if pid == 0:
            _child(run, path, request)
        _reply({"pid": pid})
        _, status = os.waitpid(pid, 0)
        _reply({"exit": os.waitstatus_to_exitcode(status)})


if __name__ == "__main__":
    serve()
