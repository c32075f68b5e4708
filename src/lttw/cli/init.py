"""`lttw init`: a DVC project of your own (``lttw.project.create``), its parameters fitted to the
data's size (``lttw.profiles.fit_to_data``) and set by ``-S`` / ``--params``."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Annotated

import typer

from lttw.choices import Profile
from lttw.cli.app import app, examples
from lttw.console import console
from lttw.errors import DataError, UserError

#: the example CSV of ``--example`` (AG News rows, 100 a class; the tutorial uses it)
EXAMPLE = Path(__file__).resolve().parents[1] / "examples" / "news.csv"
#: what ``lttw init`` sets itself from ``--data`` and the column options
OWN = ("data.dataset", "data.root")


@app.command(
    epilog=examples(
        "lttw init reviews --data reviews.csv --text-column review --label-column stars",
        "lttw init demo --example",
        "lttw init first-try --data reviews.csv --profile quick",
        "lttw init news --data news/ -S model.k=20 -S train.epochs=3",
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
    example: Annotated[
        bool,
        typer.Option(
            "--example",
            help="the example CSV instead of --data: 400 news texts, 4 topics (the tutorial's)",
        ),
    ] = False,
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
    set_params: Annotated[
        list[str] | None,
        typer.Option(
            "-S",
            "--set-param",
            metavar="KEY=VALUE",
            help="a parameter of params.yaml, as dvc's -S (e.g. -S model.k=20); repeatable; "
            "wins over the profile and the values fitted to the data",
        ),
    ] = None,
    params_file: Annotated[
        Path | None,
        typer.Option(
            "--params",
            metavar="FILE",
            help="a YAML file of parameters (as params.yaml), set as -S sets them",
        ),
    ] = None,
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
    the --profile's values; for a small dataset, folds, training and variant fitted to it;
    then -S / --params), lttw tune's search spaces, a .gitignore of every pipeline output,
    then check the data as `lttw data check` does. Next: `cd DIR && dvc repro`."""
    from lttw.project.create import init_project, upgrade_project

    if upgrade:
        if data is not None or example:
            raise UserError("--upgrade keeps the project's data: leave --data out")
        if profile != "default" or set_params or params_file is not None:
            raise UserError("--upgrade keeps the project's params.yaml: leave --profile out")
        new = upgrade_project(directory)
        typer.echo(
            f"{directory}: dvc.yaml and lttw-version.json now for lttw {new['lttw']}; "
            "`dvc repro` reruns what the new code changes"
        )
        return
    if example:
        if data is not None:
            raise UserError("--example is the data: leave --data out")
        data = EXAMPLE
    if data is None:
        raise UserError("give --data FILE_OR_FOLDER (your labelled texts), or --example")
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
    given = _given_values(set_params or [], params_file)
    columns = (text_column, label_column, label_delimiter)
    # checked before anything is written
    check = _check_new_data(data, columns, profile, given)
    fitted = _fitted(check, given, profile)
    if fitted:
        check = _check_new_data(data, columns, profile, given + [v[:2] for v in fitted])
    if check.folds_error:  # the pipeline's folds stage would stop on it
        raise DataError(f"{data}: {check.folds_error}")
    values = [(k, v, f"fitted: {why}") for k, v, why in fitted]
    values += [(k, v, "lttw init -S / --params") for k, v in given]
    project = init_project(directory, data, *columns, profile, values)
    from lttw.checks.dataset_tables import render

    render(check, console())
    for problem in check.problems:
        typer.echo(f"advice: {problem}")
    if fitted:
        rows = len(check.dataset.texts)
        typer.echo(f"a small dataset ({rows} rows): params.yaml fitted to it")
        for key, value, why in fitted:
            shown = json.dumps(value) if isinstance(value, bool) else value  # as -S takes it
            typer.echo(f"  {key}={shown}: {why}")
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


def _given_values(assignments: list[str], params_file: Path | None) -> list[tuple[str, object]]:
    """The parameters of ``--params FILE`` then ``-S key=value``, as (dotted name, value);
    an unknown parameter or a value that is not YAML is a one-line error."""
    from lttw.experiments.assignments import apply_assignment
    from lttw.io import read_yaml
    from lttw.settings import Settings

    given: dict[str, object] = {}
    if params_file is not None:
        if not params_file.is_file():
            raise FileNotFoundError(2, "no such file (--params)", str(params_file))
        raw = read_yaml(params_file) or {}
        if not isinstance(raw, dict):
            raise UserError(f"{params_file}: expected a mapping of parameter groups")
        for group, value in raw.items():
            if isinstance(value, dict):
                given.update({f"{group}.{name}": v for name, v in value.items()})
            else:
                given[str(group)] = value
    base = Settings().model_dump(mode="json")
    for assignment in assignments:
        apply_assignment(base, assignment)  # checks the key exists and parses the value
        key = assignment.partition("=")[0]
        group, _, name = key.partition(".")
        given[key] = base[group][name] if name else base[group]
    own = [key for key in given if key in OWN]
    if own:
        raise UserError(f"{own[0]}: lttw init sets it from --data; leave it out")
    return list(given.items())


def _check_new_data(
    data: Path,
    columns: tuple[str | None, str | None, str | None],
    profile: str,
    values: list[tuple[str, object]],
):
    """``lttw data check`` of ``data`` with the parameters the new project gets (every row
    used, the profile's, then ``values``); an invalid value is a one-line error."""
    from lttw.checks.dataset import check_dataset
    from lttw.experiments.assignments import set_param
    from lttw.profiles import PROFILES
    from lttw.settings import Settings
    from lttw.settings.reading import settings_from_dict

    if not data.exists():
        raise FileNotFoundError(2, "no such file or folder (--data)", str(data))
    params = Settings().model_dump(mode="json")
    params["data"].update(sampling="all", predict_size=0, root=str(data.parent))
    for key, value in [*PROFILES[profile].items(), *values]:
        set_param(params, key, value, where="-S / --params:")
    settings = settings_from_dict(params, source="lttw init -S / --params")
    return check_dataset(settings, str(data), *columns)


def _fitted(check, given: list[tuple[str, object]], profile: str) -> list[tuple[str, object, str]]:
    """``lttw.profiles.fit_to_data`` for the checked data (single-label only), less what
    ``given`` or the chosen ``profile`` sets (the quick profile's one short epoch stays;
    ``folds.run``: every fold of a given ``folds.n_folds``)."""
    from lttw.profiles import PROFILES, fit_to_data

    dataset = check.dataset
    if dataset.multi_label:
        return []
    present = set(dataset.splits.tolist())
    test_split = check.settings.use_splits and {"train", "test"} <= present
    labels = dataset.labels[dataset.rows_of("train")] if test_split else dataset.labels
    counts = [int((labels == c).sum()) for c in range(len(dataset.classes))]
    chosen = {k: v for k, v in PROFILES[profile].items() if k != "folds.run"} | dict(given)
    fitted = [item for item in fit_to_data(counts, test_split) if item[0] not in chosen]
    if "folds.n_folds" in chosen:  # every fold of the user's count
        runs = list(range(int(chosen["folds.n_folds"])))  # type: ignore[call-overload]
        fitted = [(k, runs if k == "folds.run" else v, why) for k, v, why in fitted]
    return fitted


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
