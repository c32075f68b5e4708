"""``lttw exp run NAME --direct`` and ``bench/gpu.sh grid NAME``: a grid's cells in one time
window, without dvc (``experiments.direct_runner``). Runs with neither typer nor dvc installed:

    python -m lttw.experiments.window paper --jobs 3 --budget 540 -S model.encoder=.carry/minilm

Prints one line per cell event and, at the end, what was written and what is left; the
same command later resumes. Exit status: 0 (all done or stopped at the budget), 1 (a cell
failed), 2 (bad input).
"""

from __future__ import annotations

import argparse
import sys
import time
from collections.abc import Sequence
from pathlib import Path

import yaml

from lttw.errors import UserError
from lttw.experiments.budget import Clock, Outcome, write_window
from lttw.experiments.cells import RUNS_DIR
from lttw.experiments.direct_runner import WORK_DIR, DirectRunner
from lttw.experiments.grids import GRIDS_DIR, find_grid

MAX_JOBS = 16


def run_window(
    name: str,
    jobs: int = 1,
    budget: float | None = None,
    only: list[str] | None = None,
    extra: Sequence[str] = (),
    frozen: bool = False,
    repo: Path = Path("."),
    runs_dir: Path | None = None,
    work_dir: Path | None = None,
    clock: Clock | None = None,
    log=print,
) -> Outcome:
    """Run grid ``name``'s cells (``only``: these) in ``repo``, ``jobs`` at a time, until done
    or ``budget`` seconds have passed; the cells go to ``runs_dir`` (evidence/runs)."""
    if not 1 <= jobs <= MAX_JOBS:
        raise UserError(f"--jobs {jobs}: must be 1..{MAX_JOBS}")
    if budget is not None and budget < 0:
        raise UserError(f"--budget {budget}: must be >= 0 seconds")
    repo = repo.resolve()
    base = yaml.safe_load((repo / "params.yaml").read_text(encoding="utf-8"))
    n_folds = int((base.get("folds") or {}).get("n_folds", 10))
    grid = find_grid(name, repo / GRIDS_DIR, n_folds)
    grid = grid.frozen() if frozen else grid
    cells = grid.select(only)
    runner = DirectRunner(repo, runs_dir or repo / RUNS_DIR, work_dir or repo / WORK_DIR, jobs, log)
    clock = clock or Clock(None if budget is None else time.monotonic() + budget)
    start = time.monotonic()
    outcome = runner.run(cells, list(extra), clock)
    write_window(runner.work / "last_window.json", outcome, time.monotonic() - start)
    return outcome


def describe(outcome: Outcome) -> str:
    parts = [
        f"{len(outcome.done)} cell(s) written",
        f"{len(outcome.skipped)} written before",
        f"{len(outcome.failed)} failed"
        + (f" ({', '.join(outcome.failed)})" if outcome.failed else ""),
        f"{len(outcome.left)} left"
        + (f" ({', '.join(outcome.left)}: rerun to resume)" if outcome.left else ""),
    ]
    return "; ".join(parts)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        description=__doc__.split("\n\n")[0], formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("name", help="a grid of experiments/ (lttw exp list)")
    parser.add_argument("--jobs", type=int, default=1, help="cells at a time (default 1)")
    parser.add_argument("--budget", type=float, default=None, help="seconds; stop cleanly then")
    parser.add_argument("--only", action="append", help="only this cell (repeatable)")
    parser.add_argument(
        "-S",
        "--set-param",
        action="append",
        default=[],
        dest="extra",
        help="another parameter for every cell, as dvc's -S (repeatable)",
    )
    parser.add_argument("--frozen", action="store_true", help="train.freeze_encoder: true")
    parser.add_argument("--runs", type=Path, default=None, help="cells' folder (evidence/runs)")
    args = parser.parse_args(argv)
    try:
        outcome = run_window(
            args.name,
            args.jobs,
            args.budget,
            args.only,
            args.extra,
            args.frozen,
            runs_dir=args.runs,
            log=lambda line: print(line, flush=True),
        )
    except UserError as err:
        print(f"error: {err}", file=sys.stderr)
        return 2
    print(describe(outcome), flush=True)
    return 1 if outcome.failed else 0


if __name__ == "__main__":
    sys.exit(main())
