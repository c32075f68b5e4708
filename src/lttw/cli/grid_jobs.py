"""`lttw exp cells` and `lttw exp submit`: a grid's cells one per batch job. `exp cells` lists
them (index, name, state) for a Slurm array, a Kubernetes Indexed Job or SkyPilot jobs, each
of which runs `lttw exp run GRID --index I` (or `--cell NAME`); `exp submit` submits them
through submitit (`--executor local|slurm`)."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from lttw.cli.main import CellParams, OnlyCells, Params, _examples
from lttw.cli.reports import Cells, Grids, _grid, exp_app


@exp_app.command("cells", epilog=_examples("lttw exp cells paper", "lttw exp cells paper --names"))
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
    epilog=_examples(
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
        CellJob,
        cancel_hint,
        cancelled_when_stopped,
        make_executor,
        submit_cells,
    )

    extra = tuple(assignments or [])
    grid = _grid(name, grids, params, extra=extra)
    chosen_cells = grid.select(only)
    todo = [c for c in chosen_cells if not (cells / c.name / "summary.json").is_file()]
    slurm = {"partition": partition, "gpus_per_node": gpus, "cpus_per_task": cpus}
    chosen = make_executor(executor, logs, timeout_min, slurm)
    jobs = [
        CellJob(
            str(Path.cwd()),
            str(grid.path.resolve()),
            c.name,
            extra,
            runs_dir=str(cells.resolve()),
            work_dir=str(work.resolve()) if work else None,
        )
        for c in todo
    ]
    futures = submit_cells(chosen, jobs)
    for job, future in zip(jobs, futures):
        typer.echo(f"{future.job_id}\t{job.cell}")
    written = len(chosen_cells) - len(todo)
    typer.echo(f"submitted {len(futures)} job(s); {written} cell(s) written already")
    if not wait:
        if futures:
            typer.echo(f"cancel a job: {cancel_hint(executor)}")
        return
    failed = 0
    with cancelled_when_stopped(futures):
        for job, future in zip(jobs, futures):
            try:
                result = future.result()
            except Exception as err:  # a job's own failure, reported by submitit
                result = {"state": f"failed ({str(err).strip().splitlines()[-1][:200]})"}
            failed += result["state"] != "done"
            typer.echo(f"{job.cell}: {result['state']}")
    if failed:
        raise typer.Exit(1)
