"""`lttw data issues`: the training rows most likely mislabelled (``lttw.checks.label_issues``),
as a CSV and a table."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from lttw.cli.main import Params, _examples, data_app
from lttw.errors import UserError

#: the most rows ``--top`` shows (the CSV holds every issue)
MAX_TOP = 1000
#: the characters of a text the table shows (the CSV holds it whole)
SHOWN_CHARS = 60


@data_app.command(
    "issues",
    epilog=_examples(
        "lttw data issues",
        "lttw data issues --top 50 --out review.csv",
    ),
)
def data_issues(
    out: Annotated[
        Path,
        typer.Option("--out", "-o", metavar="FILE", help="the CSV of every issue found"),
    ] = Path("label_issues.csv"),
    top: Annotated[
        int,
        typer.Option(
            "--top", "-n", metavar="N", help=f"show the N likeliest issues (at most {MAX_TOP})"
        ),
    ] = 20,
    params: Params = Path("params.yaml"),
) -> None:
    """List the training rows most likely mislabelled, in a project after `dvc repro`:
    confident learning (cleanlab) on the out-of-fold probabilities of the folds in folds.run,
    likeliest first, each with its text, given label, suggested label and score (the given
    label's probability: lower is likelier wrong). Every fold in folds.run checks its own
    test part, so all folds check every row."""
    from lttw.checks.label_issues import find_issues
    from lttw.io import write_csv
    from lttw.settings import read_settings

    if not 1 <= top <= MAX_TOP:
        raise UserError(f"--top {top}: give 1 to {MAX_TOP} (the CSV holds every issue)")
    folds = read_settings(params).folds.run
    found = find_issues(folds, Path(params).parent)
    write_csv(out, found.table)
    share = found.checked / max(found.train_rows, 1)
    typer.echo(
        f"{len(found.table)} likely label issue(s) among {found.checked} of the "
        f"{found.train_rows} training rows ({share:.0%}: the test parts of folds "
        f"{', '.join(map(str, folds))}); all in {out}"
    )
    for item in found.table.head(top).itertuples():
        text = item.text if len(item.text) <= SHOWN_CHARS else item.text[: SHOWN_CHARS - 3] + "..."
        typer.echo(
            f"  row {item.row}: {item.label} -> {item.suggested} (score {item.score:.3f}): {text!r}"
        )
