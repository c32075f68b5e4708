"""Run a ``dvc`` command inside the test's process, through ``dvc.cli.main`` (what the
installed ``dvc`` command calls): the same arguments and code, without an interpreter and
DVC's import start-up per call (about 2 CPU-s). Meant for commands that run no stage
(``status``, ``commit``, ``metrics``, ``plots``, ``exp show``, a ``repro`` that finds
everything up to date) and for a ``repro`` / ``exp run`` whose stages a test does not read
from its log (the stages are processes of DVC's anyway); a ``dvc repro`` / ``dvc exp run``
whose log tells which stages ran stays a process of its own (``tiny_project.run``)."""

from __future__ import annotations

import contextlib
import io
import os
import shlex
import sys
from pathlib import Path
from unittest import mock


def dvc(args: list[str], cwd: Path) -> str:
    """``dvc ARGS`` run from ``cwd``, in the environment ``tiny_project.run`` gives a command
    (no analytics report, this interpreter's folder first on PATH; ``DVC_TEST``: DVC's switch
    for running inside a test, which also keeps its JSON output on the redirected stdout);
    what it printed on stdout (its tables, its JSON), asserting it exited 0. Its log lines
    (``Running stage ...``, its errors) go where its loggers were set up when this process
    first imported ``dvc``, not here: which stages a command ran is read from a command of
    its own process (``tiny_project.run``)."""
    from dvc.cli import main
    from dvc.ui import ui

    path = os.pathsep.join([str(Path(sys.executable).parent), os.environ["PATH"]])
    out, err = io.StringIO(), io.StringIO()
    with (
        mock.patch.dict(os.environ, {"DVC_NO_ANALYTICS": "1", "DVC_TEST": "1", "PATH": path}),
        contextlib.chdir(cwd),
        contextlib.redirect_stdout(out),
        contextlib.redirect_stderr(err),
        mock.patch.object(ui, "_enabled", ui._enabled),  # main enables DVC's console for good
    ):
        code = main([str(arg) for arg in args])
    shown = (out.getvalue() + err.getvalue())[-4000:]
    assert code == 0, f"dvc {shlex.join(map(str, args))} exited {code}:\n{shown}"
    return out.getvalue()
