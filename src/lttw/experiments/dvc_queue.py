"""A grid through DVC's queue (``lttw exp run NAME [--queue]``, ``lttw exp status``,
``lttw exp collect``): one ``dvc exp run --queue -n CELL -S ...`` per cell not collected,
queued or run yet, then (without ``--queue``) ``dvc exp run --run-all``; finished experiments
are collected into ``evidence/runs/<cell>/`` (``experiments.collect``).

Every experiment starts from the same commit, so the samples, folds, tokens, counts and NMF
are DVC's cached ones where a cell does not change what they read. Queued experiments run in
a copy of the repository (``.dvc/tmp/exps``), where a relative ``data.root`` does not
resolve: every cell gets it as an absolute path.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Sequence
from pathlib import Path

from lttw.errors import UserError
from lttw.experiments.assignments import param_value
from lttw.experiments.cells import progress
from lttw.experiments.grids import Grid, GridCell
from lttw.experiments.study import collected


def queue_command(cell: GridCell, data_root: str, extra: Sequence[str] = ()) -> list[str]:
    """The arguments of ``dvc exp run --queue -n CELL -S ...`` for one cell (``data_root``:
    absolute, unless ``extra`` sets data.root)."""
    assignments = [f"{k}={param_value(v)}" for k, v in cell.params.items()]
    if not any(a.startswith("data.root=") for a in extra):
        assignments.append(f"data.root={data_root}")
    assignments += list(extra)
    return [
        "exp",
        "run",
        "--queue",
        "-n",
        cell.name,
        *(arg for a in assignments for arg in ("-S", a)),
    ]


def absolute_root(root: str) -> str:
    """data.root as written when absolute (the same parameter value: ``sample`` stays
    cached); else made absolute without resolving symbolic links."""
    return root if os.path.isabs(root) else os.path.abspath(root)


def queued_or_done(cwd: str | Path = ".") -> set[str]:
    """Names of the current commit's experiments that are finished, queued or running (a
    failed one is left out: it is queued again); none where dvc cannot tell (no DVC
    repository, no Git commit). DVC's Python API, in this process: ``dvc exp show``'s rows."""
    import dvc.api

    try:
        rows = dvc.api.exp_show(repo=str(cwd))
    except Exception:  # noqa: BLE001  (dvc raises many kinds; nothing is known then)
        return set()
    return {
        str(row["Experiment"])
        for row in rows
        if row.get("Experiment") and row.get("State") in (None, "Queued", "Running")
    }


def run_commands(commands: list[list[str]], cwd: str | Path = ".") -> None:
    """Run each ``dvc`` command (its arguments) in turn, in this process through DVC's own
    command line (``dvc.cli.main``: the ``dvc`` program's code and output, without its
    interpreter's start-up of about 2 s a command, once per cell queued); stop at the first
    failure."""
    from dvc.cli import main

    for args in commands:
        shown = " ".join(["dvc", *args])
        print(f"$ {shown}", flush=True)
        before = os.getcwd()
        os.chdir(cwd)
        try:
            code = main(args)
        finally:
            os.chdir(before)
        if code != 0:
            raise UserError(f"`{shown}` failed (its output is above)")


def plan_queue(
    cells: list[GridCell], data_root: str, extra: list[str], collected: set[str], known: set[str]
) -> tuple[list[list[str]], list[str]]:
    """The queue commands of the cells neither collected nor known to dvc (queued, running
    or finished), and the names skipped."""
    commands, skipped = [], []
    for cell in cells:
        if cell.name in collected or cell.name in known:
            skipped.append(cell.name)
        else:
            commands.append(queue_command(cell, data_root, extra))
    return commands, skipped


def run_grid(
    grid: Grid,
    only: list[str] | None,
    extra: list[str],
    runs_dir: Path,
    data_root: str,
    queue_only: bool = False,
    say: Callable[[str], None] = print,
) -> None:
    """``lttw exp run NAME [--queue]``: queue the cells of ``grid`` (``only`` these, where
    given) that are neither collected into ``runs_dir`` nor known to dvc, each with ``extra``
    and ``data_root`` made absolute; then, without ``queue_only``, run the queue
    (``dvc exp run --run-all``) and collect the finished cells into ``runs_dir``. ``say``
    tells what was skipped, queued, run and collected."""
    commands, skipped = plan_queue(
        grid.select(only), absolute_root(data_root), extra, collected(runs_dir), queued_or_done()
    )
    if skipped:
        say(f"skipped (collected, queued or run before): {', '.join(skipped)}")
    run_commands(commands)
    if queue_only:
        say(f"queued {len(commands)} cell(s); run them with `dvc queue start`")
        return
    if commands:
        run_commands([["exp", "run", "--run-all"]])
    written = collect_grids([grid], runs_dir)
    say(f"ran {len(commands)} cell(s); collected {', '.join(written) or 'none new'}")


def cell_states(grid: Grid, runs_dir: Path, known: set[str]) -> dict[str, str]:
    """cell -> collected / queued or finished (collect) / n/m folds (direct) / not run."""
    states = {}
    for name, state in progress(list(grid.cells), runs_dir).items():
        if state == "done":
            states[name] = "collected"
        elif name in known:
            states[name] = "queued or finished (lttw exp collect)"
        else:
            states[name] = state
    return states


def collect_grids(grids: list[Grid], runs_dir: Path, repo: str | Path = ".") -> list[str]:
    """Every finished experiment of ``grids``' cells (any commit; a sweep's ``--frozen``
    cells too) into ``runs_dir``; the names written."""
    from lttw.experiments.collect import collect
    from lttw.experiments.dvc_experiments import exp_show_json

    doc = exp_show_json(repo, all_commits=True) or []
    names = {c.name for g in grids for c in g.cells}
    names |= {c.name for g in grids if g.is_sweep for c in g.frozen().cells}  # --frozen runs
    return collect(doc, names, runs_dir)
