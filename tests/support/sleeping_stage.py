"""A stand-in stage module for ``stage_host``'s tests: ``run`` writes its pid to ``stage.pid``
in its folder, then sleeps (until stopped)."""

import os
import time
from pathlib import Path


def run(argv: list[str] | None = None) -> None:
    Path("stage.pid").write_text(str(os.getpid()))
    time.sleep(120)
