"""The ``lttw`` command line: what DVC does not do (predict, explain, check data, export,
report, experiment grids). A thin layer: each command parses its options and calls the library
(``batch_predict``, ``explain``, ``datacheck``, ``reporting``).

User errors print one line ``error: ...`` on stderr, from one place (``_Group.invoke``),
with an exit code that says whose fault it was (docs/your-own-data.md):

* 0: done; 1: an unexpected failure (a bug: a traceback);
* 2 (``EXIT_USAGE``): the command line is wrong (click's own usage errors, an unknown option,
  options that do not go together, an invalid parameter value) or a project cannot be made;
* 3 (``EXIT_BAD_INPUT``): the input is: a data file or its rows / columns (``DataError``), a
  file that cannot be read or parsed, a missing file or folder, a model folder that does not
  load;
* 130: interrupted (Ctrl-C).
"""

from __future__ import annotations

import json
import logging
from pathlib import Path
from typing import Annotated

import typer
from typer.core import TyperGroup

from lttw import layout
from lttw.choices import Backend, Device, Sampling
from lttw.console import console, print_predictions
from lttw.errors import DataError, UserError

EXIT_USAGE = 2  # click's own code for usage errors
EXIT_BAD_INPUT = 3
EXIT_USER_ERROR = EXIT_USAGE  # the name before exit codes were split (kept for importers)
#: where `lttw predict/explain/serve/export` find a model without --model: the final model
#: (the `final` stage, trained on every labelled row); where a project has none yet, the
#: model of the first fold in folds.run
FINAL_MODEL_DIR = Path("models/final")


class BadInputError(UserError):
    """The input (a model folder, a data file) is unusable: exit code ``EXIT_BAD_INPUT``."""


def exit_code(err: BaseException) -> int:
    """The exit code of a user error (see the module docstring)."""
    from lttw.io import UnreadableFileError

    missing = (FileNotFoundError, NotADirectoryError, IsADirectoryError)
    bad_input = (BadInputError, DataError, UnreadableFileError, *missing)
    return EXIT_BAD_INPUT if isinstance(err, bad_input) else EXIT_USAGE


def _message(err: BaseException) -> str:
    """An exception's message on one line (a missing file as 'PATH: reason')."""
    if isinstance(err, OSError) and err.filename is not None:
        return f"{err.filename}: {err.strerror or 'cannot be read'}"
    from lttw.errors import one_line

    return one_line(err)


class _Group(TyperGroup):
    """Turns user errors raised by any (sub)command into one line and exit code 2 (usage)
    or 3 (bad input): ``exit_code``."""

    def invoke(self, ctx):
        try:
            return super().invoke(ctx)
        except (UserError, FileNotFoundError, NotADirectoryError, IsADirectoryError) as err:
            typer.echo(f"error: {_message(err)}", err=True)
            raise typer.Exit(exit_code(err)) from None
        except KeyboardInterrupt:
            typer.echo("interrupted", err=True)
            raise typer.Exit(130) from None


def _typer(help_text: str) -> typer.Typer:
    return typer.Typer(
        cls=_Group,
        help=help_text,
        no_args_is_help=True,
        add_completion=False,
        pretty_exceptions_show_locals=False,
        rich_markup_mode="markdown",
        context_settings={"help_option_names": ["-h", "--help"]},
    )


app = _typer(
    "LTTW text classifier: predict, explain, check data, export, report, exp. "
    "Training and evaluation run through DVC (`dvc repro`)."
)
data_app = _typer("Check a dataset, list the known ones.")
app.add_typer(data_app, name="data")

Params = Annotated[Path, typer.Option("--params", help="parameters file (pipeline settings)")]
ModelDir = Annotated[
    Path | None,
    typer.Option(
        "--model",
        "-m",
        help="model folder [default: models/final, else models/fold_N, N = the first of "
        "folds.run in --params]",
    ),
]


def _examples(*commands: str) -> str:
    """A help epilog listing example command lines."""
    return "\n\n".join(["Examples:", *(f"`{c}`" for c in commands)])


def _model_dir(model: Path | None, params: Path) -> Path:
    if model is not None:
        return model
    if FINAL_MODEL_DIR.is_dir():
        return FINAL_MODEL_DIR
    from lttw.settings import read_settings

    return layout.model_dir(read_settings(params).folds.run[0])


def _load(model: Path | None, params: Path, device: str = "cpu", onnx: bool = False):
    """The model folder's ``Predictor``; with ``onnx``, run by onnxruntime where the folder
    holds ``model.onnx`` (``lttw export --onnx``). A folder that does not load is bad input
    (``BadInputError``, exit code 3)."""
    folder = _model_dir(model, params)
    try:
        if onnx:
            from lttw.serving.onnx_runtime import load_predictor

            return load_predictor(folder, device=device)
        from lttw.inference.predict import Predictor

        return Predictor.load(folder, device=device)
    except BadInputError:
        raise
    except UserError as err:
        raise BadInputError(str(err)) from None


def _version(show: bool) -> None:
    if show:
        from lttw import __version__

        typer.echo(f"lttw {__version__}")
        raise typer.Exit()


@app.callback()
def _main(
    version: Annotated[
        bool,
        typer.Option(
            "--version", "-V", callback=_version, is_eager=True, help="print the version and exit"
        ),
    ] = False,
) -> None:
    logging.basicConfig(level=logging.WARNING, format="%(levelname)s %(name)s: %(message)s")


@app.command(
    epilog=_examples(
        'lttw predict "Stocks rally as oil prices fall" "Late goal wins it"',
        "lttw predict --file news.txt --out predictions.parquet",
        "lttw predict --file news.csv --text-column body --out - --no-text",
        "cat texts.txt | lttw predict - --json",
    )
)
def predict(
    texts: Annotated[
        list[str] | None,
        typer.Argument(
            metavar="TEXT", help="texts to classify; - reads them from stdin, one per line"
        ),
    ] = None,
    file: Annotated[
        Path | None,
        typer.Option(
            "--file",
            "-f",
            help="texts to classify: .txt (one per line), .csv/.tsv or .parquet; "
            "read, predicted and written in chunks",
        ),
    ] = None,
    text_column: Annotated[
        str | None,
        typer.Option(
            help="text column of a CSV/parquet --file [default: text, or its only column]"
        ),
    ] = None,
    model: ModelDir = None,
    out: Annotated[
        str | None,
        typer.Option(
            "--out",
            "-o",
            help="write predictions to .csv/.tsv/.parquet (atomically), or - for "
            "CSV on stdout; columns text, label, prob and prob_CLASS per class",
        ),
    ] = None,
    no_text: Annotated[
        bool, typer.Option("--no-text", help="leave the text column out of --out")
    ] = False,
    force: Annotated[bool, typer.Option("--force", help="replace --out if it exists")] = False,
    max_chars: Annotated[
        int,
        typer.Option(
            min=1,
            help="characters per text, as `lttw serve --max-text-chars`: a longer text "
            "(or --file line / row) is an error naming it, or cut with --truncate; a .txt "
            "line is read in pieces of at most this many characters",
        ),
    ] = 10_000,
    truncate: Annotated[
        bool, typer.Option("--truncate", help="cut texts longer than --max-chars instead")
    ] = False,
    batch_size: Annotated[int, typer.Option(min=1, help="texts per forward pass")] = 64,
    device: Annotated[
        Device, typer.Option(help="where the model runs (auto: a GPU where there is one)")
    ] = "auto",
    as_json: Annotated[
        bool,
        typer.Option(
            "--json",
            help="JSON Lines on stdout, one object per text: text, label, prob, probs "
            "(every class's probability)",
        ),
    ] = False,
    params: Params = Path("params.yaml"),
) -> None:
    """Classify texts with a trained model: label and probability per text. A folder made by
    `lttw export --onnx` runs on onnxruntime (CPU)."""
    texts = _stdin_texts(texts)
    if as_json and (out is not None or file is not None):
        raise UserError("--json prints TEXT / stdin predictions; with --file use --out F.csv")
    if bool(texts) == (file is not None):
        raise UserError("give either TEXT arguments or --file PATH (one of the two)")
    if file is not None and out is None:
        raise UserError("--file needs --out F.csv|F.parquet (or --out - for CSV on stdout)")
    from lttw.inference.text_lines import LineCap

    cap = LineCap(max_chars, truncate)
    if texts:
        texts = [cap.apply(t, f"TEXT {i}") for i, t in enumerate(texts, 1)]
    if out is None:  # texts to the terminal: no tables library needed (start-up time)
        assert texts is not None  # no --file (checked above): TEXT arguments
        predictor = _load(model, params, device, onnx=True)
        probs = predictor.predict_proba(list(texts), batch_size)
        if as_json:
            _print_json_lines(list(texts), probs, predictor.classes)
            return
        best = probs.argmax(axis=1)
        print_predictions(
            list(texts),
            [predictor.classes[i] for i in best],
            probs[range(len(texts)), best].tolist(),
        )
        return
    from lttw.inference import batch_predict as bp

    bp.check_paths(file, out, force)
    predictor = _load(model, params, device, onnx=True)
    if file is not None:
        source = bp.open_source(file, text_column, cap)
        frames = bp.predict_chunks(predictor, source, batch_size, with_text=not no_text)
        rows = bp.write_frames(frames, out)
        if out != bp.STDOUT:
            typer.echo(f"wrote {rows} predictions to {out}", err=True)
        if cap.cut:
            typer.echo(f"cut {cap.cut} texts to --max-chars {max_chars}", err=True)
        return
    assert texts is not None  # no --file: TEXT arguments
    frame = bp.prediction_frame(
        list(texts),
        predictor.predict_proba(list(texts), batch_size),
        predictor.classes,
        with_text=not no_text,
    )
    bp.write_frames([frame], out)
    if out != bp.STDOUT:
        print_predictions(list(texts), frame["label"].tolist(), frame["prob"].tolist())


def _stdin_texts(texts: list[str] | None) -> list[str] | None:
    """TEXT arguments, or with the single argument ``-`` the non-blank lines of stdin."""
    if texts != ["-"]:
        return texts
    import sys

    lines = [line.rstrip("\r\n") for line in sys.stdin]
    read = [line for line in lines if line.strip()]
    if not read:
        raise BadInputError("stdin (TEXT -): no texts (one per line)")
    return read


def _print_json_lines(texts: list[str], probs, classes: list[str]) -> None:
    """One JSON object per text on stdout: text, label, prob and every class's prob."""
    best = probs.argmax(axis=1)
    for text, row, i in zip(texts, probs.tolist(), best.tolist()):
        record = {
            "text": text,
            "label": classes[i],
            "prob": row[i],
            "probs": dict(zip(classes, row)),
        }
        typer.echo(json.dumps(record, ensure_ascii=False))


@app.command(
    epilog=_examples(
        'lttw explain "Stocks rally as oil prices fall"',
        'lttw explain "Stocks rally as oil prices fall" --json',
    )
)
def explain(
    text: Annotated[str, typer.Argument(metavar="TEXT", help="the text to explain")],
    model: ModelDir = None,
    as_json: Annotated[bool, typer.Option("--json", help="print a JSON document")] = False,
    params: Params = Path("params.yaml"),
) -> None:
    """Why the model predicts what it does: the top-k / bottom-s words and their latent
    factors and class affinities, the probabilities, and [CLS]'s attention."""
    from lttw.inference.explain import explain as build
    from lttw.inference.explain import render

    doc = build(_load(model, params), text)
    if as_json:
        typer.echo(json.dumps(doc, indent=2, ensure_ascii=False))
    else:
        render(doc, console())


@data_app.command(
    "check",
    epilog=_examples(
        "lttw data check ag_news",
        "lttw data check reviews.csv --text-column review --label-column stars",
        "lttw data check questions.csv --sampling stratified",
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
    sampling: Annotated[
        Sampling | None,
        typer.Option(help="how samples are drawn [default: data.sampling in --params]"),
    ] = None,
    params: Params = Path("params.yaml"),
) -> None:
    """Validate a dataset and show what the `sample` stage would draw from it with the sizes
    in --params. Exit code 3 (bad data) when the pipeline would drop rows or cannot draw a
    size; the message then names every unmet size and sizes that fit together."""
    from lttw.checks.dataset import check_dataset, render
    from lttw.settings import read_settings

    settings = read_settings(params)
    # data.root as the pipeline reads it: relative to the project (the --params file's
    # folder), whatever the current folder; a name under it wins over a path here
    root = Path(params).parent / settings.data.root
    update: dict = {"root": str(root)}
    if sampling is not None:
        update["sampling"] = sampling
    settings = settings.model_copy(update={"data": settings.data.model_copy(update=update)})
    if (root / path).exists():
        path = str(root / path)
    check = check_dataset(settings, path, text_column, label_column)
    render(check, console())
    if check.problems:
        raise DataError(f"{len(check.problems)} problem(s): " + "; ".join(check.problems))


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


@app.command(
    epilog=_examples(
        "lttw init reviews --data reviews.csv --text-column review --label-column stars",
        "lttw init news --data news/",
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
    the pipeline (dvc.yaml) and its parameters (params.yaml: your columns, every row used),
    then check the data as `lttw data check` does. Next: `cd DIR && dvc repro`."""
    from lttw.project import init_project, upgrade_project

    if upgrade:
        if data is not None:
            raise UserError("--upgrade keeps the project's data: leave --data out")
        new = upgrade_project(directory)
        typer.echo(
            f"{directory}: dvc.yaml and lttw-version.json now for lttw {new['lttw']}; "
            "`dvc repro` reruns what the new code changes"
        )
        return
    if data is None:
        raise UserError("give --data FILE_OR_FOLDER (your labelled texts)")
    check = _check_new_data(data, text_column, label_column)  # before anything is written
    project = init_project(directory, data, text_column, label_column)
    from lttw.checks.dataset import render

    render(check, console())
    for problem in check.problems:
        typer.echo(f"advice: {problem}")
    typer.echo(
        f"created {directory}: {project.data} (dvc add), dvc.yaml, params.yaml"
        + ("" if project.committed else "; not committed (git has no user.name / user.email)")
    )
    typer.echo(
        "next:\n"
        f"  cd {directory}\n"
        "  dvc repro                          # train and evaluate (metrics/summary.json)\n"
        '  lttw predict "a text to classify"  # the trained model answers'
    )


def _check_new_data(data: Path, text_column: str | None, label_column: str | None):
    """``lttw data check`` of ``data`` with a new project's parameters (every row used)."""
    from lttw.checks.dataset import check_dataset
    from lttw.settings import Settings

    if not data.exists():
        raise FileNotFoundError(2, "no such file or folder (--data)", str(data))
    defaults = Settings()
    settings = defaults.model_copy(
        update={
            "data": defaults.data.model_copy(
                update={"sampling": "all", "predict_size": 0, "root": str(data.parent)}
            )
        }
    )
    return check_dataset(settings, str(data), text_column, label_column)


@app.command(
    epilog=_examples(
        "lttw export --model models/fold_0 --out exported/lttw-ag-news",
        "lttw export --model models/fold_0 --out exported/lttw-onnx --onnx",
        "lttw export --model models/fold_0 --out exported/lttw-int8 --int8 "
        "--check-file data/sample/test.parquet",
    )
)
def export(
    out: Annotated[Path, typer.Option("--out", "-o", help="the new self-contained folder")],
    model: ModelDir = None,
    force: Annotated[bool, typer.Option(help="replace --out if it exists")] = False,
    onnx: Annotated[
        bool,
        typer.Option(
            "--onnx",
            help="also write the classifier as model.onnx (encoder, factor fusion, "
            "attention, head; tokenising and the factor lookup stay in Python): `lttw predict` "
            "and `lttw serve` then run it on onnxruntime",
        ),
    ] = False,
    int8: Annotated[
        bool,
        typer.Option(
            "--int8",
            help="with --onnx (implied): int8 dynamic quantisation of the weights; "
            "checked by macro F1 on --check-file",
        ),
    ] = False,
    check_file: Annotated[
        Path | None,
        typer.Option(
            help="labelled held-out texts (.parquet/.csv, columns text and label) the ONNX "
            "export is checked on [default: data/sample/test.parquet where it exists]"
        ),
    ] = None,
    check_rows: Annotated[int, typer.Option(min=1, help="texts of --check-file used")] = 1000,
    max_f1_drop: Annotated[
        float,
        typer.Option(
            min=0.0, help="int8: the most macro F1 may fall below torch's on --check-file"
        ),
    ] = 0.005,
    params: Params = Path("params.yaml"),
) -> None:
    """Copy a model folder (the files its loader reads: config, weights, tokenizer, labels,
    lttw.json, factors/, and its pipeline metrics as metrics.json; nothing else) into a
    self-contained folder, atomically, with the sha256 of every file in its lttw.json
    (`lttw verify`), and check that it loads and predicts identically. With --onnx /
    --int8 also export the classifier to ONNX and check it against torch on held-out texts
    (fp32: the same label on every text; int8: macro F1 within --max-f1-drop); nothing is
    written when a check fails."""
    import numpy as np

    from lttw.inference.predict import Predictor
    from lttw.io import atomic_dir, write_json
    from lttw.models.folder_files import copy_loader_files, record_checksums
    from lttw.serving.info import METRICS_FILE, folder_metrics

    source = _model_dir(model, params)
    original = _load(source, params)  # also checks that the source is a model folder
    src, dst = source.resolve(), out.resolve()
    if dst == src or src in dst.parents or dst in src.parents:
        raise UserError(
            f"--out {out} must neither contain nor lie inside the model folder {source}"
        )
    if out.exists() and not force:
        raise UserError(f"{out}: exists; pass --force to replace it")
    if check_file is None and layout.sample_parquet("test").is_file():
        check_file = layout.sample_parquet("test")
    if int8 and check_file is None:
        raise UserError(
            "an int8 export is checked by macro F1 on labelled held-out texts: "
            "pass --check-file F.parquet|F.csv (columns text, label)"
        )
    if check_file is not None and not check_file.is_file():
        raise FileNotFoundError(2, "file not found", str(check_file))
    probe = ["lttw export check", "a second, longer probe text for the exported model"]
    with atomic_dir(out) as tmp:
        left_out = copy_loader_files(source, tmp)  # follows links: self-contained
        if left_out:
            typer.echo(
                f"left out {len(left_out)} files the loader does not read: "
                + ", ".join(left_out[:10])
                + (" ..." if len(left_out) > 10 else ""),
                err=True,
            )
        copy = Predictor.load(tmp)
        if not np.allclose(copy.predict_proba(probe), original.predict_proba(probe), atol=1e-6):
            raise UserError(f"{out}: the exported model predicts differently from {source}")
        metrics = folder_metrics(source)
        if metrics:
            write_json(tmp / METRICS_FILE, metrics)
        if onnx or int8:
            from lttw.serving.onnx_export import add_onnx

            add_onnx(
                tmp,
                original,
                int8,
                check_file,
                check_rows,
                max_f1_drop,
                say=lambda line: typer.echo(line, err=True),
            )
        record_checksums(tmp)  # last: the sha256 of every file of the export
    typer.echo(
        f"exported {source} to {out} (loads and predicts identically"
        + (f"; ONNX {'int8' if int8 else 'fp32'} checked)" if onnx or int8 else ")")
    )


@app.command(epilog=_examples("lttw verify models/fold_0", "lttw verify exported/lttw-ag-news"))
def verify(
    folder: Annotated[Path, typer.Argument(metavar="DIR", help="a model folder")],
) -> None:
    """Check a model folder's files against the sha256 checksums recorded in its lttw.json
    when it was written (by the train stage or `lttw export`). Exit 0: every file matches;
    3: a file is missing, changed or unrecorded (one `error:` line each); 1: no checksums
    recorded (a folder written before lttw recorded them; `lttw export` writes a copy that
    has them)."""
    from lttw.models.bundle import META, read_model_meta
    from lttw.models.folder_files import verify as check_files

    if not (folder / META).is_file():
        raise UserError(f"{folder}: not a trained model folder (no {META})")
    meta, _ = read_model_meta(folder)
    found = check_files(folder, meta)
    for problem in found.problems:
        typer.echo(f"error: {problem}", err=True)
    if found.problems:
        raise typer.Exit(EXIT_BAD_INPUT)
    ignored = (
        f"; {len(found.ignored)} files the loader does not read, not checked: "
        + ", ".join(found.ignored[:10])
        if found.ignored
        else ""
    )
    if not found.recorded:
        typer.echo(
            f"{folder}: no checksums recorded (written before lttw recorded them); the "
            f"files it needs are present{ignored}"
        )
        raise typer.Exit(1)
    typer.echo(f"{folder}: {found.checked} files match their recorded sha256{ignored}")


@app.command(
    epilog=_examples(
        "lttw serve --model models/fold_0",
        "lttw serve --model exported/lttw-int8 --port 8080 --max-batch 128",
        "curl -s localhost:8000/predict -H 'content-type: application/json' "
        '-d \'{"texts": ["Stocks rally as oil prices fall"], "top_k": 2}\'',
    )
)
def serve(
    model: ModelDir = None,
    host: Annotated[
        str,
        typer.Option(
            help="address to listen on (0.0.0.0: every network interface; think before exposing it)"
        ),
    ] = "127.0.0.1",
    port: Annotated[int, typer.Option(min=0, max=65535, help="TCP port")] = 8000,
    backend: Annotated[
        Backend,
        typer.Option(
            help="auto: onnxruntime where the folder holds model.onnx (`lttw export --onnx`), "
            "else torch"
        ),
    ] = "auto",
    threads: Annotated[
        int | None,
        typer.Option(
            min=1, help="CPU threads of a forward pass [default: the CPUs this process may use]"
        ),
    ] = None,
    max_batch: Annotated[
        int, typer.Option(min=1, help="texts gathered from concurrent requests into one batch")
    ] = 64,
    forward_batch: Annotated[
        int,
        typer.Option(
            min=1,
            help="texts per forward pass: a batch runs shortest first in passes of this "
            "many, each padded only to its own longest text",
        ),
    ] = 16,
    max_wait_ms: Annotated[
        float,
        typer.Option(min=0.0, help="how long a request waits for others to share its forward pass"),
    ] = 5.0,
    max_texts: Annotated[int, typer.Option(min=1, help="texts per request (more: 422)")] = 256,
    max_text_chars: Annotated[
        int, typer.Option(min=1, help="characters per text (more: 422)")
    ] = 10_000,
    max_body_bytes: Annotated[
        int, typer.Option(min=1, help="bytes per request body (more: 413)")
    ] = 4 * 1024 * 1024,
    max_queue_texts: Annotated[
        int,
        typer.Option(
            min=1, help="texts waiting for a forward pass, all requests (more: 503 + Retry-After)"
        ),
    ] = 1024,
    request_timeout: Annotated[
        float,
        typer.Option(min=0.001, help="seconds from a request's arrival to its answer (then 504)"),
    ] = 30.0,
    shutdown_timeout: Annotated[
        float,
        typer.Option(
            min=0.0,
            help="on SIGTERM / Ctrl-C, seconds to finish queued and running requests (then 503)",
        ),
    ] = 20.0,
    max_header_bytes: Annotated[
        int,
        typer.Option(min=1024, help="bytes of request line and headers (more: 431, closed)"),
    ] = 16 * 1024,
    header_timeout: Annotated[
        float,
        typer.Option(min=0.001, help="seconds to receive request line and headers (then 408)"),
    ] = 10.0,
    body_timeout: Annotated[
        float, typer.Option(min=0.001, help="seconds to receive a request body (then 408)")
    ] = 30.0,
    keep_alive: Annotated[
        int, typer.Option(min=1, help="seconds an idle keep-alive connection stays open")
    ] = 5,
    max_connections: Annotated[
        int, typer.Option(min=1, help="open connections (more: 503, closed at once)")
    ] = 128,
    api_key: Annotated[
        str | None,
        typer.Option(
            envvar="LTTW_API_KEY",
            show_envvar=True,
            help="a token every request but GET /health must send as 'Authorization: Bearer "
            "KEY' (else 401) [default: none needed]",
        ),
    ] = None,
    allowed_host: Annotated[
        list[str] | None,
        typer.Option(
            help="a Host header name the server answers to (repeat it; a name starting with "
            "'\\*.' also matches its subdomains, a lone '\\*' any Host); others get 400 "
            "[default: 127.0.0.1, localhost, ::1 on a loopback address; needed on any other]"
        ),
    ] = None,
    cors_origin: Annotated[
        list[str] | None,
        typer.Option(
            help="a browser origin allowed to call cross-origin (repeat it) [default: CORS off]"
        ),
    ] = None,
    access_log: Annotated[bool, typer.Option(help="log one line per request")] = False,
    params: Params = Path("params.yaml"),
) -> None:
    """Serve a model folder over HTTP (FastAPI + uvicorn): POST /predict {"texts": [...]} or
    {"text": "..."} (optional "top_k") answers labels and probabilities in the order given;
    GET /health; GET /info (labels, variant, encoder, word splitting, metrics, limits, access).
    Concurrent requests share forward passes (micro-batching). Every error is one line of
    JSON; every limit is an option below (docs/serving.md, "Limits and security").
    SIGTERM / Ctrl-C: stops accepting, finishes what it can within --shutdown-timeout, exits."""
    from lttw.serving.onnx_runtime import backend_name, load_predictor
    from lttw.serving.security import LOOPBACK_HOSTS, Access, is_loopback
    from lttw.serving.server import Limits
    from lttw.serving.server import serve as run_server

    logging.getLogger("lttw.serving").setLevel(logging.INFO)
    if not allowed_host and not is_loopback(host):
        raise UserError(
            f"--host {host} reaches beyond this machine: name the host names clients use with "
            "--allowed-host NAME (repeatable; '*' allows any Host header)"
        )
    access = Access(
        allowed_hosts=tuple(allowed_host or LOOPBACK_HOSTS),
        api_key=api_key or None,
        cors_origins=tuple(cors_origin or ()),
    )
    folder = _model_dir(model, params)
    try:
        predictor = load_predictor(folder, threads=threads, backend=backend)
    except UserError as err:
        raise (err if "backend" in str(err) else BadInputError(str(err))) from None
    limits = Limits(
        max_texts=max_texts,
        max_text_chars=max_text_chars,
        max_body_bytes=max_body_bytes,
        max_batch=max_batch,
        max_wait_ms=max_wait_ms,
        forward_batch=forward_batch,
        max_queue_texts=max_queue_texts,
        request_timeout_s=request_timeout,
        shutdown_timeout_s=shutdown_timeout,
        max_header_bytes=max_header_bytes,
        header_timeout_s=header_timeout,
        body_timeout_s=body_timeout,
        keep_alive_s=keep_alive,
        max_connections=max_connections,
    )
    name = backend_name(predictor)
    typer.echo(
        f"serving {folder} ({predictor.meta['variant']}, {name}, "
        f"{len(predictor.classes)} labels) on http://{host}:{port}; limits: "
        f"{max_texts} texts of <= {max_text_chars} characters per request, batches of "
        f"<= {max_batch} texts in passes of {forward_batch}, waiting <= {max_wait_ms:g} ms; "
        f"queue <= {max_queue_texts} texts, answers within {request_timeout:g} s, "
        f"<= {max_connections} connections; token: {'yes' if access.api_key else 'no'}, "
        f"hosts: {', '.join(access.allowed_hosts)}, "
        f"CORS: {', '.join(access.cors_origins) or 'off'}",
        err=True,
    )
    run_server(predictor, host, port, limits, name, access_log, access=access)


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
    from lttw.io import atomic_path
    from lttw.reporting.experiments import experiment_runs
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


def _grid(name: str, grids: Path, params: Path, frozen: bool = False, extra: tuple = ()):
    """The grid ``name``, every cell (with ``extra``) validated against ``params``."""
    from lttw.reporting.grids import find_grid, full_params, validate_grid

    base = full_params(params)
    grid = find_grid(name, grids, int(base["folds"]["n_folds"]))
    validate_grid(grid, base, extra)
    return grid.frozen() if frozen else grid


@exp_app.command("list", epilog=_examples("lttw exp list"))
def exp_list(grids: Grids = Path("experiments"), cells: Cells = Path("evidence/runs")) -> None:
    """Each grid: its name, cells written / cells, and the first sentence of its description."""
    from lttw.reporting.cells import progress
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
        "lttw exp run paper --direct --jobs 3 --budget 540 -S model.encoder=.carry/minilm",
    ),
)
def exp_run(
    name: Annotated[str, typer.Argument(help="a grid (lttw exp list) or a grid file")],
    only: Annotated[
        list[str] | None, typer.Option("--only", help="only this cell (its key); repeatable")
    ] = None,
    assignments: Annotated[
        list[str] | None,
        typer.Option("-S", "--set-param", help="another parameter for every cell, as dvc's -S"),
    ] = None,
    frozen: Annotated[
        bool,
        typer.Option(
            "--frozen", help="train.freeze_encoder: true, cells NAME-frozen (not the paper's model)"
        ),
    ] = False,
    queue: Annotated[
        bool, typer.Option("--queue", help="DVC: only queue the cells (`dvc queue start` later)")
    ] = False,
    direct: Annotated[
        bool,
        typer.Option(
            "--direct", help="run the stages without dvc (default where dvc is not installed)"
        ),
    ] = False,
    jobs: Annotated[int, typer.Option("--jobs", "-j", help="cells at a time (direct)")] = 1,
    budget: Annotated[
        float | None, typer.Option("--budget", help="direct: stop cleanly after SECONDS")
    ] = None,
    grids: Grids = Path("experiments"),
    cells: Cells = Path("evidence/runs"),
    params: Params = Path("params.yaml"),
) -> None:
    """Run a grid's cells not written yet: through DVC's queue (one `dvc exp run --queue -n
    CELL -S ...` each, then `dvc exp run --run-all` and `lttw exp collect`), or directly
    (`--direct`: the stage scripts, --jobs at a time, within --budget; rerun to resume).
    The cells land in evidence/runs/<cell>/; `lttw report` renders them."""
    import importlib.util

    extra = list(assignments or [])
    grid = _grid(name, grids, params, frozen, tuple(extra))
    if direct or importlib.util.find_spec("dvc") is None:
        if queue:
            raise UserError("--queue needs dvc; --direct runs the cells now")
        from lttw.reporting.grid_window import describe, run_window

        outcome = run_window(
            str(grid.path),
            jobs,
            budget,
            only,
            extra,
            frozen,
            runs_dir=cells.resolve(),
            log=lambda line: typer.echo(line),
        )
        typer.echo(describe(outcome))
        if outcome.failed:
            raise typer.Exit(1)
        return
    from lttw.reporting.grid_queue import (
        absolute_root,
        collect_grids,
        plan_queue,
        queued_or_done,
        run_commands,
    )
    from lttw.reporting.study import collected
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

    from lttw.reporting.grid_queue import cell_states, queued_or_done
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
    from lttw.reporting.grid_queue import collect_grids
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


if __name__ == "__main__":
    app()
