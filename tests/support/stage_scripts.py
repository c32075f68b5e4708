"""A pipeline stage run in the test's process, as ``python stages/<name>.py ARGS`` (or
``python -m lttw.stages.<name> ARGS``) would run it: ``lttw.stages.<name>.run(ARGS)``. The tests that check what a stage does with its inputs (its outputs, its one
``error:`` line and exit code 2 on a bad input, what it logs) call it here, without an
interpreter and torch start-up (2 to 4 CPU-s) per run. How a stage is started by DVC is
tested by the real ``dvc repro`` runs of tests/e2e/; ``stage_cases.PLAIN_DATA_CASES`` holds
the in-process runs to plain subprocess runs of the same stage."""

from __future__ import annotations

import contextlib
import importlib
import io
import logging
import sys
import traceback
from dataclasses import dataclass
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
#: the stages' log format (``lttw.stages.run_stage``'s ``logging.basicConfig``)
LOG_FORMAT = "%(asctime)s %(name)s: %(message)s"


@dataclass
class Ran:
    """What a run of a stage left: its exit code, stdout and stderr, and its folder."""

    returncode: int
    stdout: str
    stderr: str
    cwd: Path


def run_stage_script(stage: str, cwd: Path, *args: str) -> Ran:
    """``python -m lttw.stages.STAGE ARGS`` in ``cwd``, in this process: the module's ``run``
    with ``sys.argv`` = ``[its file, ARGS...]``, as ``python -m`` sets it; its stdout and
    stderr are captured, and so are the ``lttw`` loggers' records, written to its stderr in the stage's own format (at INFO,
    as ``run_stage`` logs); the exit code is that of its ``SystemExit`` (0 without one, 1 and
    the traceback on stderr for an uncaught exception, as the interpreter does). The process's
    folder, argv and logging set-up are put back afterwards."""
    module = importlib.import_module(f"lttw.stages.{stage}")
    out, err = io.StringIO(), io.StringIO()
    handler = logging.StreamHandler(err)
    handler.setFormatter(logging.Formatter(LOG_FORMAT, datefmt="%H:%M:%S"))
    logger, root = logging.getLogger("lttw"), logging.getLogger()
    saved = (sys.argv, logger.level, logger.handlers[:], root.level, root.handlers[:])
    logger.addHandler(handler)
    logger.setLevel(logging.INFO)
    code = 0
    try:
        sys.argv = [str(module.__file__), *args]
        with (
            contextlib.chdir(cwd),
            contextlib.redirect_stdout(out),
            contextlib.redirect_stderr(err),
        ):
            try:
                module.run(list(args))
            except SystemExit as exit_:
                if isinstance(exit_.code, int) or exit_.code is None:
                    code = exit_.code or 0
                else:  # sys.exit("message"): printed, exit code 1
                    print(exit_.code, file=sys.stderr)
                    code = 1
            except Exception:  # noqa: BLE001  (what the interpreter does with one)
                traceback.print_exc()
                code = 1
    finally:
        sys.argv, level, handlers, root_level, root_handlers = saved
        logger.setLevel(level)
        logger.handlers[:] = handlers
        root.setLevel(root_level)
        root.handlers[:] = root_handlers  # logging.basicConfig's handler, where it added one
    return Ran(code, out.getvalue(), err.getvalue(), cwd)


def run_script(script: Path | str, cwd: Path, *args: str) -> Ran:
    """``python stages/NAME.py ARGS`` in ``cwd``: that script runs ``lttw.stages.NAME``
    (``run_stage_script``)."""
    assert Path(script).parent.name == "stages", f"{script}: not a stage script"
    return run_stage_script(Path(script).stem, cwd, *args)
