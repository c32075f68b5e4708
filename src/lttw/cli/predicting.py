"""`lttw predict` and `lttw explain`: a trained model's answers for texts."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Annotated

import typer

from lttw.choices import Device
from lttw.cli.main import (
    BadInputError,
    ModelDir,
    Params,
    _examples,
    _load,
    app,
)
from lttw.console import console, print_predictions
from lttw.errors import UserError


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
