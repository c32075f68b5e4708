"""The paired study of evidence/study.yaml (issue 27): queue its cells as DVC experiments,
collect the finished ones into evidence/runs/, and say which are still missing.

    python tools/evidence.py status            # each cell: collected, queued/running, not run
    python tools/evidence.py queue             # queue every cell not collected yet
    dvc queue start -j 1                       # run them in the background (one at a time)
    python tools/evidence.py collect           # finished experiments -> evidence/runs/<cell>/
    python tools/evidence.py readme            # the study's table into docs/results.md (its markers)
    lttw report                                # the study's table (and the learning curve)

`make evidence` does queue + `dvc queue start -j 1`. Collected cells are committed, so the
study accumulates across sessions and `lttw report` rebuilds it without training.
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
from pathlib import Path

from lttw.errors import UserError
from lttw.reporting.experiments import exp_show_json
from lttw.reporting.study import collected, queue_command, read_study
from lttw.reporting.study_collect import collect
from lttw.reporting.study_report import fill_readme
from lttw.reporting.sweeps import existing_experiments, run_commands

ROOT = Path(__file__).resolve().parents[1]
STUDY = ROOT / "evidence" / "study.yaml"
RUNS = ROOT / "evidence" / "runs"
README = ROOT / "docs" / "results.md"  # the page that shows the study (its markers)


def _settings():
    from lttw.settings import read_settings

    return read_settings(ROOT / "params.yaml")


def _data_root(settings) -> str:
    root = settings.data.root
    return root if os.path.isabs(root) else os.path.abspath(ROOT / root)


def queued_or_done() -> set[str]:
    """Names of this commit's experiments (``dvc exp list``) and of the queue's tasks that
    are queued or running (``dvc queue status``)."""
    names = existing_experiments(str(ROOT))
    proc = subprocess.run(
        [sys.executable, "-m", "dvc", "queue", "status"], cwd=ROOT, capture_output=True, text=True
    )
    for line in proc.stdout.splitlines()[1:]:
        fields = line.split()
        if len(fields) >= 3 and fields[-1] in ("Queued", "Running"):
            names.add(fields[1])
    return names


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("command", choices=["status", "queue", "collect", "readme"])
    parser.add_argument("--study", type=Path, default=STUDY, help="the study file")
    parser.add_argument("--runs", type=Path, default=RUNS, help="collected cells' folder")
    parser.add_argument(
        "--only",
        action="append",
        help="only cells whose name contains this (repeatable), e.g. --only ag_news",
    )
    parser.add_argument(
        "-S",
        "--set-param",
        action="append",
        default=[],
        dest="extra",
        help="another -S for every queued cell (e.g. train.device=cuda)",
    )
    args = parser.parse_args()
    os.chdir(ROOT)  # dvc reads the experiments' files relative to the repository
    try:
        if args.command == "readme":
            README.write_text(
                fill_readme(README.read_text(encoding="utf-8"), args.study), encoding="utf-8"
            )
            print(f"{README.relative_to(ROOT)}: the study's section rewritten from {args.study}")
            return
        study, settings = read_study(args.study), _settings()
        cells = [
            c
            for c in study.cells(settings.folds.n_folds)
            if not args.only or any(part in c.name for part in args.only)
        ]
        done = collected(args.runs)
        if args.command == "collect":
            doc = exp_show_json(ROOT, all_commits=True) or []
            written = collect(doc, {c.name for c in cells}, args.runs)
            print(f"collected {len(written)} cell(s): {', '.join(written) or 'none new'}")
            done = collected(args.runs)
        queued = queued_or_done()
        if args.command == "queue":
            todo = [c for c in cells if c.name not in done and c.name not in queued]
            root = _data_root(settings)
            run_commands([queue_command(c, root, args.extra) for c in todo], str(ROOT))
            print(f"queued {len(todo)} cell(s); run them with `dvc queue start -j 1`")
            queued |= {c.name for c in todo}
        for cell in cells:
            state = (
                "collected"
                if cell.name in done
                else "queued or finished (collect)"
                if cell.name in queued
                else "not run"
            )
            print(f"{cell.name:32s} {state}")
    except UserError as err:
        sys.exit(f"error: {err}")


if __name__ == "__main__":
    import signal

    signal.signal(signal.SIGPIPE, signal.SIG_DFL)  # `... status | head`: no BrokenPipeError
    main()
