"""`lttw exp compare`: the DVC experiments side by side, the columns people read."""

from __future__ import annotations

from typing import Annotated

import typer

from lttw.cli.main import _examples
from lttw.cli.reports import _needs_dvc, exp_app
from lttw.errors import UserError


@exp_app.command(
    "compare",
    epilog=_examples(
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
    from lttw.experiments.dvc_experiments import exp_show_json

    _needs_dvc("lttw exp compare", "run `dvc exp show` instead")
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
