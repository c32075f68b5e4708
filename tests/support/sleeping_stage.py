"""A stand-in stage module for ``stage_host``'s tests: ``run`` writes its pid to ``stage.pid``
in its folder (whole: renamed into place, so a reader that sees the file reads the pid), then
sleeps (until stopped)."""

import os
import time
from pathlib import Path


def run(argv: list[str] | None = None) -> None:
    Path("stage.pid.tmp").write_text(str(os.getpid()))
    Path("stage.pid.tmp").replace("stage.pid")
    time.sleep(120)
