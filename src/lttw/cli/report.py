"""`lttw report`: the markdown report of the metrics, the DVC experiments and the grids."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from lttw import layout
from lttw.cli.app import Cells, Grids, Params, app, examples


def write_report(
    out: Path,
    runs: list[Path],
    experiments: bool,
    all_commits: bool,
    grids: Path,
    cells: Path,
    params: Path,
) -> None:
    from lttw.experiments.dvc_experiments import experiment_runs
    from lttw.io import atomic_path
    from lttw.reporting.grid_report import build_report
    from lttw.settings import read_settings

    exps = experiment_runs(".", all_commits) if experiments else []
    n_folds = read_settings(params).folds.n_folds if params.is_file() else 10
    text, written = build_report(layout.METRICS_DIR, params, runs, exps, grids, cells, n_folds)
    for path in written:
        typer.echo(f"wrote {path}")
    with atomic_path(out) as tmp:
        tmp.write_text(text, encoding="utf-8")
    typer.echo(f"wrote {out}")


@app.command(
    epilog=examples(
        "lttw report",
        "lttw report --all-commits --out report.md",
        "lttw report --no-experiments --runs runs/encoder --runs runs/lttw-m",
    )
)
def report(
    out: Annotated[Path, typer.Option("--out", "-o", help="markdown file")] = layout.REPORT_MD,
    runs: Annotated[
        list[Path] | None,
        typer.Option(
            "--runs",
            help="extra run folder (summary.json + folds/fold_*.json [+ params.yaml]); repeatable",
        ),
    ] = None,
    experiments: Annotated[
        bool,
        typer.Option(help="read the DVC experiments of the current commit (`dvc exp show --json`)"),
    ] = True,
    all_commits: Annotated[
        bool,
        typer.Option(
            "--all-commits",
            "-A",
            help="the experiments of every commit, not only the current one's",
        ),
    ] = False,
    grids: Grids = Path("experiments"),
    cells: Cells = Path("evidence/runs"),
    params: Params = Path("params.yaml"),
) -> None:
    """Write a markdown report: the metrics of the workspace (metrics/), of every DVC
    experiment and of extra run folders (macro P / R / F1 per dataset and variant next to
    the paper's, and paired tests); the paired study (experiments/study.yaml); every other
    grid that has cells (evidence/runs); the sweeps (Tables 6-8) as the paper's tables."""
    write_report(out, list(runs or []), experiments, all_commits, grids, cells, params)
