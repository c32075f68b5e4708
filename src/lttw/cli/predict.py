"""`lttw predict`: a trained model's answers for texts."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Annotated

import typer

from lttw.choices import Device, Engine
from lttw.cli.app import (
    BadInputError,
    ModelDir,
    Params,
    Revision,
    app,
    examples,
    model_folder,
    open_model,
    project_columns,
    utf8_argument,
)
from lttw.console import print_answers
from lttw.errors import UserError


@app.command(
    epilog=examples(
        'lttw predict "Stocks rally as oil prices fall" "Late goal wins it"',
        "lttw predict --file news.txt --out predictions.parquet",
        "lttw predict --file news.csv --text-column body --out - --no-text",
        "lttw predict --file news.csv --keep id --out predictions.csv --chunk",
        "cat texts.txt | lttw predict - --json",
        'lttw predict "Late goal wins it" --top-k 3 --min-prob 0.6',
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
            help="text column of a CSV/parquet --file [default: the project's "
            "data.text_column where the file has it, else text, else its only column]"
        ),
    ] = None,
    keep: Annotated[
        str | None,
        typer.Option(
            "--keep",
            metavar="COLS",
            help="columns of a CSV/parquet --file written beside the predictions, "
            "comma-separated; '' for none [default: every column but the text]",
        ),
    ] = None,
    chunk: Annotated[
        bool,
        typer.Option(
            "--chunk",
            help="read texts longer than the model's max_len whole, in sliding windows "
            "(probabilities averaged); without it they are cut to their start (a warning "
            "counts them)",
        ),
    ] = False,
    model: ModelDir = None,
    revision: Revision = None,
    out: Annotated[
        str | None,
        typer.Option(
            "--out",
            "-o",
            help="write predictions to .csv/.tsv/.parquet (atomically), or - for "
            "CSV on stdout; columns text, label, prob (multi-label: labels, joined by | in "
            "CSV), top_I and top_I_prob with --top-k, and prob_CLASS per class",
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
            help="JSON Lines on stdout, one object per text: text, label (null below "
            "--min-prob), prob, probs (every class's probability); multi-label: labels "
            "(a list of {label, prob}) instead of label and prob; with --top-k, top",
        ),
    ] = False,
    min_prob: Annotated[
        float | None,
        typer.Option(
            "--min-prob",
            min=0.0,
            max=1.0,
            help="abstain below this probability: a single-label text whose most probable "
            "class is below P gets no label (empty / null); a multi-label text gets the "
            "labels whose probability reaches both their tuned threshold and P",
        ),
    ] = None,
    top_k: Annotated[
        int | None,
        typer.Option(
            "--top-k",
            min=1,
            help="also show the K most probable classes with their probabilities "
            "(at most the number of classes)",
        ),
    ] = None,
    engine: Annotated[
        Engine,
        typer.Option(
            help="local: this process; ray: --file's shards (a file, folder or glob of "
            "parquet / CSV) over an actor pool on Ray Data (the `ray` extra; a cluster's "
            "address in --ray-address or RAY_ADDRESS), --out a new folder of parquet shards "
            "with every input column, `shard` and `row`",
        ),
    ] = "local",
    actors: Annotated[
        int, typer.Option(min=1, help="with --engine ray: model replicas, one CPU each")
    ] = 1,
    ray_address: Annotated[
        str | None,
        typer.Option(help="with --engine ray: a running Ray cluster [default: a local Ray]"),
    ] = None,
    params: Params = Path("params.yaml"),
) -> None:
    """Classify texts with a trained model: label and probability per text. A folder made by
    `lttw export --onnx` runs on onnxruntime (CPU)."""
    from lttw.inference.long_texts import WindowedPredictor
    from lttw.inference.text_lines import LineCap

    if engine == "ray":
        if texts or keep is not None or chunk or as_json or force:
            raise UserError("--engine ray takes --file and --out only (no TEXT, --keep, "
                            "--chunk, --json or --force): it keeps every column")  # fmt: skip
        _predict_on_ray(
            model_folder(model, params, revision), file, out, actors=actors, ray_address=ray_address,
            project_column=project_columns(params)[0], text_column=text_column,
            with_text=not no_text, max_chars=max_chars, truncate=truncate,
            batch_size=batch_size, min_prob=min_prob, top_k=top_k,
        )  # fmt: skip
        return
    cap = LineCap(max_chars, truncate)
    if keep is not None and file is None:
        raise UserError("--keep names columns of a --file to write beside its predictions")
    texts = _stdin_texts(texts, cap)
    if as_json and (out is not None or file is not None):
        raise UserError("--json prints TEXT / stdin predictions; with --file use --out F.csv")
    if bool(texts) == (file is not None):
        raise UserError("give either TEXT arguments or --file PATH (one of the two)")
    if file is not None and out is None:
        raise UserError("--file needs --out F.csv|F.parquet (or --out - for CSV on stdout)")
    if texts:
        texts = [cap.apply(t, f"TEXT {i}") for i, t in enumerate(texts, 1)]
    if out is None:  # texts to the terminal: no tables library needed (start-up time)
        assert texts is not None  # no --file (checked above): TEXT arguments
        predictor = WindowedPredictor(open_model(model, params, device, True, revision), chunk)
        rule = _rule(predictor, min_prob, top_k)
        probs = predictor.predict_proba(list(texts), batch_size)
        records = rule.records(probs, predictor.classes)
        if as_json:
            _print_json_lines(list(texts), probs, predictor.classes, records)
        else:
            print_answers(list(texts), records, top_k is not None)
        _say(predictor.note())
        return
    from lttw.inference import batch_predict as bp
    from lttw.inference.text_sources import open_source

    bp.check_paths(file, out, force)
    if file is not None:  # the file's columns first: a wrong name fails before the model loads
        columns = None if keep is None else [c.strip() for c in keep.split(",") if c.strip()]
        source = open_source(file, text_column, cap, columns, project_columns(params)[0])
    predictor = WindowedPredictor(open_model(model, params, device, True, revision), chunk)
    rule = _rule(predictor, min_prob, top_k)
    if file is not None:
        frames = bp.predict_chunks(predictor, source, batch_size, not no_text, rule=rule)
        rows = bp.write_frames(frames, out)
        if out != bp.STDOUT:
            typer.echo(f"wrote {rows} predictions to {out}", err=True)
        if cap.cut:
            typer.echo(f"cut {cap.cut} texts to --max-chars {max_chars}", err=True)
        _say(predictor.note())
        return
    assert texts is not None  # no --file: TEXT arguments
    probs = predictor.predict_proba(list(texts), batch_size)
    frame = bp.prediction_frame(
        list(texts), probs, predictor.classes, with_text=not no_text, rule=rule
    )
    bp.write_frames([frame], out)
    if out != bp.STDOUT:
        print_answers(list(texts), rule.records(probs, predictor.classes), top_k is not None)
    _say(predictor.note())


def _predict_on_ray(
    model_dir: Path,
    file: Path | None,
    out: str | None,
    *,
    actors: int,
    ray_address: str | None,
    project_column: str | None,
    **settings,
) -> None:
    """Predict the shards ``file`` names into the parquet folder ``out``; refuses the
    options that have no meaning there (see ``lttw predict --help``)."""
    from lttw.serving.ray_batch import RayBatchSettings, predict_shards

    if file is None or out is None or out == "-":
        raise UserError("--engine ray reads --file SHARDS and writes --out FOLDER (parquet shards)")
    config = RayBatchSettings(
        actors=actors, address=ray_address, project_column=project_column, **settings
    )
    rows = predict_shards(model_dir, file, out, config)
    typer.echo(f"wrote {rows} predictions to {out}/ (parquet shards)", err=True)


def _say(note: str | None) -> None:
    """A note about the run (texts cut or read in windows) on stderr, where there is one."""
    if note:
        typer.echo(note, err=True)


def _rule(predictor, min_prob: float | None, top_k: int | None):
    """The predictor's ``AnswerRule`` with --min-prob, and --top-k held to its classes."""
    from lttw.inference.answers import AnswerRule
    from lttw.models.calibration import Calibration

    k = None if top_k is None else min(top_k, len(predictor.classes))
    return AnswerRule(getattr(predictor, "calibration", Calibration()), min_prob, k)


#: texts read from stdin at most (they are answered together; a larger input: --file)
MAX_STDIN_TEXTS = 100_000


def _stdin_texts(texts: list[str] | None, cap) -> list[str] | None:
    """TEXT arguments (each valid UTF-8), or with the single argument ``-`` the non-blank
    lines of stdin: UTF-8, each within ``cap`` (``LineCap``), at most ``MAX_STDIN_TEXTS``."""
    if texts != ["-"]:
        return [utf8_argument(t, f"TEXT {i}") for i, t in enumerate(texts, 1)] if texts else texts
    import sys

    from lttw.inference.text_lines import bounded_lines

    read = []
    for text in bounded_lines(sys.stdin.buffer, Path("stdin"), cap):
        if text.strip():
            read.append(text)
            if len(read) > MAX_STDIN_TEXTS:
                raise BadInputError(
                    f"stdin (TEXT -): more than {MAX_STDIN_TEXTS:,} texts; for more, "
                    "--file F.txt --out F.csv"
                )
    if not read:
        raise BadInputError("stdin (TEXT -): no texts (one per line)")
    return read


def _print_json_lines(texts: list[str], probs, classes: list[str], records: list[dict]) -> None:
    """One JSON object per text on stdout: text, its answer (``AnswerRule.records``: label
    and prob, or labels; top) and every class's prob."""
    for text, row, record in zip(texts, probs.tolist(), records):
        doc = {"text": text, **record, "probs": dict(zip(classes, row))}
        typer.echo(json.dumps(doc, ensure_ascii=False))
