"""``lttw exp run NAME --runner direct`` and ``bench/gpu.sh grid NAME``: a grid's cells in one time
window, without dvc (``experiments.direct_runner``). Runs with neither typer nor dvc installed:

    python -m lttw.experiments paper --jobs 3 --budget 540 -S model.encoder=.carry/minilm

Prints one line per cell event and, at the end, what was written and what is left; the
same command later resumes. Exit status: 0 (all done or stopped at the budget), 1 (a cell
failed), 2 (bad input).
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from lttw.errors import UserError
from lttw.experiments.direct_runner import describe, run_window


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        description=__doc__.split("\n\n")[0], formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("name", help="a grid of experiments/ (lttw exp list)")
    parser.add_argument(
        "--jobs",
        type=int,
        default=None,
        help="cells at a time (default: what finished the most folds per GPU-minute in the "
        "windows kept in RUNS/.windows, else 1)",
    )
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
    parser.add_argument("--work", type=Path, default=None, help="work folder (data/grid)")
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
            work_dir=args.work,
            log=lambda line: print(line, flush=True),
        )
    except UserError as err:
        print(f"error: {err}", file=sys.stderr)
        return 2
    print(describe(outcome), flush=True)
    return 1 if outcome.failed else 0


if __name__ == "__main__":
    sys.exit(main())
