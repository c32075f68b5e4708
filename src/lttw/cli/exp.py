"""`lttw exp`: the experiment grids (experiments/*.yaml): list them, run one through DVC's
queue or directly, see each cell's state, collect, report, compare. `exp cells` lists a
grid's cells (index, name, state) for a Slurm array, a Kubernetes Indexed Job or SkyPilot
jobs, each of which runs `lttw exp run GRID --index I` (or `--cell NAME`); `exp submit`
submits them through submitit (`--executor local|slurm`)."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from lttw import layout
from lttw.choices import Runner
from lttw.cli.app import (
    CellParams,
    Cells,
    Grids,
    OnlyCells,
    Params,
    app,
    examples,
    new_app,
)
from lttw.cli.report import write_report
from lttw.errors import UserError

exp_app = new_app(
    "Experiment grids (experiments/*.yaml): list them, run one through DVC's queue or "
    "directly (no dvc), see each cell's state, collect, report."
)
app.add_typer(exp_app, name="exp")


def _grid(name: str, grids: Path, params: Path, frozen: bool = False, extra: tuple = ()):
    """The grid ``name``, every cell (with ``extra``) validated against ``params``."""
    from lttw.experiments.grids import find_grid, full_params, validate_grid

    base = full_params(params)
    grid = find_grid(name, grids, int(base["folds"]["n_folds"]))
    validate_grid(grid, base, extra)
    return grid.frozen() if frozen else grid


@exp_app.command("list", epilog=examples("lttw exp list"))
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
    epilog=examples(
        "lttw exp run ablations",
        "lttw exp run table7 --frozen --only k10s10 --only k5s5 --queue && dvc queue start",
        "lttw exp run paper --runner direct --jobs 3 --budget 28800",
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
            "without dvc, --jobs at a time within --budget",
        ),
    ] = "dvc",
    jobs: Annotated[
        int | None,
        typer.Option(
            "--jobs",
            "-j",
            help="cells at a time (direct; default 1)",
        ),
    ] = None,
    budget: Annotated[
        float | None,
        typer.Option(
            "--budget", help="direct: the time limit: stop cleanly after SECONDS (as a scheduler's)"
        ),
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

        only, jobs, runner = [one_cell(grid, cell, index, only)], 1, "direct"
    if runner == "direct":
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
    from lttw.experiments.dvc_experiments import require_dvc
    from lttw.experiments.dvc_queue import run_grid

    require_dvc("--runner dvc", "--runner direct runs the cells without it")
    from lttw.settings import read_settings

    root = read_settings(params).data.root
    run_grid(grid, only, extra, cells, root, queue, say=typer.echo)


@exp_app.command("status", epilog=examples("lttw exp status", "lttw exp status study"))
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


@exp_app.command("collect", epilog=examples("lttw exp collect", "lttw exp collect study"))
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


@exp_app.command("report", epilog=examples("lttw exp report", "lttw exp report --readme README.md"))
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
    write_report(out, [], False, False, grids, cells, params)
    if readme is not None:
        from lttw.reporting.study_report import fill_readme

        text = fill_readme(readme.read_text(encoding="utf-8"), grids / "study.yaml", cells)
        readme.write_text(text, encoding="utf-8")
        typer.echo(f"{readme}: the study's block rewritten from {cells}")


@exp_app.command("cells", epilog=examples("lttw exp cells paper", "lttw exp cells paper --names"))
def exp_cells(
    name: Annotated[str, typer.Argument(help="a grid (lttw exp list) or a grid file")],
    names: Annotated[bool, typer.Option("--names", help="only the cells' names")] = False,
    grids: Grids = Path("experiments"),
    cells: Cells = Path("evidence/runs"),
    params: Params = Path("params.yaml"),
) -> None:
    """A grid's cells, one a line: the index `lttw exp run --index` takes, the cell's name
    and its state (done, n/m folds saved, not run)."""
    from lttw.experiments.cells import progress

    grid = _grid(name, grids, params)
    states = progress(list(grid.cells), cells)
    for i, cell in enumerate(grid.cells):
        typer.echo(cell.name if names else f"{i}\t{cell.name}\t{states[cell.name]}")


@exp_app.command(
    "submit",
    epilog=examples(
        "lttw exp submit paper --executor local --wait",
        "lttw exp submit paper --executor slurm --partition gpu --gpus 1 --timeout-min 240",
    ),
)
def exp_submit(
    name: Annotated[str, typer.Argument(help="a grid (lttw exp list) or a grid file")],
    executor: Annotated[
        str, typer.Option("--executor", help="local (processes here) or slurm")
    ] = "local",
    only: OnlyCells = None,
    assignments: CellParams = None,
    logs: Annotated[
        Path, typer.Option("--logs", help="submitit's folder (jobs' logs and results)")
    ] = Path("data/grid/jobs"),
    work: Annotated[
        Path | None, typer.Option("--work", help="the jobs' work folder (data/grid)")
    ] = None,
    timeout_min: Annotated[int, typer.Option("--timeout-min", help="per job")] = 60,
    partition: Annotated[str | None, typer.Option("--partition", help="slurm")] = None,
    gpus: Annotated[int | None, typer.Option("--gpus", help="slurm: GPUs per job")] = None,
    cpus: Annotated[int | None, typer.Option("--cpus", help="slurm: CPUs per job")] = None,
    wait: Annotated[bool, typer.Option(help="wait for the jobs and print each outcome")] = False,
    grids: Grids = Path("experiments"),
    cells: Cells = Path("evidence/runs"),
    params: Params = Path("params.yaml"),
) -> None:
    """Submit one job per cell not written yet (submitit), each `lttw exp run --cell`: into
    the shared --cells folder, resumable (submit again after a stopped job)."""
    from lttw.experiments.submit import (
        cancel_hint,
        grid_jobs,
        make_executor,
        submit_cells,
        wait_for,
    )

    extra = tuple(assignments or [])
    grid = _grid(name, grids, params, extra=extra)
    jobs, written = grid_jobs(grid, only, extra, cells, work)
    slurm = {"partition": partition, "gpus_per_node": gpus, "cpus_per_task": cpus}
    futures = submit_cells(make_executor(executor, logs, timeout_min, slurm), jobs)
    for job, future in zip(jobs, futures):
        typer.echo(f"{future.job_id}\t{job.cell}")
    typer.echo(f"submitted {len(futures)} job(s); {written} cell(s) written already")
    if not wait:
        if futures:
            typer.echo(f"cancel a job: {cancel_hint(executor)}")
        return
    if wait_for(jobs, futures, say=typer.echo):
        raise typer.Exit(1)


@exp_app.command(
    "compare",
    epilog=examples(
        "lttw exp compare", "lttw exp compare --all-commits", "lttw exp compare -p model.k"
    ),
)
def exp_compare(
    all_commits: Annotated[
        bool,
        typer.Option("--all-commits", "-A", help="the experiments of every commit"),
    ] = False,
    param: Annotated[
        list[str] | None,
        typer.Option("--param", "-p", help="also a column for this parameter; repeatable"),
    ] = None,
) -> None:
    """The workspace, the current commit and its DVC experiments in one table (100
    columns): per row the deployed model's training rows, macro F1 (%) with its 95%
    interval and where it comes from (`folds`: their out-of-fold predictions; `test`: its
    own on the held-out test sample), its calibration error, and the folds' held-out test
    macro F1 (the study). Read from each one's metrics/summary.json (`dvc exp show`)."""
    from lttw.experiments.compare import compare_rows, render_table
    from lttw.experiments.dvc_experiments import exp_show_json, require_dvc

    require_dvc("lttw exp compare", "run `dvc exp show` instead")
    doc = exp_show_json(".", all_commits)
    if doc is None:
        raise UserError(
            "no DVC experiments here (`dvc exp show` failed): run it from a DVC project "
            "with a Git commit"
        )
    params = tuple(param or ())
    rows = compare_rows(doc, params)
    if not rows:
        raise UserError("no experiment has metrics/summary.json yet: run `dvc repro` first")
    typer.echo(render_table(rows, params))
