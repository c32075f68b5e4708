"""`lttw data check`, `lttw data list`, `lttw data fetch` and `lttw init`: a dataset checked,
listed or downloaded, a project of your own made."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Annotated

import typer

from lttw.choices import Profile, Sampling
from lttw.cli.main import (
    Params,
    _examples,
    app,
    data_app,
)
from lttw.console import console
from lttw.errors import DataError, UserError


@data_app.command(
    "check",
    epilog=_examples(
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


@data_app.command("list", epilog=_examples("lttw data list", "lttw data list --json"))
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
    epilog=_examples(
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


@app.command(
    epilog=_examples(
        "lttw init reviews --data reviews.csv --text-column review --label-column stars",
        "lttw init first-try --data reviews.csv --profile quick",
        "lttw init news --data news/",
        "lttw init emotions --data emotions.csv --label-delimiter '|'",
        "lttw init --upgrade .",
    )
)
def init(
    directory: Annotated[Path, typer.Argument(metavar="DIR", help="the new project's folder")],
    data: Annotated[
        Path | None,
        typer.Option(
            "--data",
            "-d",
            help="labelled texts: a CSV/TSV/parquet file, or a folder of them (files named "
            "train* / test* are the splits); copied into DIR/data/raw and tracked by DVC",
        ),
    ] = None,
    text_column: Annotated[str | None, typer.Option(help="text column [default: text]")] = None,
    label_column: Annotated[str | None, typer.Option(help="label column [default: label]")] = None,
    label_delimiter: Annotated[
        str | None,
        typer.Option(
            help="separator of several labels in one label cell (e.g. '|'): multi-label data; "
            "written to params.yaml as data.label_delimiter"
        ),
    ] = None,
    profile: Annotated[
        Profile,
        typer.Option(
            help="the parameters: quick (a first run in minutes on a laptop CPU: one short "
            "epoch, a smoke test), default (lttw's defaults), paper (the paper's protocol: "
            "ten folds, batch 128; hours on a GPU)"
        ),
    ] = "default",
    upgrade: Annotated[
        bool,
        typer.Option(
            "--upgrade",
            help="in an existing project: rewrite dvc.yaml and lttw-version.json for the "
            "installed lttw (params.yaml and the data stay)",
        ),
    ] = False,
) -> None:
    """Create a DVC project of your own in DIR: git + DVC, your data tracked by `dvc add`,
    the pipeline (dvc.yaml) and its parameters (params.yaml: your columns, every row used,
    the --profile's values), a .gitignore of every pipeline output, then check the data as
    `lttw data check` does. Next: `cd DIR && dvc repro`."""
    from lttw.project import init_project, upgrade_project

    if upgrade:
        if data is not None:
            raise UserError("--upgrade keeps the project's data: leave --data out")
        if profile != "default":
            raise UserError("--upgrade keeps the project's params.yaml: leave --profile out")
        new = upgrade_project(directory)
        typer.echo(
            f"{directory}: dvc.yaml and lttw-version.json now for lttw {new['lttw']}; "
            "`dvc repro` reruns what the new code changes"
        )
        return
    if data is None:
        raise UserError("give --data FILE_OR_FOLDER (your labelled texts)")
    if label_delimiter is not None and not label_delimiter.strip():
        raise UserError("--label-delimiter: give the character between labels (e.g. '|')")
    if (text_column or "text") == (label_column or "label"):
        raise UserError(
            f"--text-column and --label-column name the same column {text_column or 'text'!r}"
        )
    outer = _git_checkout_around(directory)
    if outer is not None:
        raise UserError(
            f"{directory}: inside the git checkout {outer}; lttw init makes a git + DVC "
            "project of its own there: choose a folder outside it"
        )
    # checked before anything is written
    check = _check_new_data(data, text_column, label_column, label_delimiter)
    if check.folds_error:  # the pipeline's folds stage would stop on it
        raise DataError(f"{data}: {check.folds_error}")
    project = init_project(directory, data, text_column, label_column, label_delimiter, profile)
    from lttw.checks.dataset_tables import render

    render(check, console())
    for problem in check.problems:
        typer.echo(f"advice: {problem}")
    typer.echo(
        f"created {directory}: {project.data} (dvc add), dvc.yaml, params.yaml ({profile} "
        "profile)"
        + ("" if project.committed else "; not committed (git has no user.name / user.email)")
    )
    typer.echo(
        "next:\n"
        f"  cd {directory}\n"
        "  dvc repro                          # train and evaluate (metrics/summary.json)\n"
        '  lttw predict "a text to classify"  # the trained model answers\n'
        "  lttw evaluate FILE                 # its scores and pictures on labelled texts"
    )


def _git_checkout_around(directory: Path) -> str | None:
    """The top of the git checkout that ``directory`` would be made in, if any (lttw init
    would nest a second .git there)."""
    import subprocess

    folder = directory.resolve()
    while not folder.is_dir():
        folder = folder.parent
    done = subprocess.run(
        ["git", "-C", str(folder), "rev-parse", "--show-toplevel"],
        capture_output=True,
        text=True,
        timeout=30,
    )
    return done.stdout.strip() or None if done.returncode == 0 else None


def _check_new_data(
    data: Path, text_column: str | None, label_column: str | None, label_delimiter: str | None
):
    """``lttw data check`` of ``data`` with a new project's parameters (every row used)."""
    from lttw.checks.dataset import check_dataset

    if not data.exists():
        raise FileNotFoundError(2, "no such file or folder (--data)", str(data))
    settings = _new_project_settings(data)
    return check_dataset(settings, str(data), text_column, label_column, label_delimiter)


def _new_project_settings(data: Path):
    """lttw's default parameters as `lttw init` sets them for ``data``: every row, no
    separate predict sample."""
    from lttw.settings import Settings

    defaults = Settings()
    update = {"sampling": "all", "predict_size": 0, "root": str(data.parent)}
    return defaults.model_copy(update={"data": defaults.data.model_copy(update=update)})
