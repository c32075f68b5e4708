"""`lttw report` and `lttw exp`: the markdown report and the experiment grids."""

from __future__ import annotations

from enum import Enum
from pathlib import Path
from typing import Annotated

import typer

from lttw import layout
from lttw.cli.main import (
    CellParams,
    OnlyCells,
    Params,
    _examples,
    _typer,
    app,
)
from lttw.errors import UserError

Cells = Annotated[
    Path, typer.Option("--cells", help="the grids' cells, one folder each (evidence/runs)")
]
Grids = Annotated[Path, typer.Option("--grids", help="the grid files' folder (experiments)")]


def _write_report(
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
    epilog=_examples(
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
    _write_report(out, list(runs or []), experiments, all_commits, grids, cells, params)


exp_app = _typer(
    "Experiment grids (experiments/*.yaml): list them, run one through DVC's queue or "
    "directly (no dvc: a GPU window), see each cell's state, collect, report."
)
app.add_typer(exp_app, name="exp")


class Runner(str, Enum):
    """How ``lttw exp run`` runs a grid's cells."""

    dvc = "dvc"
    direct = "direct"


def _needs_dvc(what: str, instead: str) -> None:
    """A clear error where ``what`` needs dvc and it is not installed."""
    import importlib.util

    if importlib.util.find_spec("dvc") is None:
        raise UserError(
            f"{what} needs dvc, which is not installed (pip install 'lttw[train]'); {instead}"
        )


def _grid(name: str, grids: Path, params: Path, frozen: bool = False, extra: tuple = ()):
    """The grid ``name``, every cell (with ``extra``) validated against ``params``."""
    from lttw.experiments.grids import find_grid, full_params, validate_grid

    base = full_params(params)
    grid = find_grid(name, grids, int(base["folds"]["n_folds"]))
    validate_grid(grid, base, extra)
    return grid.frozen() if frozen else grid


@exp_app.command("list", epilog=_examples("lttw exp list"))
def exp_list(grids: Grids = Path("experiments"), cells: Cells = Path("evidence/runs")) -> None:
    """Each grid: its name, cells written / cells, and the first sentence of its description."""
    from lttw.experiments.cells import progress
    from lttw.reporting.grid_report import load_grids

    for grid in load_grids(grids):
        done = sum(s == "done" for s in progress(list(grid.cells), cells).values())
        first = grid.description.split(". ")[0].rstrip(".")
        typer.echo(f"{grid.name:14s} {done:3d}/{len(grid.cells):<3d} {first[:90]}")


@exp_app.command(
    "run",
    epilog=_examples(
        "lttw exp run ablations",
        "lttw exp run table7 --frozen --only k10s10 --only k5s5 --queue && dvc queue start",
        "lttw exp run paper --runner direct --jobs 3 --budget 540 -S model.encoder=.carry/minilm",
        "lttw exp run paper --index $SLURM_ARRAY_TASK_ID --cells /shared/runs",
    ),
)
def exp_run(
    name: Annotated[str, typer.Argument(help="a grid (lttw exp list) or a grid file")],
    only: OnlyCells = None,
    assignments: CellParams = None,
    frozen: Annotated[
        bool,
        typer.Option(
            "--frozen", help="train.freeze_encoder: true, cells NAME-frozen (not the paper's model)"
        ),
    ] = False,
    queue: Annotated[
        bool, typer.Option("--queue", help="DVC: only queue the cells (`dvc queue start` later)")
    ] = False,
    runner: Annotated[
        Runner,
        typer.Option(
            "--runner",
            help="dvc: DVC's queue (experiments tracked by DVC); direct: the stage scripts "
            "without dvc, --jobs at a time within --budget (a GPU window)",
        ),
    ] = Runner.dvc,
    jobs: Annotated[
        int | None,
        typer.Option(
            "--jobs",
            "-j",
            help="cells at a time (direct; default: what finished the most folds per "
            "GPU-minute in the windows kept beside the cells, else 1)",
        ),
    ] = None,
    budget: Annotated[
        float | None, typer.Option("--budget", help="direct: stop cleanly after SECONDS")
    ] = None,
    cell: Annotated[
        str | None,
        typer.Option("--cell", help="exactly this cell, directly (one cell per batch job)"),
    ] = None,
    index: Annotated[
        int | None,
        typer.Option("--index", help="exactly the cell at this index (lttw exp cells), directly"),
    ] = None,
    work: Annotated[
        Path | None, typer.Option("--work", help="direct: the work folder (data/grid)")
    ] = None,
    grids: Grids = Path("experiments"),
    cells: Cells = Path("evidence/runs"),
    params: Params = Path("params.yaml"),
) -> None:
    """Run a grid's cells not written yet: through DVC's queue (one `dvc exp run --queue -n
    CELL -S ...` each, then `dvc exp run --run-all` and `lttw exp collect`), or directly
    (`--runner direct`: the stage scripts, --jobs at a time, within --budget; rerun to
    resume).
    The cells land in evidence/runs/<cell>/; `lttw report` renders them."""
    extra = list(assignments or [])
    grid = _grid(name, grids, params, frozen, tuple(extra))
    if cell is not None or index is not None:  # one cell per job: direct, one at a time
        from lttw.experiments.submit import one_cell

        only, jobs, runner = [one_cell(grid, cell, index, only)], 1, Runner.direct
    if runner is Runner.direct:
        if queue:
            raise UserError("--queue is DVC's: --runner direct runs the cells now")
        from lttw.experiments.direct_runner import describe, run_window

        outcome = run_window(
            str(grid.path),
            jobs,
            budget,
            only,
            extra,
            frozen,
            runs_dir=cells.resolve(),
            work_dir=work,
            log=lambda line: typer.echo(line),
        )
        typer.echo(describe(outcome))
        if outcome.failed:
            raise typer.Exit(1)
        return
    _needs_dvc("--runner dvc", "--runner direct runs the cells without it")
    from lttw.experiments.dvc_queue import (
        absolute_root,
        collect_grids,
        plan_queue,
        queued_or_done,
        run_commands,
    )
    from lttw.experiments.study import collected
    from lttw.settings import read_settings

    root = absolute_root(read_settings(params).data.root)
    commands, skipped = plan_queue(
        grid.select(only), root, extra, collected(cells), queued_or_done()
    )
    if skipped:
        typer.echo(f"skipped (collected, queued or run before): {', '.join(skipped)}")
    run_commands(commands)
    if queue:
        typer.echo(f"queued {len(commands)} cell(s); run them with `dvc queue start`")
        return
    if commands:
        run_commands([[*commands[0][:3], "exp", "run", "--run-all"]])
    written = collect_grids([grid], cells)
    typer.echo(f"ran {len(commands)} cell(s); collected {', '.join(written) or 'none new'}")


@exp_app.command("status", epilog=_examples("lttw exp status", "lttw exp status study"))
def exp_status(
    name: Annotated[str | None, typer.Argument(help="a grid; default: all")] = None,
    grids: Grids = Path("experiments"),
    cells: Cells = Path("evidence/runs"),
    params: Params = Path("params.yaml"),
) -> None:
    """Each cell: collected, queued or finished (collect), n/m folds (a stopped direct run),
    or not run."""
    import importlib.util

    from lttw.experiments.dvc_queue import cell_states, queued_or_done
    from lttw.reporting.grid_report import load_grids

    chosen = [_grid(name, grids, params)] if name else load_grids(grids)
    known = queued_or_done() if importlib.util.find_spec("dvc") else set()
    for grid in chosen:
        typer.echo(f"# {grid.name}")
        for cell, state in cell_states(grid, cells, known).items():
            typer.echo(f"{cell:32s} {state}")


@exp_app.command("collect", epilog=_examples("lttw exp collect", "lttw exp collect study"))
def exp_collect(
    name: Annotated[str | None, typer.Argument(help="a grid; default: all")] = None,
    grids: Grids = Path("experiments"),
    cells: Cells = Path("evidence/runs"),
    params: Params = Path("params.yaml"),
) -> None:
    """Copy the grids' finished DVC experiments (any commit) into evidence/runs/<cell>/:
    metrics, parameters and held-out predictions, committed with the code."""
    from lttw.experiments.dvc_queue import collect_grids
    from lttw.reporting.grid_report import load_grids

    chosen = [_grid(name, grids, params)] if name else load_grids(grids)
    written = collect_grids(chosen, cells)
    typer.echo(f"collected {len(written)} cell(s): {', '.join(written) or 'none new'}")


@exp_app.command(
    "report", epilog=_examples("lttw exp report", "lttw exp report --readme README.md")
)
def exp_report(
    out: Annotated[Path, typer.Option("--out", "-o", help="markdown file")] = layout.REPORT_MD,
    readme: Annotated[
        Path | None,
        typer.Option(help="also rewrite this file's <!-- study:start/end --> block"),
    ] = None,
    grids: Grids = Path("experiments"),
    cells: Cells = Path("evidence/runs"),
    params: Params = Path("params.yaml"),
) -> None:
    """`lttw report` from the cells alone (no DVC experiments read); `--readme`: the
    paired study's block of a README rewritten from its cells."""
    _write_report(out, [], False, False, grids, cells, params)
    if readme is not None:
        from lttw.reporting.study_report import fill_readme

        text = fill_readme(readme.read_text(encoding="utf-8"), grids / "study.yaml", cells)
        readme.write_text(text, encoding="utf-8")
        typer.echo(f"{readme}: the study's block rewritten from {cells}")
