"""The ``lttw`` command line: what DVC does not do (predict, explain, check data, export,
report, sweeps). A thin layer: each command parses its options and calls the library
(``batch_predict``, ``explain``, ``datacheck``, ``report``, ``sweeps``).

User errors (``UserError`` and its subclasses, a missing user file) print one line
``error: ...`` on stderr and exit with code 2, from one place: ``_Group.invoke``.
"""

from __future__ import annotations

import json
import logging
import shutil
from pathlib import Path
from typing import Annotated, Optional

import typer
from typer.core import TyperGroup

from lttw import layout
from lttw.choices import Device, Sampling
from lttw.console import console, print_predictions
from lttw.errors import UserError

EXIT_USER_ERROR = 2



def _message(err: BaseException) -> str:
    """An exception's message on one line (a missing file as 'PATH: reason')."""
    if isinstance(err, OSError) and err.filename is not None:
        return f"{err.filename}: {err.strerror or 'cannot be read'}"
    from lttw.errors import one_line

    return one_line(err)


class _Group(TyperGroup):
    """Turns user errors raised by any (sub)command into one line and exit code 2."""

    def invoke(self, ctx):
        try:
            return super().invoke(ctx)
        except (UserError, FileNotFoundError, NotADirectoryError, IsADirectoryError) as err:
            typer.echo(f"error: {_message(err)}", err=True)
            raise typer.Exit(EXIT_USER_ERROR) from None
        except KeyboardInterrupt:
            typer.echo("interrupted", err=True)
            raise typer.Exit(130) from None


def _typer(help_text: str) -> typer.Typer:
    return typer.Typer(cls=_Group, help=help_text, no_args_is_help=True, add_completion=False,
                       pretty_exceptions_show_locals=False, rich_markup_mode="markdown")


app = _typer("LTTW text classifier: predict, explain, check data, export, report, sweep. "
             "Training and evaluation run through DVC (`dvc repro`).")
data_app = _typer("Check a dataset, list the known ones.")
app.add_typer(data_app, name="data")

Params = Annotated[Path, typer.Option("--params", help="parameters file (pipeline settings)")]
ModelDir = Annotated[Optional[Path], typer.Option(
    "--model", "-m",
    help="model folder [default: models/fold_N, N = the first of folds.run in --params]")]


def _examples(*commands: str) -> str:
    """A help epilog listing example command lines."""
    return "\n\n".join(["Examples:", *(f"`{c}`" for c in commands)])


def _model_dir(model: Path | None, params: Path) -> Path:
    if model is not None:
        return model
    from lttw.settings import read_settings

    return layout.model_dir(read_settings(params).folds.run[0])


def _load(model: Path | None, params: Path, device: str = "cpu"):
    from lttw.inference.predict import Predictor

    return Predictor.load(_model_dir(model, params), device=device)


@app.callback()
def _main() -> None:
    logging.basicConfig(level=logging.WARNING, format="%(levelname)s %(name)s: %(message)s")


@app.command(epilog=_examples('lttw predict "Stocks rally as oil prices fall" "Late goal wins it"',
                             "lttw predict --file news.txt --out predictions.parquet",
                             "lttw predict --file news.csv --text-column body --out - --no-text"))
def predict(
    texts: Annotated[Optional[list[str]], typer.Argument(metavar="TEXT",
                                                         help="texts to classify")] = None,
    file: Annotated[Optional[Path], typer.Option(
        "--file", "-f", help="texts to classify: .txt (one per line), .csv/.tsv or .parquet; "
        "read, predicted and written in chunks")] = None,
    text_column: Annotated[Optional[str], typer.Option(
        help="text column of a CSV/parquet --file [default: text, or its only column]")] = None,
    model: ModelDir = None,
    out: Annotated[Optional[str], typer.Option(
        "--out", "-o", help="write predictions to .csv/.tsv/.parquet (atomically), or - for "
        "CSV on stdout; columns text, label, prob and prob_CLASS per class")] = None,
    no_text: Annotated[bool, typer.Option("--no-text", help="leave the text column out of "
                                          "--out")] = False,
    force: Annotated[bool, typer.Option("--force", help="replace --out if it exists")] = False,
    batch_size: Annotated[int, typer.Option(min=1, help="texts per forward pass")] = 64,
    device: Annotated[Device, typer.Option(help="where the model runs")] = "cpu",
    params: Params = Path("params.yaml"),
) -> None:
    """Classify texts with a trained model: label and probability per text."""
    if bool(texts) == (file is not None):
        raise UserError("give either TEXT arguments or --file PATH (one of the two)")
    if file is not None and out is None:
        raise UserError("--file needs --out F.csv|F.parquet (or --out - for CSV on stdout)")
    if out is None:  # texts to the terminal: no tables library needed (start-up time)
        predictor = _load(model, params, device)
        probs = predictor.predict_proba(list(texts), batch_size)
        best = probs.argmax(axis=1)
        print_predictions(list(texts), [predictor.classes[i] for i in best],
                           probs[range(len(texts)), best].tolist())
        return
    from lttw.inference import batch_predict as bp

    bp.check_paths(file, out, force)
    predictor = _load(model, params, device)
    if file is not None:
        source = bp.open_source(file, text_column)
        frames = bp.predict_chunks(predictor, source, batch_size, with_text=not no_text)
        rows = bp.write_frames(frames, out)
        if out != bp.STDOUT:
            typer.echo(f"wrote {rows} predictions to {out}", err=True)
        return
    frame = bp.prediction_frame(list(texts), predictor.predict_proba(list(texts), batch_size),
                                predictor.classes, with_text=not no_text)
    bp.write_frames([frame], out)
    if out != bp.STDOUT:
        print_predictions(list(texts), frame["label"].tolist(), frame["prob"].tolist())


@app.command(epilog=_examples('lttw explain "Stocks rally as oil prices fall"',
                             'lttw explain "Stocks rally as oil prices fall" --json'))
def explain(
    text: Annotated[str, typer.Argument(metavar="TEXT", help="the text to explain")],
    model: ModelDir = None,
    as_json: Annotated[bool, typer.Option("--json", help="print a JSON document")] = False,
    params: Params = Path("params.yaml"),
) -> None:
    """Why the model predicts what it does: the top-k / bottom-s words and their latent
    factors and class affinities, the probabilities, and [CLS]'s attention."""
    from lttw.inference.explain import explain as build, render

    doc = build(_load(model, params), text)
    if as_json:
        typer.echo(json.dumps(doc, indent=2, ensure_ascii=False))
    else:
        render(doc, console())



@data_app.command("check", epilog=_examples(
    "lttw data check ag_news",
    "lttw data check reviews.csv --text-column review --label-column stars",
    "lttw data check questions.csv --sampling stratified"))
def data_check(
    path: Annotated[str, typer.Argument(
        metavar="PATH",
        help="a CSV/TSV/parquet file, a folder of them, or a dataset name under data.root")],
    text_column: Annotated[Optional[str], typer.Option(help="text column")] = None,
    label_column: Annotated[Optional[str], typer.Option(help="label column")] = None,
    sampling: Annotated[Optional[Sampling], typer.Option(
        help="how samples are drawn [default: data.sampling in --params]")] = None,
    params: Params = Path("params.yaml"),
) -> None:
    """Validate a dataset and show what the `sample` stage would draw from it with the sizes
    in --params. Exit code 2 when the pipeline would drop rows or cannot draw a size; the
    message then names every unmet size and sizes that fit together."""
    from lttw.checks.dataset import check_dataset, render
    from lttw.settings import read_settings

    settings = read_settings(params)
    if sampling is not None:
        settings = settings.model_copy(update={"data": settings.data.model_copy(
            update={"sampling": sampling})})
    check = check_dataset(settings, path, text_column, label_column)
    render(check, console())
    if check.problems:
        raise UserError(f"{len(check.problems)} problem(s): " + "; ".join(check.problems))


@data_app.command("list", epilog=_examples("lttw data list", "lttw data list --json"))
def data_list(
    as_json: Annotated[bool, typer.Option("--json", help="print JSON")] = False,
    params: Params = Path("params.yaml"),
) -> None:
    """The known datasets: local copy under data.root (present / missing, rows per split,
    complete or partial) and the Hugging Face dataset read when online."""
    from lttw.checks.dataset import list_datasets, render_list
    from lttw.settings import read_settings

    root = read_settings(params).data.root
    rows = list_datasets(root)
    if as_json:
        typer.echo(json.dumps(rows, indent=2))
    else:
        render_list(rows, root, console())


@app.command(epilog=_examples("lttw export --model models/fold_0 --out exported/lttw-ag-news"))
def export(
    out: Annotated[Path, typer.Option("--out", "-o", help="the new self-contained folder")],
    model: ModelDir = None,
    force: Annotated[bool, typer.Option(help="replace --out if it exists")] = False,
    params: Params = Path("params.yaml"),
) -> None:
    """Copy a model folder (config, weights, tokenizer, labels, lttw.json, factors/) into a
    self-contained folder, atomically, and check that it loads and predicts identically."""
    import numpy as np

    from lttw.io import atomic_dir
    from lttw.inference.predict import Predictor

    source = _model_dir(model, params)
    original = Predictor.load(source)  # also checks that the source is a model folder
    src, dst = source.resolve(), out.resolve()
    if dst == src or src in dst.parents or dst in src.parents:
        raise UserError(f"--out {out} must neither contain nor lie inside the model folder "
                        f"{source}")
    if out.exists() and not force:
        raise UserError(f"{out}: exists; pass --force to replace it")
    probe = ["lttw export check", "a second, longer probe text for the exported model"]
    with atomic_dir(out) as tmp:
        shutil.copytree(source, tmp, dirs_exist_ok=True)  # follows links: self-contained
        copy = Predictor.load(tmp)
        if not np.allclose(copy.predict_proba(probe), original.predict_proba(probe), atol=1e-6):
            raise UserError(f"{out}: the exported model predicts differently from {source}")
    typer.echo(f"exported {source} to {out} (loads and predicts identically)")


@app.command(epilog=_examples("lttw report",
                             "lttw report --all-commits --out report.md",
                             "lttw report --no-experiments --runs runs/encoder --runs runs/lttw-m"))
def report(
    out: Annotated[Path, typer.Option("--out", "-o", help="markdown file")] = layout.REPORT_MD,
    runs: Annotated[Optional[list[Path]], typer.Option(
        "--runs", help="extra run folder (summary.json + folds/fold_*.json [+ params.yaml]); "
        "repeatable")] = None,
    experiments: Annotated[bool, typer.Option(
        help="read the DVC experiments of the current commit (`dvc exp show --json`)")] = True,
    all_commits: Annotated[bool, typer.Option(
        "--all-commits", "-A", help="the experiments of every commit, not only the current "
        "one's")] = False,
    params: Params = Path("params.yaml"),
) -> None:
    """Write a markdown report from the metrics of the workspace (metrics/), of every DVC
    experiment and of extra run folders: macro P / R / F1 per dataset and variant next to
    the paper's, and paired tests; then each paper sweep that has experiments (`lttw sweep`)
    as the paper's table."""
    from lttw.io import atomic_path
    from lttw.reporting.experiments import experiment_runs
    from lttw.reporting.report import collect_runs, render
    from lttw.reporting.sweep_report import sweep_sections

    exps = experiment_runs(".", all_commits) if experiments else []
    text = render(collect_runs(layout.METRICS_DIR, params, list(runs or []), exps))
    text += "".join(f"{line}\n" for line in sweep_sections(exps))
    with atomic_path(out) as tmp:
        tmp.write_text(text, encoding="utf-8")
    typer.echo(f"wrote {out}")


@app.command(epilog=_examples(
    "lttw sweep table7", "lttw sweep table8-K --frozen -S 'folds.run=[0,1,2,3,4]'",
    "lttw sweep table7 --only k10s10 --only k5s5 --no-run && dvc queue start"))
def sweep(
    name: Annotated[str, typer.Argument(help="table6 | table7 | table8-depth | table8-K | "
                                        "table8-batch | table8-lr (the paper's Tables 6-8)")],
    frozen: Annotated[bool, typer.Option(
        "--frozen", help="train.freeze_encoder: true (the encoder's states cached once; only "
        "the new layers train: fast, and not the paper's model)")] = False,
    assignments: Annotated[Optional[list[str]], typer.Option(
        "-S", "--set-param", help="another parameter for every setting, as dvc's -S; "
        "repeatable")] = None,
    only: Annotated[Optional[list[str]], typer.Option(
        "--only", help="only this setting (its key, e.g. k10s10); repeatable")] = None,
    run: Annotated[bool, typer.Option(
        help="run the queue (`dvc exp run --run-all`) after queueing")] = True,
    params: Params = Path("params.yaml"),
) -> None:
    """Queue one DVC experiment per setting of a paper sweep (`dvc exp run --queue -n
    NAME-KEY[-frozen] -S ...`, all on this commit's samples, folds and factors) and run
    them; then `lttw report` renders the sweep next to the paper's table."""
    from lttw.reporting.sweeps import run_commands, sweep_commands
    from lttw.settings import read_settings

    import os

    # as written when absolute (the same parameter value: `sample` stays cached); else made
    # absolute without resolving symbolic links, which would change it just the same
    root = read_settings(params).data.root
    root = root if os.path.isabs(root) else os.path.abspath(root)
    commands = sweep_commands(name, frozen, list(assignments or []), only, run, root)
    run_commands(commands)
    typer.echo(f"{len(commands) - run} experiments of {name} "
               + ("ran; `lttw report` renders them" if run else "queued"))


if __name__ == "__main__":
    app()
