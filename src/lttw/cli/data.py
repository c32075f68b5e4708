"""`lttw data check`, `lttw data list`, `lttw data fetch`, `lttw data issues`: a dataset
checked, listed or downloaded; the training rows most likely mislabelled
(``lttw.checks.label_issues``), as a CSV and a table."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Annotated

import typer

from lttw.choices import Sampling
from lttw.cli.app import (
    Params,
    data_app,
    examples,
)
from lttw.console import console
from lttw.errors import DataError, UserError


@data_app.command(
    "check",
    epilog=examples(
        "lttw data check ag_news",
        "lttw data check reviews.csv --text-column review --label-column stars",
        "lttw data check questions.csv --sampling stratified",
        "lttw data check emotions.csv --label-delimiter '|' --sampling stratified",
    ),
)
def data_check(
    path: Annotated[
        str,
        typer.Argument(
            metavar="PATH",
            help="a dataset name under data.root (as the pipeline resolves data.dataset), "
            "or a CSV/TSV/parquet file or a folder of them",
        ),
    ],
    text_column: Annotated[str | None, typer.Option(help="text column")] = None,
    label_column: Annotated[str | None, typer.Option(help="label column")] = None,
    label_delimiter: Annotated[
        str | None,
        typer.Option(help="separator of several labels in one cell: multi-label data"),
    ] = None,
    sampling: Annotated[
        Sampling | None,
        typer.Option(help="how samples are drawn [default: data.sampling in --params]"),
    ] = None,
    params: Params = Path("params.yaml"),
) -> None:
    """Validate a dataset and show what the `sample` stage would draw from it with the sizes
    in --params. Exit code 3 (bad data) when the pipeline would drop rows or cannot draw a
    size; the message then names every unmet size and sizes that fit together."""
    from lttw.checks.dataset import check_dataset
    from lttw.checks.dataset_tables import render
    from lttw.settings import read_settings

    if params.is_file():
        settings = read_settings(params)
        # data.root as the pipeline reads it: relative to the project (the --params file's
        # folder), whatever the current folder; a name under it wins over a path here
        root = Path(params).parent / settings.data.root
    elif Path(path).exists():  # outside a project: the file as `lttw init` would use it
        typer.echo(
            f"note: no {params} here (not in an lttw project): checked as `lttw init` would "
            "use the data, every labelled row, with lttw's default parameters",
            err=True,
        )
        settings, root = _new_project_settings(Path(path)), Path(path).parent
    else:
        raise UserError(
            f"{path}: no such file or folder, and no {params} here to name a dataset under "
            "data.root; pass a CSV/TSV/parquet file or folder, or run this in a project"
        )
    update: dict = {"root": str(root)}
    if sampling is not None:
        update["sampling"] = sampling
    settings = settings.model_copy(update={"data": settings.data.model_copy(update=update)})
    if (root / path).exists():
        path = str(root / path)
    check = check_dataset(settings, path, text_column, label_column, label_delimiter)
    render(check, console())
    if check.problems:
        raise DataError(f"{len(check.problems)} problem(s): " + "; ".join(check.problems))


@data_app.command("list", epilog=examples("lttw data list", "lttw data list --json"))
def data_list(
    as_json: Annotated[bool, typer.Option("--json", help="print JSON")] = False,
    params: Params = Path("params.yaml"),
) -> None:
    """The known datasets: local copy under data.root (present / missing, rows per split,
    complete or partial) and the Hugging Face dataset `lttw data fetch` reads."""
    from lttw.checks.dataset_list import list_datasets, render_list
    from lttw.settings import read_settings

    # data.root as the pipeline reads it: relative to the --params file's folder
    root = str(Path(params).parent / read_settings(params).data.root)
    rows = list_datasets(root)
    if as_json:
        typer.echo(json.dumps(rows, indent=2))
    else:
        render_list(rows, root, console())


@data_app.command(
    "fetch",
    epilog=examples(
        "lttw data fetch sst2",
        "lttw data fetch ag_news --to ~/lttw-datasets",
        "lttw data fetch stanfordnlp/imdb --split train --split test",
        "lttw data fetch org/reviews --revision v2 --text-column review --label-column stars",
        "lttw data fetch thucnews --from-files ~/Downloads/thucnews",
    ),
)
def data_fetch(
    name: Annotated[
        str,
        typer.Argument(
            metavar="NAME",
            help="ag_news, sst2, yahoo_answers, goemotions or thucnews, or any Hugging Face "
            "dataset id with parquet files (org/name)",
        ),
    ],
    to: Annotated[
        Path | None,
        typer.Option("--to", help="the datasets folder [default: data.root in --params]"),
    ] = None,
    revision: Annotated[
        str | None,
        typer.Option(
            help="the hub branch, tag or commit [default: a known name's pinned one, else main]"
        ),
    ] = None,  # fmt: skip
    split: Annotated[
        list[str] | None,
        typer.Option(
            "--split",
            help="a split to fetch, NAME or NAME=GLOB (its files' hub paths); repeatable "
            "[default: train, validation and test, those the dataset has]",
        ),
    ] = None,
    text_column: Annotated[
        str | None, typer.Option(help="the text column of a hub dataset [default: text]")
    ] = None,
    label_column: Annotated[
        str | None, typer.Option(help="the label column of a hub dataset [default: label]")
    ] = None,
    from_files: Annotated[
        Path | None,
        typer.Option(
            "--from-files",
            help="a folder holding a known name's source files, downloaded elsewhere: no network",
        ),
    ] = None,
    force: Annotated[
        bool, typer.Option("--force", help="replace a folder NAME that is already there")
    ] = False,
    params: Params = Path("params.yaml"),
) -> None:
    """Download a dataset into DIR/NAME (a hub id: DIR/ its last part) as parquet +
    manifest.json with checksums, checked whenever the dataset is read. Hub datasets come
    through huggingface_hub's cache (retries, resumed downloads; HF_HUB_OFFLINE=1 serves the
    cache); a download that fails its checks is removed. Atomic (DIR/NAME appears whole or
    not at all). Unreachable, it fails at once naming the manual alternative (--from-files)."""
    from lttw.data.fetch import fetch

    hint = f", data.root={Path(to).resolve()}" if to is not None else ""
    if to is None:
        from lttw.settings import read_settings

        to = Path(params).parent / read_settings(params).data.root
    done = fetch(name, to, from_files, force, revision, split, text_column, label_column)
    rows = ", ".join(f"{s} {n:,}" for s, n in done.rows.items())
    state = "already there" if done.present else "written"
    typer.echo(
        f"{done.folder}: {state} ({rows}); use it with data.dataset={done.folder.name}{hint}"
    )


def _new_project_settings(data: Path):
    """lttw's default parameters as `lttw init` sets them for ``data``: every row, no
    separate predict sample."""
    from lttw.settings import Settings

    defaults = Settings()
    update = {"sampling": "all", "predict_size": 0, "root": str(data.parent)}
    return defaults.model_copy(update={"data": defaults.data.model_copy(update=update)})


#: the most rows ``--top`` shows (the CSV holds every issue)
MAX_TOP = 1000
#: the characters of a text the table shows (the CSV holds it whole)
SHOWN_CHARS = 60


@data_app.command(
    "issues",
    epilog=examples(
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
