"""A grid cell's submitit job held at one of its stages (``HeldCellJob``), for a test that
kills a job mid-cell: the real ``CellJob`` (the direct runner and its stage processes),
except that once the held stage's process has started the job writes a mark, and after that
stage its runner goes no further until the job is killed. Killed on the mark, the job dies
with the held stage running or just ended and the cell unfinished, whatever the machine's
load: no later stage can start before the kill.

The job runs in a process of its own: ``support`` must be importable there (``PYTHONPATH``
holds ``TESTS`` when the job is submitted)."""

from __future__ import annotations

import time
from dataclasses import dataclass
from pathlib import Path

from lttw.experiments.stage_process import Clock
from lttw.experiments.submit import CellJob

TESTS = Path(__file__).resolve().parents[1]
#: longest a held job waits to be killed; then its held stage counts as failed, so that a
#: test that never kills it fails rather than waits
HOLD_S = 600


class _MarkWhenStarted(Clock):
    """``clock``, marking ``mark`` when the stage's process is asked how long it may run:
    ``stage_process.run_stage`` asks once the process has started and is registered to be
    stopped with the runner's stages."""

    def __init__(self, clock: Clock, mark: Path):
        super().__init__(clock.deadline)
        self.clock, self.mark = clock, mark

    def up(self) -> bool:
        return self.clock.up()

    def left(self) -> float | None:
        self.mark.touch()
        return self.clock.left()


@dataclass(frozen=True)
class HeldCellJob(CellJob):
    """``CellJob`` held at its stage ``hold`` (a stage's name in ``dvc.yaml``), marking
    ``mark`` once that stage's process runs."""

    hold: str = "final"
    mark: str = ""

    def __call__(self) -> dict:
        from lttw.experiments import direct_runner

        run_stage = direct_runner.run_stage

        def held(argv, cwd, env, clock, output=None, running=None, hosts=None):
            if not any(
                arg.endswith((f"stages/{self.hold}.py", f"stages.{self.hold}")) for arg in argv
            ):
                return run_stage(argv, cwd, env, clock, output, running, hosts)
            clock = _MarkWhenStarted(clock, Path(self.mark))
            run_stage(argv, cwd, env, clock, output, running, hosts)
            time.sleep(HOLD_S)  # killed here
            return 1

        direct_runner.run_stage = held
        return super().__call__()
